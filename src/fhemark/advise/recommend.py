"""Recommend a library, scheme and parameter set for a workload, from measured results only.

A workload says how many of which operations one evaluation needs, and what it
requires: security level, CKKS precision, multiplicative depth, how many values
are processed together. Every (library, scheme, parameter set) in the store is a
candidate; one that lacks a measurement, failed it, or misses a requirement is
excluded with the reason. The rest are ranked by the workload's cost from each op's floor (its
time in the host's fastest state, analyse/ratios.py), shown as the sum of count x median with an
interval (sum of count x the medians' 95% bounds, a conservative envelope); each candidate's cost
over the best's comes with a 95% interval for another run (stats.cost_ratio), and a candidate
whose interval reaches 1 is reported as indistinguishable from the best: the data cannot separate
them. Where an op was modelled or kept no samples, the medians' envelopes decide instead.

An application workload (poly_7, dot_4096, ...) needs levels or multiplications in sequence
(`apps.cost.requirement`): a CKKS set whose chain is shorter, or a BFV/BGV set that has not shown
that depth (depth_mul, the workload itself, or for depth 1 a checked multiplication), is excluded
whether the workload was measured or modelled. The ranking carries the model's error on the
store's own measured workloads (`apps.cost.model_error`), which the text and JSON state.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..analyse.ratios import median_bounds
from ..analyse.select import latest
from ..errors import UserError, field_error
from ..model.catalog import known, unknown_op
from ..model.params import NAME_PATTERN, SCHEMES_BITS, SCHEMES_RLWE
from ..model.security import TABLES
from ..plan.suites import read_mapping
from ..stats import FloorRatio, Parts, cost_ratio, floor
from ..store.record import Record
from .derived import Amortised, Modelled, Source

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
    # the cores it will run on: only evidence measured at this thread count (default: every count,
    # each its own candidate)
    threads: int | None = Field(None, ge=1, le=1024)
    # latency: one evaluation alone, as fast as possible; throughput: as many a second as the host
    # gives (records of mode: throughput, each evaluation costed at 1 / its rate at saturation)
    objective: Literal["latency", "throughput"] = "latency"


def load_workload(path: Path | None, ops: list[str], overrides: dict) -> Workload:
    where = f"{path}: workload" if path is not None else "workload"
    data = read_mapping(path, "workload", "a mapping with 'ops'") if path is not None else {}
    if ops:
        data["ops"] = dict(data.get("ops") or {}) if isinstance(data.get("ops") or {}, dict) else data["ops"]
        if not isinstance(data["ops"], dict):
            raise UserError(f"{where} field ops: a mapping OP: COUNT is needed", "write e.g. ops: {mul_relin: 10}")
        for item in ops:
            name, given, count = item.partition("=")
            if not name or (given and not count.isdigit()):  # `mul_relin=` counted 1 as if no count were given
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
            raise unknown_op(op, f"{where} field ops", "run `fhemark list ops` for the names (depth is asked with "
                                                       "depth:, not as an op)")
    return w


@dataclass
class Candidate:
    library: str
    scheme: str
    params: str
    threads: int = 1
    by_op: dict[str, Record] = field(default_factory=dict)
    depth_rec: Record | None = None
    excluded: str = ""
    copies: int = 1
    cost: float = 0.0
    cost_ci: tuple[float, float] = (0.0, 0.0)
    within_best: bool = False
    vs_best: FloorRatio | None = None  # its cost over the best's, from floors, with the interval for another run
    singles: dict[str, Record] = field(default_factory=dict)  # every measured op: what a cost model adds up
    modelled: list[str] = field(default_factory=list)  # workloads costed by the sum of their single ops
    needs: dict[str, int] = field(default_factory=dict)  # app workload -> levels (CKKS) / depth (BFV, BGV) it needs

    @property
    def label(self) -> str:
        return f"{self.library} {self.scheme.upper()} {self.params}" + (f" {self.threads} threads" if self.threads > 1 else "")

    @property
    def evidence(self) -> list[Record]:
        return list(self.by_op.values())

    @property
    def runs(self) -> list[str]:
        """The runs of the measured records behind the cost: a modelled workload's are those of the
        single ops it adds up."""
        return sorted({run for r in self.evidence for run in (r.run_ids if isinstance(r, Modelled) else [r.run_id])
                       if run})

    @property
    def deviations(self) -> dict[str, str]:
        """Ops whose measured time holds different work than the protocol's boundary (PROTOCOL.md)."""
        return {f"{op}/{prim}": text for op, r in self.by_op.items() for prim, text in r.deviations.items()}

    @property
    def worst_noise_budget(self) -> float | None:
        """The least noise budget left over the evidence (bits); None where none was measured."""
        return _least(r.noise_budget_bits for r in self.evidence)

    @property
    def worst_precision(self) -> float | None:
        """The least CKKS precision over the evidence (bits); None where none was measured."""
        return _least(r.precision_bits for r in self.evidence)

    def security_bits(self, table: str) -> int | None:
        """The weakest level over the evidence, in the asked table."""
        bits = [_security(r, table) for r in self.evidence]
        return None if not bits or None in bits else min(bits)


