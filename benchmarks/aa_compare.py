"""A/A check of the regression gate: runs one suite several times on this machine with the same code,
each run into its own store, and judges each run against the one before with `fhemark compare` at
its default settings. Nothing changed between the runs, so every case flagged is a false alarm:
the script reports how many, per pair, with the machine-wide shift compare removed and its
library-wide verdicts.

    .venv/bin/python benchmarks/aa_compare.py                 # quick suite, 4 runs: 3 pairs
    .venv/bin/python benchmarks/aa_compare.py --runs 3 --out /tmp/aa.json
    .venv/bin/python benchmarks/aa_compare.py --stores a.db b.db c.db   # judge runs already made
    .venv/bin/python benchmarks/aa_compare.py --recheck       # and again with compare --recheck

It reports; it asserts no threshold.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--stores", nargs="*", type=Path, help="stores of runs already made (in order)")
    ap.add_argument("--out", type=Path)
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
    if args.out:
        args.out.write_text(json.dumps(judged, indent=1))


if __name__ == "__main__":
    main()
