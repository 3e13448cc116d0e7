"""The `fhemark` command line."""

from __future__ import annotations

import hashlib
import json
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import export as export_mod
from .drivers import available, manifests
from .errors import DriverError, UserError
from .locations import default_db, project_root
from .metadata import environment
from .catalog import CATALOG
from .compare import compare
from .plan import build
from .recommend import load_workload, recommend
from . import report as report_files
from .report.text import print_comparison, print_recommendation, print_results
from .run import Runner
from .store import Store
from .suites import builtin_names, load
from .supervise import Driver

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Benchmark FHE libraries and schemes on this machine, with checked results.")
# Wide enough for the result table when output goes to a file or a CI log.
console = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


# What every --run option accepts (Store.resolve_run).
RUN_REF = "a run id or unique prefix, a baseline name, `latest` or `previous`"


def _fail(exc: UserError) -> None:
    err_console.print(f"[red]error:[/] {exc.line()}", highlight=False, soft_wrap=True)
    raise typer.Exit(exc.exit_code)


@app.command()
def run(suite: str = typer.Option("quick", help="built-in suite name or path to a YAML file"),
        db: Path = typer.Option(None, help="SQLite store (default ./fhemark.db or $FHEMARK_DB)"),
        resume: bool = typer.Option(False, help="continue the latest run of this suite, skipping finished jobs"),
        allow_insecure: bool = typer.Option(False, help="run parameter sets below the suite's security level, marked"),
        library: list[str] = typer.Option(None, help="only these libraries (repeatable)"),
        full: bool = typer.Option(False, help="add the suite's full_cases (long sweeps: hours)"),
        report: Path = typer.Option(None, help="report folder (default ./report/<suite>)")) -> None:
    """Plan, check, run, store and print a result table; write the report."""
    try:
        s = load(suite, full)
        plan = build(s, available(), allow_insecure, library or None, known=list(manifests()))
        store = Store(db or default_db())
    except UserError as exc:
        _fail(exc)
    for lib in plan.unavailable:
        err_console.print(f"skipped {lib}: {manifests()[lib].why_unavailable()}", highlight=False)
    plan_json = plan.to_json()
    suite_hash = hashlib.sha256(json.dumps(plan_json, sort_keys=True).encode()).hexdigest()[:16]
    env = environment(s.threads, project_root())
    skip: set[str] = set()
    prev = store.latest_run(suite_hash) if resume else None
    if prev:
        run_id = prev["run_id"]
        skip = store.done_keys(run_id)
        console.print(f"resuming run {run_id}: {len(skip)} of {len(plan.jobs)} jobs already done")
    else:
        if resume:
            console.print("nothing to resume for this suite: starting a new run")
        run_id = store.start_run(s.name, suite_hash, allow_insecure, env, plan_json)
    todo = [j for j in plan.jobs if j.key not in skip]
    failures: list[str] = []   # measurements that went wrong: exit status 1
    refusals: dict[str, str] = {}  # a library refusing a parameter set: reported once per setup, not a failure
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console, transient=False) as progress:
        task = progress.add_task(f"{s.name}", total=len(todo), last="")

        def on_record(job, recs) -> None:
            progress.update(task, advance=1, last=f"{job.library} {job.scheme} N={job.params.N} {job.op}")
            for r in recs[:1]:
                if r["status"] in ("invalid_params", "insecure_params"):
                    refusals.setdefault(f"{job.library} {job.scheme} {job.params.label()}", f"{r['status']}: {r['error']}")
                elif r["status"] not in ("ok", "unsupported"):
                    failures.append(f"{job.library} {job.scheme} N={job.params.N} {job.op}: "
                                    f"{r['status']}: {r['error']}")

        runner = Runner(plan, store, run_id, env, skip, on_record)
        try:
            runner.execute()
        except KeyboardInterrupt:
            store.close()
            err_console.print(f"interrupted: results so far are in {store.path}; "
                              f"continue with: fhemark run --suite {suite} --resume")
            raise typer.Exit(130)
    store.finish_run(run_id)
    recs = list(store.records(run_id))
    print_results(recs, console)
    for where, why in refusals.items():
        err_console.print(f"[yellow]not run:[/] {where}: {why}", highlight=False)
    for line in failures:
        err_console.print(f"[red]failed:[/] {line}", highlight=False)
    out = report or Path("report") / s.name
    files = report_files.write(recs, out, f"fhemark: suite {s.name}, run {run_id}", env)
    console.print(f"stored in {store.path} (run {run_id}); report: {files[0]} and {files[1]}")
    store.close()
    if failures:
        raise typer.Exit(1)