def _least(values) -> float | None:
    found = [v for v in values if v is not None]
    return min(found) if found else None


def _params_label(r: Record) -> str:
    p = r.params
    return p.get("name") or f"N={p['N']}"


def _security(r: Record, table: str) -> int | None:
    """The record's level in the asked table; bit schemes carry their library's stated target."""
    sec = r.security
    est = sec.get(table) or sec.get("library")
    return est.get("bits") if est else None


def _judge(c: Candidate, w: Workload) -> str:
    """Why a candidate cannot serve the workload ('' when it can)."""
    if c.scheme == "ckks" and (short := _levels_short(c)):
        return short  # a property of the parameter set: before what was or was not measured
    for op in w.ops:
        r = c.by_op.get(op)
        if r is None:
            return f"{op} not measured"
        if r.status != "ok" or r.check_passed is False:
            return f"{op}: {r.status}"
        if r.median_ns is None:
            return f"{op}: no timing"
        bits = _security(r, w.security_table)
        if bits is None or bits < w.min_security_bits:
            return f"security {bits if bits is not None else 'unknown'} bits < {w.min_security_bits} ({w.security_table})"
    if w.min_precision_bits is not None and c.scheme == "ckks":
        prec = c.worst_precision
        if prec is None or prec < w.min_precision_bits:
            return f"precision {prec if prec is None else f'{prec:.1f}'} bits < {w.min_precision_bits:g}"
    if w.depth and c.scheme in SCHEMES_RLWE:  # gate and integer schemes bootstrap every operation
        if c.depth_rec is None:
            return "multiplicative depth not measured (add depth_mul to the suite)"
        if c.depth_rec.status != "ok" or c.depth_rec.depth < w.depth:
            return f"measured depth {c.depth_rec.depth} < {w.depth}"
    if c.scheme in ("bfv", "bgv") and c.needs:
        op, need = max(c.needs.items(), key=lambda kv: kv[1])
        shown = _shown_depth(c)
        if need > shown:
            if shown or (c.depth_rec and c.depth_rec.status == "ok"):
                return f"{op} needs depth {need}, measured depth {shown}"
            if c.depth_rec:
                return f"{op} needs depth {need}, depth_mul: {c.depth_rec.status}"
            return f"{op} needs depth {need}: multiplicative depth not measured (add depth_mul to the suite)"
    return ""


def _passed(r: Record) -> bool:
    return r.status == "ok" and r.check_passed is not False and not isinstance(r, Modelled)


