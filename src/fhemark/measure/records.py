"""How an outcome becomes records: the export contract (docs/export.md), one record per timed
stage, with the parameters asked and built, both security tables, the checks and the statistics,
each made a Record (store/record.py) here, where it is laid out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from ..drivers.protocol import Capabilities, Effective
from ..errors import DriverError, UserError
from ..model.ops import BenchOp
from ..model.program import Program
from ..model import estimator as lattice
from ..model.security import TABLES, Estimate, bit_scheme_sets, deciding, estimates, judge, judge_weakest, ring_secret
from ..model.semantics import Plain
from ..plan.jobs import Group, Job
from ..plan.suites import Suite
from ..stats import summarize
from ..store.record import Record, checked
from .depth import DepthOutcome
from .prepared import Outcome, Prepared, total
from .throughput import ThroughputOutcome

Deviations = Callable[[list[str]], dict[str, str]]  # timed regions -> the deviations of the work in them


@dataclass(frozen=True)
class RecordContext:
    """What a record says beyond its job's outcome: the run, the suite, the driver it ran in."""

    suite: Suite
    run_id: str
    env: dict
    caps: Capabilities | None
    wraps: str | None
    peak_rss_bytes: int | None
    host_activity: dict | None  # what else ran on the host while the job did (measure/host.py)


def layout(job: Job, op: BenchOp, prep: Prepared | DriverError, out: Outcome | None, error: DriverError | None,
           ctx: RecordContext) -> list[Record]:
    """The job's records: one, or one per stage of a pipeline."""
    return [checked({**fields, "host_activity": ctx.host_activity}) for fields in _fields(job, op, prep, out, error, ctx)]


def _fields(job: Job, op: BenchOp, prep: Prepared | DriverError, out: Outcome | None, error: DriverError | None,
            ctx: RecordContext) -> list[dict]:
    base = _base(job, op, prep, ctx)
    if error is not None or out is None:
        return [_failure(base, job, op, prep, error or DriverError("internal", "no outcome"))]
    shared = _measured(base, job, prep, out, ctx)
    program = prep.programs[job.key]
    deviations = _deviations(job, program, ctx.caps)
    if isinstance(out, DepthOutcome):
        return [_depth(shared, job, op, program, out, deviations)]
    return _stages(shared, job, op, program, out, deviations)


def _base(job: Job, op: BenchOp, prep: Prepared | DriverError, ctx: RecordContext) -> dict[str, Any]:
    """What every record of a job says, measured or not: the case, the library and its build, the
    parameters asked and built and their security, the run."""
    caps = ctx.caps
    eff = prep.effective if isinstance(prep, Prepared) else None
    log_qp = eff.log_qp if eff else float(job.params.log_qp_nominal)
    bits = job.params.kind == "bits"
    mismatch = _param_mismatch(job, eff) if eff else []
    return {
        "library": job.library,
        "library_version": caps.library_version if caps else None,
        "driver_version": caps.driver_version if caps else None,
        "library_build": caps.build if caps else None,
        "wraps": ctx.wraps or None,
        "scheme": job.scheme,
        "params": {**job.params.wire(), "name": job.params.name, "log_qp": log_qp,
                   "log_qp_nominal": job.params.log_qp_nominal,
                   "N": eff.N if eff and bits else job.params.N},
        "effective_params": eff.model_dump() if eff else None,
        "params_match": not mismatch if eff else None,
        "params_mismatch": mismatch,
        **_security(job, eff, log_qp, ctx.suite),
        "p_fail_log2": eff.p_fail if eff else None,
        "slots": job.slots or (eff.slots if eff else job.params.slots(job.scheme)),
        "vector_length": job.slots,  # as the suite asked: null means every slot
        "threads": job.threads,  # as asked; what the driver says it uses, and whether the library uses it:
        "threads_used": caps.threads if caps else None,
        "threads_honoured": caps.threads_honoured if caps else None,
        "mode": job.policy.mode,  # latency: one evaluation at a time; throughput: k at once (throughput_*)
        **({"workload": op.facts} if op.facts else {}),
        "job_key": job.key,
        "suite": ctx.suite.name,
        "run_id": ctx.run_id,
        "timestamp": time.time(),
        "env": ctx.env,
    }


