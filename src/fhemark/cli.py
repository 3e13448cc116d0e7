"""The `fhemark` command line."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import tempfile
import time
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.markup import escape
from rich.text import Text
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperGroup

from . import build as drivers_build
from . import export as export_mod
from .drivers import available, manifests
from .errors import DriverError, UserError
from .locations import default_db, project_root, settle_environment
from .metadata import environment
from .catalog import CATALOG
from .compare import compare
from .plan import MAX_ESTIMATE_S, MAX_JOBS, build, check_size
from .recommend import load_workload, ranking_json, recommend
from . import report as report_files
from .report.tables import timed_seconds
from .report.text import print_comparison, print_recommendation, print_results
from .measure.runner import Runner
from .store import Store
from .suites import builtin_names, load
from .supervise import Driver

# Exit status of a bug in fhemark itself (never of bad input: that is 2, one line).
INTERNAL_ERROR = 3


def _say_error(line: str) -> None:
    """The one line bad input gets on stderr; user text is never read as console markup."""
    err_console.print(Text.assemble(("error:", "red"), " ", " ".join(line.split())), highlight=False, soft_wrap=True)


class _Commands(TyperGroup):
    """Every command's way out: a UserError (bad input, an unusable store or output path) is one line
    and exit status 2; a wrong flag or argument is one line too; a bug is one line and status 3
    (FHEMARK_DEBUG=1 shows its traceback). Nothing reaches the user as a traceback."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            settle_environment()
            code = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                                **extra)
        except NoArgsIsHelpError as exc:
            console.print(exc.ctx.get_help(), markup=False, highlight=False)
            code = 0
        except ClickException as exc:
            where = getattr(getattr(exc, "ctx", None), "command_path", None) or "fhemark"
            _say_error(f"{exc.format_message().rstrip('.')}; see `{where} --help`")
            code = 2
        except UserError as exc:
            _say_error(exc.line())
            code = exc.exit_code
        except typer.Abort:
            _say_error("aborted")
            code = 1
        except BrokenPipeError:  # e.g. `fhemark export | head`: the reader left, nothing is wrong
            try:  # Python's own flush at exit would complain about the closed pipe
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError, AttributeError):
                pass
            code = 0
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if os.environ.get("FHEMARK_DEBUG"):
                raise
            _say_error(f"internal error: {type(exc).__name__}: {exc}; this is a bug in fhemark: "
                       "rerun with FHEMARK_DEBUG=1 to see where, and report it")
            code = INTERNAL_ERROR
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(add_completion=False, no_args_is_help=True, cls=_Commands, pretty_exceptions_enable=False,
                  help="Benchmark FHE libraries and schemes on this machine, with checked results.")


def _version(value: bool) -> None:
    if value:
        from . import __version__
        console.print(f"fhemark {__version__}", markup=False, highlight=False)
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print fhemark's version and exit")) -> None:
    """Benchmark FHE libraries and schemes on this machine, with checked results."""
# Wide enough for the result table when output goes to a file or a CI log.
console = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


# What every --run option accepts (Store.resolve_run).
RUN_REF = "a run id or unique prefix, a baseline name, `latest` or `previous`"


def _fail(exc: UserError) -> None:
    raise exc


def _output(path: Path, option: str) -> Path:
    """An output file the user named: its folder must exist (checked before any work is done)."""
    if path.is_dir():
        raise UserError(f"{option} {path}: is a folder", f"give {option} a file path, e.g. {path / 'out.json'}")
    parent = path.parent
    if not parent.is_dir():
        raise UserError(f"{option} {path}: folder '{parent}' does not exist", "create it first or choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{option} {path}: folder '{parent}' is not writable", "choose another path")
    return path


def _write_out(path: Path, text: str, option: str) -> None:
    """Write under a temporary name in the same folder, then rename: never half a file."""
    _output(path, option)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        raise UserError(f"{option} {path}: writing failed ({exc.strerror or exc})", "free some space or choose another path")


