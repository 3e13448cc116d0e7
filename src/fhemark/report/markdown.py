"""Markdown and CSV files of the report tables."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from . import plots
from .tables import (Table, depth_table, expansion_table, facts_table, key_table, op_tables, stage_table,
                     workload_table)


def render(table: Table) -> str:
    lines = [f"### {table.title}", ""]
    if table.caption:
        lines += [f"_{table.caption}_", ""]
    lines.append("| " + " | ".join(table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60]


def write(recs: list[dict], out: Path, heading: str, env: dict) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    tables = op_tables(recs)
    tables += [t for t in (stage_table(recs), depth_table(recs), expansion_table(recs), workload_table(recs)) if t is not None]
    tables += [facts_table(recs), key_table(recs)]
    cpu = env.get("cpu", {})
    parts = [f"# {heading}", "",
             f"Measured on {cpu.get('model', '?')} ({cpu.get('logical_cores', '?')} logical cores), "
             f"{env.get('threads', 1)} thread(s), {env.get('distribution') or env.get('os')}, "
             f"fhemark {env.get('fhemark_version')} ({env.get('git_revision') or 'no git revision'}).", ""]
    written = []
    (out / "csv").mkdir(exist_ok=True)
    for t in tables:
        parts.append(render(t))
        path = out / "csv" / f"{_slug(t.title)}.csv"
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(t.columns)
            w.writerows(t.rows)
        written.append(path)
    figures = plots.write(recs, out / "plots")
    if figures:
        parts.append("### Figures\n")
        parts += [f"![{f.stem}](plots/{f.name})\n" for f in figures if f.suffix == ".png"]
    written += figures
    md = out / "report.md"
    md.write_text("\n".join(parts))
    return [md] + written
