"""The HTML report: one self-contained file to browse or send. The overview (who is fastest, by how
much, under which caveats) comes first as interactive figures; the detailed tables sort by any
column; the static figures stay inlined as SVG for papers."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from . import interactive
from .overview import Overview
from .tables import Table

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1em auto; max-width: 1500px; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; margin: 0.2em 0; } h2 { font-size: 1.2em; margin: 1.2em 0 0.3em; }
table { border-collapse: collapse; margin: 0.5em 0 2em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { background: #f0f0f0; position: sticky; top: 0; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort=ascending]::after { content: " \\25B2"; font-size: 0.7em; }
table.sortable th[aria-sort=descending]::after { content: " \\25BC"; font-size: 0.7em; }
tr:nth-child(even) td { background: #fafafa; }
td.failed { color: #b00; font-weight: bold; } td.refused, td.unsupported { color: #888; }
caption { caption-side: top; text-align: left; font-style: italic; color: #555; padding-bottom: 0.3em; white-space: normal; }
nav a { margin-right: 1em; } figure { display: inline-block; margin: 1em; }
div.wide { overflow-x: auto; max-width: 100%; }  /* a wide table scrolls in place, the page never sideways */
ol.footnotes { list-style: none; padding-left: 0; margin-top: -1.5em; font-size: 0.8em; color: #664; }
#overview p.env { font-size: 0.8em; color: #555; margin: 0.2em 0 0.5em; }
#overview table { margin-bottom: 0.6em; font-size: 0.8em; }
#overview td { white-space: normal; max-width: 24em; text-align: left; }
#overview .figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(440px, 1fr)); gap: 0.3em 1.2em; }
#overview .figures > div { min-width: 0; }
#overview ol.notes { list-style: none; padding-left: 0; font-size: 0.8em; color: #664; columns: 2 40em; }
"""

# Click a column's header to sort by it, again to reverse. Times ("1.2 ms [...]"), ratios ("2.3x")
# and counts sort by value, in ns for times; text after numbers; empty cells last.
_SORT_JS = """
(function () {
  var unit = {ns: 1, "\\u00b5s": 1e3, us: 1e3, ms: 1e6, s: 1e9, x: 1};
  var num = /^(\\d+(?:\\.\\d+)?(?:e[+-]?\\d+)?)\\s*(ns|\\u00b5s|us|ms|s|x)?(?=$|[\\s\\[(;,])/;
  function key(td) {
    var t = td ? td.textContent.trim() : "";
    if (!t || t === "-") return [2, 0, ""];
    var m = t.match(num);
    return m ? [0, parseFloat(m[1]) * (unit[m[2]] || 1), t] : [1, 0, t.toLowerCase()];
  }
  function cmp(a, b) {
    if (a[0] !== b[0]) return a[0] - b[0];
    if (a[0] === 0 && a[1] !== b[1]) return a[1] - b[1];
    return a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, col) {
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows).map(function (tr, i) { return [key(tr.cells[col]), i, tr]; });
        rows.sort(function (a, b) {
          if (a[0][0] === 2 || b[0][0] === 2) return (a[0][0] === 2) - (b[0][0] === 2) || a[1] - b[1];
          return dir * cmp(a[0], b[0]) || a[1] - b[1];
        });
        rows.forEach(function (r) { body.appendChild(r[2]); });
      });
    });
  });
})();
"""


def _cell(text: str) -> str:
    cls = next((c for c in ("failed", "refused", "unsupported") if text.lower().startswith(c)), "")
    return f"<td class='{cls}'>{escape(text)}</td>" if cls else f"<td>{escape(text)}</td>"


def _code(text: str) -> str:
    """A title written for Markdown (`op` in backticks), as HTML: escaped, the backticks as <code>."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", escape(text))


def _table(anchor: str, t: Table, level: int = 3) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in t.columns)
    rows = "\n".join("<tr>" + "".join(_cell(x) for x in row) + "</tr>" for row in t.rows)
    return (f"<h{level} id='{anchor}'>{_code(t.title)}</h{level}>\n<div class='wide'><table class='sortable'>"
            + (f"<caption>{escape(t.caption)}</caption>" if t.caption else "")
            + f"<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}\n</tbody></table></div>"
            + ("<ol class='footnotes'>" + "".join(f"<li>{escape(n)}</li>" for n in t.footnotes) + "</ol>"
               if t.footnotes else ""))


def _inline_svg(path: Path) -> str:
    """The <svg> element alone: the file's XML declaration and DOCTYPE do not belong inside HTML."""
    text = path.read_text()
    return text[text.index("<svg"):]


def _overview(ov: Overview, measured_on: str) -> str:
    parts = [f"<p class='env'>{escape(measured_on)}</p>", _table("glance", ov.glance, 2)]
    if ov.setups:
        divs, draw = interactive.render(ov)
        parts += ["<div class='figures'>" + "\n".join(divs) + "</div>", draw]
    if ov.footnotes:
        parts.append("<ol class='notes'>" + "".join(f"<li>{escape(n)}</li>" for n in ov.footnotes) + "</ol>")
    return "<section id='overview'>\n" + "\n".join(parts) + "\n</section>"


def write(tables: list[Table], figures: list[Path], out: Path, heading: str, measured_on: str,
          overview: Overview | None = None, study_pages: list[tuple[str, str]] | None = None) -> Path:
    body = [f"<h1>{escape(heading)}</h1>"]
    body.append(_overview(overview, measured_on) if overview is not None else f"<p>{escape(measured_on)}</p>")
    if study_pages:
        body.append("<nav class='studies'>In the studies' layouts: "
                    + " · ".join(f"<a href='{escape(href)}'>{escape(title)}</a>" for title, href in study_pages) + "</nav>")
    body.append("<h2 id='tables'>Detailed tables</h2>")
    body.append("<nav>" + " ".join(f"<a href='#t{i}'>{_code(t.title)}</a>" for i, t in enumerate(tables)) + "</nav>")
    body += [_table(f"t{i}", t) for i, t in enumerate(tables)]
    svgs = [f for f in figures if f.suffix == ".svg"]
    if svgs:
        body.append("<details id='static'><summary>Static figures (SVG and PNG in plots/, for papers)</summary>")
        body += [f"<figure>{_inline_svg(f)}<figcaption>{escape(f.stem)}</figcaption></figure>" for f in svgs]
        body.append("</details>")
    js = interactive.plotly_script(out) if overview is not None and overview.setups else ""
    path = out / "report.html"
    path.write_text(f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{escape(heading)}</title>"
                    f"<style>{_STYLE}</style>{js}</head>\n<body>\n" + "\n".join(body)
                    + f"\n<script>{_SORT_JS}</script>\n</body></html>\n")
    return path