def _shown_depth(c: Candidate) -> int:
    """BFV/BGV: the multiplications in sequence this parameter set has been seen to decrypt correctly:
    depth_mul's measured depth, every measured and checked application workload's own need, and 1
    for a checked single multiplication (0: nothing shows any)."""
    from ..analyse.cost import requirement
    shown = [c.depth_rec.depth] if c.depth_rec and c.depth_rec.status == "ok" else []
    shown += [n for op, r in c.singles.items() if _passed(r) and (n := requirement(op, c.scheme))]
    shown += [1 for op in ("mul_relin", "mul_plain") if op in c.singles and _passed(c.singles[op])]
    return max(shown, default=0)


def _chain(c: Candidate) -> int | None:
    """CKKS: the levels the candidate's parameter set offers, from any of its records."""
    from ..analyse.cost import chain_levels
    return next((n for r in [*c.by_op.values(), *c.singles.values()] if (n := chain_levels(r)) is not None), None)


def _levels_short(c: Candidate) -> str:
    """CKKS: why the chain cannot hold one of the workload's applications ('' when it can). A
    measured, checked workload on a set whose chain is not recorded ran: that shows enough levels."""
    chain = _chain(c)
    for op, need in sorted(c.needs.items(), key=lambda kv: -kv[1]):
        if chain is not None and need > chain:
            return f"{op} needs {need} levels, {c.params} has {chain}"
        if chain is None and isinstance(c.by_op.get(op), Modelled):
            return f"{op} needs {need} levels, and {c.params}'s chain is not recorded"
    return ""


def _model_missing_workloads(c: Candidate, w: Workload) -> None:
    """An application workload (matvec_256, ...) this candidate never ran is costed by the sum of
    its steps' single-op medians, when the store has them all and the chain holds the program
    (CKKS); the measured workload, where it exists, is always used instead, and the candidate says
    which ones were modelled. The modelled record (`Modelled`) names its sources: the single-op
    records (run, job, median, count) it adds up."""
    from ..analyse.cost import MODEL_OP, predict
    from ..model.apps import app
    for op in w.ops:
        if op in c.by_op or not app(op) or not c.singles:
            continue
        singles = [r for r in c.singles.values() if _passed(r) and r.median_ns]
        if not singles:
            continue
        setup = singles[0].model_dump(include=set(_CARRIED))
        rec = singles[0].model_copy(update={"op": op, "status": "ok", "check_passed": None})  # what predict reads
        mid = predict(rec, singles, same_run=False)
        if mid.ns_levels is None:  # a single op missing, or more levels than the chain has
            continue
        # Level-aware: in the apps suite it put CKKS workloads at 0.70-0.95 of measured where the
        # flat sum read 0.44-0.77 (poly_7, logreg_16, similarity; README, Application workloads).
        lo, hi = (predict(rec, singles, same_run=False, figure=lambda r: median_bounds(r)[i]).ns_levels
                  for i in (0, 1))
        counts: dict[str, int] = {}
        for prim, n in mid.steps.items():
            counts[MODEL_OP.get(prim, prim)] = counts.get(MODEL_OP.get(prim, prim), 0) + n
        used = [r for r in singles if r.op in counts]
        c.by_op[op] = Modelled(**setup, op=op, status="ok", check_passed=None, median_ns=mid.ns_levels, ci95_ns=[lo, hi],
                               sources=[Source(op=r.op, count=counts[r.op], run_id=r.run_id, job_key=r.job_key,
                                               median_ns=r.median_ns) for r in used],
                               precision_bits=None, noise_budget_bits=None,  # not measured on the workload
                               deviations={k: v for r in used for k, v in r.deviations.items()})
        c.modelled.append(op)


# What a modelled workload's record keeps of its single ops' records: the setup, not the measurement.
_CARRIED = ("library", "scheme", "params", "effective_params", "threads", "slots", "vector_length", "security",
            "security_bits", "security_table", "insecure", "sizes_bytes")


class Ranking(list):
    """`recommend`'s answer: the candidates (usable ones by cost, then the excluded), and the cost
    model's error measured on the same evidence (`apps.cost.model_error`)."""

    def __init__(self, cands: list[Candidate], model_error):
        super().__init__(cands)
        self.model_error = model_error


