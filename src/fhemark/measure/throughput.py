"""Throughput at saturation: how many evaluations a second one host gives a library's job.

k driver processes of the job's library (each at the job's thread count, each with its own keys,
made before anything is timed) run windows of samples at the same moment; k grows 1, 2, 4, ...
until the host's cores are busy (the parallelism measured from the processes' CPU time reaches
95% of them) or the rate stops growing (under 5% more than at the k before), as TFHE-rs'
`find_optimal_batch` grows its batch. Every output of every evaluation in every process is
decrypted and checked, as in latency mode; one wrong output fails the job.

Each process times its own regions while the others run, so the time of one evaluation includes
what the others cost it (shared caches, memory bandwidth, the cores). The rate is k evaluations
per median time; its interval comes from the interval of that median (processes and windows are
the statistics' processes and rounds). Inputs are drawn and outputs checked between windows, so
the orchestrator's own work does not run beside the timed regions.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..drivers.protocol import RunResult
from ..drivers.supervise import Driver
from ..model.ops import BenchOp
from ..plan.jobs import Job
from ..plan.suites import host_cores
from ..stats import summarize
from .checked import absorb, copies_for, draw, run_checked
from .mode import Mode, Slice
from .prepared import Outcome, Prepared, total

SATURATED = 0.95  # of the host's cores: busy enough
GROWTH = 1.05     # a larger k must give at least this much more, or the search stops
WINDOW_S = 0.5    # each window: about this long in every process


@dataclass
class Level:
    """What the processes measured together at one k."""

    batch: int
    samples: list[dict[str, float]] = field(default_factory=list)
    process: list[int] = field(default_factory=list)
    round: list[int] = field(default_factory=list)
    cpu_ns: list[float] = field(default_factory=list)   # per process, over regions long enough to tell
    wall_ns: list[float] = field(default_factory=list)
    peak_rss_bytes: int | None = None                   # all k processes together
    rate: float = 0.0                                   # evaluations a second (finish())
    rate_ci: list[float] | None = None                  # and its 95% interval

    def __post_init__(self) -> None:
        self.cpu_ns = self.cpu_ns or [0.0] * self.batch
        self.wall_ns = self.wall_ns or [0.0] * self.batch

    def times(self) -> list[float]:
        return [total(s) for s in self.samples]

    def finish(self, pool: list[Driver]) -> Level:
        """Its windows are done: the rate and its interval, once, and the k processes' memory."""
        s = summarize(self.times(), self.process, self.round)
        self.rate = self.batch * 1e9 / s.median
        self.rate_ci = [self.batch * 1e9 / s.ci95[1], self.batch * 1e9 / s.ci95[0]] if s.ci95 else None
        peaks = [d.peak_rss_bytes() for d in pool]
        self.peak_rss_bytes = sum(peaks) if all(p is not None for p in peaks) else None
        return self

    @property
    def parallelism(self) -> float | None:
        """Cores busy in the timed regions: each process's CPU time over its wall time, summed."""
        if len(self.wall_ns) < self.batch or not all(self.wall_ns):
            return None
        return sum(c / w for c, w in zip(self.cpu_ns, self.wall_ns))

    def summary(self) -> dict:
        return {"batch": self.batch, "throughput_per_s": self.rate, "throughput_ci95": self.rate_ci,
                "parallelism": self.parallelism, "peak_rss_bytes": self.peak_rss_bytes, "samples": len(self.samples)}


@dataclass
class ThroughputOutcome(Outcome):
    throughput: dict = field(default_factory=dict)  # the rate at the best k and how it was found: record fields


class Throughput(Mode):
    """The job's policy says mode: throughput. Its processes and windows are its own: one slice."""

    outcome = ThroughputOutcome

    def slice(self, sl: Slice) -> None:
        sl.drv.pin(None)  # k processes spread over the cores: none of them held to the latency drivers' core
        saturate(self.job, self.op, sl.prep, self.out, sl.drv, sl.spare, sl.own)