class ListWhat(str, Enum):
    libraries = "libraries"
    schemes = "schemes"
    ops = "ops"
    suites = "suites"


def _capabilities() -> dict[str, dict | str]:
    """Ask every available driver what it can do (its own answer, not a list kept here)."""
    out: dict[str, dict | str] = {}
    for name, m in manifests().items():
        if not m.available:
            out[name] = m.why_unavailable()
            continue
        d = Driver(m)
        try:
            out[name] = d.request("capabilities", timeout_s=120)
        except DriverError as exc:
            out[name] = f"{exc.kind}: {exc.message}"
        finally:
            d.stop()
    return out


@app.command("list")
def list_(what: ListWhat) -> None:
    """What is available here: libraries, schemes, ops, suites."""
    if what is ListWhat.suites:
        for name in builtin_names():
            try:
                console.print(f"{name:10} {load(name).description}")
            except UserError as exc:
                console.print(f"{name:10} (invalid: {exc.line()})")
        return
    caps = _capabilities()
    if what is ListWhat.libraries:
        for name, c in caps.items():
            if isinstance(c, str):
                console.print(f"{name:10} unavailable: {c}")
            else:
                console.print(f"{name:10} {c['library_version']:12} schemes: {', '.join(c['schemes'])}; "
                              f"threads {c['threads']}; driver {c['driver_version']}")
    elif what is ListWhat.schemes:
        schemes: dict[str, list[str]] = {}
        for name, c in caps.items():
            if not isinstance(c, str):
                for sch in c["schemes"]:
                    schemes.setdefault(sch, []).append(name)
        for sch, libs in sorted(schemes.items()):
            console.print(f"{sch:8} {', '.join(libs)}")
    else:
        libs = {n: c for n, c in caps.items() if not isinstance(c, str)}
        for name, op in CATALOG.items():
            support = []
            for lib, c in libs.items():
                ok = [sch for sch in op.schemes if sch in c["schemes"]
                      and op.program(sch).primitives() <= set(c["schemes"][sch]["ops"])]
                if ok:
                    support.append(f"{lib}: {'/'.join(s.upper() for s in ok)}")
            console.print(f"{name:20} {op.title:50} {'; '.join(support) or 'no driver here'}")
        console.print("workloads (Study 4), by name: multiadd_<n>x<bits> (sum of n integers), compare_<bits> (X < Y):"
                      " tfhe_bool netlists, tfhe_int native ops, BFV/BGV word-wise additions")


@app.command()
def env() -> None:
    """The environment record attached to every result."""
    print(json.dumps(environment(1, project_root()), indent=2))


class Format(str, Enum):
    json = "json"
    csv = "csv"


def _open(db: Path | None) -> Store:
    path = db or default_db()
    if not path.exists():
        raise UserError(f"store {path} does not exist", "run `fhemark run` first or pass --db")
    return Store(path)


@app.command()
def export(db: Path = typer.Option(None, help="SQLite store"),
           format: Format = typer.Option(Format.json, "--format"),
           run_id: Optional[str] = typer.Option(None, "--run", help=f"only this run: {RUN_REF}"),
           out: Path = typer.Option(None, help="write to this file instead of stdout")) -> None:
    """All results, one record per measurement."""
    try:
        store = _open(db)
        recs = export_mod.records(store, store.resolve_run(run_id))
    except UserError as exc:
        _fail(exc)
    text = export_mod.to_json(recs) if format is Format.json else export_mod.to_csv(recs)
    if out:
        out.write_text(text)
    else:
        sys.stdout.write(text + ("\n" if not text.endswith("\n") else ""))