def recommend(recs: list[Record], w: Workload) -> Ranking:
    """All candidates: the usable ones ranked by cost first, then the excluded ones."""
    from ..analyse.cost import model_error, requirement
    cands: dict[tuple, Candidate] = {}
    evidence = [amortised(r) if w.objective == "throughput" else r for r in latest(recs)
                if (not w.schemes or r.scheme in w.schemes) and _answers(r, w)]
    for r in evidence:
        # One candidate per parameter set as asked (not by name: two suites may reuse a name) and thread count.
        asked = json.dumps({k: v for k, v in r.params.items() if k != "log_qp"}, sort_keys=True)
        key = (r.library, r.scheme, asked, r.threads)
        c = cands.setdefault(key, Candidate(r.library, r.scheme, _params_label(r), r.threads or 1))
        if r.op == "depth_mul":
            c.depth_rec = r
            continue
        c.singles.setdefault(r.op, r)
        if r.op in w.ops:
            prev = c.by_op.get(r.op)
            # One record per op: the one over all slots (vector_length unset) wins over a swept length.
            if prev is None or (prev.vector_length and not r.vector_length):
                c.by_op[r.op] = r
    out = list(cands.values())
    for c in out:
        c.needs = {op: n for op in w.ops if (n := requirement(op, c.scheme))}
        _model_missing_workloads(c, w)
        c.excluded = _judge(c, w)
        if c.excluded:
            continue
        slots = min(r.slots or 1 for r in c.evidence)
        c.copies = math.ceil(w.slots / slots) if w.slots else 1
        c.cost = c.copies * sum(n * c.by_op[op].median_ns for op, n in w.ops.items())
        bounds = {op: median_bounds(r) for op, r in c.by_op.items()}
        c.cost_ci = (c.copies * sum(n * bounds[op][0] for op, n in w.ops.items()),
                     c.copies * sum(n * bounds[op][1] for op, n in w.ops.items()))
    usable = sorted((c for c in out if not c.excluded), key=lambda c: _floor_cost(c, w) or c.cost)
    if usable:
        best = usable[0]
        for c in usable:
            c.vs_best = _versus(c, best, w)
            near = c.vs_best.ci95[0] <= 1 if c.vs_best and c.vs_best.ci95 else c.cost_ci[0] <= best.cost_ci[1]
            # A candidate timed on different work is another case, never "indistinguishable" from the best.
            c.within_best = near and c.deviations == best.deviations
    return Ranking(usable + sorted((c for c in out if c.excluded), key=lambda c: c.label), model_error(evidence))


def _parts(c: Candidate, w: Workload) -> Parts | None:
    """The candidate's cost as the ops' samples, weighted by how often the workload runs each
    (None where an op was modelled or kept no samples, or under the throughput objective, whose
    cost is the host's rate: those costs have medians only)."""
    if w.objective == "throughput" or any(not c.by_op[op].samples_ns or isinstance(c.by_op[op], Modelled) for op in w.ops):
        return None
    return [(c.copies * n, c.by_op[op].samples_ns) for op, n in w.ops.items()]


def _floor_cost(c: Candidate, w: Workload) -> float | None:
    """What ranks candidates: the cost from each op's floor (analyse/ratios.py), where every op has samples."""
    parts = _parts(c, w)
    return sum(n * floor(x) for n, x in parts) if parts else None


def _versus(c: Candidate, best: Candidate, w: Workload) -> FloorRatio | None:
    a, b = _parts(c, w), _parts(best, w)
    return cost_ratio(a, b) if a and b else None


def _answers(r: Record, w: Workload) -> bool:
    """A record that answers the workload's objective on its cores. Depth is the same in either mode:
    it comes from the latency depth probes. Throughput's cores are the host's its k saturated."""
    if r.op == "depth_mul":
        return w.threads is None or (r.threads or 1) == w.threads
    if r.mode != w.objective:
        return False
    if w.objective == "throughput":
        return w.threads is None or r.throughput_cores == w.threads
    return w.threads is None or (r.threads or 1) == w.threads


