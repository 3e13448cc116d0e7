"""Every run in one or more stores, case by case in time order (asv's history view): for each
case the median and interval of each run, the host and library version it was measured with, and
what `compare` says of each run against the previous one on the same host. One HTML file,
plotly.js beside it (plotly.min.js), so it opens from file://."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html import escape
from pathlib import Path

from ..analyse.compare import FAILED, FASTER, SLOWER, compare_case, label
from ..analyse.select import latest
from ..store.record import Record
from .formats import fmt_time


@dataclass
class Point:
    when: float           # the run's start, seconds since the epoch
    run_id: str
    store: str
    host: str
    version: str
    rec: Record
    verdict: str = ""     # against the previous point on the same host: slower, faster, failed, ...
    why: str = ""


@dataclass
class Series:
    op: str
    label: str
    points: list[Point] = field(default_factory=list)


def collect(stores: list) -> list[Series]:
    """One series per case (library, scheme, parameters, op, vector length) over every run of every
    store. A run is judged against the previous run of the same job on the same host only: a
    changed job (sampling policy, threads) or another machine is shown, never compared."""
    series: dict[str, Series] = {}
    for store in stores:
        for run in store.runs():
            for r in latest(list(store.records(run["run_id"]))):
                env = r.env
                s = series.setdefault(label(r), Series(r.op, label(r)))
                s.points.append(Point(run["started"], run["run_id"], Path(store.path).name,
                                      env.get("host") or (env.get("cpu") or {}).get("model") or "?",
                                      str(r.library_version or "?"), r))
    for s in series.values():
        s.points.sort(key=lambda p: p.when)
        last: dict[str, Point] = {}
        for p in s.points:
            prev = last.get(p.host)
            if prev is not None and prev.rec.job_key != p.rec.job_key:
                p.verdict, p.why = "not compared", "the job changed (sampling policy, threads or parameters)"
            elif prev is not None:
                change = compare_case(prev.rec, p.rec, 0.02, 0.05)
                p.verdict, p.why = change.verdict, change.why or (f"{change.ratio:.2f}x" if change.ratio else "")
                if prev.version != p.version:  # the pin moved between the runs: the change is the upgrade's
                    p.why = f"{p.why}; version {prev.version} -> {p.version}".lstrip("; ")
            last[p.host] = p
    return sorted(series.values(), key=lambda s: (s.op, s.label))


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M")


def _figure(op: str, group: list[Series]) -> dict:
    traces = []
    for s in group:
        ok = [p for p in s.points if p.rec.median_ns]
        if not ok:
            continue
        ci = [p.rec.ci95_ns or [p.rec.median_ns] * 2 for p in ok]
        traces.append({
            "type": "scatter", "mode": "lines+markers", "name": s.label,
            "x": [_when(p.when) for p in ok], "y": [p.rec.median_ns / 1e6 for p in ok],
            "error_y": {"type": "data", "symmetric": False,
                        "array": [(hi - p.rec.median_ns) / 1e6 for p, (_, hi) in zip(ok, ci)],
                        "arrayminus": [(p.rec.median_ns - lo) / 1e6 for p, (lo, _) in zip(ok, ci)]},
            "marker": {"symbol": ["triangle-up" if p.verdict == SLOWER else "triangle-down" if p.verdict == FASTER
                                  else "circle" for p in ok], "size": 9},
            "hovertext": [f"{s.label}<br>{fmt_time(p.rec.median_ns)} [{fmt_time(lo)}, {fmt_time(hi)}]<br>run {p.run_id}"
                          f" ({p.store}), host {p.host}, {p.rec.library} {p.version}"
                          + (f"<br>vs previous: {p.verdict} {p.why}" if p.verdict else "")
                          for p, (lo, hi) in zip(ok, ci)],
            "hoverinfo": "text"})
    times = {x for t in traces for x in t["x"]}
    # One run time: a date axis would zoom into sub-millisecond ticks around it; a category reads.
    xaxis = {"type": "category"} if len(times) < 2 else {}
    return {"data": traces, "layout": {"title": {"text": op}, "yaxis": {"type": "log", "title": {"text": "ms"}},
                                       "xaxis": xaxis, "height": 360, "margin": {"l": 60, "r": 10, "t": 40, "b": 40},
                                       "legend": {"font": {"size": 10}}}}


def _table(s: Series) -> str:
    rows = []
    for p in s.points:
        r = p.rec
        cell = (f"{fmt_time(r.median_ns)} [{fmt_time(r.ci95_ns[0])}, {fmt_time(r.ci95_ns[1])}]"
                if r.median_ns and r.ci95_ns else fmt_time(r.median_ns) if r.median_ns
                else r.status)
        cls = " class='bad'" if p.verdict in (SLOWER, FAILED) else " class='good'" if p.verdict == FASTER else ""
        rows.append(f"<tr{cls}><td>{_when(p.when)}</td><td>{escape(p.run_id)}</td><td>{escape(p.store)}</td>"
                    f"<td>{escape(p.host)}</td><td>{escape(p.version)}</td><td>{escape(cell)}</td>"
                    f"<td>{escape((p.verdict + ' ' + p.why).strip())}</td></tr>")
    return (f"<h3>{escape(s.label)}</h3><table><tr><th>run started (UTC)</th><th>run</th><th>store</th><th>host</th>"
            "<th>library version</th><th>median [95%]</th><th>against the previous run on this host</th></tr>"
            + "".join(rows) + "</table>")


def write(stores: list, out: Path) -> Path:
    from .interactive import plotly_script
    series = collect(stores)
    by_op: dict[str, list[Series]] = {}
    for s in series:
        by_op.setdefault(s.op, []).append(s)
    flagged = [(s, p) for s in series for p in s.points if p.verdict in (SLOWER, FAILED)]
    n_runs = len({p.run_id for s in series for p in s.points})
    anchor = {op: f"op{i}" for i, op in enumerate(sorted(by_op))}
    body = [f"<h1>fhemark history: {n_runs} run{'s' if n_runs != 1 else ''}, {len(series)} case"
            f"{'s' if len(series) != 1 else ''}</h1>",
            "<p>Each case over every run in time order, median with its 95% interval (log axis); triangles mark "
            "a run that <code>compare</code> found slower (up) or faster (down) than the previous run on the same "
            "host. Runs on different hosts are never compared with each other.</p>",
            f"<h2>Regressions ({len(flagged)})</h2><ul>"
            + "".join(f"<li><a href='#{anchor[s.op]}'>{escape(s.label)}</a>: run {escape(p.run_id)} on "
                      f"{escape(p.host)}: {escape(p.verdict)} {escape(p.why)}</li>" for s, p in flagged) + "</ul>"]
    calls = []
    for i, (op, group) in enumerate(sorted(by_op.items())):
        body.append(f"<h2 id='op{i}'>{escape(op)}</h2><div id='h{i}' class='history-figure'></div>")
        body += [_table(s) for s in group]
        fig = json.dumps(_figure(op, group)).replace("</", "<\\/")  # no label can close the script
        calls.append(f"(function (f) {{ Plotly.newPlot('h{i}', f.data, f.layout, {{responsive: true}}); }})({fig});")
    out.mkdir(parents=True, exist_ok=True)
    script = plotly_script(out)
    path = out / "index.html"
    style = ("body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1400px}table{border-collapse:collapse;"
             "margin:.3em 0 1em}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}tr.bad{background:#fde2e2}"
             "tr.good{background:#e2f5e2}")
    path.write_text(f"<!doctype html>\n<html><head><meta charset='utf-8'><title>fhemark history</title>"
                    f"<style>{style}</style>{script}</head><body>\n" + "\n".join(body)
                    + "\n<script>" + "\n".join(calls) + "</script>\n</body></html>\n")
    return path
