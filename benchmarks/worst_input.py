"""Uniform draws against the worst input found (advise/worst.py), on the built-in CKKS computations.

For each computation (a workload file, or a built-in application's name), at the advisor's first
candidate set with a scale of at least --scale bits, in one driver process with fresh keys: as many
uniform draws as the worst input search evaluates, then the search itself (edges, then the budgeted
search), and the largest error of each, in absolute and relative bits.

    .venv/bin/python benchmarks/worst_input.py examples/statistics.py examples/mlp_digits.py dot_4096 poly_7 \
        --library seal --library lattigo
"""

from __future__ import annotations

import argparse
import math
import time

from fhemark.advise import worst
from fhemark.advise.advisor import Need, candidates
from fhemark.model.catalog import lookup
from fhemark.model.requirements import derive
from fhemark.model.workload import Workload
from fhemark.model.workload_file import load


def workload(target: str) -> Workload:
    if target.endswith(".py"):
        (w,) = load(target)
        return w
    op = lookup(target, "ckks")
    if op is None or op.gen is None:
        raise SystemExit(f"{target}: no built-in CKKS application of that name")
    return op.gen.__self__  # a built-in application is a Workload's catalog entry (apps/workloads.py)


def bits(err: float) -> float:
    return -math.log2(err) if 0 < err < math.inf else math.inf if err == 0 else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("targets", nargs="+")
    ap.add_argument("--library", action="append", default=None)
    ap.add_argument("--scale", type=int, default=40)
    args = ap.parse_args()
    n = worst.EDGES + worst.SEARCH
    print(f"{n} uniform draws vs the worst input search ({worst.EDGES} edges + {worst.SEARCH} search), same keys")
    print("workload | library | set | uniform abs/rel bits | worst abs/rel bits | found by | seconds")
    for target in args.targets:
        w = workload(target)
        req = derive(w, "ckks")
        need = Need("ckks", req.depth, 20.0, None, req.slots or 1, 128, "hestd2018", req.magnitude_bits)
        spec = next((s for s in candidates(need) if s["scale_bits"] >= args.scale), None)
        if spec is None:
            print(f"{w.name} | - | no candidate with a scale of {args.scale} bits or more")
            continue
        for lib in args.library or ["seal"]:
            t0 = time.monotonic()
            found = worst.probe(w, "ckks", lib, spec, 128, "hestd2018", drawn=n)
            took = time.monotonic() - t0
            where = f"N={spec['N']} q={'+'.join(map(str, spec['q_bits']))} scale 2^{spec['scale_bits']}"
            if isinstance(found, str):
                print(f"{w.name} | {lib} | {where} | {found}")
                continue
            d = found.drawn
            print(f"{w.name} | {lib} | {where} | {bits(d.abs_error):.1f} / {bits(d.rel_error):.1f} | "
                  f"{found.precision_bits:.1f} / {found.relative_bits:.1f} | {found.how} | {took:.1f}", flush=True)


if __name__ == "__main__":
    main()
