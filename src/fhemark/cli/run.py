"""`fhemark run`: plan a suite, build what it needs, measure (here or on a Dask cluster), print and report."""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from .. import report as report_files
from ..analyse.select import timed_seconds
from ..drivers import build as drivers_build
from ..drivers.registry import available, manifests
from ..errors import UserError
from ..locations import default_db, project_root
from ..measure import measure, session
from ..measure.metadata import environment
from ..model.params import inline_set
from ..plan.jobs import MAX_ESTIMATE_S, MAX_JOBS, build
from ..plan.smoke import smoke as smoke_form
from ..plan.smoke import without_versions
from ..plan.suites import Suite, load
from ..report.text import print_results
from ..store.sqlite import Store
from .application import app, console, err_console


@dataclass(frozen=True)
class RunOptions:
    """`fhemark run`'s flags, as given."""
    suite: str = "quick"
    db: Path | None = None
    resume: bool = False
    allow_insecure: bool = False
    library: list[str] | None = None
    full: bool = False
    smoke: bool = False
    report: Path | None = None
    yes: bool = False
    build_drivers: bool = True
    cluster_spec: str | None = None
    workload: list[Path] | None = None
    params: list[str] | None = None

    def again(self) -> str:
        """The command that continues this run: the same plan (flags included) and the same store."""
        parts = ["fhemark", "run"] + ([x for f in self.workload for x in ("--workload", str(f))] if self.workload
                                      else ["--suite", self.suite])
        parts += [x for p in self.params or [] for x in ("--params", p)]
        parts += ["--full"] if self.full else []
        parts += ["--smoke"] if self.smoke else []
        parts += ["--allow-insecure"] if self.allow_insecure else []
        for lib in self.library or []:
            parts += ["--library", lib]
        parts += ["--db", str(self.db)] if self.db else []
        parts += ["--report", str(self.report)] if self.report else []
        parts += ["--yes"] if self.yes else []
        parts += ["--cluster", self.cluster_spec] if self.cluster_spec else []
        return shlex.join(parts + ["--resume"])


def _param_arg(text: str) -> str | dict:
    """A --params value: a preset name, or an inline set as the suites write it ({N: 8192, q_bits: [...], ...})."""
    if not text.strip():
        raise UserError("--params '': an empty parameter set", "give a preset name (e.g. c8192) "
                        "or an inline set, e.g. --params '{N: 8192, q_bits: [50, 40, 40], p_bits: [60], scale_bits: 40}'")
    if not text.lstrip().startswith("{"):
        return text
    value = inline_set(text, f"--params {text!r}", "--params '{N: 8192, q_bits: [50, 40, 40], p_bits: [60], scale_bits: 40}'")
    if not isinstance(value, dict):
        raise UserError(f"--params {text!r}: not a mapping", "write e.g. --params '{N: 8192, q_bits: [50, 40], p_bits: [60]}'")
    return value


