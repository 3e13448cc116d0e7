"""What a computation needs, read from the program it builds, before anything runs.

Per scheme: the levels the deepest path consumes (CKKS: rescales, mod switches and the
polynomial evaluator's tree), the ciphertext multiplications in sequence (BFV/BGV: what the
noise budget pays for; plaintext products counted too, their noise grows alike), the rotation
steps (only those Galois keys are made), the timed steps per primitive, the values per
evaluation, and the largest intermediate value over the inputs' worst case (every edge of their
ranges, e.g. a unanimous block of 0/1 votes, not only what random draws reach), which sets how many
bits the BFV/BGV plaintext modulus needs for the integers never to wrap, and the room CKKS needs.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np

from .program import Program
from .semantics import Plain
from .workload import INT_SCHEMES, RLWE_SCHEMES, Workload, _rotations

# Primitives that consume a level (CKKS) and that multiply (BFV/BGV noise).
LOWERING = ("rescale", "mod_switch")
MULTIPLYING = ("mul", "mul_relin", "mul_plain", "square", "square_relin", "inner_product", "linear_transform")
MIN_PLAIN_BITS = 20   # the project's batching primes start here (t = 1 mod 2N up to N = 2^15 with room)
MAX_PLAIN_BITS = 59
DEFAULT_INT_BITS = 32  # the width a tfhe_int workload runs at when it names none (choose._integer_set)
WIDE = (1 << 61) - 1  # a Mersenne prime: the replay's modulus when looking for the largest value
SAMPLES = 3           # random input draws the largest value is taken over, beside the edges
EDGES = 32            # edges of the inputs' box replayed (a function's inputs: its own draws)


def walk(prog: Program) -> dict[str, tuple[int, int]]:
    """Per value: (levels consumed, multiplications in sequence) on its way from the inputs."""
    at: dict[str, tuple[int, int]] = {}
    for s in prog.steps:
        lv, mu = max((at.get(a, (0, 0)) for a in s["args"]), default=(0, 0))
        if s["op"] == "bootstrap":
            lv = 0  # its levels refreshed: what the set's chain holds is each stretch between bootstraps
        elif s["op"] in LOWERING:
            lv += 1
        elif s["op"] == "poly_eval":
            d = len((s.get("attrs") or {}).get("coeffs", [0, 0])) - 1
            lv += math.ceil(math.log2(d + 1))
            mu += math.ceil(math.log2(d + 1))
        if s["op"] in MULTIPLYING:
            mu += 1
        at[s["out"]] = (lv, mu)
    return at


@dataclass(frozen=True)
class Requirements:
    scheme: str
    depth: int                  # CKKS: levels consumed; BFV/BGV: multiplications in sequence
    levels: int                 # levels consumed on the deepest path (rescales, mod switches)
    multiplications: int        # multiplications in sequence on the deepest path
    rotations: list[int]
    counts: dict[str, int]      # timed steps per primitive
    slots: int | None           # values per evaluation (None: whatever the ring holds)
    plain_bits: int | None = None   # BFV/BGV: bits of t so that no intermediate value wraps
    largest_value: float | None = None  # the largest |intermediate| seen on sampled inputs
    outputs: int = 1
    notes: list[str] = field(default_factory=list)
    magnitude_bits: int = 0         # CKKS: bits of the largest |value| above 1 (room the chain needs)

    def to_json(self) -> dict:
        return asdict(self)


@lru_cache(maxsize=256)
def derive(w: Workload, scheme: str) -> Requirements:
    """What `w` needs on `scheme`, read from its program and cleartext replays: derived once per
    computation and scheme (a workload is hashed by identity), however many of choose's steps ask."""
    prog = w.program(scheme)
    at = walk(prog)
    levels = max((lv for lv, _ in at.values()), default=0)
    muls = max((mu for _, mu in at.values()), default=0)
    timed = [s for s in prog.steps if s["out"] in prog.timed]
    counts = dict(Counter(s["op"] for s in timed))
    depth = levels if scheme == "ckks" else muls
    plain_bits = largest = None
    magnitude_bits = 0
    notes = []
    if scheme == "ckks":
        # A value that has consumed every level lives modulo the last prime alone: above 1 it needs
        # that much room above the scale there (values higher up the chain have a prime's worth more).
        largest = largest_value(w, scheme)
        last = largest_value(w, scheme, at_level=levels)
        magnitude_bits = max(0, math.ceil(math.log2(last))) if last > 0 else 0
    if scheme in RLWE_SCHEMES and scheme != "ckks":
        largest = largest_value(w, scheme)
        plain_bits = max(MIN_PLAIN_BITS, (2 * largest).bit_length() + 1)
        if plain_bits > MAX_PLAIN_BITS:
            notes.append(f"intermediate values reach {largest.bit_length()} bits: no batching t here holds them, "
                         "so results are exact only modulo t")
            plain_bits = MAX_PLAIN_BITS
    outputs = len(prog.outputs)
    slots = w.values()
    if slots is None and callable(w.inputs) and (slots := drawn_values(w, scheme)):
        notes.append(f"{slots} values per evaluation, read from the inputs function's draws (declare slots= to say it)")
    if scheme in INT_SCHEMES:
        slots = 1
        notes.append(f"{w.bits or DEFAULT_INT_BITS}-bit integers" + ("" if w.bits else " (the default: give bits= to "
                                                                                      "say the width)"))
    return Requirements(scheme, depth, levels, muls, _rotations(prog), counts, slots, plain_bits, largest,
                        outputs, notes, magnitude_bits)


