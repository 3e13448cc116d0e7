"""A/A check of the regression gate: runs one suite several times on this machine with the same code,
each run into its own store, and judges each run against the one before with `fhemark compare` at
its default settings. Nothing changed between the runs, so every case flagged is a false alarm:
the script reports how many, per pair, with the machine-wide shift compare removed and its
library-wide verdicts.

    .venv/bin/python benchmarks/aa_compare.py                 # quick suite, 4 runs: 3 pairs
    .venv/bin/python benchmarks/aa_compare.py --runs 3 --out /tmp/aa.json
    .venv/bin/python benchmarks/aa_compare.py --stores a.db b.db c.db   # judge runs already made
    .venv/bin/python benchmarks/aa_compare.py --recheck       # and again with compare --recheck
    .venv/bin/python benchmarks/aa_compare.py --stores a.db b.db --slow lattigo   # and a synthetic 10% slowdown

`--slow LIB` judges each pair once more with every sample of LIB's cases in the new run made 10%
slower (in memory, the stores untouched): the gate should then call that library slower.

It reports; it asserts no threshold.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from fhemark.analyse.compare import compare
from fhemark.analyse.select import latest
from fhemark.store.sqlite import Store

FHEMARK = [sys.executable, "-m", "fhemark.cli"]


def _run(suite: str, db: Path) -> None:
    r = subprocess.run(FHEMARK + ["run", "--suite", suite, "--db", str(db), "--report", str(db.parent / "report")],
                       capture_output=True, text=True)
    if not db.exists():
        sys.exit(f"aa_compare: the run into {db} stored nothing: {r.stderr.strip()[-300:]}")


def _judge(base: Path, new: Path, extra: tuple[str, ...] = ()) -> dict:
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    r = subprocess.run(FHEMARK + ["compare", "latest", "latest", "--base-db", str(base), "--db", str(new),
                                  "--json", str(out), *extra], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"aa_compare: compare {base} -> {new} failed: {r.stderr.strip()}")
    answer = json.loads(out.read_text())
    judged = [c for c in answer["cases"] if c["verdict"] in ("same", "slower", "faster")]
    flagged = [c for c in judged if c["verdict"] != "same"]
    return {"base": str(base), "new": str(new), "judged": len(judged), "flagged": len(flagged),
            "flagged_cases": [(c["case"], c["verdict"], round(c["ratio"], 3)) for c in flagged],
            "libraries": answer["libraries"], "machine_shift": answer["machine_shift"], "exit_status": r.returncode}


def _slowed(base: Path, new: Path, library: str, factor: float = 1.10) -> dict:
    """The pair judged with `library`'s new samples multiplied by `factor`: is it caught?"""
    a, b = Store(base, readonly=True), Store(new, readonly=True)
    ra, rb = a.resolve_run("latest"), b.resolve_run("latest")
    new_recs = [r.model_copy(update={"samples_ns": [x * factor for x in r.samples_ns],
                                     "median_ns": r.median_ns * factor if r.median_ns else r.median_ns})
                if r.library == library and r.samples_ns else r for r in latest(list(b.records(rb)))]
    cmp = compare(list(a.records(ra)), new_recs, a.run_env(ra), b.run_env(rb), other_host=True)
    lib = next((x for x in cmp.libraries if x.library == library), None)
    flagged = sum(c.verdict == "slower" and c.new.library == library for c in cmp.changes)
    cases = sum(c.ratio is not None and c.new.library == library for c in cmp.changes)
    return {"library": library, "factor": factor, "verdict": lib.verdict if lib else None,
            "ratio": lib.ratio if lib else None, "cases_flagged": f"{flagged}/{cases}", "exit_status": cmp.exit_status}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--stores", nargs="*", type=Path, help="stores of runs already made (in order)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--slow", help="also judge each pair with this library's new samples 10%% slower")
    ap.add_argument("--recheck", action="store_true",
                    help="judge each pair again with compare --recheck (it measures the flagged cases once more)")
    args = ap.parse_args()
    stores = args.stores
    if not stores:
        work = Path(tempfile.mkdtemp(prefix="fhemark-aa-"))
        stores = []
        for i in range(args.runs):
            (work / f"run{i}").mkdir()
            stores.append(work / f"run{i}" / "aa.db")
            _run(args.suite, stores[-1])
            print(f"run {i + 1} of {args.runs} stored in {stores[-1]}", flush=True)
    ways = {"default": ()} | ({"--recheck": ("--recheck",)} if args.recheck else {})
    judged = {}
    for way, extra in ways.items():
        pairs = judged[way] = [_judge(a, b, extra) for a, b in zip(stores, stores[1:])]
        print(f"compare {way}:")
        for p in pairs:
            libs = ", ".join(f"{lib['library']} {lib['ratio']:.3f} {lib['verdict']}" for lib in p["libraries"])
            print(f"{p['base']} -> {p['new']}: {p['flagged']} of {p['judged']} cases "
                  f"flagged ({100 * p['flagged'] / max(p['judged'], 1):.1f}%), exit {p['exit_status']}; libraries: {libs}")
            for case in p["flagged_cases"]:
                print(f"    {case[0]}: {case[1]} {case[2]}")
        total = sum(p["flagged"] for p in pairs), sum(p["judged"] for p in pairs)
        failing = sum(p["exit_status"] != 0 for p in pairs)
        print(f"all pairs: {total[0]} of {total[1]} cases flagged ({100 * total[0] / max(total[1], 1):.2f}%); "
              f"the gate failed {failing} of {len(pairs)} pairs")
    if args.slow:
        judged["slowed"] = [_slowed(a, b, args.slow) for a, b in zip(stores, stores[1:])]
        for x in judged["slowed"]:
            print(f"{args.slow} made {x['factor']:.2f}x slower: library verdict {x['verdict']} ({x['ratio']:.3f}), "
                  f"{x['cases_flagged']} of its cases slower, exit {x['exit_status']}")
    if args.out:
        args.out.write_text(json.dumps(judged, indent=1))


if __name__ == "__main__":
    main()
