"""`python -m fhemark.compile heir TARGET...`: the heir->lattigo row of each workload, at HEIR's own
parameters and at fhemark's (each --params set, or a suite's), every sample checked.

TARGET: a workload file, a suite YAML (its workload files and parameter sets; with --hand, the
suite itself is run too, for the hand-written Lattigo rows), or a small built-in (dot_<n>,
poly_<k>, sqplus1_<n>, affine_<n>). Without HEIR or Go: one line saying so, exit 0 (skipped).

The records are printed as a table and, with --json FILE, written as JSON lines (phase 1: not yet
in the SQLite store)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from ..errors import UserError
from ..measure import lease
from ..model.params import ParamSet, resolve
from ..model.workload import Workload
from ..model.workload_file import load
from . import heir
from .builtins import builtin
from .measure import Row, run_row


def _targets(target: str, params: list[str]) -> tuple[list[tuple[Workload, list[ParamSet]]], Path | None]:
    """(workload, fhemark's parameter sets for it) per workload the target names; the suite's path."""
    given = [resolve(p, "ckks", "--params") for p in params]
    if target.endswith((".yaml", ".yml")):
        from ..plan import suites
        suite = suites.load(target)
        out = []
        for case in suite.cases:
            if "ckks" not in case.schemes or not isinstance(case.ops, list):
                continue
            sets = given or [resolve(p, "ckks", "params") for p in case.params]
            for ref in (r for r in suite.workloads if r.name in case.ops):
                out += [(w, sets) for w in load(ref.file) if w.name == ref.name]
        return out, Path(target)
    if target.endswith(".py"):
        return [(w, given) for w in load(target)], None
    w = builtin(target)
    if w is None:
        raise UserError(f"{target}: no such workload file, suite or built-in",
                        "give a workload file, a suite YAML, or dot_<n>, poly_<k>, sqplus1_<n>, affine_<n>")
    return [(w, given)], None


def _security(p: dict) -> str:
    est = p["security"]["hestd2018"]
    return f"~{est['bits']} (below)" if est["below_table"] else f">={est['bits']}"


def _table(rows: list[Row]) -> str:
    head = ("workload", "params from", "N", "log Q", "log P", "scale", "log QP", "security", "median ms", "95% CI ms",
            "prec bits", "checked", "eval keys MB", "peak MB")
    lines = [head]
    for r in rows:
        if r.error:
            lines.append((r.workload, r.params_from, f"failed: {r.error}"))
            continue
        d, p = r.record(), r.scheme
        ci = d["ci95_ns"]
        lines.append((r.workload, r.params_from, str(p["N"]), "+".join(f"{b:g}" for b in p["log_q"]),
                      "+".join(f"{b:g}" for b in p["log_p"]), f"2^{p['scale_bits']}", f"{p['log_qp']:g}", _security(p),
                      f"{d['median_ns'] / 1e6:.2f}", f"{ci[0] / 1e6:.2f}-{ci[1] / 1e6:.2f}" if ci else "-",
                      f"{d['precision_bits']:g}", f"{d['checked']}, {d['wrong']} wrong",
                      f"{d['eval_key_bytes'] / 2**20:.1f}" if d["eval_key_bytes"] else "-",
                      f"{d['peak_rss_bytes'] / 2**20:.0f}" if d["peak_rss_bytes"] else "-"))
    widths = [max(len(x[i]) for x in lines if i < len(x) and len(x) > 3) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(widths[i]) if len(x) > 3 else c for i, c in enumerate(x)).rstrip() for x in lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fhemark.compile", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="compiler", required=True)
    h = sub.add_parser("heir", help="HEIR -> Lattigo (CKKS)")
    h.add_argument("targets", nargs="+")
    h.add_argument("--params", action="append", default=[], help="fhemark's parameter set(s) for the second row")
    h.add_argument("--samples", type=int, default=12)
    h.add_argument("--warmup", type=int, default=1)
    h.add_argument("--compile-timeout", type=float, default=heir.COMPILE_TIMEOUT_S)
    h.add_argument("--json", type=Path, help="write every row's record here (JSON lines)")
    h.add_argument("--hand", action="store_true", help="a suite target: run the suite too (the hand-written rows)")
    h.add_argument("--db", help="the store for --hand's suite run (default: fhemark's)")
    a = ap.parse_args(argv)
    try:
        heir.tools()
        heir.go()
        jobs, suite = [], None
        for t in a.targets:
            found, path = _targets(t, a.params)
            jobs += found
            suite = suite or path
    except heir.Unavailable as exc:
        print(exc)
        return 0
    except UserError as exc:
        print(exc.line(), file=sys.stderr)
        return exc.exit_code
    if a.hand and suite is not None:
        cmd = [sys.executable, "-m", "fhemark.cli", "run", "--suite", str(suite), "--library", "lattigo",
               *(["--db", a.db] if a.db else [])]
        print("hand-written rows:", " ".join(cmd[2:]), flush=True)
        if subprocess.run(cmd, check=False).returncode not in (0, 1):
            print("the hand-written rows did not run (the line above says why); the compiled rows follow", flush=True)
    rows: list[Row] = []
    with lease.hold("heir->lattigo", lambda who: print(f"waiting for the host: {who} is measuring", flush=True)):
        for w, sets in jobs:
            for given in (None, *sets):
                rows.append(run_row(w, given, a.samples, a.warmup, compile_timeout=a.compile_timeout))
                print(f"{w.name} at {rows[-1].params_from}: {'done' if not rows[-1].error else rows[-1].error}",
                      flush=True)
    print(f"heir->lattigo (heir-py {heir.HEIR_PY_VERSION}, Lattigo v6.2.0, 1 thread; encryption and plaintext "
          "preprocessing untimed):")
    print(_table(rows))
    if a.json:
        try:
            a.json.parent.mkdir(parents=True, exist_ok=True)
            a.json.write_text("".join(json.dumps(r.record()) + "\n" for r in rows))
        except OSError as exc:
            print(f"error: cannot write {a.json}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return 0 if not any(r.wrong for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
