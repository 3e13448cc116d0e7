"""The overview's figures as Plotly charts inside the HTML page: hover for the numbers behind a
point, click a legend entry to hide a library, drag to zoom, and the camera button saves an SVG.
plotly.js is written once beside the pages (plotly.min.js), so they work offline and from file://."""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

from .overview import Overview, Setup, escape, footnote_texts, hover, library_colours
from .tables import DEVIATION_MARK



@lru_cache(maxsize=1)
def plotly_js() -> str:
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


PLOTLY_FILE = "plotly.min.js"


def plotly_script(folder: Path) -> str:
    """plotly.js once per folder, beside the pages (4.6 MB that every page used to inline): the
    script tag that loads it, by a relative path that works from file:// too."""
    path = folder / PLOTLY_FILE
    if not path.exists():
        path.write_text(plotly_js())
    return f"<script src='{PLOTLY_FILE}'></script>"


def _y(setup: Setup, op: str, deviating: set[str]) -> str:
    return f"{op} {DEVIATION_MARK}" if op in deviating else op


def figure(setup: Setup, ov: Overview, colours: dict[str, str]):
    """One dot per (operation, library), grouped by operation: its ratio to the fastest library on a log
    axis with the 95% interval as error bars; a setup with one library shows its times instead."""
    import plotly.graph_objects as go

    notes = footnote_texts(ov.footnotes)
    deviating = setup.deviating_ops()
    fig = go.Figure()
    libs = setup.libraries
    step = 0.8 / len(libs)
    # The axis spans the like-for-like cells: a cell timing different work (‡) can sit 1000x away and
    # would crowd them into a few pixels; beyond the span it is drawn at the edge, pointing out.
    lo_hi = _span(setup) if setup.compared else None
    for i, lib in enumerate(libs):
        mine = [c for c in setup.cells if c.library == lib]
        # Deviating cells get their own trace (open diamonds, ‡n beside them) so the legend's symbol
        # stays the library's plain one; both traces hide together from the legend.
        for odd in (False, True):
            part = [c for c in mine if bool(c.deviation) == odd]
            if not part:
                continue
            xs, spans, symbols = _points(setup, part, odd, lo_hi)
            fig.add_trace(go.Scatter(
                x=xs, y=[setup.ops.index(c.op) + (i - (len(libs) - 1) / 2) * step for c in part],
                name=lib, legendgroup=lib, showlegend=not odd or len(part) == len(mine),
                mode="markers+text" if odd else "markers", text=[c.deviation.strip() for c in part],
                textposition="middle right", textfont={"size": 9, "color": "#a50"},
                marker={"color": colours[lib], "size": 8 if odd else 6, "symbol": symbols, "line": {"width": 1.5}},
                error_x={"type": "data", "symmetric": False, "thickness": 1.1, "width": 2, "color": colours[lib],
                         "array": [max(hi - x, 0) for x, (_, hi) in zip(xs, spans)],
                         "arrayminus": [max(x - lo, 0) for x, (lo, _) in zip(xs, spans)]},
                hovertext=[hover(c, notes, setup.compared) for c in part], hoverinfo="text"))
    rows = len(setup.ops)
    what = ("time / fastest library's time, 95% interval" if setup.compared else
            f"median time (ms), 95% interval; only {libs[0]} ran this setup")
    if deviating:
        what += f"; ◇ {DEVIATION_MARK}n: different work" + ("; ▸ beyond the axis (hover for its value)" if lo_hi else "")
    height = 84 + rows * max(16, 6 * len(libs))
    # The setup's name leads the legend's row (a separate title would cost a row of the first screen);
    # the x axis and its title are under it, above the points; the modebar stands in the right margin.
    fig.update_layout(
        template="plotly_white", height=height, margin={"l": 10, "r": 34, "t": 66, "b": 10}, modebar={"orientation": "v"},
        legend={"orientation": "h", "x": 0.01, "xanchor": "left", "xref": "container", "y": 1 - 2 / height,
                "yanchor": "top", "yref": "container", "font": {"size": 11},
                "title": {"text": f"<b>{escape(setup.title)}</b>  ", "font": {"size": 14}}},
        hoverlabel={"align": "left", "font": {"size": 11}}, font={"size": 11})
    fig.update_yaxes(tickvals=list(range(rows)), ticktext=[escape(_y(setup, op, deviating)) for op in setup.ops],
                     range=[rows - 0.5, -0.5], automargin=True, tickfont={"size": 10}, showgrid=False, zeroline=False)
    # The axis on top: the figures are tall, and the first screen shows their tops.
    fig.update_xaxes(type="log", side="top", title={"text": what, "font": {"size": 10}, "standoff": 4}, showgrid=True,
                     gridcolor="#e4e4e4", ticksuffix="x" if setup.compared else "", zeroline=False, automargin=True,
                     exponentformat="none",  # ratios: 0.0001x, never "100µx"
                     **({"range": [math.log10(lo_hi[0]), math.log10(lo_hi[1])]} if lo_hi else {}))
    if setup.compared:
        fig.add_vline(x=1, line={"color": "#888", "width": 1, "dash": "dot"})
    return fig


