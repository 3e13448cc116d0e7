"""The Markdown report: tables a paper can paste, figures linked."""

from __future__ import annotations

from pathlib import Path

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


def write(tables: list[Table], figures: list[Path], out: Path, heading: str, measured_on: str) -> Path:
    parts = [f"# {heading}", "", measured_on, ""] + [render(t) for t in tables]
    pngs = [f for f in figures if f.suffix == ".png"]
    if pngs:
        parts.append("### Figures\n")
        parts += [f"![{f.stem}]({f.relative_to(out).as_posix()})\n" for f in pngs]
    path = out / "report.md"
    path.write_text("\n".join(parts))
    return path
