"""A page per study layout, where the records hold that layout: Study 1's time per pipeline stage
as stacked bars, Study 2's operations against N, Study 3's operations against the vector length,
Study 4's time against the number of operands and against the bit width, on log axes; where threads
were swept, the speed-up against the thread count (scaling.py), its table above the figures. Interactive
(Plotly, inlined once per page) and linked from the report's overview."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

from ..analyse.select import latest
from ..store.record import Record
from . import scaling
from .formats import fmt_time

_PIPE = re.compile(r"pipeline_(\w+)/(\w+)")
_STAGES = ("encode", "encrypt", "op", "decrypt", "decode")


def _ok(recs: list[Record]) -> list[Record]:
    return [r for r in latest(recs) if r.status == "ok" and r.median_ns]


def _hover(r: Record) -> str:
    ci = r.ci95_ns
    return (f"{r.library} {r.scheme.upper()} {r.params.get('name') or r.params.get('N')} {r.op}<br>"
            f"{fmt_time(r.median_ns)}" + (f" [{fmt_time(ci[0])}, {fmt_time(ci[1])}]" if ci else " (no interval)")
            + f"<br>n = {len(r.samples_ns)}, run {r.run_id}")


def _line(name: str, pts: list[tuple[float, Record]]) -> dict:
    pts = sorted(pts, key=lambda p: p[0])
    ci = [r.ci95_ns or [r.median_ns] * 2 for _, r in pts]
    return {"type": "scatter", "mode": "lines+markers", "name": name, "x": [x for x, _ in pts],
            "y": [r.median_ns / 1e6 for _, r in pts], "hovertext": [_hover(r) for _, r in pts], "hoverinfo": "text",
            "error_y": {"type": "data", "symmetric": False,
                        "array": [(hi - r.median_ns) / 1e6 for (_, r), (_, hi) in zip(pts, ci)],
                        "arrayminus": [(r.median_ns - lo) / 1e6 for (_, r), (lo, _) in zip(pts, ci)]}}


def _fig(title: str, traces: list[dict], x_title: str, x_log: bool, barmode: str | None = None) -> dict:
    layout = {"title": {"text": title}, "height": 380, "margin": {"l": 60, "r": 10, "t": 40, "b": 50},
              "xaxis": {"title": {"text": x_title}, **({"type": "log"} if x_log else {})},
              "yaxis": {"title": {"text": "ms"}, **({} if barmode else {"type": "log"})}, "legend": {"font": {"size": 10}}}
    if barmode:
        layout["barmode"] = barmode
    return {"data": traces, "layout": layout}


def study1(recs: list[Record]) -> list[dict]:
    """Per scheme and parameter set: one stacked bar per (library, pipeline), a segment per stage."""
    figs = []
    by_setup: dict[tuple, dict[tuple, dict[str, Record]]] = {}
    for r in _ok(recs):
        m = _PIPE.fullmatch(r.op)
        if m and m.group(2) in _STAGES:
            setup = (r.scheme, r.params.get("name") or r.params["N"])
            by_setup.setdefault(setup, {}).setdefault((r.library, m.group(1)), {})[m.group(2)] = r
    for (scheme, params), bars in sorted(by_setup.items(), key=str):
        xs = [f"{lib} {kind}" for lib, kind in sorted(bars)]
        traces = [{"type": "bar", "name": stage, "x": xs,
                   "y": [(bars[k][stage].median_ns if stage in bars[k] else 0) / 1e6 for k in sorted(bars)],
                   "hovertext": [_hover(bars[k][stage]) if stage in bars[k] else "" for k in sorted(bars)],
                   "hoverinfo": "text"} for stage in _STAGES]
        figs.append(_fig(f"Study 1: time per stage, {scheme.upper()} {params}", traces, "library, pipeline", False, "stack"))
    return figs


def study2(recs: list[Record]) -> list[dict]:
    """Per operation: a line per library and scheme over N (single operations over every slot)."""
    by_op: dict[str, dict[str, list]] = {}
    for r in _ok(recs):
        if r.vector_length or r.workload or r.depth is not None or r.op.startswith("pipeline_"):
            continue
        by_op.setdefault(r.op, {}).setdefault(f"{r.library} {r.scheme.upper()}", []).append((r.params["N"], r))
    return [_fig(f"Study 2: {op} against N", [_line(n, pts) for n, pts in sorted(lines.items())], "N", True)
            for op, lines in sorted(by_op.items()) if any(len({x for x, _ in pts}) > 1 for pts in lines.values())]


def study3(recs: list[Record]) -> list[dict]:
    """Per operation: a line per library, scheme and parameter set over the vector length."""
    by_op: dict[str, dict[str, list]] = {}
    for r in _ok(recs):
        if r.vector_length:
            name = f"{r.library} {r.scheme.upper()} {r.params.get('name') or r.params['N']}"
            by_op.setdefault(r.op, {}).setdefault(name, []).append((r.vector_length, r))
    return [_fig(f"Study 3: {op} against the vector length", [_line(n, pts) for n, pts in sorted(lines.items())],
                 "values encrypted", True) for op, lines in sorted(by_op.items())]


def study4(recs: list[Record]) -> list[dict]:
    """Time against the number of operands (multiadd_<n>x<bits>) and against the width (compare_<bits>)."""
    figs = []
    for pattern, title, x_title in ((r"multiadd_(\d+)x(\d+)", "Study 4: sum of n integers", "n (operands)"),
                                    (r"compare_(\d+)", "Study 4: comparison X < Y", "nb (bits)")):
        lines: dict[str, list] = {}
        for r in _ok(recs):
            m = re.fullmatch(pattern, r.op)
            if m:
                method = (r.workload or {}).get("method", "")
                name = f"{r.library} {r.scheme}" + (f" ({method})" if method else "") + \
                    (f", {m.group(2)}-bit" if m.lastindex and m.lastindex > 1 else "")
                lines.setdefault(name, []).append((int(m.group(1)), r))
        if lines:
            figs.append(_fig(title, [_line(n, pts) for n, pts in sorted(lines.items())], x_title, True))
    return figs


def applications(recs: list[Record]) -> list[dict]:
    """Per application workload kind (dot, matvec, ...): a line per library, scheme and parameter set
    over the workload's size."""
    by_kind: dict[str, dict[str, list]] = {}
    for r in _ok(recs):
        w = r.workload or {}
        if "variant" in w and w.get("size"):
            name = f"{r.library} {r.scheme.upper()} {r.params.get('name') or r.params.get('N')} ({w['variant']})"
            by_kind.setdefault(w["workload"], {}).setdefault(name, []).append((w["size"], r))
    return [_fig(f"Application {kind}: latency against size", [_line(n, pts) for n, pts in sorted(lines.items())],
                 "size (values, matrix dimension, degree, records or bits)", True) for kind, lines in sorted(by_kind.items())]