@app.command()
def report(db: Path = typer.Option(None, help="SQLite store"),
           out: Path = typer.Option(Path("report"), help="folder for report.md, report.html, csv/ and plots/"),
           run_id: Optional[str] = typer.Option(None, "--run",
                                                help=f"only this run: {RUN_REF} (default: newest result of every job)"),
           suite: Optional[str] = typer.Option(None, help="only this suite's runs")) -> None:
    """Markdown, HTML and CSV tables in the studies' layout, and figures."""
    try:
        store = _open(db)
        recs = [r for r in store.records(store.resolve_run(run_id))
                if suite is None or r["suite"] == suite]
    except UserError as exc:
        _fail(exc)
    if not recs:
        _fail(UserError("no results match", "check --run/--suite against `fhemark export`"))
    files = report_files.write(recs, out, f"fhemark report{f': suite {suite}' if suite else ''}",
                               recs[-1].get("env", {}))
    console.print(f"wrote {files[0]}, {files[1]} and {len(files) - 2} CSV tables and figures")


@app.command()
def runs(db: Path = typer.Option(None, help="SQLite store")) -> None:
    """The runs in the store, oldest first: ids for --run and compare."""
    try:
        store = _open(db)
    except UserError as exc:
        _fail(exc)
    names: dict[str, list[str]] = {}
    for name, run_id in store.baselines().items():
        names.setdefault(run_id, []).append(name)
    for r in store.runs():
        state = "finished" if r["finished"] else "unfinished (resume with --resume)"
        tag = f"  baseline: {', '.join(names[r['run_id']])}" if r["run_id"] in names else ""
        console.print(f"{r['run_id']}  {r['suite']:10} {r['results']:5} results  {state}{tag}", highlight=False)


baseline_app = typer.Typer(no_args_is_help=True, help="Named, immutable references for `fhemark compare`.")
app.add_typer(baseline_app, name="baseline")


@baseline_app.command("save")
def baseline_save(name: str = typer.Argument(..., help="the baseline's name, e.g. seal-4.1-main"),
                  run_id: str = typer.Option("latest", "--run", help=f"run to name: {RUN_REF}"),
                  db: Path = typer.Option(None, help="SQLite store")) -> None:
    """Name a run; compare against the name later (`fhemark compare NAME`). A name is never moved."""
    try:
        store = _open(db)
        target = store.resolve_run(run_id)
        store.save_baseline(name, target)
    except UserError as exc:
        _fail(exc)
    console.print(f"baseline {name} = run {target}", highlight=False)


@baseline_app.command("list")
def baseline_list(db: Path = typer.Option(None, help="SQLite store")) -> None:
    """The named baselines and their runs."""
    try:
        store = _open(db)
    except UserError as exc:
        _fail(exc)
    for name, run_id in store.baselines().items():
        console.print(f"{name:24} {run_id}", highlight=False)


@baseline_app.command("drop")
def baseline_drop(name: str, db: Path = typer.Option(None, help="SQLite store")) -> None:
    """Delete a name (the run and its results stay)."""
    try:
        _open(db).drop_baseline(name)
    except UserError as exc:
        _fail(exc)
    console.print(f"dropped baseline {name}", highlight=False)


