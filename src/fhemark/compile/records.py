"""A compiled row as a record of the store (store/record.py): the contract, the summary
(measure/records.timed) and the security verdict (measure/records.verdict) of a hand-written row,
so that report, export and compare read `heir->lattigo` as they read any library.

`library_build.fhe_compiler` names the compiler (a driver's `compiler` is its language's: Go's gc);
where the row's parameters came from is `library_build.params_from` ("heir": HEIR's own choice;
"fhemark:<set>": the set choose verified for hand-written Lattigo, given to HEIR), with the compile
and build seconds beside it; `params` is the set that ran, as a hand row's names it."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from ..measure.prepared import Outcome
from ..measure.records import timed, verdict
from ..model.workload import Workload
from ..store.record import Record, checked
from ..store.sqlite import Store
from . import heir, tfhe_rs
from .measure import LATTIGO_VERSION, Row

COLD_NOTE = ("cold inputs: every sample's operands encrypted and preprocessed before the first timed call "
             "of its batch (drivers/heir/harness.go.in)")


@dataclass(frozen=True)
class Context:
    """The run the records join (choose's own, so one report holds the hand and compiled rows)."""

    run_id: str
    suite: str
    env: dict
    table: str = "hestd2018"
    min_bits: int = 128


def params(row: Row) -> dict:
    """The set that ran, as a hand row's `params` names one: fhemark's as given, or HEIR's primes'
    sizes to the nearest bit (HEIR's primes near 2^45, above or below, are 'q_bits 45', as a hand set
    asks for them)."""
    sp = row.scheme
    if row.given is not None:
        g = row.given
        return {**g.wire(), "name": g.label(), "log_qp": sp.get("log_qp", g.log_qp_nominal),
                "log_qp_nominal": g.log_qp_nominal, "N": g.N}
    bits = [round(b) for b in sp.get("log_q", [])], [round(b) for b in sp.get("log_p", [])]
    nominal = sum(bits[0]) + sum(bits[1])
    # named for its ring and size: HEIR picks a set per workload, and a report groups by the name
    return {"N": sp.get("N"), "q_bits": bits[0], "p_bits": bits[1], "scale_bits": sp.get("scale_bits"),
            "name": f"heir's N={sp.get('N')},logQP={nominal}", "log_qp": sp.get("log_qp"), "log_qp_nominal": nominal}


def as_record(row: Row, w: Workload, ctx: Context) -> Record:
    """The row's record: measured (every sample checked; a wrong one makes it `wrong_result`), or the
    status and HEIR's (or the harness's) one line where it did not run."""
    sp, lib = row.scheme, row.library
    key = hashlib.sha256("\0".join([lib, w.name, w.sha256, row.params_from]).encode()).hexdigest()[:16]
    build = {"fhe_compiler": "heir", "heir_py": heir.HEIR_PY_VERSION, "params_from": row.params_from,
             "compile_s": row.compile_s, "build_s": row.build_s}
    base = {
        "library": lib, "library_version": heir.HEIR_PY_VERSION,
        "library_build": build | {"backend": "lattigo", "lattigo": LATTIGO_VERSION},
        "scheme": "ckks", "op": w.name, "title": w.title or w.name, "params": params(row),
        "effective_params": {k: sp[k] for k in ("N", "q", "p", "log_q", "log_p", "log_qp", "scale_bits", "levels",
                                                 "slots") if k in sp} or None,
        "slots": sp.get("slots"), "threads": 1, "threads_used": 1, "threads_honoured": True,  # GOMAXPROCS=1
        "workload": {"workload": w.name, "variant": "compiled", "instances": 1,
                     **({"file": w.source, "file_sha256": w.sha256} if w.source else {}), **w.facts},
        "job_key": f"{lib}:{key}", "suite": ctx.suite, "run_id": ctx.run_id, "timestamp": time.time(),
        "env": ctx.env, **(verdict(row.security, ctx.table, ctx.min_bits) if row.security else {}),
        "sizes_bytes": dict(row.key_bytes), "setup_s": row.setup_s, "peak_rss_bytes": row.peak_rss_bytes,
        "status": row.status, "error": row.error or None,
    }
    if lib == tfhe_rs.LIBRARY:  # an integer row: TFHE-rs's set and HEIR's bootstraps, no CKKS ring
        own = tfhe_rs.record_fields(row)
        base |= own | {"library_build": build | own["library_build"]}
    if not row.samples_ns:
        return checked({**base, "check_passed": False if row.status == "wrong_result" else None})
    n = len(row.samples_ns)
    cold = tfhe_rs.COLD_NOTE if lib == tfhe_rs.LIBRARY else COLD_NOTE
    measured = {**base, "check_passed": row.wrong == 0, "precision_bits": row.precision_bits,
                "max_abs_error": row.max_abs_error, "input_state": "cold", "copies": 1, "iters": 1,
                "notes": [cold, f"{row.checked} samples decrypted and checked, warm-ups included; "
                                     f"{row.wrong} wrong"]}
    return checked(timed(measured, w.name, w.title or w.name, [float(x) for x in row.samples_ns],
                         [float(x) for x in row.warmup_ns], Outcome(process=[0] * n, round=[0] * n)))


def store_rows(rows: list[Row], w: Workload, store: Store, ctx: Context) -> list[Record]:
    """Each row's record, added to `store` under the context's run."""
    recs = [as_record(r, w, ctx) for r in rows]
    for rec in recs:
        store.add(ctx.run_id, rec.job_key, rec)
    return recs


def context(store: Store, run_id: str | None, w: Workload, table: str, min_bits: int) -> Context:
    """The context of the run choose measured in (`run_id`), or of a run of the compiled rows alone
    where choose measured nothing (no set verified), its environment recorded as every run's."""
    if run_id is not None:
        suite = next((r["suite"] for r in store.runs() if r["run_id"] == run_id), f"choose {w.name}")
        return Context(run_id, suite, store.run_env(run_id), table, min_bits)
    from ..locations import project_root
    from ..measure.metadata import environment
    env, suite = environment(1, project_root()), f"choose {w.name} --compilers heir"
    run_id = store.start_run(suite, hashlib.sha256(suite.encode()).hexdigest()[:16], False, env, {})
    store.finish_run(run_id)
    return Context(run_id, suite, env, table, min_bits)
