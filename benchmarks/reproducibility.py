"""Does a second run give the same answer? Runs one suite several times on this machine, each
into its own store, and reports per case whether each later run's median falls inside the first
run's 95% interval, how many medians moved by more than 5%, the same for the ratios between
libraries (each library's median over another's, for the same scheme, parameters and op), and every
case whose status changed between runs (ok in one, wrong_result in another: a flaky preset or check).

    .venv/bin/python benchmarks/reproducibility.py                  # quick suite, 2 runs
    .venv/bin/python benchmarks/reproducibility.py --suite study2 --runs 3 --out /tmp/repro.json

It reports; it asserts no threshold. It exits non-zero (one line on stderr) only when a run failed
to produce results.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fhemark.analyse.select import timed_seconds
from fhemark.store.record import Record
from fhemark.stats import floor_ratio

ROOT = Path(__file__).resolve().parents[1]
FHEMARK = [sys.executable, "-m", "fhemark.cli"]
SPLIT_NS = 1e6  # ratios are also counted apart for ops of 1 ms and more, and below


def run_once(suite: str, db: Path, extra: list[str]) -> tuple[list[dict], float, float]:
    """One run of the suite into its own store: its records, the machine's 1-minute load after,
    and the run's wall time."""
    t0 = time.monotonic()
    proc = subprocess.run(FHEMARK + ["run", "--suite", suite, "--db", str(db), "--report", str(db.parent / "rep")]
                          + extra, cwd=db.parent, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode not in (0, 1):  # 1: some job failed; still comparable where it did not
        sys.exit(f"reproducibility: run of {suite} failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    out = subprocess.run(FHEMARK + ["export", "--db", str(db), "--format", "json"], capture_output=True, text=True,
                         check=True)
    recs = json.loads(out.stdout)
    if not any(timed(r) for r in recs):
        sys.exit(f"reproducibility: run of {suite} produced no timed result")
    return recs, os.getloadavg()[0], wall


def exported_seconds(recs: list[dict]) -> float:
    """analyse.select.timed_seconds of exported records (read back as the Records they were)."""
    return timed_seconds([Record.model_validate(r) for r in recs])


def timed(r: dict) -> bool:
    return r["status"] == "ok" and bool(r.get("median_ns"))


def case(r: dict) -> tuple:
    p = r["params"]
    return (r["library"], r["scheme"], p.get("name") or p["N"], r["op"], r.get("vector_length"))


def ratios(recs: list[dict]) -> dict[tuple, tuple[float, tuple[float, float] | None]]:
    """Every pair of libraries on the same (scheme, params, op, vector length): the ratio of their
    floors with its interval (stats.floor_ratio: what the report's ratios are)."""
    by_case: dict[tuple, dict[str, dict]] = {}
    for r in recs:
        by_case.setdefault(case(r)[1:], {})[r["library"]] = r

    def one(a: dict, b: dict) -> tuple[float, tuple[float, float] | None]:
        fr = floor_ratio(a["samples_ns"], b["samples_ns"])
        return fr.ratio, fr.ci95

    return {(x, y) + k: one(m[x], m[y]) for k, m in by_case.items() for x, y in itertools.combinations(sorted(m), 2)}


def flips(first: list[dict], later: list[dict]) -> list[dict]:
    """Cases measured in both runs whose status differs (the ops' own outcome, not 'skipped')."""
    base = {case(r): r for r in first}
    return [{"case": " ".join(map(str, case(r))), "first": base[case(r)]["status"], "later": r["status"],
             "detail": r.get("error") or base[case(r)].get("error")}
            for r in later if case(r) in base and base[case(r)]["status"] != r["status"]]


def compare(first: list[dict], later: list[dict]) -> dict:
    status_changes = flips(first, later)
    first, later = [r for r in first if timed(r)], [r for r in later if timed(r)]
    base = {case(r): r for r in first}
    rows, inside, moved = [], 0, 0
    for r in later:
        b = base.get(case(r))
        if b is None or not b.get("ci95_ns"):
            continue
        lo, hi = b["ci95_ns"]
        change = r["median_ns"] / b["median_ns"] - 1
        ok = lo <= r["median_ns"] <= hi
        inside += ok
        moved += abs(change) > 0.05
        rows.append({"case": " ".join(map(str, case(r))), "first_median_ns": b["median_ns"], "first_ci95_ns": [lo, hi],
                     "median_ns": r["median_ns"], "change": change, "inside_first_interval": ok,
                     "processes": r.get("processes"), "ci_method": r.get("ci_method")})
    ra, rb = ratios(first), ratios(later)
    common = [k for k in ra if k in rb]
    # Each ratio's cost: the slower library's first-run median. Below 1 ms the ops are bound by
    # memory (add, sub, encode, decode, scalar products), whose speed on a shared host follows its
    # neighbours' cache and memory traffic, which no sampling inside one run can average out.
    cost = {case(r): r["median_ns"] for r in first}
    ratio_rows = [{"pair": " ".join(map(str, k)), "first": ra[k][0], "first_ci95": ra[k][1], "later": rb[k][0],
                   "change": rb[k][0] / ra[k][0] - 1,
                   "inside_first_interval": bool(ra[k][1] and ra[k][1][0] <= rb[k][0] <= ra[k][1][1]),
                   "slower_median_ns": max(cost[(k[0],) + k[2:]], cost[(k[1],) + k[2:]])}
                  for k in common]

    def within_5pct(xs: list[dict]) -> int:
        return sum(abs(x["change"]) <= 0.05 for x in xs)

    by_cost = {name: [x for x in ratio_rows if (x["slower_median_ns"] >= SPLIT_NS) == slow]
               for name, slow in (("from_1ms", True), ("below_1ms", False))}
    # The ratios run 1 itself claimed to know within 5% (paired interval inside [0.95, 1.05] x ratio):
    # does that claim hold in the next run?
    tight = [x for x in ratio_rows if x["first_ci95"] and x["first_ci95"][0] >= 0.95 * x["first"]
             and x["first_ci95"][1] <= 1.05 * x["first"]]
    return {"cases": len(rows), "median_inside_first_interval": inside, "medians_moved_over_5pct": moved,
            "ratios": len(ratio_rows), "ratios_within_5pct": within_5pct(ratio_rows),
            "ratios_by_cost": {name: {"ratios": len(xs), "within_5pct": within_5pct(xs)} for name, xs in by_cost.items()},
            "ratios_claimed_within_5pct": len(tight),
            "claimed_ratios_within_5pct": within_5pct(tight),
            "ratios_with_interval": sum(x["first_ci95"] is not None for x in ratio_rows),
            "ratio_inside_first_interval": sum(x["inside_first_interval"] for x in ratio_rows),
            "status_changes": status_changes,
            "rows": rows, "ratio_rows": ratio_rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--out", type=Path, help="write every case as JSON here")
    ap.add_argument("--library", action="append", default=[], help="only these libraries (repeatable)")
    ap.add_argument("--raw", type=Path, help="keep every run's exported records here (run1.json, ...)")
    args = ap.parse_args()
    extra = [x for lib in args.library for x in ("--library", lib)]
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for i in range(args.runs):
            db = Path(tmp) / f"run{i}" / "r.db"
            db.parent.mkdir()
            runs.append(run_once(args.suite, db, extra))
            if args.raw:
                args.raw.mkdir(parents=True, exist_ok=True)
                (args.raw / f"run{i + 1}.json").write_text(json.dumps(runs[-1][0]))
            recs, load, wall = runs[-1]
            print(f"run {i + 1}/{args.runs}: {sum(map(timed, recs))} timed results in {wall:.0f} s, "
                  f"{100 * exported_seconds(recs) / wall:.0f}% of it inside timed regions; load after {load:.2f}", flush=True)
    report = {"suite": args.suite, "runs": args.runs, "load_1m_after_each_run": [load for _, load, _ in runs],
              "wall_s": [wall for _, _, wall in runs],
              "timed_fraction": [exported_seconds(recs) / wall for recs, _, wall in runs],
              "against_first": [compare(runs[0][0], later) for later, _, _ in runs[1:]]}
    for i, c in enumerate(report["against_first"], 2):
        n, k = max(c["cases"], 1), max(c["ratios"], 1)
        print(f"run {i} against run 1 ({args.suite}): median inside run 1's 95% interval in "
              f"{c['median_inside_first_interval']} of {c['cases']} cases ({100 * c['median_inside_first_interval'] / n:.0f}%); "
              f"medians moved > 5%: {c['medians_moved_over_5pct']} ({100 * c['medians_moved_over_5pct'] / n:.0f}%); "
              f"cross-library ratios within 5%: {c['ratios_within_5pct']} of {c['ratios']} "
              f"({100 * c['ratios_within_5pct'] / k:.0f}%); inside run 1's paired-round interval: "
              f"{c['ratio_inside_first_interval']} of {c['ratios_with_interval']}; of the "
              f"{c['ratios_claimed_within_5pct']} ratios whose run-1 interval was within 5%, "
              f"{c['claimed_ratios_within_5pct']} agree within 5%; "
              + "; ".join(f"ratios of ops {label}: {c['ratios_by_cost'][name]['within_5pct']} of "
                          f"{c['ratios_by_cost'][name]['ratios']} within 5%"
                          for name, label in (("from_1ms", "of 1 ms or more"), ("below_1ms", "below 1 ms")))
              + "; "
              f"status changed (e.g. ok <-> wrong_result): {len(c['status_changes'])}")
        for f in c["status_changes"]:
            print(f"  {f['case']}: {f['first']} -> {f['later']} ({f['detail']})")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
