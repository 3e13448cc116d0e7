"""Figures a paper can use: the overview's ratios to the fastest library, each operation per library
for every parameter set, and Study 4's time against n and nb on log scales."""

from __future__ import annotations

import re
from pathlib import Path

from ..analyse.select import latest
from ..store.record import Record
from .overview import Overview, library_colours


def _series(recs: list[Record], pattern: str) -> dict[str, list[tuple[int, float, float, float]]]:
    out: dict[str, list] = {}
    for r in latest(recs):
        m = re.fullmatch(pattern, r.op)
        if not m or r.status != "ok" or r.median_ns is None:
            continue
        label = f"{r.library} {r.scheme} ({(r.workload or {}).get('method', '')})"
        if m.lastindex and m.lastindex > 1:
            label += f", {m.group(2)}-bit"
        lo, hi = r.ci95_ns or (r.median_ns, r.median_ns)  # too few samples: no interval drawn
        out.setdefault(label, []).append((int(m.group(1)), r.median_ns / 1e9, lo / 1e9, hi / 1e9))
    return {k: sorted(v) for k, v in out.items()}


# Beyond this many (scheme, parameter set) groups a figure per group stops being readable: the tables remain.
MAX_OP_FIGURES = 12


def _by_setup(recs: list[Record]) -> dict[tuple[str, str], dict[str, dict[str, Record]]]:
    """(scheme, params) -> op -> library -> record, for the single-operation results over all slots."""
    out: dict[tuple[str, str], dict[str, dict[str, Record]]] = {}
    for r in latest(recs):
        if (r.status != "ok" or r.median_ns is None or r.vector_length or r.workload
                or r.op.startswith("pipeline_")):
            continue
        p = r.params
        key = (r.scheme, p.get("name") or f"N={p['N']}")
        out.setdefault(key, {}).setdefault(r.op, {})[r.library] = r
    return out


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, out: Path, name: str) -> list[Path]:
    written = []
    for ext in ("png", "svg"):
        path = out / f"{name}.{ext}"
        fig.savefig(path, dpi=150)
        written.append(path)
    return written


def _op_figures(recs: list[Record], out: Path) -> list[Path]:
    """Per scheme and parameter set: every operation's median (95% CI) per library, side by side."""
    groups = _by_setup(recs)
    if not groups or len(groups) > MAX_OP_FIGURES:
        return []
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for (scheme, label), by_op in sorted(groups.items()):
        libs = sorted({lib for per in by_op.values() for lib in per})
        ops = list(by_op)
        height = 0.8 / len(libs)
        fig, ax = plt.subplots(figsize=(8, 0.12 * len(ops) * len(libs) + 1.5))
        for i, lib in enumerate(libs):
            ys, xs, lo, hi = [], [], [], []
            for j, op in enumerate(ops):
                r = by_op[op].get(lib)
                if r is None:
                    continue
                ys.append(j + i * height)
                xs.append(r.median_ns / 1e6)
                ci = r.ci95_ns or (r.median_ns, r.median_ns)  # too few samples: no interval drawn
                lo.append(xs[-1] - ci[0] / 1e6)
                hi.append(ci[1] / 1e6 - xs[-1])
            # Points, not bars: a bar on a log axis has no honest baseline and exaggerates differences.
            mine = [per[lib] for per in by_op.values() if lib in per]
            marks = ("†" if any(r.insecure for r in mine) else "") + \
                    ("≠" if any(r.params_match is False for r in mine) else "") + \
                    ("‡" if any(r.deviations for r in mine) else "")
            ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", markersize=4, capsize=2,
                        label=f"{lib} {marks}" if marks else lib)
        # An op some library times differently is labelled ‡ (the tables' footnotes say how).
        labels = [op + (" ‡" if any(r.deviations for r in by_op[op].values()) else "") for op in ops]
        written += _finish(plt, fig, ax, labels, height * (len(libs) - 1) / 2, "time (ms), median and 95% CI; log scale",
                           f"{scheme.upper()} {label}: every result decrypted and checked", out,
                           f"ops-{scheme}-{label}")
    return written


def _finish(plt, fig, ax, labels: list[str], offset: float, xlabel: str, title: str, out: Path, name: str) -> list[Path]:
    """A figure of one row of points per op (each library's `offset` apart), log x axis, saved and closed."""
    ax.set_yticks([j + offset for j in range(len(labels))], labels, fontsize=7)
    ax.set_ylim(len(labels) - 0.1, -0.3)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    written = _save(fig, out, name.replace("/", "_"))
    plt.close(fig)
    return written


def _ratio_figures(ov: Overview, out: Path) -> list[Path]:
    """The HTML overview's figures, static: per setup with 2+ libraries, each op's ratio to the fastest."""
    compared = [s for s in ov.setups if s.compared]
    if not compared or len(compared) > MAX_OP_FIGURES:
        return []
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    colours = library_colours(ov)  # the interactive figures' colours
    for s in compared:
        height = 0.8 / len(s.libraries)
        fig, ax = plt.subplots(figsize=(7, 0.1 * len(s.ops) * len(s.libraries) + 1.6))
        for i, lib in enumerate(s.libraries):
            mine = [c for c in s.cells if c.library == lib]
            ys = [s.ops.index(c.op) + i * height for c in mine]
            xs = [c.ratio for c in mine]
            spans = [c.ci or (c.ratio, c.ratio) for c in mine]
            err = [[x - lo for x, (lo, _) in zip(xs, spans)], [hi - x for x, (_, hi) in zip(xs, spans)]]
            colour = colours[lib]
            ax.errorbar(xs, ys, xerr=err, fmt="o", markersize=4, capsize=2, label=lib, color=colour)
            for c, x, y in zip(mine, xs, ys):
                if c.deviation:  # an open diamond and its footnote number: this cell times different work
                    ax.plot([x], [y], "D", markersize=7, mfc="none", color=colour)
                    ax.annotate(c.deviation.strip(), (x, y), xytext=(5, -2), textcoords="offset points", fontsize=6)
        deviating = s.deviating_ops()
        ax.axvline(1, color="#888", linewidth=0.8, linestyle=":")
        written += _finish(plt, fig, ax, [op + (" ‡" if op in deviating else "") for op in s.ops],
                           height * (len(s.libraries) - 1) / 2, "time / the fastest library's time (log scale), 95% interval",
                           f"{s.title}: ratio to the fastest library per operation", out, f"ratio-{s.scheme}-{s.params}")
    return written


def write(recs: list[Record], out: Path, overview: Overview | None = None) -> list[Path]:
    written = (_ratio_figures(overview, out) if overview is not None else []) + _op_figures(recs, out)
    figures = [("multiadd", r"multiadd_(\d+)x(\d+)", "number of integers n", "sum of n integers"),
               ("compare", r"compare_(\d+)", "bits per integer nb", "comparison of two nb-bit integers")]
    todo = [(name, _series(recs, pat), xl, title) for name, pat, xl, title in figures]
    todo = [t for t in todo if t[1]]
    if not todo:
        return written
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    for name, series, xlabel, title in todo:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, pts in series.items():
            xs, ys, los, his = zip(*pts)
            ax.errorbar(xs, ys, yerr=[[y - lo for y, lo in zip(ys, los)], [hi - y for y, hi in zip(ys, his)]],
                        marker="o", capsize=3, label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("time (s), median and 95% CI")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        written += _save(fig, out, name)
        plt.close(fig)
    return written
