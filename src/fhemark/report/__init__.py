"""Reports read stored records only (never a live run): one set of tables, written as
Markdown, HTML and CSV, plus figures."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from . import html, markdown, plots
from .tables import Table, all_tables


def measured_on(env: dict) -> str:
    cpu = env.get("cpu", {})
    return (f"Measured on {cpu.get('model', '?')} ({cpu.get('logical_cores', '?')} logical cores), "
            f"{env.get('threads', 1)} thread(s), {env.get('distribution') or env.get('os')}, "
            f"fhemark {env.get('fhemark_version')} ({env.get('git_revision') or 'no git revision'}).")


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


def write(recs: list[dict], out: Path, heading: str, env: dict) -> list[Path]:
    """report.md, report.html, csv/*.csv, plots/*: the Markdown file first."""
    out.mkdir(parents=True, exist_ok=True)
    tables = all_tables(recs)
    figures = plots.write(recs, out / "plots")
    line = measured_on(env)
    md = markdown.write(tables, figures, out, heading, line)
    page = html.write(tables, figures, out, heading, line)
    return [md, page] + _write_csv(tables, out) + figures
