"""The sum-of-operations cost model, checked against the measured workload: a workload's
predicted time is its timed steps' counts times the medians of the same single operations
measured in the same run, library, scheme and parameters.

Two forms. `flat`: every step at its single op's top-level median. `levels` (CKKS): a step on a
ciphertext that has consumed d of the chain's L levels costs (L + 1 - d) / (L + 1) of it, the
share of RNS primes left (NTT, pointwise products and base conversions are linear in the primes;
key switching's extension to the special primes is not, which this first-order model ignores).
BFV keeps every prime and the BGV workloads here never switch modulus, so for them both agree.

A program that consumes more levels than the record's chain offers has no prediction: it cannot
run on those parameters (`requirement` says what each workload needs). `model_error` checks the
model where the store allows: every measured workload against the single ops of its own run."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from ..model.apps.workloads import app
from ..model.catalog import lookup
from ..model.program import Program
from ..model.params import SCHEMES_RLWE
from ..model.requirements import walk
from ..model.semantics import Plain
from ..store.record import Record

# The single-op job whose median stands for each primitive a workload steps through.
MODEL_OP = {"mul_relin": "mul_relin", "mul_plain": "mul_plain", "mul_scalar": "mul_scalar", "rescale": "rescale",
            "rotate": "rotate_1", "rotate_rows": "rotate_1", "add": "add", "add_plain": "add_plain",
            "mod_switch": "mod_switch"}
# The library routines of native variants (PROTOCOL.md): no single op stands for them.
ROUTINES = frozenset({"inner_sum", "inner_product", "linear_transform", "poly_eval"})


@dataclass(frozen=True)
class Prediction:
    ns: float | None          # None: some primitive was not measured in the run
    steps: dict[str, int]     # timed steps per primitive
    missing: list[str]        # single-op jobs the model needed and the run lacks
    ns_levels: float | None = None  # level-aware (CKKS): each step scaled by the primes it still has
    levels: int | None = None       # CKKS: levels the program consumes on its deepest path
    chain: int | None = None        # CKKS: levels the record's chain offers (its primes less one)


def program(rec: Record) -> Program | None:
    """The program the record's job ran (its slot layout included), or None for an unknown op."""
    bench = lookup(rec.op, rec.scheme)
    if bench is None:
        return None
    plain = Plain(rec.scheme, rec.slots, (rec.effective_params or {}).get("t")) if rec.slots else None
    return bench.build(rec.scheme, plain)


def depths(prog: Program) -> dict[str, int]:
    """Per timed step: the levels its inputs had consumed (the deepest input), as the builder counts."""
    at = walk(prog)
    return {s["out"]: max((at[a][0] for a in s["args"] if a in at), default=0) for s in prog.steps if s["out"] in prog.timed}


def program_requirement(prog: Program, scheme: str) -> int:
    """What a program needs of a parameter set, on its deepest path: CKKS, the levels it consumes
    (`Circuit.levels`); BFV/BGV, its ciphertext multiplications in sequence (requirements.walk)."""
    return max((lv if scheme == "ckks" else mu for lv, mu in walk(prog).values()), default=0)


@lru_cache(maxsize=256)
def requirement(op: str, scheme: str) -> int | None:
    """`program_requirement` of an application workload (apps.app: poly_7, dot_4096, ...) on an RLWE
    scheme; None for anything else (a single op, a gate or integer scheme, a shape the scheme lacks)."""
    if scheme not in SCHEMES_RLWE or not app(op):
        return None
    bench = lookup(op, scheme)
    return program_requirement(bench.build(scheme), scheme) if bench is not None else None


def chain_levels(rec: Record) -> int | None:
    """CKKS: the levels the record's parameter set offers (its ciphertext primes less one), None
    where the record does not say (a library preset)."""
    primes = _chain_length(rec)
    return primes - 1 if primes else None


def _chain_length(rec: Record) -> int | None:
    q = (rec.effective_params or {}).get("q_bits") or rec.params.get("q_bits")
    return len(q) if q else None


def _median_ns(rec: Record) -> float | None:
    return rec.median_ns