def amortised(r: Record) -> Record:
    """A throughput record costed as the host's time per evaluation at saturation: 1 / its rate (its
    interval inverted); the time of one evaluation under that load stays as latency_ns (`Amortised`)."""
    if r.mode != "throughput" or r.status != "ok" or not r.throughput_per_s:
        return r
    ci = r.throughput_ci95
    return Amortised.model_validate({**r.model_dump(exclude_unset=True), "median_ns": 1e9 / r.throughput_per_s,
                                     "latency_ns": r.median_ns, "ci95_ns": [1e9 / ci[1], 1e9 / ci[0]] if ci else None,
                                     "min_ns": None, "max_ns": None})


def depth_note(cands: list[Candidate], w: Workload) -> str:
    """What was checked of the computation's depth, for the text and the JSON ('' where nothing
    of it applies: no BFV/BGV/CKKS candidate)."""
    if not any(c.scheme in SCHEMES_RLWE for c in cands):
        return ""
    needs: dict[str, set[str]] = {}
    for c in cands:
        for op, n in c.needs.items():
            needs.setdefault(op, set()).add(f"{n} level{'s' if n > 1 else ''}" if c.scheme == "ckks" else f"depth {n}")
    apps = ("; each application workload's own need was checked ("
            + ", ".join(f"{op}: {' / '.join(sorted(v))}" for op, v in needs.items()) + ")") if needs else ""
    if w.depth:
        return f"depth: {w.depth} multiplications in sequence checked against a measured depth_mul" + apps
    return ("depth: not checked (no depth given): the costs and checks are of single operations on fresh "
            "inputs; pass --depth (or depth: in the workload) with the multiplications in sequence your "
            "computation needs" + apps)


def ranking_json(cands: list[Candidate], w: Workload) -> dict:
    """The ranking as `fhemark recommend --json` writes it: every number with the run and job it
    came from (a modelled workload: its single ops' runs and jobs, and the records themselves under
    `sources`), what the cost models and its measured error, and what was checked of depth."""
    err = getattr(cands, "model_error", None)
    return {"workload": w.model_dump(),
            "ranked_by": "throughput: the host's time per evaluation at saturation (1 / evaluations a second, "
                         "records of mode throughput)" if w.objective == "throughput" else
                         "latency: the median time of one evaluation alone",
            "cost_model": err.json() if err is not None else None,
            "depth_check": depth_note(cands, w) or None,
            "candidates": [
                {"library": c.library, "scheme": c.scheme, "params": c.params, "excluded": c.excluded or None,
                 "cost_ns": c.cost if not c.excluded else None,
                 "cost_ci95_ns": c.cost_ci if not c.excluded else None,
                 "ciphertexts": c.copies, "within_best": c.within_best,
                 "ratio_to_best": c.vs_best.ratio if c.vs_best else None,
                 "ratio_to_best_ci95": c.vs_best.ci95 if c.vs_best else None, "deviations": c.deviations,
                 "needs": c.needs, "modelled": c.modelled, "runs": c.runs,
                 "evidence": {op: _evidence(r) for op, r in c.by_op.items()}} for c in cands]}


# What the JSON says of each op's record.
_EVIDENCE = ("run_id", "job_key", "median_ns", "ci95_ns", "security_bits", "security_table", "noise_budget_bits",
             "precision_bits", "deviations")


def _evidence(r: Record) -> dict:
    """The record's fields as the export writes them (null where it has none: a failed job has no
    deviations); a modelled workload's runs and jobs are its sources', which it lists."""
    held = r.model_dump(include=set(_EVIDENCE), exclude_unset=True)
    out = {k: held.get(k) for k in _EVIDENCE}
    if isinstance(r, Modelled):
        out.update(run_id=r.run_ids, job_key=r.job_keys, modelled=True, sources=[s.model_dump() for s in r.sources])
    return out
