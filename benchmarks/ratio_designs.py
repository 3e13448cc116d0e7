"""Which design decides between libraries on this host? One run of a suite in which every case is
measured twice, side by side in the same rounds: once with the libraries taking turns slice by
slice and judged on the ratio of medians paired by round (the design before 2026-11-28), once with
the libraries taking turns request by request and judged on the ratio of floors (stats.floor_ratio,
today's). Reports, per design: the median and p90 half-width of the ratio intervals, how many
library pairs the interval separates, and how many like-for-like cells have one library clearly
fastest (every other library's interval above 1, the overview's "clearly"). With --runs 2 or more,
also how often a later run's ratio falls inside the first run's interval (both designs).

    .venv/bin/python benchmarks/ratio_designs.py                       # quick suite, one run
    .venv/bin/python benchmarks/ratio_designs.py --runs 2 --out /tmp/designs.json

It reports; it asserts no threshold. Exits non-zero (one line) only when a run produced nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from fhemark.analyse import ratios
from fhemark.drivers.registry import manifests
from fhemark.measure.affinity import describe
from fhemark.plan.jobs import build
from fhemark.plan.suites import load
from fhemark.stats import floor_ratio, hull, median_ci, run_interval
from fhemark.store.record import Record
from fhemark.store.sqlite import Store

FHEMARK = [sys.executable, "-m", "fhemark.cli"]
DESIGNS = ("slice", "sample")


def doubled(suite: str, out: Path) -> Path:
    """The suite with every case twice: once interleaved slice by slice, once sample by sample."""
    data = yaml.safe_load(load(suite).model_dump_json())
    data["name"] = f"{data['name']}-designs"
    cases = []
    for case in data["cases"]:
        for design in DESIGNS:
            cases.append({**case, "policy": {**case.get("policy", {}), "interleave": design}})
    data.update(cases=cases, full_cases=[])
    for internal in ("workloads", "source"):  # set by fhemark when it loads a suite, refused in YAML
        data.pop(internal, None)
    out.write_text(yaml.safe_dump(data))
    return out


def round_paired(a: Record, b: Record) -> tuple[float, tuple[float, float] | None]:
    """The design before: median(a) / median(b), interval from the per-round ratios of medians."""
    av, bv = np.asarray(a.samples_ns), np.asarray(b.samples_ns)
    ar, br = np.asarray(a.sample_round), np.asarray(b.sample_round)
    common = sorted(set(ar.tolist()) & set(br.tolist()))
    per = np.array([np.median(av[ar == r]) / np.median(bv[br == r]) for r in common])
    ratio = float(np.median(av) / np.median(bv))
    ci = median_ci(per) if per.size else None
    return ratio, hull(ci, run_interval(ratio, per)) if ci else None


def judged(recs: list[Record], design: str) -> dict[tuple, tuple[float, tuple[float, float] | None]]:
    """Per (cell, library): its ratio to the cell's fastest library and the interval, under a design."""
    cells: dict[tuple, dict[str, Record]] = {}
    for r in recs:
        cells.setdefault((r.scheme, r.params.get("name") or r.params["N"], r.op, r.vector_length), {})[r.library] = r
    out = {}
    for cell, per in cells.items():
        if len(per) < 2:
            continue
        if design == "slice":
            best = min(per.values(), key=lambda r: r.median_ns)
            out.update({(cell, lib): (*round_paired(r, best), best.library) for lib, r in per.items() if r is not best})
        else:
            best = ratios.fastest(list(per.values()))
            out.update({(cell, lib): (fr.ratio, fr.ci95, best.library) for lib, r in per.items() if r is not best
                        for fr in [floor_ratio(r.samples_ns, best.samples_ns)]})
        out[(cell, best.library)] = (1.0, None, best.library)
    return out


def summary(found: dict) -> dict:
    others = {k: v for k, v in found.items() if v[1] is not None}
    half = [math.log(hi / lo) / 2 for _, (lo, hi), _ in others.values()]
    cells: dict[tuple, list] = {}
    for (cell, _), (_, ci, _) in found.items():
        cells.setdefault(cell, []).append(ci)
    clear = sum(all(ci is not None and ci[0] > 1 for ci in cis if ci is not None) and
                sum(ci is None for ci in cis) == 1 for cis in cells.values())
    return {"ratios": len(others), "half_width_median": float(np.median(half)) if half else None,
            "half_width_p90": float(np.quantile(half, 0.9)) if half else None,
            "separated": sum(ci[0] > 1 for _, ci, _ in others.values()), "cells": len(cells), "clearly_fastest": clear}


def one_run(suite_file: Path, db: Path) -> dict[str, list[Record]]:
    t0 = time.monotonic()
    proc = subprocess.run(FHEMARK + ["run", "--suite", str(suite_file), "--db", str(db), "--report",
                                     str(db.parent / f"rep-{db.stem}"), "--yes"], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"ratio_designs: run failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    print(f"run into {db}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    suite = load(str(suite_file))
    plan = build(suite, sorted(manifests()))
    design = {j.key: j.policy.interleave for j in plan.jobs}
    st = Store(db, readonly=True)
    recs = [r for r in st.records() if r.status == "ok" and r.samples_ns and r.depth is None and r.job_key in design]
    return {d: [r for r in recs if design[r.job_key] == d] for d in DESIGNS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fhemark-designs-"))
    suite_file = doubled(args.suite, work / "designs.yaml")
    runs = [one_run(suite_file, work / f"run{i}.db") for i in range(args.runs)]
    if not any(runs[0].values()):
        sys.exit("ratio_designs: the run produced no timed result")
    report: dict = {"suite": args.suite, "runs": args.runs, "driver_cpus": describe(1)}  # FHEMARK_PIN_CPU
    for d in DESIGNS:
        found = [judged(run[d], d) for run in runs]
        report[d] = summary(found[0])
        # the same library the fastest in both runs: the two ratios have one denominator
        pairs = [(found[0][k], later[k]) for later in found[1:] for k in found[0]
                 if k in later and found[0][k][1] is not None and later[k][2] == found[0][k][2]]
        if pairs:
            report[d]["later_inside_first"] = f"{sum(a[1][0] <= b[0] <= a[1][1] for a, b in pairs)}/{len(pairs)}"
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