def _points(setup: Setup, part: list, odd: bool, lo_hi: tuple[float, float] | None) -> tuple[list, list, list]:
    """Each cell's x (its ratio, or its median in ms where one library ran the setup), interval and
    symbol; a deviating cell beyond the axis' span is drawn at its edge, pointing out."""
    symbols = ["diamond-open" if odd else "circle"] * len(part)
    if not setup.compared:
        return ([c.rec.median_ns / 1e6 for c in part],
                [tuple(v / 1e6 for v in c.rec.ci95_ns or (c.rec.median_ns,) * 2) for c in part], symbols)
    xs = [c.ratio for c in part]
    spans = [c.ci or (c.ratio, c.ratio) for c in part]
    if odd and lo_hi:
        for j, x in enumerate(xs):
            if not lo_hi[0] <= x <= lo_hi[1]:
                xs[j] = min(max(x, lo_hi[0]), lo_hi[1])
                spans[j] = (xs[j], xs[j])
                symbols[j] = "triangle-right" if x > lo_hi[1] else "triangle-left"
    return xs, spans, symbols


def _span(setup: Setup) -> tuple[float, float] | None:
    """The axis range of a compared setup: its like-for-like cells and their intervals, padded; None
    when every cell is like-for-like (the axis then fits them all by itself)."""
    plain = [c for c in setup.cells if not c.deviation]
    if not plain or len(plain) == len(setup.cells):
        return None
    lo = min(min(c.ci[0], c.ratio) if c.ci else c.ratio for c in plain)
    hi = max(max(c.ci[1], c.ratio) if c.ci else c.ratio for c in plain)
    return min(lo, 1.0) / 1.25, max(hi, 1.0) * 1.25


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "figure"


def render(ov: Overview) -> tuple[list[str], str]:
    """One empty <div> per setup, and the script that draws them all: it runs after every div is in
    place, so each chart takes the width of its grid cell rather than the page's."""
    import plotly.io as pio

    colours = library_colours(ov)
    divs, calls = [], []
    for i, s in enumerate(ov.setups):
        fig = figure(s, ov, colours)
        div_id = f"overview-{i}"
        divs.append(f"<div id='{div_id}' class='overview-figure' style='height:{fig.layout.height}px'></div>")
        config = {"displaylogo": False, "responsive": True,
                  "toImageButtonOptions": {"format": "svg", "filename": f"ratio-{_slug(s.title)}"}}
        # to_json escapes <, > and / inside strings, so no text can close the <script>.
        calls.append(f"draw({json.dumps(div_id)}, {pio.to_json(fig, pretty=False)}, {json.dumps(config)});")
    script = ("<script>(function () {\nfunction draw(id, fig, config) { Plotly.newPlot(id, fig.data, fig.layout, config); }\n"
              + "\n".join(calls) + "\n})();</script>")
    return divs, script
