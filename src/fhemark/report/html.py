"""The HTML report: one self-contained file to browse or send (figures inlined as SVG)."""

from __future__ import annotations

from html import escape
from pathlib import Path

from .tables import Table

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 2em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { background: #f0f0f0; position: sticky; top: 0; }
tr:nth-child(even) td { background: #fafafa; }
td.failed { color: #b00; font-weight: bold; } td.refused, td.unsupported { color: #888; }
caption { caption-side: top; text-align: left; font-style: italic; color: #555; padding-bottom: 0.3em; }
nav a { margin-right: 1em; } figure { display: inline-block; margin: 1em; }
ol.footnotes { list-style: none; padding-left: 0; margin-top: -1.5em; font-size: 0.8em; color: #664; }
"""


def _cell(text: str) -> str:
    cls = next((c for c in ("failed", "refused", "unsupported") if text.lower().startswith(c)), "")
    return f"<td class='{cls}'>{escape(text)}</td>" if cls else f"<td>{escape(text)}</td>"


def _table(i: int, t: Table) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in t.columns)
    rows = "\n".join("<tr>" + "".join(_cell(x) for x in row) + "</tr>" for row in t.rows)
    return (f"<h3 id='t{i}'>{escape(t.title)}</h3>\n<table>"
            + (f"<caption>{escape(t.caption)}</caption>" if t.caption else "")
            + f"<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}\n</tbody></table>"
            + ("<ol class='footnotes'>" + "".join(f"<li>{escape(n)}</li>" for n in t.footnotes) + "</ol>"
               if t.footnotes else ""))


def _inline_svg(path: Path) -> str:
    """The <svg> element alone: the file's XML declaration and DOCTYPE do not belong inside HTML."""
    text = path.read_text()
    return text[text.index("<svg"):]


def write(tables: list[Table], figures: list[Path], out: Path, heading: str, measured_on: str) -> Path:
    nav = " ".join(f"<a href='#t{i}'>{escape(t.title)}</a>" for i, t in enumerate(tables))
    svgs = [f for f in figures if f.suffix == ".svg"]
    body = [f"<h1>{escape(heading)}</h1>", f"<p>{escape(measured_on)}</p>", f"<nav>{nav}</nav>"]
    body += [_table(i, t) for i, t in enumerate(tables)]
    if svgs:
        body.append("<h3>Figures</h3>")
        body += [f"<figure>{_inline_svg(f)}<figcaption>{escape(f.stem)}</figcaption></figure>" for f in svgs]
    path = out / "report.html"
    path.write_text(f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{escape(heading)}</title>"
                    f"<style>{_STYLE}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n")
    return path
