"""What sending a block to a Dask worker costs: one small suite run in-process and on a local
cluster of one worker, A B A B, and the difference per block (one block per scheme and
parameter set). The measured operations are the same; the difference is scheduling, shipping the
plan, starting the worker's drivers and streaming the records back.

    .venv/bin/python benchmarks/cluster_overhead.py            # 2 pairs
    .venv/bin/python benchmarks/cluster_overhead.py --pairs 4

It reports; it asserts no threshold.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from fhemark.drivers.registry import available
from fhemark.measure import cluster, measure
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.store.sqlite import Store

SUITE = Suite(name="cluster-overhead", policy={"min_samples": 6, "max_samples": 6, "warmup": 1, "budget_s": 0.5},
              cases=[{"libraries": ["seal"], "schemes": ["bfv", "bgv", "ckks"],
                      "params": [{"N": 4096, "q_bits": [40, 40], "p_bits": [40], "t": 65537, "scale_bits": 30}],
                      "ops": ["add", "mul_relin", "rotate_1"]}])


def one(tmp: Path, name: str, client=None) -> float:
    plan = build(SUITE, available(), allow_insecure=True)
    store = Store(tmp / f"{name}.db")
    t0 = time.monotonic()
    measure(plan, store, env={"threads": 1}, client=client)  # here, or on the cluster
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args()
    blocks = len(cluster.blocks(build(SUITE, available(), allow_insecure=True)))
    client = cluster.connect("local:1")
    local, dist = [], []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.pairs):
                local.append(one(Path(tmp), f"l{i}"))
                dist.append(one(Path(tmp), f"d{i}", client))
    finally:
        client.close()
        client.cluster.close()
    diff = statistics.median(d - lo for d, lo in zip(dist, local))
    print(f"in-process: {', '.join(f'{x:.2f}' for x in local)} s; local:1 cluster: {', '.join(f'{x:.2f}' for x in dist)} s; "
          f"{blocks} blocks: {diff / blocks:.2f} s per block (median of {args.pairs} pairs)")


if __name__ == "__main__":
    main()
