"""The Markdown report: tables a paper can paste, figures linked. Like the HTML page it opens with
the overview: the setups compared, who is fastest by how much, and the ratio figures."""

from __future__ import annotations

from pathlib import Path

from .overview import Overview
from .tables import Table


def render(table: Table) -> str:
    lines = [f"### {table.title}", ""]
    if table.caption:
        lines += [f"_{table.caption}_", ""]
    lines.append("| " + " | ".join(table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    if table.footnotes:
        lines += [""] + [f"{note}  " for note in table.footnotes]
    return "\n".join(lines) + "\n"


def _link(f: Path, out: Path) -> str:
    return f"![{f.stem}]({f.relative_to(out).as_posix()})\n"


def overview_section(ov: Overview, ratio_pngs: list[Path], out: Path) -> list[str]:
    parts = ["## Overview", "", render(ov.glance)]
    parts += [_link(f, out) for f in ratio_pngs]
    if ov.footnotes:
        parts += [f"{note}  " for note in ov.footnotes] + [""]
    return parts + ["## Detailed tables", ""]


def write(tables: list[Table], figures: list[Path], out: Path, heading: str, measured_on: str,
          overview: Overview | None = None) -> Path:
    pngs = [f for f in figures if f.suffix == ".png"]
    ratio = [f for f in pngs if f.stem.startswith("ratio-")] if overview is not None else []
    parts = [f"# {heading}", "", measured_on, ""]
    if overview is not None:
        parts += overview_section(overview, ratio, out)
    parts += [render(t) for t in tables]
    rest = [f for f in pngs if f not in ratio]
    if rest:
        parts.append("### Figures\n")
        parts += [_link(f, out) for f in rest]
    path = out / "report.md"
    path.write_text("\n".join(parts))
    return path