def predict(rec: Record, recs: list[Record], same_run: bool = True,
            figure: Callable[[Record], float | None] = _median_ns) -> Prediction:
    """`same_run`: only single ops from the workload's own run (the report's check); `figure`: what
    of each single op to add up (its median, or e.g. a bound of its interval)."""
    prog = program(rec)
    timed = [s for s in prog.steps if s["out"] in prog.timed] if prog else []
    counts = dict(Counter(s["op"] for s in timed))
    same = {r.op: r for r in recs if (not same_run or r.run_id == rec.run_id) and r.library == rec.library
            and r.scheme == rec.scheme and r.params == rec.params and r.status == "ok" and figure(r) is not None}
    primes = _chain_length(rec) if rec.scheme == "ckks" else None
    at = depths(prog) if prog and primes else {}
    if prog and primes and (need := program_requirement(prog, "ckks")) > primes - 1:
        return Prediction(None, counts, [], None, need, primes - 1)
    total, leveled, missing = 0.0, 0.0, []
    for s in timed:
        single = same.get(MODEL_OP.get(s["op"], s["op"]))
        if single is None:
            missing.append(MODEL_OP.get(s["op"], s["op"]))
            continue
        total += figure(single)
        leveled += figure(single) * ((primes - at[s["out"]]) / primes if primes else 1.0)
    levels = program_requirement(prog, "ckks") if prog and primes else None
    chain = primes - 1 if primes else None
    if missing or not counts:
        return Prediction(None, counts, sorted(set(missing)), None, levels, chain)
    return Prediction(total, counts, [], leveled, levels, chain)


# What a `fhemark recommend` cost is, in one line for its text and its JSON.
METHOD = ("cost = count x median of each operation, added up (the medians' 95% bounds added likewise); "
          "an application workload not measured on a candidate is costed by the sum of its steps' "
          "single-operation medians, level-aware for CKKS (each step scaled by the share of primes left)")


@dataclass(frozen=True)
class Check:
    """One measured application workload against the model (its single ops from its own run)."""
    op: str
    library: str
    scheme: str
    params: str
    run_id: str
    job_key: str
    ratio: float  # predicted / measured


@dataclass(frozen=True)
class ModelError:
    """How far the sum-of-operations model was from measured application workloads in a store."""
    checks: list[Check] = field(default_factory=list)

    @property
    def errors(self) -> list[float]:
        """predicted / measured - 1, per check."""
        return [c.ratio - 1 for c in self.checks]

    def text(self) -> str:
        if not self.checks:
            return ("the model's error cannot be checked here: no application workload in this store was measured "
                    "together with its single operations in the same run (the apps suite does both)")
        e = self.errors
        return (f"the model's error on the {len(e)} application workload{'s' if len(e) > 1 else ''} measured in this "
                f"store: {min(e) * 100:+.0f}% .. {max(e) * 100:+.0f}%, median {statistics.median(e) * 100:+.0f}% "
                "(predicted / measured - 1, single ops from the same run)")

    def json(self) -> dict:
        e = self.errors
        return {"method": METHOD, "checked_workloads": len(e),
                "error_min": min(e) if e else None, "error_max": max(e) if e else None,
                "error_median": statistics.median(e) if e else None,
                "checks": [vars(c) for c in self.checks], "text": self.text()}


def model_error(recs: list[Record]) -> ModelError:
    """The model's error on a store's records: for every application workload (RLWE) that was
    measured, checked and has a median, and whose single operations were measured in its own run
    (`predict(..., same_run=True)`, the report's check), predicted (level-aware) / measured.
    Workloads with library routines (native variants) have no single op to add up: not counted."""
    checks = []
    for r in recs:
        if (r.scheme not in SCHEMES_RLWE or r.status != "ok" or r.check_passed is False
                or not r.median_ns or not app(r.op)):
            continue
        pred = predict(r, recs, same_run=True)
        if pred.ns_levels is None:
            continue
        params = r.params.get("name") or f"N={r.params.get('N')}"
        checks.append(Check(r.op, r.library, r.scheme, params, r.run_id, r.job_key, pred.ns_levels / r.median_ns))
    return ModelError(checks)