STUDIES = {"study1": ("Study 1: pipeline stages", study1), "study2": ("Study 2: operations against N", study2),
           "study3": ("Study 3: operations against the vector length", study3),
           "study4": ("Study 4: integer workloads against size", study4),
           "applications": ("Application workloads: latency against size", applications),
           "threads": (scaling.TITLE, scaling.figures)}
# A page whose own words differ from the others', and a page with its table above the figures.
_INTRO = {"threads": scaling.INTRO}
_TABLES = {"threads": scaling.table}


def write(recs: list[Record], out: Path) -> list[tuple[str, Path]]:
    """The study pages the records call for: (title, path) for each, to link from the overview."""
    from .html import _SORT_JS, _STYLE, _table
    from .interactive import plotly_script
    pages = []
    for slug, (title, build) in STUDIES.items():
        figs = build(recs)
        table = _TABLES[slug](recs) if slug in _TABLES else None
        if not figs and table is None:
            continue
        divs, calls = [], []
        for i, fig in enumerate(figs):
            divs.append(f"<div id='f{i}' class='study-figure'></div>")
            data = json.dumps(fig).replace("</", "<\\/")  # no label can close the script
            calls.append(f"(function (f) {{ Plotly.newPlot('f{i}', f.data, f.layout, {{responsive: true}}); }})({data});")
        path = out / f"{slug}.html"
        path.write_text(f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{escape(title)}</title>"
                        "<style>body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1400px}"
                        + (_STYLE if table else "") + "</style>"
                        f"{plotly_script(out)}</head><body>\n<p><a href='report.html'>back to the report</a></p>"
                        f"<h1>{escape(title)}</h1>\n<p>" + escape(_INTRO.get(slug, "Median with its 95% interval per point; "
                        "hover for the numbers, click a legend entry to hide a line, drag to zoom.")) + "</p>\n"
                        + (_table("table", table, 2) + "\n" if table else "") + "\n".join(divs)
                        + "\n<script>" + "\n".join(calls) + "</script>\n"
                        + (f"<script>{_SORT_JS}</script>\n" if table else "") + "</body></html>\n")
        pages.append((title, path))
    return pages
