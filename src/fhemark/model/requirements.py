"""What a computation needs, read from the program it builds, before anything runs.

Per scheme: the levels the deepest path consumes (CKKS: rescales, mod switches and the
polynomial evaluator's tree), the ciphertext multiplications in sequence (BFV/BGV: what the
noise budget pays for; plaintext products counted too, their noise grows alike), the rotation
steps (only those Galois keys are made), the timed steps per primitive, the values per
evaluation, and for BFV/BGV the largest intermediate value on sampled inputs, which sets how
many bits the plaintext modulus needs for the integers never to wrap.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np

from .program import Program
from .semantics import Plain
from .workload import RLWE_SCHEMES, Workload, _rotations

# Primitives that consume a level (CKKS) and that multiply (BFV/BGV noise).
LOWERING = ("rescale", "mod_switch")
MULTIPLYING = ("mul", "mul_relin", "mul_plain", "square", "square_relin", "inner_product", "linear_transform")
MIN_PLAIN_BITS = 20   # the project's batching primes start here (t = 1 mod 2N up to N = 2^15 with room)
MAX_PLAIN_BITS = 59
WIDE = (1 << 61) - 1  # a Mersenne prime: the replay's modulus when looking for the largest value
SAMPLES = 3           # input draws the largest value is taken over


def walk(prog: Program) -> dict[str, tuple[int, int]]:
    """Per value: (levels consumed, multiplications in sequence) on its way from the inputs."""
    at: dict[str, tuple[int, int]] = {}
    for s in prog.steps:
        lv, mu = max((at.get(a, (0, 0)) for a in s["args"]), default=(0, 0))
        if s["op"] in LOWERING:
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


def derive(w: Workload, scheme: str) -> Requirements:
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
    return Requirements(scheme, depth, levels, muls, _rotations(prog), counts, w.values(), plain_bits, largest,
                        outputs, notes, magnitude_bits)


def largest_value(w: Workload, scheme: str, slots: int = 8192, at_level: int | None = None) -> float:
    """The largest |value| any step holds on SAMPLES draws of the inputs: BFV/BGV replayed over the
    integers (modulo a 61-bit prime, read centred), CKKS over the reals (`at_level`: only values
    that have consumed that many levels)."""
    exact = scheme != "ckks"
    plain = Plain(scheme, slots if exact else slots // 2, WIDE if exact else None)
    circ, outs = w.circuit(scheme, plain)
    level = {k: lv for k, (lv, _) in walk(circ.program(*outs)).items()}
    rng = np.random.default_rng(7)
    top = 0
    for _ in range(SAMPLES):
        env: dict = {**w.draw(plain, rng), **(w.scalars or (lambda p, r: {}))(plain, rng)}
        for name, fn in circ.replay:
            env[name] = fn(plain, env)
            v = np.asarray(env[name], dtype=np.int64 if exact else np.float64)
            if not v.size or (at_level is not None and level.get(name, 0) != at_level):
                continue
            top = max(top, int(np.abs(np.where(v > WIDE // 2, v - WIDE, v)).max()) if exact else float(np.abs(v).max()))
    return top


def for_all(w: Workload) -> dict[str, Requirements]:
    return {s: derive(w, s) for s in w.schemes}