def _again(suite: str, db: Path | None, full: bool, allow_insecure: bool, library: list[str] | None,
           report: Path | None, yes: bool, cluster: str | None = None, workloads: list[Path] | None = None,
           params: list[str] | None = None) -> str:
    """The command that continues this run: the same plan (flags included) and the same store."""
    parts = ["fhemark", "run"] + ([x for f in workloads for x in ("--workload", str(f))] if workloads else ["--suite", suite])
    parts += [x for p in params or [] for x in ("--params", p)]
    parts += ["--full"] if full else []
    parts += ["--allow-insecure"] if allow_insecure else []
    for lib in library or []:
        parts += ["--library", lib]
    parts += ["--db", str(db)] if db else []
    parts += ["--report", str(report)] if report else []
    parts += ["--yes"] if yes else []
    parts += ["--cluster", cluster] if cluster else []
    return shlex.join(parts + ["--resume"])


def _param_arg(text: str) -> str | dict:
    """A --params value: a preset name, or an inline set as the suites write it ({N: 8192, q_bits: [...], ...})."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"--params {text!r}: not a YAML mapping ({' '.join(str(exc).split())[:120]})",
                        "write e.g. --params '{N: 8192, q_bits: [50, 40, 40], p_bits: [60], scale_bits: 40}'")
    if not isinstance(value, dict):
        raise UserError(f"--params {text!r}: not a mapping", "write e.g. --params '{N: 8192, q_bits: [50, 40], p_bits: [60]}'")
    return value


def _jobs(n: int) -> str:
    return f"{n} job" + ("" if n == 1 else "s")


def _resumable(store: Store, name: str, suite_hash: str, job_keys: set[str]) -> dict | None:
    """The run --resume continues: the newest of this exact plan; or, when the suite file changed in a way
    that changed no job (a description, a comment), the newest of the suite. A changed plan is refused."""
    prev = store.latest_run(suite_hash)
    if prev is not None:
        return prev
    other = store.latest_run_of_suite(name)
    if other is None:
        console.print(f"nothing to resume: {store.path} has no run of suite '{name}'; starting a new run",
                      markup=False, highlight=False)
        return None
    old = store.plan_keys(other["run_id"])
    if old == job_keys:
        console.print(f"suite '{name}' was edited since run {other['run_id']}, but every job is the same: resuming it",
                      markup=False, highlight=False)
        return other
    raise UserError(f"--resume: suite '{name}' changed since its run {other['run_id']} in {store.path} "
                    f"({_jobs(len(job_keys - old))} new or changed, {_jobs(len(old - job_keys))} gone), so that run cannot be "
                    "continued", "run without --resume to start a new run, or undo the change (same suite file and "
                    "--library, --allow-insecure, --full flags) to continue the old one")


@app.command()
def run(suite: str = typer.Option("quick", help="built-in suite name or path to a YAML file"),
        db: Path = typer.Option(None, help="SQLite store (default ./fhemark.db or $FHEMARK_DB)"),
        resume: bool = typer.Option(False, help="continue the latest run of this suite, skipping finished jobs"),
        allow_insecure: bool = typer.Option(False, help="run parameter sets below the suite's security level, marked"),
        library: list[str] = typer.Option(None, help="only these libraries (repeatable)"),
        full: bool = typer.Option(False, help="add the suite's full_cases (long sweeps: hours)"),
        report: Path = typer.Option(None, help="report folder (default ./report/<suite>)"),
        yes: bool = typer.Option(False, "--yes", help=f"start a plan above {MAX_JOBS} jobs or "
                                                      f"{MAX_ESTIMATE_S / 3600:.0f} h without asking"),
        build_drivers: bool = typer.Option(True, "--build/--no-build",
                                           help="build the drivers this suite needs that are not built yet"),
        cluster_spec: Optional[str] = typer.Option(None, "--cluster",
                                                   help="run on Dask workers: local:N (this machine) or tcp://HOST:PORT "
                                                        "(a scheduler); one benchmark per host at a time"),
        workload: list[Path] = typer.Option(None, "--workload",
                                            help="a workload file of your own (Python, see the README): run it instead "
                                                 "of a suite, on every library and scheme that can (repeatable)"),
        params: list[str] = typer.Option(None, "--params", help="with --workload: these presets (default: the smallest "
                                                                "common preset that holds the program)")) -> None:
    """Plan, check, run, store and print a result table; write the report."""
    # Everything that can be refused is refused here, before a job runs or a byte is stored.
    if workload:
        from .choose import preset_suite
        from .workload import load as load_workloads
        s = preset_suite([w for f in workload for w in load_workloads(f)], [_param_arg(p) for p in params or []] or None)
    elif params:
        raise UserError("--params is for --workload", "give the parameter sets in the suite file")
    else:
        s = load(suite, full)
    known = manifests()
    for lib in library or []:
        if lib not in known:
            raise UserError(f"--library {lib}: unknown library", f"use one of {', '.join(known) or 'none'}")
    if build_drivers:  # the first run of a suite builds what it uses (TFHE-rs only when asked for)
        drivers_build.build_needed(s, err_console, library or None)
    plan = build(s, available(), allow_insecure, library or None, known=list(known))
    out = report or Path("report") / report_files.safe_name(s.name)
    report_files.check_out(out)
    store = Store(db or default_db())
    again = _again(suite, db, full, allow_insecure, library, report, yes, cluster_spec, workload, params)
    plan_json = plan.to_json()
    suite_hash = hashlib.sha256(json.dumps(plan_json, sort_keys=True).encode()).hexdigest()[:16]
    jobs = plan.jobs
    prev = _resumable(store, s.name, suite_hash, {j.key for j in jobs}) if resume else None
    skip = store.done_keys(prev["run_id"]) if prev else set()
    todo = [j for j in jobs if j.key not in skip]
    size, large = check_size(todo, store.job_seconds(), yes)
    if large:  # asked for with --yes: still say how big it is
        console.print(f"plan: {size}", markup=False, highlight=False)
    for lib in plan.unavailable:  # said once nothing can be refused any more
        err_console.print(f"skipped {lib}: {known[lib].why_unavailable()}", highlight=False, markup=False)
    env = environment(s.threads, project_root())
    if prev:
        run_id = prev["run_id"]
        console.print(f"resuming run {run_id}: {len(skip)} of {len(jobs)} jobs already done", highlight=False)
    else:
        run_id = store.start_run(s.name, suite_hash, allow_insecure, env, plan_json)
    failures: list[str] = []   # measurements that went wrong: exit status 1
    refusals: dict[str, str] = {}  # a library refusing a parameter set: reported once per setup, not a failure
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}", markup=False), console=console, transient=False) as progress:
        task = progress.add_task(escape(s.name), total=len(todo), last="")

        def on_record(job, recs) -> None:
            progress.update(task, advance=1, last=f"{job.library} {job.scheme} N={job.params.N} {job.op}")
            for r in recs[:1]:
                if r["status"] in ("invalid_params", "insecure_params"):
                    refusals.setdefault(f"{job.library} {job.scheme} {job.params.label()}", f"{r['status']}: {r['error']}")
                elif r["status"] not in ("ok", "unsupported"):
                    failures.append(f"{job.library} {job.scheme} N={job.params.N} {job.op}: "
                                    f"{r['status']}: {r['error']}")

        client = None
        started = time.monotonic()
        try:
            if cluster_spec:
                from . import cluster
                client = cluster.connect(cluster_spec)
                cluster.execute(plan, client, run_id, store, skip, on_record)
            else:
                Runner(plan, store, run_id, env, skip, on_record).execute()
        except KeyboardInterrupt:
            store.close()
            err_console.print(f"interrupted: results so far are in {store.path}; continue with: {again}",
                              highlight=False, markup=False, soft_wrap=True)
            raise typer.Exit(130)
        except UserError as exc:  # the store failed (full disk, read-only): what was stored before stays
            store.close()
            raise UserError(exc.problem, f"{exc.fix}; then continue with: {again}")
        finally:
            if client is not None:
                cluster_obj = getattr(client, "cluster", None)
                client.close()
                if cluster_obj is not None:  # a LocalCluster this run started
                    cluster_obj.close()
    store.finish_run(run_id)
    wall = time.monotonic() - started
    recs = list(store.records(run_id))
    print_results(recs, console)
    if wall > 0 and not skip:
        timed = timed_seconds(recs)
        console.print(f"time inside timed regions: {timed:.1f} s of the run's {wall:.0f} s ({100 * timed / wall:.0f}%); "
                      "the rest is setups and keys, fresh inputs encoded and encrypted, outputs decrypted and checked",
                      highlight=False, markup=False)
    for where, why in refusals.items():
        err_console.print(Text.assemble(("not run:", "yellow"), f" {where}: {why}"), highlight=False)
    for line in failures:
        err_console.print(Text.assemble(("failed:", "red"), f" {line}"), highlight=False)
    try:
        files = report_files.write(recs, out, f"fhemark: suite {s.name}, run {run_id}", env,
                                   [r for r in store.runs() if r["run_id"] == run_id])
    except UserError as exc:
        raise UserError(f"{exc.problem}; the results are stored in {store.path} (run {run_id})",
                        f"{exc.fix}, e.g. " + shlex.join(["fhemark", "report", "--db", str(store.path), "--run", run_id,
                                                          "--out", str(out)]))
    console.print(f"stored in {store.path} (run {run_id}); report: {files[0]} and {files[1]}", highlight=False, markup=False)
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
                console.print(f"{name:10} {load(name).description}", markup=False)
            except UserError as exc:  # one broken built-in suite does not hide the others
                console.print(f"{name:10} (invalid: {exc.line()})", markup=False)
        return
    caps = _capabilities()
    if what is ListWhat.libraries:
        for name, c in caps.items():
            if isinstance(c, str):
                console.print(f"{name:10} unavailable: {c}", markup=False)
            else:
                console.print(f"{name:10} {c['library_version']:12} schemes: {', '.join(c['schemes'])}; "
                              f"threads {c['threads']}; driver {c['driver_version']}", markup=False)
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
        console.print("applications, by size: dot_<n> (inner product), matvec_<d> (plaintext matrix x encrypted vector),"
                      " tally_<n> (BFV/BGV), mean_<n> (CKKS), poly_<deg> (Horner), logreg_<n> (CKKS), similarity_<records>x<dim>,"
                      " zmul_<bits> (tfhe_int); n, d, dim powers of two")


@app.command()
def setup(suite: Optional[str] = typer.Option(None, help="only the drivers this suite needs (default: every driver)")) -> None:
    """Build (or bring up to date) the drivers whose toolchain is here; `run` builds missing ones itself."""
    done = drivers_build.build_needed(load(suite), err_console, missing_only=False) if suite else \
        drivers_build.build_all(err_console)
    for name, m in manifests().items():
        state = "built" if m.available else (
            f"not built yet (about {m.build_estimate_s} s to build: `fhemark setup`, or the first run that needs it)"
            if m.buildable else f"not built: needs {m.requires}")
        console.print(f"{name:10} {state}", markup=False, highlight=False)
    if "failed" in done.values():  # a broken build is an error, a missing toolchain is not
        raise typer.Exit(1)


@app.command()
def env() -> None:
    """The environment record attached to every result."""
    print(json.dumps(environment(1, project_root()), indent=2))


class Format(str, Enum):
    json = "json"
    csv = "csv"


def _open(db: Path | None, write: bool = False) -> Store:
    """An existing store, checked to be one before anything touches it; read-only unless `write`."""
    path = db or default_db()
    if not path.exists() and not path.is_symlink():
        raise UserError(f"store {path} does not exist", "run `fhemark run` first or pass --db")
    return Store(path, readonly=not write)


@app.command()
def export(db: Path = typer.Option(None, help="SQLite store"),
           format: Format = typer.Option(Format.json, "--format"),
           run_id: Optional[str] = typer.Option(None, "--run", help=f"only this run: {RUN_REF}"),
           out: Path = typer.Option(None, help="write to this file instead of stdout")) -> None:
    """All results, one record per measurement."""
    if out:
        _output(out, "--out")
    store = _open(db)
    recs = export_mod.records(store, store.resolve_run(run_id))
    text = export_mod.to_json(recs) if format is Format.json else export_mod.to_csv(recs)
    if out:
        _write_out(out, text, "--out")
    else:
        sys.stdout.write(text + ("\n" if not text.endswith("\n") else ""))


@app.command()
def report(db: Path = typer.Option(None, help="SQLite store"),
           out: Path = typer.Option(Path("report"), help="folder for report.md, report.html, csv/ and plots/"),
           run_id: Optional[str] = typer.Option(None, "--run",
                                                help=f"only this run: {RUN_REF} (default: newest result of every job)"),
           suite: Optional[str] = typer.Option(None, help="only this suite's runs"),
           history: bool = typer.Option(False, help="instead: every run of the store(s) case by case in time order, "
                                                    "with compare's verdicts, as OUT/history/index.html"),
           add_db: list[Path] = typer.Option(None, "--add-db", help="--history: more stores (e.g. one per machine)")) -> None:
    """Markdown, HTML and CSV tables in the studies' layout, and figures."""
    if history:
        from .report import history as history_page
        try:
            stores = [_open(db)] + [_open(p) for p in add_db or []]
        except UserError as exc:
            _fail(exc)
        page = history_page.write(stores, out / "history")
        console.print(f"wrote {page}", markup=False, highlight=False)
        return
    try:
        store = _open(db)
        recs = [r for r in store.records(store.resolve_run(run_id))
                if suite is None or r["suite"] == suite]
    except UserError as exc:
        _fail(exc)
    if not recs:
        _fail(UserError("no results match", "check --run/--suite against `fhemark export`"))
    files = report_files.write(recs, out, f"fhemark report{f': suite {suite}' if suite else ''}",
                               recs[-1].get("env", {}), store.runs())
    console.print(f"wrote {files[0]}, {files[1]} and {len(files) - 2} CSV tables and figures", markup=False)


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
        console.print(f"{r['run_id']}  {r['suite']:10} {r['results']:5} results  {state}{tag}", highlight=False, markup=False)