def _security(job: Job, eff: Effective | None, log_qp: float, suite: Suite) -> dict[str, Any]:
    """The security fields: of what the library built, or where its setup failed of what was asked
    (where a table applies); judged in the suite's table, with the lattice estimator's figure beside
    it (or deciding, where the table cannot judge the set: every TFHE-family set); bit schemes keep
    the library's own word under "library"."""
    bits = job.params.kind == "bits"
    if eff is not None:
        sec = security_of(job.params.kind, eff)
    else:
        sec = rlwe(job.params.N, log_qp, job.params.wire()) if not bits and job.params.preset is None else {}
    return verdict(sec, suite.security.table, suite.security.min_bits)


def verdict(sec: dict[str, Estimate], table: str, min_bits: int) -> dict[str, Any]:
    """A record's security fields from the tables' and the estimator's estimates (`sec`), judged in
    `table` against `min_bits`: a runner's job's, or a compiler's set the runner did not build."""
    table, est = deciding(sec, table, min_bits)
    sec = sec | ({table: est} if est is not None else {})
    return {
        "security_bits": est.bits if est is not None else None,
        "security_table": table,
        "security": {t: _security_entry(e) for t, e in sec.items()},
        "insecure": est is not None and est.bits < min_bits,
    }


def _security_entry(e: Estimate) -> dict[str, Any]:
    out: dict[str, Any] = {"bits": e.bits, "below_table": e.below_table}
    if e.estimated_bits is not None:
        out.update(estimated_bits=e.estimated_bits, attack=e.attack, judged_by=e.judged_by)
    return out | ({"note": e.note} if e.note else {})


def _failure(base: dict, job: Job, op: BenchOp, prep: Prepared | DriverError, err: DriverError) -> dict:
    """The one record of a job that failed: its kind and message, and nothing measured."""
    return {**base, "op": job.op, "title": op.title, "status": err.kind, "error": err.message, "refusal": err.refusal,
            "check_passed": False if err.kind == "wrong_result" else None, "samples_ns": [],
            "median_ns": None, "ci95_ns": None, "noise_budget_bits": None, "precision_bits": None,
            "sizes_bytes": dict(prep.sizes) if isinstance(prep, Prepared) else {}, "peak_rss_bytes": None,
            "driver_overhead_ns": None}


def _measured(base: dict, job: Job, prep: Prepared, out: Outcome, ctx: RecordContext) -> dict:
    """What every record of a measured job says: its checks, facts, memory and how sampling ended."""
    shared = {
        **base, "status": "ok", "error": None, "check_passed": True,
        "noise_budget_bits": min(out.noise) if out.noise else None,
        "precision_bits": min(out.precision) if out.precision else None,
        "max_abs_error": out.max_error if out.precision else None,
        "sizes_bytes": {**prep.sizes, **{f"output:{k}": v for k, v in out.sizes.items()}},
        "levels": out.levels,
        "peak_rss_bytes": ctx.peak_rss_bytes,
        "parallelism": out.cpu_ns / out.cpu_wall_ns if out.cpu_wall_ns > 0 else None,
        "driver_overhead_ns": float(np.median(out.overhead_ns)) if out.overhead_ns else None,
        "copies": out.copies, "iters": out.copies,  # iters: the export contract's older name
        "input_state": out.input_state or None,
        "stop_reason": out.stop_reason, "target_rel_ci": job.policy.target_rel_ci,
        "budget_s": job.policy.budget_s, "elapsed_s": out.elapsed_s, "notes": sorted(out.notes),
        "setup_s": prep.setup_s,
        "precision_bits_before": min(out.precision_before) if out.precision_before else None,
    }
    if isinstance(out, ThroughputOutcome):
        shared.update(out.throughput)
    if any(out.scalars):
        shared["sample_scalars"] = out.scalars  # per sample, per copy: e.g. the rotation steps drawn
    return shared