def _smoke(s: Suite) -> Suite:
    """The suite's smoke form, each case it leaves out said in one line; a smoke form with no case
    left (every case above the smoke form's ring) ends the run here, successfully: nothing failed."""
    small = smoke_form(s)
    for line in small.skipped:
        err_console.print(line, highlight=False, markup=False, soft_wrap=True)
    if not small.suite.cases:
        err_console.print(f"smoke: nothing of suite {s.name} is left to run in its smoke form (every case is "
                          "skipped above)", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(0)
    return small.suite


@app.command()
def run(suite: str = typer.Option("quick", help="built-in suite name or path to a YAML file"),
        db: Path = typer.Option(None, help="SQLite store (default ./fhemark.db or $FHEMARK_DB)"),
        resume: bool = typer.Option(False, help="continue the latest run of this suite, skipping finished jobs"),
        allow_insecure: bool = typer.Option(False, help="run parameter sets below the suite's security level, marked"),
        library: list[str] = typer.Option(None, help="only these libraries (repeatable)"),
        full: bool = typer.Option(False, help="add the suite's full_cases (long sweeps: hours)"),
        smoke: bool = typer.Option(False, "--smoke", help="the suite's smoke form, to check that it runs: every "
                                                         "case, library, op and thread count, one sample per slice, "
                                                         "each case's smallest ring; named <suite>-smoke, marked "
                                                         "smoke in every record's env; builds no library@version"),
        report: Path = typer.Option(None, help="report folder (default report/<suite> beside the store: "
                                                "./report/<suite> for ./fhemark.db)"),
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
    _run(RunOptions(**locals()))


def _run(o: RunOptions) -> None:
    # Everything that can be refused is refused here, before a job runs or a byte is stored.
    s, known = _suite_of(o), manifests()
    for lib in o.library or []:
        if lib not in known:
            raise UserError(f"--library {lib}: unknown library", f"use one of {', '.join(known) or 'none'}")
    if o.build_drivers:  # the first run of a suite builds what it uses (TFHE-rs only when asked for)
        drivers_build.build_needed(without_versions(s) if o.smoke else s, err_console, o.library or None)
    plan = build(s, available(), o.allow_insecure, o.library or None, known=known)
    # The report goes beside the store it reports, wherever the run measures (here or on Dask workers)
    # and whatever folder it was started from.
    store_path = o.db or default_db()
    out = o.report or store_path.parent / "report" / report_files.safe_name(s.name)
    report_files.check_out(out)
    store = Store(store_path)
    env = environment(s.threads, project_root()) | ({"smoke": True} if o.smoke else {})
    tally, resumed = session.Tally(), []
    started = time.monotonic()
    done = _measured(o, s, plan, known, store, env, tally, resumed)
    wall = time.monotonic() - started
    print_results(done.records, console)
    if wall > 0 and not resumed:
        timed = timed_seconds(done.records)
        console.print(f"time inside timed regions: {timed:.1f} s of the run's {wall:.0f} s ({100 * timed / wall:.0f}%); "
                      "the rest is setups and keys, fresh inputs encoded and encrypted, outputs decrypted and checked",
                      highlight=False, markup=False)
    for where, why in tally.refusals.items():
        err_console.print(Text.assemble(("not run:", "yellow"), f" {where}: {why}"), highlight=False)
    for line in tally.failures:
        err_console.print(Text.assemble(("failed:", "red"), f" {line}"), highlight=False)
    _report(s, store, out, env, done.records, done.run_id)
    if tally.failures:
        raise typer.Exit(1)


def _suite_of(o: RunOptions) -> Suite:
    """The suite the flags name: a file's workloads at presets, or a suite (its smoke form with --smoke)."""
    if o.workload:
        from ..advise.preset_suite import preset_suite
        from ..model.workload_file import load as load_workloads
        s = preset_suite([w for f in o.workload for w in load_workloads(f)], [_param_arg(p) for p in o.params or []] or None)
    elif o.params:
        raise UserError("--params is for --workload", "give the parameter sets in the suite file")
    else:
        s = load(o.suite, o.full)
    return _smoke(s) if o.smoke else s


def _measured(o: RunOptions, s: Suite, plan, known: dict, store: Store, env: dict, tally: session.Tally, resumed: list):
    """measure() with a progress bar, each record tallied as it arrives; an interrupted or refused run
    says the command that continues it."""
    client = session.connect(o.cluster_spec)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}", markup=False), console=console, transient=False) as progress:
        task = progress.add_task(escape(s.name), total=None, last="", visible=False)

        def on_start(ses: session.Session) -> None:
            for note in ses.notes:
                console.print(note, markup=False, highlight=False)
            for lib in plan.unavailable:  # said once nothing can be refused any more
                err_console.print(f"skipped {lib}: {known[lib].why_unavailable()}", highlight=False, markup=False)
            for lib in plan.optional:
                took = known[lib].build_estimate_s
                err_console.print(f"skipped {lib} (optional in this suite: its driver is not built); `make drivers` "
                                  f"includes it" + (f" (~{took // 60} min)" if took >= 120 else ""),
                                  highlight=False, markup=False)
            progress.update(task, total=len(ses.todo), visible=True)
            resumed.extend(ses.skip)

        def on_record(job, recs) -> None:
            progress.update(task, advance=1, last=f"{job.library} {job.scheme} N={job.params.N} {job.op}")
            tally.add(job, recs)

        try:
            return measure(plan, store, env=env, resume=o.resume, yes=o.yes, client=client, on_start=on_start,
                           on_record=on_record, on_wait=lambda holder: err_console.print(
                               f"waiting: another fhemark is measuring on this host ({holder}); this run measures "
                               "when it ends, so that neither reads the other's load", highlight=False, markup=False))
        except KeyboardInterrupt:
            store.close()
            err_console.print(f"interrupted: results so far are in {store.path}; continue with: {o.again()}",
                              highlight=False, markup=False, soft_wrap=True)
            raise typer.Exit(130)
        except UserError as exc:  # refused before a job ran, or the store failed (full disk, read-only)
            store.close()
            raise UserError(exc.problem, f"{exc.fix}; then continue with: {o.again()}" if progress.tasks[0].total
                            else exc.fix)
        finally:
            session.disconnect(client)


def _report(s: Suite, store: Store, out: Path, env: dict, recs: list, run_id: str) -> None:
    try:
        files = report_files.write(recs, out, f"fhemark: suite {s.name}, run {run_id}", env,
                                   [r for r in store.runs() if r["run_id"] == run_id])
    except UserError as exc:
        raise UserError(f"{exc.problem}; the results are stored in {store.path} (run {run_id})",
                        f"{exc.fix}, e.g. " + shlex.join(["fhemark", "report", "--db", str(store.path), "--run", run_id,
                                                          "--out", str(out)]))
    # soft_wrap: a path is never cut across lines, even where output is piped at a fixed width
    console.print(f"stored in {store.path} (run {run_id}); report: {files[0]} and {files[1]}",
                  highlight=False, markup=False, soft_wrap=True)
    store.close()
