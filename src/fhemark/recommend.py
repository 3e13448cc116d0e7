"""Recommend a library, scheme and parameter set for a workload, from measured results only.

A workload says how many of which operations one evaluation needs, and what it
requires: security level, CKKS precision, multiplicative depth, how many values
are processed together. Every (library, scheme, parameter set) in the store is a
candidate; one that lacks a measurement, failed it, or misses a requirement is
excluded with the reason. The rest are ranked by the workload's cost (sum of
count x median) with an interval (sum of count x the medians' 95% bounds, a
conservative envelope), and every candidate whose interval overlaps the best
one's is reported as indistinguishable from it: the data cannot separate them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .catalog import known
from .errors import UserError
from .params import NAME_PATTERN, SCHEMES_BITS, SCHEMES_RLWE
from .report.tables import latest
from .security import TABLES
from .suites import field_error, read_mapping


MAX_COUNT = 10**12  # operations per evaluation


class Workload(BaseModel):
    """What one evaluation of the user's computation needs (YAML or CLI flags)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    name: str = Field("workload", pattern=NAME_PATTERN)  # printable, one line, no [ ] (the terminal's markup)
    # operation -> how many per evaluation
    ops: dict[str, Annotated[int, Field(ge=1, le=MAX_COUNT)]] = Field(min_length=1)
    schemes: list[str] | None = Field(None, min_length=1)
    min_security_bits: int = Field(128, ge=80, le=256)  # the suites' range (Security.min_bits)
    security_table: str = "hestd2018"
    min_precision_bits: float | None = Field(None, ge=0, le=60)  # CKKS: worst measured precision over the ops
    depth: int | None = Field(None, ge=0, le=1000)    # sequential multiplications the computation needs
    # values processed together: more than a ciphertext holds costs copies
    slots: int | None = Field(None, ge=1, le=MAX_COUNT)


def load_workload(path: Path | None, ops: list[str], overrides: dict) -> Workload:
    where = f"{path}: workload" if path is not None else "workload"
    data = read_mapping(path, "workload", "a mapping with 'ops'") if path is not None else {}
    if ops:
        data["ops"] = dict(data.get("ops") or {}) if isinstance(data.get("ops") or {}, dict) else data["ops"]
        if not isinstance(data["ops"], dict):
            raise UserError(f"{where} field ops: a mapping OP: COUNT is needed", "write e.g. ops: {mul_relin: 10}")
        for item in ops:
            name, _, count = item.partition("=")
            if not name or (count and not count.isdigit()):
                raise UserError(f"--op {item!r} is not OP or OP=COUNT", "e.g. --op mul_relin=10")
            data["ops"][name] = int(count or 1)
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        w = Workload.model_validate(data)
    except ValidationError as exc:
        field, msg = field_error(exc)
        raise UserError(f"{where} field {field}: {msg}",
                        "give ops as OP: COUNT (e.g. --op mul_relin=10)" if field.startswith("ops") else
                        "see the workload fields in the README (Choosing a library)")
    if w.security_table not in TABLES:
        raise UserError(f"{where} field security_table: unknown table {w.security_table!r}",
                        f"use one of {', '.join(TABLES)}")
    for s in w.schemes or []:
        if s not in SCHEMES_RLWE + SCHEMES_BITS:
            raise UserError(f"{where} field schemes: unknown scheme {s!r}",
                            f"use one of {', '.join(SCHEMES_RLWE + SCHEMES_BITS)}")
    for op in w.ops:
        if not known(op) or op in ("depth_mul",):
            raise UserError(f"{where} field ops: unknown operation {op!r}",
                            "run `fhemark list ops` for the names (depth is asked with depth:, not as an op)")
    return w


@dataclass
class Candidate:
    library: str
    scheme: str
    params: str
    threads: int = 1
    by_op: dict[str, dict] = field(default_factory=dict)
    depth_rec: dict | None = None
    excluded: str = ""
    copies: int = 1
    cost: float = 0.0
    cost_ci: tuple[float, float] = (0.0, 0.0)
    within_best: bool = False
    singles: dict[str, dict] = field(default_factory=dict)  # every measured op: what a cost model adds up
    modelled: list[str] = field(default_factory=list)  # workloads costed by the sum of their single ops

    @property
    def label(self) -> str:
        return f"{self.library} {self.scheme.upper()} {self.params}" + (f" {self.threads} threads" if self.threads > 1 else "")

    @property
    def evidence(self) -> list[dict]:
        return list(self.by_op.values())

    @property
    def deviations(self) -> dict[str, str]:
        """Ops whose measured time holds different work than the protocol's boundary (PROTOCOL.md)."""
        return {f"{op}/{prim}": text for op, r in self.by_op.items() for prim, text in (r.get("deviations") or {}).items()}

    def worst(self, key: str) -> float | None:
        vals = [r[key] for r in self.evidence if r.get(key) is not None]
        return min(vals) if vals else None

    def security_bits(self, table: str) -> int | None:
        """The weakest level over the evidence, in the asked table."""
        bits = [_security(r, table) for r in self.evidence]
        return None if not bits or None in bits else min(bits)


def _params_label(r: dict) -> str:
    p = r["params"]
    return p.get("name") or f"N={p['N']}"


def _security(r: dict, table: str) -> int | None:
    """The record's level in the asked table; bit schemes carry their library's stated target."""
    sec = r.get("security") or {}
    est = sec.get(table) or sec.get("library")
    return est.get("bits") if est else None