baseline_app = typer.Typer(no_args_is_help=True, help="Named, immutable references for `fhemark compare`.")
app.add_typer(baseline_app, name="baseline")


@baseline_app.command("save")
def baseline_save(name: str = typer.Argument(..., help="the baseline's name, e.g. seal-4.1-main"),
                  run_id: str = typer.Option("latest", "--run", help=f"run to name: {RUN_REF}"),
                  db: Path = typer.Option(None, help="SQLite store")) -> None:
    """Name a run; compare against the name later (`fhemark compare NAME`). A name is never moved."""
    try:
        store = _open(db, write=True)
        target = store.resolve_run(run_id)
        store.save_baseline(name, target)
    except UserError as exc:
        _fail(exc)
    console.print(f"baseline {name} = run {target}", highlight=False, markup=False)


@baseline_app.command("list")
def baseline_list(db: Path = typer.Option(None, help="SQLite store")) -> None:
    """The named baselines and their runs."""
    try:
        store = _open(db)
    except UserError as exc:
        _fail(exc)
    for name, run_id in store.baselines().items():
        console.print(f"{name:24} {run_id}", highlight=False, markup=False)


@baseline_app.command("drop")
def baseline_drop(name: str, db: Path = typer.Option(None, help="SQLite store")) -> None:
    """Delete a name (the run and its results stay)."""
    try:
        _open(db, write=True).drop_baseline(name)
    except UserError as exc:
        _fail(exc)
    console.print(f"dropped baseline {name}", highlight=False, markup=False)


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
    if json_out:
        _output(json_out, "--json")
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
        _write_out(json_out, export_mod.strict_json([{"case": c.label, "verdict": c.verdict, "ratio": c.ratio,
                                         "ratio_ci95": c.ratio_ci, "p_value": c.p_value, "why": c.why,
                                         "base_median_ns": (c.base or {}).get("median_ns"),
                                         "new_median_ns": (c.new or {}).get("median_ns"),
                                         "job_key": (c.new or c.base)["job_key"]} for c in result.changes]), "--json")
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
                  threads: Optional[int] = typer.Option(None, help="the cores you deploy on: rank only results measured "
                                                                   "at this thread count (a suite's threads: [1, 2, max]); "
                                                                   "with --objective throughput: on a host of this many cores"),
                  objective: str = typer.Option("latency", help="latency (one evaluation alone) or throughput "
                                                                "(evaluations a second with the host busy: records "
                                                                "of a suite's mode: throughput)"),
                  db: Path = typer.Option(None, help="SQLite store"),
                  run_id: Optional[str] = typer.Option(None, "--run",
                                                       help=f"only this run: {RUN_REF} (default: the whole store)"),
                  json_out: Path = typer.Option(None, "--json", help="also write the ranking as JSON")) -> None:
    """Rank library / scheme / parameter set for a workload from the measured, checked results in the store."""
    if json_out:
        _output(json_out, "--json")
    try:
        w = load_workload(workload, op or [], {"schemes": scheme or None, "min_security_bits": min_security,
                                               "security_table": table, "min_precision_bits": precision,
                                               "depth": depth, "slots": slots, "threads": threads,
                                               "objective": objective})
        store = _open(db)
        recs = list(store.records(store.resolve_run(run_id)))
    except UserError as exc:
        _fail(exc)
    cands = recommend(recs, w)
    print_recommendation(cands, w, console)
    if json_out:
        _write_out(json_out, export_mod.strict_json(ranking_json(cands, w)), "--json")
    raise typer.Exit(0 if any(not c.excluded for c in cands) else 1)


