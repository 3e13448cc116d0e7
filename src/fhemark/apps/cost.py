"""The sum-of-operations cost model, checked against the measured workload: a workload's
predicted time is its timed steps' counts times the medians of the same single operations
measured in the same run, library, scheme and parameters.

Two forms. `flat`: every step at its single op's top-level median. `levels` (CKKS): a step on a
ciphertext that has consumed d of the chain's L levels costs (L + 1 - d) / (L + 1) of it, the
share of RNS primes left (NTT, pointwise products and base conversions are linear in the primes;
key switching's extension to the special primes is not, which this first-order model ignores).
BFV keeps every prime and the BGV workloads here never switch modulus, so for them both agree."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ..catalog import lookup
from ..ops import Program
from ..semantics import Plain

# The single-op job whose median stands for each primitive a workload steps through.
MODEL_OP = {"mul_relin": "mul_relin", "mul_plain": "mul_plain", "mul_scalar": "mul_scalar", "rescale": "rescale",
            "rotate": "rotate_1", "rotate_rows": "rotate_1", "add": "add", "add_plain": "add_plain",
            "mod_switch": "mod_switch"}
_LOWERING = ("rescale", "mod_switch")
# The library routines of native variants (PROTOCOL.md): no single op stands for them.
ROUTINES = frozenset({"inner_sum", "inner_product", "linear_transform", "poly_eval"})


@dataclass(frozen=True)
class Prediction:
    ns: float | None          # None: some primitive was not measured in the run
    steps: dict[str, int]     # timed steps per primitive
    missing: list[str]        # single-op jobs the model needed and the run lacks
    ns_levels: float | None = None  # level-aware (CKKS): each step scaled by the primes it still has


def program(rec: dict) -> Program | None:
    """The program the record's job ran (its slot layout included), or None for an unknown op."""
    bench = lookup(rec["op"], rec["scheme"])
    if bench is None:
        return None
    plain = Plain(rec["scheme"], rec["slots"], (rec.get("effective_params") or {}).get("t")) if rec.get("slots") else None
    return bench.build(rec["scheme"], plain)


def depths(prog: Program) -> dict[str, int]:
    """Per timed step: the levels its inputs had consumed (the deepest input), as the builder counts."""
    depth: dict[str, int] = {}
    before: dict[str, int] = {}
    for s in prog.steps:
        d_in = max((depth.get(a, 0) for a in s["args"]), default=0)
        before[s["out"]] = d_in
        extra = 1 if s["op"] in _LOWERING else 0
        if s["op"] == "poly_eval":
            extra = math.ceil(math.log2(len((s.get("attrs") or {}).get("coeffs", [0, 0]))))
        depth[s["out"]] = d_in + extra
    return {s["out"]: before[s["out"]] for s in prog.steps if s["out"] in prog.timed}


def _chain_length(rec: dict) -> int | None:
    q = (rec.get("effective_params") or {}).get("q_bits") or (rec.get("params") or {}).get("q_bits")
    return len(q) if q else None


def predict(rec: dict, recs: list[dict], same_run: bool = True, key: str = "median_ns") -> Prediction:
    """`same_run`: only single ops from the workload's own run (the report's check); `key`: which
    figure of each single op to add up (e.g. a bound of its interval)."""
    prog = program(rec)
    timed = [s for s in prog.steps if s["out"] in prog.timed] if prog else []
    counts = dict(Counter(s["op"] for s in timed))
    same = {r["op"]: r for r in recs if (not same_run or r.get("run_id") == rec.get("run_id")) and r["library"] == rec["library"]
            and r["scheme"] == rec["scheme"] and r["params"] == rec["params"] and r["status"] == "ok"
            and r.get(key) is not None}
    primes = _chain_length(rec) if rec["scheme"] == "ckks" else None
    at = depths(prog) if prog and primes else {}
    total, leveled, missing = 0.0, 0.0, []
    for s in timed:
        single = same.get(MODEL_OP.get(s["op"], s["op"]))
        if single is None:
            missing.append(MODEL_OP.get(s["op"], s["op"]))
            continue
        total += single[key]
        leveled += single[key] * (max(primes - at[s["out"]], 1) / primes if primes else 1.0)
    if missing or not counts:
        return Prediction(None, counts, sorted(set(missing)))
    return Prediction(total, counts, [], leveled)