def saturate(job: Job, op: BenchOp, prep: Prepared, out: ThroughputOutcome, drv: Driver,
             spare: Callable[[], Driver], own: Callable[[int], None] = lambda pid: None) -> None:
    """Grow k until the host is busy; the best k's samples become the job's, its rate the record's.
    `drv` is the job's driver, `spare()` starts another with keys of its own for the setup; `own(pid)`
    is told of each other driver before it stops: its CPU is the job's, not contention."""
    pol = job.policy
    cores = host_cores()
    limit = min(pol.max_batch or 2 * cores, 256)
    started = time.monotonic()
    pool: list[Driver] = [drv]
    levels: list[Level] = []
    try:
        _calibrate(job, op, prep, pool[0], out)
        k = 1
        while True:
            while len(pool) < k:  # started and given keys outside every window
                pool.append(spare())
            levels.append(_level(job, op, prep, pool[:k], out, len(levels)))
            last = levels[-1]
            if len(levels) > 1 and last.rate < GROWTH * max(lv.rate for lv in levels[:-1]):
                break
            par = last.parallelism
            if (par if par is not None else k * job.threads) >= SATURATED * cores or 2 * k > limit:
                break
            k *= 2
    finally:
        for d in pool[1:]:
            if d.alive:
                own(d.proc.pid)
            d.stop()
    best = max(levels, key=lambda lv: lv.rate)
    out.samples, out.process, out.round = best.samples, best.process, best.round
    out.cpu_ns, out.cpu_wall_ns = sum(best.cpu_ns), sum(best.wall_ns)  # one process's parallelism, at the best k
    out.stop_reason = "saturated"
    out.elapsed_s += time.monotonic() - started
    out.throughput = {"mode": "throughput", "batch": best.batch, "throughput_per_s": best.rate, "throughput_ci95": best.rate_ci,
                      "throughput_parallelism": best.parallelism, "throughput_peak_rss_bytes": best.peak_rss_bytes,
                      "throughput_cores": cores, "throughput_by_batch": [lv.summary() for lv in levels],
                      "throughput_method": "k driver processes at once, each timing its own regions; "
                                           "rate = k / median time of one evaluation under that load"}


def _calibrate(job: Job, op: BenchOp, prep: Prepared, drv: Driver, out: Outcome) -> None:
    """One warm-up evaluation alone, with the noise, sizes and levels read: it sizes the copies per
    region (as latency mode does) and the windows."""
    rng = np.random.default_rng([job.policy.seed, int(job.input_key, 16) % 2**32, 0])
    program = prep.programs[job.key]
    (warm, _), out.wall_per_sample = run_checked(drv, job, op, prep, program, draw(job, op, prep, rng, 1, 1), out)
    out.copies = copies_for(job, op, program, total(warm[0]))
    out.input_state = "cold"  # k processes at once: copies on operands made before the region


def _level(job: Job, op: BenchOp, prep: Prepared, pool: list[Driver], out: Outcome,
           index: int) -> Level:
    """Windows at k = len(pool) until the interval meets the target (twice), the budget is spent or
    the samples reach their most."""
    pol, k, copies = job.policy, len(pool), out.copies
    program = replace(prep.programs[job.key].replicate(copies), noise=[], sizes=[], levels=[])
    level = Level(k)
    per_window = max(1, min(20, int(WINDOW_S / max(out.wall_per_sample * copies, 1e-6))))
    for d in pool:
        d.reset_peak()
    with ThreadPoolExecutor(k) as ex:
        _window(job, op, prep, pool, program, ex, 1, Level(k),
                out, [index, -1])  # every process warms up, together, and is discarded
        started, met, w = time.monotonic(), 0, 0
        while True:
            _window(job, op, prep, pool, program, ex, per_window, level, out, [index, w])
            w += 1
            n = len(level.samples)
            if n >= max(pol.min_samples, 2 * k):
                s = summarize(level.times(), level.process, level.round)
                met = met + 1 if s.rel_ci_half_width is not None and s.rel_ci_half_width <= pol.target_rel_ci else 0
                if met >= 2 or time.monotonic() - started >= pol.budget_s or n >= pol.max_samples * k:
                    break
    return level.finish(pool)


def _window(job: Job, op: BenchOp, prep: Prepared, pool: list[Driver], program, ex,
            count: int, level: Level, out: Outcome, seed: list[int]) -> None:
    """Every process runs `count` samples at once; then every output of every one is checked."""
    pol = job.policy
    drawn = []
    for i in range(len(pool)):  # inputs of their own for every process: independent evaluations
        rng = np.random.default_rng([pol.seed, int(job.input_key, 16) % 2**32, 1 + seed[0], seed[1] + 1, i])
        drawn.append(draw(job, op, prep, rng, count, out.copies))
    futures = [ex.submit(d.request, "run", timeout_s=pol.timeout_s, memory_limit_mb=pol.memory_limit_mb,
                         setup_id=prep.setup_id, program=program.wire(), samples=samples)
               for d, (_, samples, _) in zip(pool, drawn)]
    replies = [f.result() for f in futures]  # a driver's failure is raised here, after all have ended
    for i, ((draws, _, _), raw) in enumerate(zip(drawn, replies)):
        before = (out.cpu_ns, out.cpu_wall_ns)
        got, _ = absorb(job, op, prep, program, draws, RunResult(**raw), out)
        level.cpu_ns[i] += out.cpu_ns - before[0]
        level.wall_ns[i] += out.cpu_wall_ns - before[1]
        level.samples += got
        level.process += [i] * len(got)
        level.round += [seed[1]] * len(got)
