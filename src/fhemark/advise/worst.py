"""The worst input a parameter set meets, looked for within a stated budget: what `choose` verifies
a set on beside its fresh-key runs on drawn inputs (choose.verify). Drawn inputs are average ones: a
CKKS error grows with the values the computation holds, which are largest at the corners of the
inputs' box, where uniform draws almost never go (a squared dot product over [-3, 3]^8: 120 uniform
draws gave a worst error of 5.4e-5, the box's vertices 2.2e-4; issue 35).

In one driver process with fresh keys and one setup, EDGES + SEARCH evaluations of the program:
1. EDGES at the edges of the inputs' box (Workload.edges): the aligned extremes first (every slot of
   an input at the same end, every combination of ends across the inputs), then alternating ends,
   then vertices drawn at random. Inputs from a function have no declared range: of POOL of its own
   draws, the EDGES that drive the cleartext replay's values highest (requirements.replay_top).
2. CKKS only (an exact scheme's output is right or wrong at an input, and the edges are where its
   integers are largest): SEARCH more, ROUND per request, each round from the worst input found so
   far, some slots of one input moved to the other end of its range or inside it; a function's
   inputs: its next draws in the replay's order.
Where the program keeps its slots apart (no rotation, no routine that mixes or refreshes them:
SLOTWISE) and its inputs are declared ranges of a known length, one evaluation carries up to PACK
inputs side by side, each in its own block of slots, and each block is checked on its own: an
error in one slot comes from that slot's values and the ring's noise, not from its neighbours' values.
The edges then fill whole evaluations and each search round is one evaluation of that many moves;
a deep set (an evaluation of tens of seconds) sees more inputs in fewer evaluations.
The worst is the sample whose output is furthest from its reference (the largest absolute error,
what the check judges); its precision is said in absolute and relative bits (that error over the
output's largest |value|), and the input itself is kept (the file beside the snippet).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..drivers.protocol import Effective
from ..drivers.registry import manifests
from ..drivers.supervise import Driver
from ..errors import DriverError, UserError
from ..measure.checked import Error, run_given
from ..model import guard, workload_file
from ..model.requirements import replay_top
from ..model.semantics import Plain
from ..model.program import Program
from ..model.workload import Workload
from ..plan.jobs import build
from . import measuring

EDGES = 16    # evaluations at the edges of the inputs' box
SEARCH = 16   # CKKS: evaluations of the search around the worst edge
ROUND = 4     # search evaluations per request: each round starts from the worst found so far
POOL = 64     # a function's draws ranked by the replay, of which EDGES + SEARCH are evaluated
SEED = 35
SETUP = "worst-input"
BITS_AT_ZERO = 64.0  # an error of exactly 0, as checks.py reads it
PACK = 32     # inputs one evaluation carries at most, side by side, where the program keeps slots apart
# The steps that compute each slot from the same slot of their operands (rotations, conjugation, a
# native routine and bootstrapping do not: bootstrapping's error depends on every slot's value).
SLOTWISE = frozenset({"encode", "decode", "encrypt_pk", "encrypt_sk", "decrypt", "add", "sub", "add_plain",
                      "sub_plain", "negate", "mul", "mul_relin", "mul_plain", "mul_scalar", "square", "square_relin",
                      "relinearize", "rescale", "mod_switch"})


def packing(w: Workload, program: Program, slots: int) -> tuple[int, int]:
    """(inputs an evaluation carries, slots each takes): (1, 0) unless the program keeps slots apart and
    every varying input is a declared range of a known length."""
    width = w.values()
    if not w.ranged() or callable(w.inputs) or not width \
            or {st["op"].removesuffix("_into") for st in program.steps} - SLOTWISE:
        return 1, 0
    per = min(PACK, slots // width)
    return (per, width) if per > 1 else (1, 0)


def per_evaluation(w: Workload | None, scheme: str, spec: dict) -> int:
    """The inputs an evaluation at `spec` will carry (packing's first figure), read before it is built
    (1 where no computation is given, as memory.shape reads none)."""
    n = spec.get("N")
    return packing(w, w.program(scheme), n // 2 if scheme == "ckks" else n)[0] if n and w is not None else 1


def runs(edges: int, search: int, per: int) -> int:
    """The evaluations a hunt of `edges` + `search` inputs takes at `per` inputs an evaluation: the edges
    fill whole evaluations, each of the search // ROUND rounds is max(ROUND, per) moves."""
    return math.ceil(edges / per) + search // ROUND * math.ceil(max(ROUND, per) / per)


@dataclass
class Worst:
    """The worst sample found: its error, where it was found, and the input itself."""

    evaluations: int               # inputs evaluated
    error: Error
    how: str                       # which edge or search step found it
    inputs: dict[str, list]        # each input's values up to its last nonzero slot
    scalars: dict[str, Any]
    drawn: Error | None = None     # the worst of `probe(drawn=n)`'s drawn inputs, under the same keys
    runs: int = 0                  # the program's evaluations that held them (fewer where inputs were packed)

    @property
    def precision_bits(self) -> float:
        return _bits(self.error.abs_error)

    @property
    def relative_bits(self) -> float:
        return _bits(self.error.rel_error)

    def describe(self) -> str:
        if self.error.wrong:
            return f"{self.error.wrong} at the worst input found ({self.how})"
        return (f"precision {self.precision_bits:.1f} bits ({self.relative_bits:.1f} relative, max error "
                f"{self.error.abs_error:.3g} in {self.error.output}) at the worst input found of {self.of()} ({self.how})")

    def of(self) -> str:
        """How many inputs were looked at, and in how many evaluations where they were packed."""
        packed = f" in {self.runs} evaluations" if self.runs and self.runs < self.evaluations else ""
        return f"{self.evaluations}{packed}"

    def to_json(self) -> dict:
        e = self.error
        return {"evaluations": self.evaluations, "runs": self.runs or self.evaluations,
                "budget": {"edges": EDGES, "search": SEARCH}, "found_by": self.how,
                "output": e.output, "max_abs_error": e.abs_error if math.isfinite(e.abs_error) else None,
                "precision_bits": self.precision_bits, "relative_error": e.rel_error if math.isfinite(e.rel_error)
                else None, "relative_bits": self.relative_bits, "wrong": e.wrong or None,
                "inputs": self.inputs, "scalars": self.scalars}

    def write(self, path: Path, about: dict) -> Path:
        path.write_text(json.dumps({**about, **self.to_json()}, indent=1, default=_plain) + "\n")
        return path


def _bits(err: float) -> float:
    return -math.log2(err) if 0 < err < math.inf else BITS_AT_ZERO if err == 0 else 0.0


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v.tolist() if isinstance(v, np.ndarray) else str(v)


def probe(w: Workload, scheme: str, library: str, spec: dict, security: int, table: str,
          edges: int = EDGES, search: int = SEARCH, drawn: int = 0, insecure: bool = False,
          below: float | None = None) -> Worst | str:
    """The worst input found for the computation at `spec` on `library`; or why none could be looked
    for (a refusal in choose.verify's words). `drawn`: also run that many inputs drawn as a
    measurement draws them, under the same keys, for comparison (Worst.drawn). `below`: the search stops
    once an input's precision is below these bits (the set fails its requirement there, however much worse
    a longer search would find: at depth 40 a failing set's search took 300 s where its edges took 40)."""
    suite = measuring.suite(f"worst-{w.name}", [measuring.case(library, scheme, spec, [w.name])],
                            measuring.search_policy(1, 1), security, table, 1, [w], insecure)
    try:
        plan = build(suite, [library])
    except UserError as exc:
        return f"not planned: {exc.problem}"
    if not plan.jobs:
        return "not planned"
    job, group = plan.jobs[0], plan.groups[0]
    op = job.bench_op()
    drv = Driver(manifests()[library])
    try:
        result = drv.request("setup", timeout_s=job.policy.timeout_s, setup_id=SETUP, scheme=scheme,
                             params=group.params.wire(), rotations=group.rotations,
                             allow_insecure=plan.allow_insecure, memory_limit_mb=job.policy.memory_limit_mb)
        eff = Effective(**result["effective"])
        plain = Plain(scheme, eff.slots, eff.t)
        built = workload_file.build(op, scheme, plain)
        if isinstance(built, guard.Fault):
            return f"workload_error: {built.where}: {built.what}"
        program = replace(built, noise=[], sizes=[], levels=[])  # the errors are wanted, not the facts

        per, width = packing(w, program, eff.slots)
        evaluations = [0]

        def run(given: list[dict[str, np.ndarray]], scalars: list[dict], per: int = per) -> list[Error]:
            packs = [(_packed(given[i:i + per], width), scalars[i]) for i in range(0, len(given), per)]
            evaluations[0] += len(packs)
            errs = run_given(drv, job, op, plain, SETUP, program, packs, width * (per > 1),
                             [min(per, len(given) - i) for i in range(0, len(given), per)])
            return [e for pack in errs for e in pack]
        found = _hunt(w, plain, run, edges, search if scheme == "ckks" else 0, per, below)
        found.runs = evaluations[0]
        if drawn:
            rng = np.random.default_rng(SEED)
            errs = run([w.draw(plain, rng) for _ in range(drawn)],
                       [(w.scalars or (lambda p, r: {}))(plain, rng) for _ in range(drawn)], per=1)
            found.drawn = max(errs, key=lambda e: (bool(e.wrong), e.abs_error))
        return found
    except DriverError as exc:
        return f"{exc.kind}: {' '.join(exc.message.split())}"
    finally:
        drv.stop()


def _hunt(w: Workload, plain: Plain, run, edges: int, search: int, per: int = 1, below: float | None = None) -> Worst:
    """`per` > 1 (inputs packed side by side): the edges fill whole evaluations, a round is max(ROUND, per)
    moves, and the inputs of one evaluation share its scalars. No round begins once an input is wrong or,
    `below` given, short of that precision."""
    rng = np.random.default_rng(SEED)
    draw_scalars = w.scalars or (lambda p, r: {})
    seen: list[tuple[Error, str, dict, dict, dict | None]] = []  # error, how, inputs, scalars, positions
    edges, moves = math.ceil(edges / per) * per, max(ROUND, per) if per > 1 else ROUND

    def evaluate(points: list[tuple[str, dict, dict | None]]) -> None:
        drawn = [draw_scalars(plain, rng) for _ in range(math.ceil(len(points) / per))]
        scalars = [drawn[i // per] for i in range(len(points))]
        for (how, vecs, where), sc, err in zip(points, scalars, run([v for _, v, _ in points], scalars)):
            seen.append((err, how, vecs, sc, where))

    def worst() -> tuple[Error, str, dict, dict, dict | None]:
        return max(seen, key=lambda s: (bool(s[0].wrong), s[0].abs_error))

    def failed() -> bool:
        err = worst()[0]
        return bool(err.wrong) or (below is not None and _bits(err.abs_error) < below)

    ranged = w.ranged()
    if ranged:
        evaluate([(_where_text(w, where), w.at(plain, where, rng), where) for where in w.edges(plain, rng, edges)])
        for _ in range(search // ROUND):
            if failed():
                break
            base = worst()[4]
            steps = [_move(base, rng) for _ in range(moves)]
            evaluate([(f"search: {what}", w.at(plain, where, rng), where) for what, where in steps])
    else:
        pool = [w.draw(plain, rng) for _ in range(max(POOL, edges + search))]
        top = replay_top(w, plain)
        ranked = sorted(pool, key=lambda v: -top(v))
        evaluate([("one of the function's draws whose values run largest", v, None) for v in ranked[:edges]])
        for i in range(edges, edges + search, ROUND):
            if failed():
                break
            evaluate([("a further draw of the function, by the replay's order", v, None)
                      for v in ranked[i:min(i + ROUND, edges + search)]])
    err, how, vecs, sc, _ = worst()
    return Worst(len(seen), err, how, {k: _used(v) for k, v in vecs.items()}, sc)


def _packed(given: list[dict[str, np.ndarray]], width: int) -> dict[str, np.ndarray]:
    """Inputs side by side: input i's first `width` slots at slots [i * width, (i + 1) * width)."""
    if len(given) == 1:
        return given[0]
    out = {k: np.zeros_like(v) for k, v in given[0].items()}
    for i, vecs in enumerate(given):
        for k, v in vecs.items():
            out[k][i * width:(i + 1) * width] = v[:width]
    return out


def _move(base: dict[str, np.ndarray], rng: np.random.Generator) -> tuple[str, dict[str, np.ndarray]]:
    """A step of the search from `base`: some slots of one input to the other end of its range, or
    to points inside it."""
    name = list(base)[int(rng.integers(len(base)))]
    where = {k: v.copy() for k, v in base.items()}
    n = where[name].size
    picked = rng.random(n) < rng.choice([0.125, 0.25, 0.5])
    if not picked.any():
        picked[int(rng.integers(n))] = True
    if rng.random() < 0.5:
        where[name][picked] = 1.0 - where[name][picked]
        return f"{_slots(int(picked.sum()))} of {name} to the other end", where
    where[name][picked] = rng.random(int(picked.sum()))
    return f"{_slots(int(picked.sum()))} of {name} inside the range", where


def _slots(n: int) -> str:
    return f"{n} slot" + ("" if n == 1 else "s")


def _where_text(w: Workload, where: dict[str, np.ndarray]) -> str:
    """An edge in words: which end of its range each input is at."""
    parts = []
    for k, pos in where.items():
        spec = w.inputs[k]
        if np.all(pos == 1.0):
            parts.append(f"{k} = {spec.hi:g} in every slot")
        elif np.all(pos == 0.0):
            parts.append(f"{k} = {spec.lo:g} in every slot")
        elif pos.size > 1 and np.all(pos[1:] != pos[:-1]):
            parts.append(f"{k} alternating {spec.lo:g} and {spec.hi:g}")
        else:
            parts.append(f"{k} at a vertex of its box")
    return "edge: " + ", ".join(parts)


def _used(v: np.ndarray) -> list:
    """An input's values up to its last nonzero slot (the slots beyond are zero)."""
    v = np.asarray(v)
    nz = np.flatnonzero(v)
    return v[: int(nz.max()) + 1 if nz.size else 0].tolist()