def _deviations(job: Job, program: Program, caps: Capabilities | None) -> Deviations:
    """What the library's timed work in some of the program's regions adds to or lacks from the
    canonical boundary."""
    devs = caps.schemes[job.scheme].deviations if caps and job.scheme in caps.schemes else {}

    def deviations(regions: list[str]) -> dict[str, str]:
        inside = Program(program.steps, regions, regions=program.regions).timed_primitives()
        return {p: devs[p] for p in inside if p in devs}
    return deviations


def _depth(shared: dict, job: Job, op: BenchOp, program: Program, out: DepthOutcome, deviations: Deviations) -> dict:
    """A depth probe's one record: the depth reached, what happened past it, the noise and precision
    at every depth that passed, and the time of the longest chain that decrypted."""
    return {**shared, "op": job.op, "title": op.title, "depth": out.depth, "depth_limit": out.depth_limit,
            "deviations": deviations(program.timed),
            "noise_by_depth": out.noise_by_depth, "check_passed": out.depth > 0,
            "precision_by_depth": out.precision[:out.depth],  # CKKS: after each multiplication that passed
            "precision_bits": out.precision[out.depth - 1] if out.depth and out.precision else None,
            "samples_ns": [s["chain"] for s in out.samples], "median_ns": None, "ci95_ns": None}


def _stages(shared: dict, job: Job, op: BenchOp, program: Program, out: Outcome, deviations: Deviations) -> list[dict]:
    """A timed job's records: one, or one per stage of a pipeline and its total."""
    if op.stages is None:  # one timed region, or several that make one operation (their sum)
        return [timed({**shared, "deviations": deviations(program.timed)}, job.op, op.title,
                       [total(s) for s in out.samples], [total(s) for s in out.warmup], out)]
    recs = []
    for stage, regions in {**op.stages, "total": tuple(program.timed)}.items():
        regions = [x for x in regions if x in program.timed]  # e.g. no rescale outside CKKS
        # every region is in every sample (checked.check_reply): no missing time reads as zero
        recs.append(timed({**shared, "deviations": deviations(regions)}, f"{job.op}/{stage}",
                           f"{op.title}: {stage}", [sum(s[x] for x in regions) for s in out.samples],
                           [sum(s[x] for x in regions) for s in out.warmup], out))
    return recs


def timed(shared: dict, op: str, title: str, samples: list[float], warmup: list[float], out: Outcome) -> dict:
    s = summarize(samples, out.process, out.round)
    slots = shared["slots"]
    return {**shared, "op": op, "title": title, "samples_ns": samples, "sample_process": out.process,
            "sample_round": out.round, "sample_tick": out.tick if len(out.tick) == len(samples) else [],
            "warmup_ns": warmup, "median_ns": s.median, "mean_ns": s.mean, "stdev_ns": s.stdev, "mad_ns": s.mad,
            "min_ns": s.min, "max_ns": s.max, "ci95_ns": list(s.ci95) if s.ci95 else None,
            "rel_ci_half_width": s.rel_ci_half_width, "ci_method": s.ci_method, "processes": s.processes,
            "process_medians_ns": list(s.process_medians),
            "outliers": {"mild": s.outliers_mild, "severe": s.outliers_severe},
            "ns_per_slot": s.median / slots if slots else None}


def failed(job: Job, run_id: str, status: str, why: str, suite: str = "") -> Record:
    """A job that failed before anything could be measured or laid out (its worker died, its
    computation could not be found): the case and why."""
    return checked({"library": job.library, "scheme": job.scheme, "op": job.op, "params": {**job.params.wire(),
                    "name": job.params.name}, "status": status, "error": why, "check_passed": None, "samples_ns": [],
                    "median_ns": None, "ci95_ns": None, "job_key": job.key, "run_id": run_id, "timestamp": time.time(),
                    "suite": suite, "vector_length": job.slots, "slots": job.slots, "env": {},
                    **({"workload": {"workload": job.workload.name, "file": job.workload.file,
                                     "file_sha256": job.workload.sha256}} if job.workload else {})})