def _judge(c: Candidate, w: Workload) -> str:
    """Why a candidate cannot serve the workload ('' when it can)."""
    for op in w.ops:
        r = c.by_op.get(op)
        if r is None:
            return f"{op} not measured"
        if r["status"] != "ok" or r.get("check_passed") is False:
            return f"{op}: {r['status']}"
        if r.get("median_ns") is None:
            return f"{op}: no timing"
        bits = _security(r, w.security_table)
        if bits is None or bits < w.min_security_bits:
            return f"security {bits if bits is not None else 'unknown'} bits < {w.min_security_bits} ({w.security_table})"
    if w.min_precision_bits is not None and c.scheme == "ckks":
        prec = c.worst("precision_bits")
        if prec is None or prec < w.min_precision_bits:
            return f"precision {prec if prec is None else f'{prec:.1f}'} bits < {w.min_precision_bits:g}"
    if w.depth and c.scheme in SCHEMES_RLWE:  # gate and integer schemes bootstrap every operation
        if c.depth_rec is None:
            return "multiplicative depth not measured (add depth_mul to the suite)"
        if c.depth_rec["status"] != "ok" or c.depth_rec["depth"] < w.depth:
            return f"measured depth {c.depth_rec.get('depth')} < {w.depth}"
    return ""


def _model_missing_workloads(c: Candidate, w: Workload) -> None:
    """An application workload (matvec_256, ...) this candidate never ran is costed by the sum of
    its steps' single-op medians, when the store has them all; the measured workload, where it
    exists, is always used instead, and the candidate says which ones were modelled."""
    from .apps import app
    from .apps.cost import predict
    for op in w.ops:
        if op in c.by_op or not app(op) or not c.singles:
            continue
        singles = [r for r in c.singles.values() if r["status"] == "ok" and r.get("median_ns")]
        if not singles:
            continue
        rec = {**singles[0], "op": op, "run_id": None}
        mid = predict(rec, singles, same_run=False)
        if mid.ns_levels is None:
            continue
        # Level-aware: in the apps suite it put CKKS workloads at 0.70-0.95 of measured where the
        # flat sum read 0.44-0.77 (poly_7, logreg_16, similarity; README, Application workloads).
        lo, hi = (predict(rec, [{**r, "bound": _bounds(r)[i]} for r in singles], same_run=False, key="bound").ns_levels
                  for i in (0, 1))
        used = [r for r in singles if r["op"] in _model_ops(mid.steps)]
        c.by_op[op] = {**rec, "median_ns": mid.ns_levels, "ci95_ns": [lo, hi], "modelled": True,
                       "precision_bits": None, "noise_budget_bits": None,  # not measured on the workload
                       "deviations": {k: v for r in used for k, v in (r.get("deviations") or {}).items()}}
        c.modelled.append(op)


def _model_ops(steps: dict[str, int]) -> set[str]:
    from .apps.cost import MODEL_OP
    return {MODEL_OP.get(p, p) for p in steps}


def _bounds(r: dict) -> tuple[float, float]:
    """The median's 95% interval; with too few samples for one (n < 6), the samples' range."""
    return tuple(r["ci95_ns"]) if r.get("ci95_ns") else (r.get("min_ns") or r["median_ns"], r.get("max_ns") or r["median_ns"])


def recommend(recs: list[dict], w: Workload) -> list[Candidate]:
    """All candidates: the usable ones ranked by cost first, then the excluded ones."""
    cands: dict[tuple, Candidate] = {}
    for r in latest(recs):
        if w.schemes and r["scheme"] not in w.schemes:
            continue
        # One candidate per parameter set as asked (not by name: two suites may reuse a name) and thread count.
        asked = json.dumps({k: v for k, v in r["params"].items() if k != "log_qp"}, sort_keys=True)
        key = (r["library"], r["scheme"], asked, r.get("threads"))
        c = cands.setdefault(key, Candidate(r["library"], r["scheme"], _params_label(r), r.get("threads") or 1))
        if r["op"] == "depth_mul":
            c.depth_rec = r
            continue
        c.singles.setdefault(r["op"], r)
        if r["op"] in w.ops:
            prev = c.by_op.get(r["op"])
            # One record per op: the one over all slots (vector_length unset) wins over a swept length.
            if prev is None or (prev.get("vector_length") and not r.get("vector_length")):
                c.by_op[r["op"]] = r
    out = list(cands.values())
    for c in out:
        _model_missing_workloads(c, w)
        c.excluded = _judge(c, w)
        if c.excluded:
            continue
        slots = min(r.get("slots") or 1 for r in c.evidence)
        c.copies = math.ceil(w.slots / slots) if w.slots else 1
        c.cost = c.copies * sum(n * c.by_op[op]["median_ns"] for op, n in w.ops.items())
        bounds = {op: _bounds(r) for op, r in c.by_op.items()}
        c.cost_ci = (c.copies * sum(n * bounds[op][0] for op, n in w.ops.items()),
                     c.copies * sum(n * bounds[op][1] for op, n in w.ops.items()))
    usable = sorted((c for c in out if not c.excluded), key=lambda c: c.cost)
    if usable:
        best = usable[0]
        for c in usable:
            # A candidate timed on different work is another case, never "indistinguishable" from the best.
            c.within_best = c.cost_ci[0] <= best.cost_ci[1] and c.deviations == best.deviations
    return usable + sorted((c for c in out if c.excluded), key=lambda c: c.label)