@app.command("params")
def params_cmd(scheme: str = typer.Option(..., help="bfv, bgv, ckks, or any (CKKS with --precision, BFV/BGV with --plain-bits)"),
               depth: int = typer.Option(..., help="sequential multiplications the computation needs"),
               precision: Optional[float] = typer.Option(None, help="CKKS: bits of precision after the last multiplication"),
               plain_bits: Optional[int] = typer.Option(None, help="BFV/BGV: bits of the plaintext modulus t"),
               slots: int = typer.Option(1, help="values per ciphertext"),
               security: int = typer.Option(128, help="security bits (128, 192 or 256)"),
               table: str = typer.Option("hestd2018", help="security table: hestd2018 or guidelines2024"),
               library: list[str] = typer.Option(None, help="only these libraries (repeatable; default: every RLWE driver)"),
               repeats: int = typer.Option(3, min=1, max=20, help="fresh-key repetitions a set must pass"),
               db: Path = typer.Option(None, help="keep the verification runs in this store (default: a temporary one)"),
               json_out: Path = typer.Option(None, "--json", help="also write the proposals as JSON")) -> None:
    """Propose the smallest secure parameters per library for a computation, verified by running them."""
    from . import advisor
    from .report.text import print_proposals
    if json_out:
        _output(json_out, "--json")
    schemes = {"any": (["ckks"] if precision is not None else []) + (["bfv", "bgv"] if plain_bits is not None else []),
               "bfv": ["bfv"], "bgv": ["bgv"], "ckks": ["ckks"]}.get(scheme)
    if not schemes:
        _fail(UserError(f"--scheme {scheme}: unknown or without a requirement",
                        "use bfv, bgv or ckks, or any with --precision (CKKS) or --plain-bits (BFV/BGV)"))
    if security not in (128, 192, 256):
        _fail(UserError(f"--security {security}: not a level of either security table", "use 128, 192 or 256"))
    if slots < 1:
        _fail(UserError(f"--slots {slots}: a computation packs at least one value", "give --slots 1 or more"))
    if "ckks" in schemes and precision is None:
        _fail(UserError("--scheme ckks needs --precision (bits of precision after the last multiplication)",
                        "e.g. --precision 20"))
    if set(schemes) & {"bfv", "bgv"} and plain_bits is None:
        _fail(UserError(f"--scheme {scheme} needs --plain-bits (bits of the plaintext modulus t)", "e.g. --plain-bits 20"))
    for lib in library or []:
        if lib not in manifests():
            _fail(UserError(f"--library {lib}: unknown library", f"use one of {', '.join(manifests())}"))
    needs = [advisor.Need(sch, depth, precision, plain_bits, slots, security, table) for sch in schemes]
    for need in needs:
        advisor.check_possible(need)
    built = [lib for lib in available() if lib in (library or available())
             and set(manifests()[lib].schemes) & {"bfv", "bgv", "ckks"}]
    if not built:
        _fail(UserError("no RLWE driver is built here", "run `fhemark setup`, or name a built one with --library"))
    out = []
    for need in needs:
        libs = [lib for lib in built if need.scheme in manifests()[lib].schemes]
        props = advisor.advise(need, libs, repeats, db, progress=lambda line: err_console.print(line, markup=False,
                                                                                                 highlight=False))
        print_proposals(need, props, console)
        out += [(need, p) for p in props]
    if json_out:
        _write_out(json_out, export_mod.strict_json([
            {"need": vars(n), "library": p.library, "params": p.spec, "rejected": p.rejected, "depth": p.depth,
             "margin": p.margin, "trajectory": p.trajectory, "effective": p.effective,
             "latency_ns": {r["op"]: r.get("median_ns") for r in p.records}} for n, p in out]), "--json")
    raise typer.Exit(0 if all(p.spec for _, p in out) else 1)


