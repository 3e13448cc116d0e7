"""What the store holds: `export`, `report`, `runs` and the named `baseline`s."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .. import report as report_files
from ..errors import UserError
from ..store import export as export_mod
from .application import RUN_REF, app, console, fail, open_store, output, write_out


class Format(str, Enum):
    json = "json"
    csv = "csv"



@app.command()
def export(db: Path = typer.Option(None, help="SQLite store"),
           format: Format = typer.Option(Format.json, "--format"),
           run_id: Optional[str] = typer.Option(None, "--run", help=f"only this run: {RUN_REF}"),
           out: Path = typer.Option(None, help="write to this file instead of stdout")) -> None:
    """All results, one record per measurement."""
    if out:
        output(out, "--out")
    store = open_store(db)
    recs = export_mod.records(store, store.resolve_run(run_id))
    text = export_mod.to_json(recs) if format is Format.json else export_mod.to_csv(recs)
    if out:
        write_out(out, text, "--out")
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
        from ..report import history as history_page
        try:
            report_files.check_out(out / "history")  # a file in the way is one line, before any work
            stores = [open_store(db)] + [open_store(p) for p in add_db or []]
        except UserError as exc:
            fail(exc)
        page = history_page.write(stores, out / "history")
        console.print(f"wrote {page}", markup=False, highlight=False)
        return
    try:
        store = open_store(db)
        recs = [r for r in store.records(store.resolve_run(run_id))
                if suite is None or r.suite == suite]
    except UserError as exc:
        fail(exc)
    if not recs:
        given = [f for f, v in (("--run", run_id), ("--suite", suite)) if v]
        fail(UserError(f"{store.path} holds no results" + (f" for {' and '.join(given)}" if given else ""),
                       f"check {' and '.join(given)} against `fhemark runs --db {store.path}`" if given
                       else "measure something first (`fhemark run`), or pass --db with a store that has results"))
    files = report_files.write(recs, out, f"fhemark report{f': suite {suite}' if suite else ''}",
                               recs[-1].env, store.runs())
    console.print(f"wrote {files[0]}, {files[1]} and {len(files) - 2} CSV tables and figures", markup=False)


@app.command()
def runs(db: Path = typer.Option(None, help="SQLite store")) -> None:
    """The runs in the store, oldest first: ids for --run and compare."""
    try:
        store = open_store(db)
    except UserError as exc:
        fail(exc)
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
        store = open_store(db, write=True)
        target = store.resolve_run(run_id)
        store.save_baseline(name, target)
    except UserError as exc:
        fail(exc)
    console.print(f"baseline {name} = run {target}", highlight=False, markup=False)


@baseline_app.command("list")
def baseline_list(db: Path = typer.Option(None, help="SQLite store")) -> None:
    """The named baselines and their runs."""
    try:
        store = open_store(db)
    except UserError as exc:
        fail(exc)
    for name, run_id in store.baselines().items():
        console.print(f"{name:24} {run_id}", highlight=False, markup=False)


@baseline_app.command("drop")
def baseline_drop(name: str, db: Path = typer.Option(None, help="SQLite store")) -> None:
    """Delete a name (the run and its results stay)."""
    try:
        open_store(db, write=True).drop_baseline(name)
    except UserError as exc:
        fail(exc)
    console.print(f"dropped baseline {name}", highlight=False, markup=False)
