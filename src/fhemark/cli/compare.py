"""`fhemark compare`: a run judged against a baseline, case by case, with regression exit statuses."""

from __future__ import annotations

from pathlib import Path

import typer

from ..analyse.compare import CASE_THRESHOLD, LIBRARY_THRESHOLD, Change, Comparison, compare
from ..analyse.versions import base_library
from ..errors import UserError
from ..report.text import print_comparison
from ..store import export as export_mod
from ..store.record import Record
from .application import app, console, fail, open_store, output, write_out
from .recheck import recheck


@app.command("compare")
def compare_cmd(base: str = typer.Argument(..., help="baseline: a name from `fhemark baseline save`, a run id or prefix, "
                                                "`latest` or `previous`"),
                new: str = typer.Argument("latest", help="run to judge (default: latest)"),
                db: Path = typer.Option(None, help="SQLite store of the new run"),
                base_db: Path = typer.Option(None, help="store of the baseline run (default: --db)"),
                threshold: float = typer.Option(CASE_THRESHOLD, min=0.0,
                                                help="a case's noise threshold: relative change ignored below it"),
                library_threshold: float = typer.Option(LIBRARY_THRESHOLD, min=0.0,
                                                        help="the same for a library's median over its cases"),
                alpha: float = typer.Option(0.05, min=0.0, max=1.0, help="significance of the bootstrap test on floors"),
                other_host: bool = typer.Option(False, help="compare runs measured on different hosts (marked)"),
                all_cases: bool = typer.Option(False, "--all", help="list unchanged cases too"),
                again: bool = typer.Option(False, "--recheck", help="measure the flagged cases once more (with a few "
                                           "steady controls, into a store beside --db): a case stays flagged only "
                                           "when the second measurement agrees"),
                versions: str = typer.Option(None, help="OLD,NEW: two versions of one library (openfhe@1.5.1,"
                                             "openfhe@1.6.1; a bare name is its pinned version): the baseline's cases "
                                             "of OLD against the new run's of NEW (both may be one run: "
                                             "`compare latest --versions ...`)"),
                json_out: Path = typer.Option(None, "--json", help="also write the verdicts as JSON")) -> None:
    """Judge a run against a baseline, case by case. Exit 0: nothing worse; 1: slower; 2: failed or not comparable."""
    if json_out:
        output(json_out, "--json")
    try:
        pair = _versions(versions) if versions is not None else None
        new_store = open_store(db)
        base_store = open_store(base_db) if base_db else new_store
        base_id, new_id = base_store.resolve_run(base), new_store.resolve_run(new)
        base_recs, base_env = list(base_store.records(base_id)), base_store.run_env(base_id)

        def judge(recs: list[Record], env: dict) -> Comparison:  # against the baseline, at these settings
            return compare(base_recs, recs, base_env, env, threshold, alpha, other_host, library_threshold, pair)
        result = judge(list(new_store.records(new_id)), new_store.run_env(new_id))
        if again:
            result = recheck(result, judge, new_store, new_id)
    except UserError as exc:
        fail(exc)
    print_comparison(result, base_id, new_id, console, all_cases)
    if json_out:
        write_out(json_out, export_mod.strict_json({
            "base_run": base_id, "new_run": new_id, "threshold": threshold,
            "library_threshold": library_threshold, "alpha": alpha,
            "cases": [_case(c) for c in result.changes],
            "libraries": [{"library": lib.library, "verdict": lib.verdict, "ratio": lib.ratio, "cases": lib.cases,
                           "p_value": lib.p_value, "shift": lib.shift, "why": lib.why} for lib in result.libraries],
            "machine_shift": result.shift_source, "versions": result.versions,
            "exit_status": result.exit_status}), "--json")
    raise typer.Exit(result.exit_status)


def _case(c: Change) -> dict:
    """One case of the JSON: what it is (from the new run's record, or the baseline's where the case is gone)."""
    r = c.new or c.base
    return {"case": c.label, "library": r.library, "scheme": r.scheme, "op": r.op, "vector_length": r.vector_length,
            "params": r.params.get("name") or r.params.get("N"),
            "verdict": c.verdict, "ratio": c.ratio, "ratio_ci95": c.ratio_ci,
            "p_value": c.p_value, "why": c.why, "base_median_ns": c.base.median_ns if c.base else None,
            "new_median_ns": c.new.median_ns if c.new else None, "job_key": r.job_key}


def _versions(text: str) -> tuple[str, str]:
    """`openfhe@1.5.1,openfhe@1.6.1` as (old, new): two names of one library."""
    names = [n.strip() for n in text.split(",")]
    if len(names) != 2 or not all(names) or names[0] == names[1] \
            or base_library(names[0]) != base_library(names[1]):
        raise UserError(f"--versions {text!r} does not name two versions of one library",
                        "pass --versions OLD,NEW, e.g. --versions openfhe@1.5.1,openfhe@1.6.1")
    return names[0], names[1]
