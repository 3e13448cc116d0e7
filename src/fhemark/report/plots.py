"""Figures a paper can use: Study 4's time against n and nb on log scales."""

from __future__ import annotations

import re
from pathlib import Path

from .tables import latest


def _series(recs: list[dict], pattern: str) -> dict[str, list[tuple[int, float, float, float]]]:
    out: dict[str, list] = {}
    for r in latest(recs):
        m = re.fullmatch(pattern, r["op"])
        if not m or r["status"] != "ok" or r.get("median_ns") is None:
            continue
        label = f"{r['library']} {r['scheme']} ({r.get('workload', {}).get('method', '')})"
        if m.lastindex and m.lastindex > 1:
            label += f", {m.group(2)}-bit"
        lo, hi = r["ci95_ns"]
        out.setdefault(label, []).append((int(m.group(1)), r["median_ns"] / 1e9, lo / 1e9, hi / 1e9))
    return {k: sorted(v) for k, v in out.items()}


def write(recs: list[dict], out: Path) -> list[Path]:
    figures = [("multiadd", r"multiadd_(\d+)x(\d+)", "number of integers n", "sum of n integers"),
               ("compare", r"compare_(\d+)", "bits per integer nb", "comparison of two nb-bit integers")]
    todo = [(name, _series(recs, pat), xl, title) for name, pat, xl, title in figures]
    todo = [t for t in todo if t[1]]
    if not todo:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
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
        for ext in ("png", "svg"):
            path = out / f"{name}.{ext}"
            fig.savefig(path, dpi=150)
            written.append(path)
        plt.close(fig)
    return written
