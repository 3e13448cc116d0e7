"""Reports read stored records only (never a live run): one set of tables, written as
Markdown, HTML and CSV, plus figures."""

from __future__ import annotations

import csv
import os
import re
import shutil
import tempfile
from pathlib import Path

from ..analyse.select import timed_seconds
from ..errors import UserError
from ..store.record import Record
from . import compilers, html, interactive, markdown, overview, plots, scaling, studies, versions
from .tables import Table, all_tables


def measured_on(env: dict) -> str:
    cpu = env.get("cpu", {})
    return (f"Measured on {cpu.get('model', '?')} ({cpu.get('logical_cores', '?')} logical cores), "
            f"{env.get('threads', 1)} thread(s), {env['driver_cpus'] + ', ' if env.get('driver_cpus') else ''}"
            f"{env.get('distribution') or env.get('os')}, "
            f"fhemark {env.get('fhemark_version')} ({env.get('git_revision') or 'no git revision'}).")


def method_line(recs: list[Record]) -> str:
    """How the intervals and the checks were made, in the report's own words."""
    methods = sorted({r.ci_method for r in recs if r.ci_method})
    procs = sorted({r.processes or 1 for r in recs if r.ci_method})
    return ("Every result was decrypted and checked (every copy of a repeated operation). Intervals: "
            + ("; ".join(methods) if methods else "none recorded")
            + (f"; samples from {', '.join(map(str, procs))} driver process(es) per job" if procs else "")
            + ". Cells marked ‡ time different work than the protocol's boundary (footnotes).")


def time_line(recs: list[Record], runs: list[dict]) -> str:
    """Per run: its wall time and the share of it inside timed regions (the rest is setups, keys,
    fresh inputs, checks): where a suite's time goes."""
    parts = []
    for run in runs:
        mine = [r for r in recs if r.run_id == run["run_id"]]
        wall = (run.get("finished") or 0) - run["started"]
        if mine and wall > 0:
            timed = timed_seconds(mine)
            parts.append(f"run {run['run_id']}: {timed:.1f} s of {wall:.0f} s inside timed regions ({100 * timed / wall:.0f}%)")
    return "Time: " + "; ".join(parts) + " (a resumed run's wall time includes its pause)." if parts else ""


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60]


def _write_csv(tables: list[Table], out: Path) -> list[Path]:
    (out / "csv").mkdir(exist_ok=True)
    written = []
    for t in tables:
        path = out / "csv" / f"{_slug(t.title)}.csv"
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(t.columns)
            w.writerows(t.rows)
        written.append(path)
        if t.footnotes:  # a footer row would break CSV readers: the marks are explained beside it
            notes = out / "csv" / f"{_slug(t.title)}.footnotes.csv"
            with notes.open("w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["mark", "what differs"])
                w.writerows([n.split(" ", 1) for n in t.footnotes])
            written.append(notes)
    return written


def safe_name(name: str, limit: int = 60) -> str:
    """A suite's name as one path component: no separators, no `..`, no leading dot, at most `limit` chars."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:limit].strip("-.")
    return slug or "suite"


def check_out(out: Path, option: str = "--report", what: str = "report folder") -> None:
    """Refuse, before anything is measured, an output folder that cannot be made: a file in the way,
    or a nearest existing folder that is not writable."""
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                raise UserError(f"{what} {out}: {p} is a file, not a folder", f"pass {option} with a folder path")
            if not os.access(p, os.W_OK | os.X_OK):
                raise UserError(f"{what} {out}: {p} is not writable", f"pass {option} with a writable folder")
            return


def write(recs: list[Record], out: Path, heading: str, env: dict, runs: list[dict] | None = None) -> list[Path]:
    """report.md, report.html, csv/*.csv, plots/*: the Markdown file first.

    Every file is made in a private folder inside `out` and then renamed into place, so a reader never
    sees half a file and two runs writing the same report at once each leave whole files."""
    out = Path(out)
    check_out(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".writing-", dir=out))
    except OSError as exc:
        raise UserError(f"report folder {out}: cannot create it ({exc.strerror or exc})", "pass --report with another folder")
    try:
        tables = versions.tables(recs) + compilers.tables(recs) + all_tables(recs) + [t for t in (scaling.table(recs),
                                                                          scaling.throughput_table(recs)) if t is not None]
        first = overview.build(recs)
        figures = plots.write(recs, stage / "plots", first)
        line = " ".join(x for x in (measured_on(env), method_line(recs), time_line(recs, runs or [])) if x)
        md = markdown.write(tables, figures, stage, heading, line, first)
        study_pages = studies.write(recs, stage)
        page = html.write(tables, figures, stage, heading, line, first, [(t, p.name) for t, p in study_pages])
        script = [stage / interactive.PLOTLY_FILE] if (stage / interactive.PLOTLY_FILE).exists() else []
        staged = [md, page] + _write_csv(tables, stage) + figures + script + [p for _, p in study_pages]
        for f in staged[2:] + staged[:2]:  # the pages last: when they appear, what they link to is there
            target = out / f.relative_to(stage)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(f, target)
        return [out / f.relative_to(stage) for f in staged]
    except OSError as exc:
        raise UserError(f"report folder {out}: writing failed ({exc.strerror or exc})",
                        "free some space or fix the folder's permissions, then write it again with `fhemark report`")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
