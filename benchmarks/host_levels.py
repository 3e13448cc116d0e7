"""How long does this host hold its speed, and does running two samples at once pair them? A fixed
numpy kernel (FFTs, no fhemark) timed (1) back to back on one core, for the correlation of its
log time at growing lags: the longest gap across which two libraries' samples could still be
paired; (2) alternately on one core, adjacent samples paired; (3) on both cores at once, started
together at a barrier (duet execution). Prints each design's spread of paired log ratios against
unpaired ones, and pairs per second.

    .venv/bin/python benchmarks/host_levels.py            # about 30 s

It reports; it asserts nothing.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time

import numpy as np

PAIRS = 300
X = np.random.default_rng(0).standard_normal(1 << 15) + 0j


def kernel(rounds: int = 12) -> int:
    t0 = time.perf_counter_ns()
    y = X
    for _ in range(rounds):
        y = np.fft.ifft(np.fft.fft(y))
    return time.perf_counter_ns() - t0


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and cpu < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {cpu})


def lags() -> None:
    _pin(0)
    kernel(1)
    t0 = time.perf_counter()
    v = np.log(np.array([kernel(1) for _ in range(6000)], float))
    dt = (time.perf_counter() - t0) / v.size
    print(f"one core, back to back: {dt * 1e3:.2f} ms a sample, sd of log time {v.std():.3f}")
    for lag in (1, 3, 10, 30, 100, 300, 1000):
        print(f"  {lag * dt * 1e3:7.1f} ms apart: correlation {np.corrcoef(v[lag:], v[:-lag])[0, 1]:.2f}, "
              f"sd of the paired log ratio {(v[lag:] - v[:-lag]).std():.3f}")


def _worker(cpu: int, barrier, q) -> None:
    _pin(cpu)
    kernel()
    out = []
    for _ in range(PAIRS):
        barrier.wait()
        out.append(kernel())
    q.put((cpu, out))


def _pairs(name: str, a: list[int], b: list[int], wall: float) -> None:
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    unpaired = (la - np.random.default_rng(1).permutation(lb)).std(ddof=1)
    print(f"{name}: sd of the paired log ratio {(la - lb).std(ddof=1):.3f}, unpaired {unpaired:.3f}, "
          f"correlation {np.corrcoef(la, lb)[0, 1]:.2f}; {len(a) / wall:.1f} pairs a second")


def main() -> None:
    lags()
    _pin(0)
    t0 = time.monotonic()
    seq = [kernel() for _ in range(2 * PAIRS)]
    _pairs("alternating on one core", seq[0::2], seq[1::2], time.monotonic() - t0)
    barrier, q = mp.Barrier(2), mp.Queue()
    procs = [mp.Process(target=_worker, args=(c, barrier, q)) for c in (0, 1)]
    t0 = time.monotonic()
    for p in procs:
        p.start()
    got = dict(q.get() for _ in procs)
    for p in procs:
        p.join()
    _pairs("duet, two cores at once", got[0], got[1], time.monotonic() - t0)


if __name__ == "__main__":
    main()