def largest_value(w: Workload, scheme: str, slots: int = 8192, at_level: int | None = None) -> float:
    """The largest |value| any step holds over the computation's worst case as far as it is known:
    every edge of the inputs' box (Workload.edges: the aligned extremes first, e.g. a unanimous
    block of votes) and SAMPLES random draws; inputs from a function, EDGES of its own draws.
    BFV/BGV replayed over the integers (modulo a 61-bit prime, read centred), CKKS over the reals
    (`at_level`: only values that have consumed that many levels)."""
    exact = scheme != "ckks"
    plain = Plain(scheme, slots if exact else slots // 2, WIDE if exact else None)
    top = replay_top(w, plain, at_level)
    rng = np.random.default_rng(7)
    scalars = w.scalars or (lambda p, r: {})
    envs = [w.at(plain, where, rng) for where in w.edges(plain, rng, EDGES)]
    envs += [w.draw(plain, rng) for _ in range(SAMPLES if envs else EDGES)]
    return max((top({**env, **scalars(plain, rng)}) for env in envs), default=0)


def replay_top(w: Workload, plain: Plain, at_level: int | None = None) -> Callable[[dict], float]:
    """The cleartext replay at a layout, as a function of a sample's inputs and scalars: the largest
    |value| any step holds (`at_level`: only values that have consumed that many levels). A plaintext
    stand-in for how far a sample drives the computation: CKKS errors grow with the values."""
    exact = plain.exact
    circ, outs = w.circuit(plain.scheme, plain)
    level = {k: lv for k, (lv, _) in walk(circ.program(*outs)).items()}
    wide = plain.t if exact else 0

    def top(env: dict) -> float:
        env, best = dict(env), 0
        for name, fn in circ.replay:
            env[name] = fn(plain, env)
            v = np.asarray(env[name], dtype=np.int64 if exact else np.float64)
            if not v.size or (at_level is not None and level.get(name, 0) != at_level):
                continue
            best = max(best, int(np.abs(np.where(v > wide // 2, v - wide, v)).max()) if exact
                       else float(np.abs(v).max()))
        return best
    return top


def drawn_values(w: Workload, scheme: str) -> int | None:
    """Values per evaluation of inputs drawn by a function: the slots its vectors reach (the last
    nonzero one, over SAMPLES draws) at two layouts; a layout that fills whatever the ring holds
    (a block tiled along the row) reaches further in the larger one, and sets none."""
    if not callable(w.inputs) or scheme in INT_SCHEMES:
        return None
    rng = np.random.default_rng(7)
    reach = []
    for slots in (4096, 8192):
        plain = Plain(scheme, slots, 65537) if scheme != "ckks" else Plain(scheme, slots // 2)
        try:
            vecs = [w.inputs(plain, rng) for _ in range(SAMPLES)]
        except Exception:  # noqa: BLE001 - the user's function, at a layout it may not take
            return None
        reach.append(max((int(np.flatnonzero(np.asarray(v)).max(initial=-1)) + 1 for d in vecs for v in d.values()),
                         default=0))
    return reach[0] if reach[0] == reach[1] and reach[0] else None


def for_all(w: Workload) -> dict[str, Requirements]:
    return {s: derive(w, s) for s in w.schemes}