def plain_of(g: Group, eff: Effective) -> Plain:
    """The plaintext arithmetic of a setup, from what the library reported."""
    if g.params.kind == "rlwe":
        return Plain(g.scheme, eff.slots, eff.t)
    modulus = {"tfhe_bool": 2, "tfhe_int": 1 << (g.params.bits or 64)}.get(g.scheme) or \
        int(getattr(eff, "message_modulus", None) or 4)
    return Plain(g.scheme, 1, modulus)


def security_of(kind: str, eff: Effective | None) -> dict[str, Estimate]:
    """RLWE: both tables, from the moduli the library built, each with the estimator's figure. Bit
    schemes: the estimator's verdict on the weakest of the LWE/GLWE problems the library's facts name
    (the same for both tables: none has a row for them), and the library's own stated target."""
    if kind == "rlwe":
        if eff is None:
            return {}
        at = judged_log_qp(eff)
        return rlwe(eff.N, at, eff.model_dump(), keys=at > eff.log_qp)
    if eff is None:
        return {}
    target = eff.security_bits_target
    out = {"library": Estimate("library", target, False, 0, judged_by="library")} if target else {}
    try:
        sets = bit_scheme_sets(eff.model_dump())
        judged = {t: judge_weakest(sets, t) for t in TABLES} if sets else {}
    except (KeyError, TypeError, ValueError, UserError):  # facts of an unexpected shape: the library's word alone
        judged = {}
    return out | judged


def judged_log_qp(eff: Effective) -> float:
    """The modulus a set's security is judged at: the largest any of its keys uses (`key_log_qp`,
    bootstrapping keys above the ciphertexts' Q·P), else Q·P."""
    return max(eff.log_qp, eff.key_log_qp or 0.0)


def rlwe(n: int, log_qp: float, facts: dict, keys: bool = False) -> dict[str, Estimate]:
    """Both tables' verdicts with the estimator's figure beside them (about 25 ms a new set, cached after);
    the tables' alone for a modulus too small to estimate, which a record must still be able to say.
    A sparse secret (`facts`: what the set asked or the driver reports) is in neither: the estimate's.
    `keys`: `log_qp` is a key's modulus above the ciphertexts' (judged_log_qp), and each verdict says so."""
    out = _rlwe(n, log_qp, facts)
    if not keys:
        return out
    said = f"judged at log QP {log_qp:g}, the largest modulus a key of the set uses (its bootstrapping keys)"
    return {t: replace(e, note=f"{said}; {e.note}" if e.note else said) for t, e in out.items()}


def _rlwe(n: int, log_qp: float, facts: dict) -> dict[str, Estimate]:
    try:
        secret = ring_secret(facts, n)
        if secret.kind != "ternary":
            return {t: judge(lattice.rlwe(n, max(log_qp, 1), secret), t) for t in TABLES}
    except (KeyError, ValueError, UserError):  # a sparse secret of unstated weight: judged by nothing, not by a table
        return {}
    try:
        return estimates(n, max(log_qp, 1), with_estimator=True)
    except ValueError:
        return estimates(n, max(log_qp, 1))


def _param_mismatch(job: Job, eff: Effective) -> list[str]:
    """Differences between what was asked and what the library really used."""
    want = job.params
    if want.preset is not None:  # the library chose the moduli: only N was asked for
        return [] if want.N == eff.N else [f"N: asked {want.N}, used {eff.N}"]
    diffs = []
    sigma = getattr(eff, "sigma", None)  # drivers report it where the library has one
    for name, a, b in (("N", want.N, eff.N), ("q_bits", list(want.q_bits), eff.q_bits),
                       ("p_bits", list(want.p_bits), eff.p_bits), ("t", want.t, eff.t),
                       ("scale_bits", want.scale_bits, eff.scale_bits),
                       ("sigma", want.sigma, sigma if sigma is not None else want.sigma),
                       ("hamming_weight", want.hamming_weight, getattr(eff, "hamming_weight", None))):  # sparse secrets
        if a != b and not (name in ("scale_bits", "sigma") and a is not None and b is not None and abs(a - b) < 1e-6):
            diffs.append(f"{name}: asked {a}, used {b}")
    return diffs