@app.command("compare")
def compare_cmd(base: str = typer.Argument(..., help="baseline: a name from `fhemark baseline save`, a run id or prefix, "
                                                "`latest` or `previous`"),
                new: str = typer.Argument("latest", help="run to judge (default: latest)"),
                db: Path = typer.Option(None, help="SQLite store of the new run"),
                base_db: Path = typer.Option(None, help="store of the baseline run (default: --db)"),
                threshold: float = typer.Option(0.02, min=0.0, help="noise threshold: relative change ignored below it"),
                alpha: float = typer.Option(0.05, min=0.0, max=1.0, help="significance level of the rank test"),
                other_host: bool = typer.Option(False, help="compare runs measured on different hosts (marked)"),
                all_cases: bool = typer.Option(False, "--all", help="list unchanged cases too"),
                json_out: Path = typer.Option(None, "--json", help="also write the verdicts as JSON")) -> None:
    """Judge a run against a baseline, case by case. Exit 0: nothing worse; 1: slower; 2: failed or not comparable."""
    try:
        new_store = _open(db)
        base_store = _open(base_db) if base_db else new_store
        base_id, new_id = base_store.resolve_run(base), new_store.resolve_run(new)
        result = compare(list(base_store.records(base_id)), list(new_store.records(new_id)),
                         base_store.run_env(base_id), new_store.run_env(new_id), threshold, alpha, other_host)
    except UserError as exc:
        _fail(exc)
    print_comparison(result, base_id, new_id, console, all_cases)
    if json_out:
        json_out.write_text(json.dumps([{"case": c.label, "verdict": c.verdict, "ratio": c.ratio,
                                         "ratio_ci95": c.ratio_ci, "p_value": c.p_value, "why": c.why,
                                         "base_median_ns": (c.base or {}).get("median_ns"),
                                         "new_median_ns": (c.new or {}).get("median_ns"),
                                         "job_key": (c.new or c.base)["job_key"]} for c in result.changes], indent=1))
    raise typer.Exit(result.exit_status)


@app.command("recommend")
def recommend_cmd(workload: Optional[Path] = typer.Argument(None, help="workload YAML (ops: {mul_relin: 10, ...}, ...)"),
                  op: list[str] = typer.Option(None, help="OP=COUNT per evaluation (repeatable; adds to the file's ops)"),
                  scheme: list[str] = typer.Option(None, help="only these schemes (repeatable)"),
                  min_security: Optional[int] = typer.Option(None, help="security bits required (default 128)"),
                  table: Optional[str] = typer.Option(None, help="security table: hestd2018 or guidelines2024"),
                  precision: Optional[float] = typer.Option(None, help="CKKS: precision bits required"),
                  depth: Optional[int] = typer.Option(None, help="multiplicative depth required (measured by depth_mul)"),
                  slots: Optional[int] = typer.Option(None, help="values processed together"),
                  db: Path = typer.Option(None, help="SQLite store"),
                  run_id: Optional[str] = typer.Option(None, "--run",
                                                       help=f"only this run: {RUN_REF} (default: the whole store)"),
                  json_out: Path = typer.Option(None, "--json", help="also write the ranking as JSON")) -> None:
    """Rank library / scheme / parameter set for a workload from the measured, checked results in the store."""
    try:
        w = load_workload(workload, op or [], {"schemes": scheme or None, "min_security_bits": min_security,
                                               "security_table": table, "min_precision_bits": precision,
                                               "depth": depth, "slots": slots})
        store = _open(db)
        recs = list(store.records(store.resolve_run(run_id)))
    except UserError as exc:
        _fail(exc)
    cands = recommend(recs, w)
    print_recommendation(cands, w, console)
    if json_out:
        json_out.write_text(json.dumps({"workload": w.model_dump(), "candidates": [
            {"library": c.library, "scheme": c.scheme, "params": c.params, "excluded": c.excluded or None,
             "cost_ns": c.cost if not c.excluded else None, "cost_ci95_ns": c.cost_ci if not c.excluded else None,
             "ciphertexts": c.copies, "within_best": c.within_best, "deviations": c.deviations,
             "evidence": {op: {k: r.get(k) for k in ("run_id", "job_key", "median_ns", "ci95_ns", "security_bits",
                                                     "security_table", "noise_budget_bits", "precision_bits",
                                                     "deviations")}
                          for op, r in c.by_op.items()}} for c in cands]}, indent=1))
    raise typer.Exit(0 if any(not c.excluded for c in cands) else 1)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
