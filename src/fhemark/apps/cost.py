"""The sum-of-operations cost model, checked against the measured workload: a workload's
predicted time is its timed steps' counts times the medians of the same single operations
measured in the same run, library, scheme and parameters."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..catalog import lookup
from ..semantics import Plain

# The single-op job whose median stands for each primitive a workload steps through.
MODEL_OP = {"mul_relin": "mul_relin", "mul_plain": "mul_plain", "mul_scalar": "mul_scalar", "rescale": "rescale",
            "rotate": "rotate_1", "rotate_rows": "rotate_1", "add": "add", "add_plain": "add_plain",
            "mod_switch": "mod_switch"}


@dataclass(frozen=True)
class Prediction:
    ns: float | None          # None: some primitive was not measured in the run
    steps: dict[str, int]     # timed steps per primitive
    missing: list[str]        # single-op jobs the model needed and the run lacks


def steps(rec: dict) -> dict[str, int]:
    """The timed steps per primitive of the program the record's job ran (its slot layout included)."""
    bench = lookup(rec["op"], rec["scheme"])
    if bench is None:
        return {}
    plain = Plain(rec["scheme"], rec["slots"], (rec.get("effective_params") or {}).get("t")) if rec.get("slots") else None
    prog = bench.build(rec["scheme"], plain)
    return dict(Counter(s["op"] for s in prog.steps if s["out"] in prog.timed))


def predict(rec: dict, recs: list[dict], same_run: bool = True, key: str = "median_ns") -> Prediction:
    """Level-unaware: the single ops ran at the top level, where CKKS and BGV ops cost most, so
    steps after a rescale are over-predicted; a ratio below 1 is partly that. `same_run`: only
    single ops from the workload's own run (the report's check); `key`: which figure of each
    single op to add up (e.g. a bound of its interval)."""
    counts = steps(rec)
    same = {r["op"]: r for r in recs if (not same_run or r.get("run_id") == rec.get("run_id")) and r["library"] == rec["library"]
            and r["scheme"] == rec["scheme"] and r["params"] == rec["params"] and r["status"] == "ok"
            and r.get(key) is not None}
    total, missing = 0.0, []
    for prim, n in counts.items():
        single = same.get(MODEL_OP.get(prim, prim))
        if single is None:
            missing.append(MODEL_OP.get(prim, prim))
        else:
            total += n * single[key]
    return Prediction(None if missing or not counts else total, counts, sorted(set(missing)))
