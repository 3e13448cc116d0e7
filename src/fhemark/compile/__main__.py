"""`python -m fhemark.compile heir TARGET...`: the heir->lattigo row of each workload, at HEIR's own
parameters and at fhemark's (each --params set, or a suite's), every sample checked.

TARGET: a workload file, a suite YAML (its workload files and parameter sets; with --hand, the
suite itself is run too, for the hand-written Lattigo rows), or a small built-in (dot_<n>,
poly_<k>, sqplus1_<n>, affine_<n>; integers: add_i<bits>, mul_i<bits>, max_i<bits>). An integer
(tfhe_int) workload's row is heir->tfhe-rs (compile/tfhe_rs.py). Without HEIR or Go (cargo and the
built TFHE-rs driver for integers): one line saying so, exit 0 (skipped).

The rows are printed as a table and, with --json FILE, written as JSON lines, one record each as
the store holds it (store/record.py); `fhemark choose FILE --compilers heir` stores them."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from ..errors import UserError
from ..locations import project_root
from ..measure.metadata import environment
from ..model.params import ParamSet, resolve
from ..model.workload import Workload
from ..model.workload_file import load
from . import heir, tfhe_rs
from .builtins import builtin
from .measure import measure_rows, table
from .records import Context, as_record


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
                        "give a workload file, a suite YAML, or dot_<n>, poly_<k>, sqplus1_<n>, affine_<n>, "
                        "add_i<bits>, mul_i<bits>, max_i<bits>")
    return [(w, given)], None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fhemark.compile", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="compiler", required=True)
    h = sub.add_parser("heir", help="HEIR -> Lattigo (CKKS), HEIR -> TFHE-rs (integer workloads)")
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
        jobs, suite = [], None
        for t in a.targets:
            found, path = _targets(t, a.params)
            jobs += found
            suite = suite or path
        if any(not tfhe_rs.handles(w) for w, _ in jobs):
            heir.go()
        if any(tfhe_rs.handles(w) for w, _ in jobs):
            tfhe_rs.cargo()
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
    say = lambda line: print(line, flush=True)  # noqa: E731 - interleaved with the suite's output
    done = [(w, r) for w, sets in jobs for r in
            (tfhe_rs.measure_rows(w, a.samples, a.warmup, a.compile_timeout, say) if tfhe_rs.handles(w) else
             measure_rows(w, sets, a.samples, a.warmup, a.compile_timeout, say))]
    rows = [r for _, r in done]
    ints = [r for r in rows if r.library == tfhe_rs.LIBRARY]
    print("\n\n".join(t for t in (table([r for r in rows if r not in ints]) if len(ints) < len(rows) else "",
                                    tfhe_rs.table(ints) if ints else "") if t))
    if a.json:
        ctx = Context(f"compile-{time.strftime('%Y%m%dT%H%M%S')}", "python -m fhemark.compile",
                      environment(1, project_root()))
        try:
            a.json.parent.mkdir(parents=True, exist_ok=True)
            a.json.write_text("".join(json.dumps(as_record(r, w, ctx).model_dump(exclude_unset=True)) + "\n"
                                      for w, r in done))
        except OSError as exc:
            print(f"error: cannot write {a.json}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return 0 if not any(r.wrong for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