@app.command("choose")
def choose_cmd(file: Path = typer.Argument(..., help="your workload file (Python, see the README: Your own computation)"),
               explain: bool = typer.Option(False, "--explain", help="print what the program needs, run nothing"),
               precision: Optional[float] = typer.Option(None, help="CKKS: bits of precision every output needs "
                                                                   "(default: the workload's precision_bits, 20)"),
               security: int = typer.Option(128, help="security bits (128, 192 or 256)"),
               table: str = typer.Option("hestd2018", help="security table: hestd2018 or guidelines2024"),
               library: list[str] = typer.Option(None, help="only these libraries (repeatable)"),
               scheme: list[str] = typer.Option(None, help="only these of the workload's schemes (repeatable)"),
               repeats: int = typer.Option(3, min=1, max=20, help="fresh-key runs of the program a set must pass"),
               threads: int = typer.Option(1, min=1, max=1024, help="the cores you deploy on: the measurement runs the "
                                                                     "libraries at this thread count"),
               objective: str = typer.Option("latency", help="latency (one evaluation alone) or throughput (evaluations "
                                                             "a second with the host's cores busy: k at once)"),
               auto: bool = typer.Option(True, "--auto/--no-auto", help="also try OpenFHE's own parameter choice"),
               db: Path = typer.Option(None, help="store for the measurement (default ./fhemark.db or $FHEMARK_DB)"),
               verify_db: Path = typer.Option(None, help="keep the search's runs in this store (default: a temporary one)"),
               out: Path = typer.Option(None, help="folder for the snippets (default ./choose/<workload>)"),
               json_out: Path = typer.Option(None, "--json", help="also write the answer as JSON")) -> None:
    """Find, prove and rank the parameters each library runs YOUR computation at: smallest secure set per
    library, verified by running the program with fresh keys, then measured side by side."""
    from . import choose as chooser
    from .report.choice import print_answer, print_requirements
    from .requirements import for_all
    from .security import TABLES
    from .workload import load as load_workloads, register
    if json_out:
        _output(json_out, "--json")
    if table not in TABLES:
        _fail(UserError(f"--table {table}: unknown security table", f"use one of {', '.join(TABLES)}"))
    if security not in (128, 192, 256):
        _fail(UserError(f"--security {security}: the tables have 128, 192 and 256 bits", "use one of them"))
    if objective not in ("latency", "throughput"):
        _fail(UserError(f"--objective {objective}: unknown objective", "use latency or throughput"))
    if precision is not None and not 1 <= precision <= 50:
        _fail(UserError(f"--precision {precision:g}: CKKS precision must be 1..50 bits", "e.g. --precision 20"))
    found = load_workloads(file)
    if len(found) != 1:
        _fail(UserError(f"{file}: defines {len(found)} workloads ({', '.join(w.name for w in found)}); choose takes one",
                        "keep one Workload per file for choose"))
    w = found[0]
    for s in scheme or []:
        if s not in w.schemes:
            _fail(UserError(f"--scheme {s}: {w.name} names {', '.join(w.schemes)}", "give one of those"))
    if scheme:
        from dataclasses import replace
        w = register(replace(w, schemes=tuple(scheme)))
    if explain:
        print_requirements(w.name, for_all(w), console)
        raise typer.Exit(0)
    known = manifests()
    for lib in library or []:
        if lib not in known:
            _fail(UserError(f"--library {lib}: unknown library", f"use one of {', '.join(known)}"))
    libs = {lib: known[lib].schemes for lib in available() if lib in (library or known)
            and set(known[lib].schemes) & set(w.schemes)}
    if not libs:
        _fail(UserError(f"no library built here runs {', '.join(w.schemes)}", "run `fhemark setup`, or name one with --library"))
    folder = out or Path("choose") / report_files.safe_name(w.name)
    store_path = db or default_db()
    print_requirements(w.name, for_all(w), console)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}", markup=False), console=err_console, transient=True) as progress:
        task = progress.add_task("searching parameters", total=None, last="")
        try:
            answer = chooser.choose(w, libs, precision, security, table, repeats, store_path, verify_db,
                                    say=lambda stage, what: progress.update(task, description=stage, last=what),
                                    auto=chooser.openfhe_auto if auto and "openfhe" in libs else None, threads=threads,
                                    objective=objective)
        except KeyboardInterrupt:
            progress.stop()
            err_console.print(f"interrupted: nothing was chosen; measurements finished so far are in {store_path}",
                              highlight=False, markup=False, soft_wrap=True)
            raise typer.Exit(130)
    chooser.write_snippets(answer, folder)
    print_answer(answer, console)
    if json_out:
        _write_out(json_out, export_mod.strict_json(chooser.to_json(answer)), "--json")
    raise typer.Exit(0 if answer.ranked() else 1)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
