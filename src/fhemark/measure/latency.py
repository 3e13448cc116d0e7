"""Latency mode: a job's samples, one evaluation at a time, in slices (a round in a driver process)
that the runner interleaves with other libraries'. Fresh inputs for every copy; copies per timed
region and hot or cold inputs calibrated from the job's first warm-up; warm-ups again in each
round of a cheap op; requests sized to the slice's budget; and the stop rule on the interval.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Iterator, NamedTuple

import numpy as np

from ..drivers.supervise import Driver
from ..model.ops import RLWE, BenchOp
from ..plan.jobs import Job
from ..plan.suites import Policy
from ..stats import MIN_CI_SAMPLES, summarize
from .checked import copies_for, draw, run_checked
from .mode import Mode, Slice
from .pool import POOL_NOTE, WARM_ROUND
from .prepared import Outcome, Prepared, total

WARM_ROUND_NS = 20e6  # a sample shorter than this is warmed up again in every round (WARM_ROUND samples)
# Interleaved, a request holds about this much of one library's samples before the next library's:
# the host's speed here switches between levels 1.7x apart within a tenth of a second (CKKS and BFV
# mul_relin at N = 8192, 2-core VM, 2026-11-28: 10 ms and 17-18 ms in one 0.1 s slice), so samples
# paired across libraries must be tens of milliseconds apart, not a slice.
TICK_S = 0.02
FIRST_COLD_NOTE = "inputs: the first sample ran cold (the policy asks for no warm-up), the others hot"
HOT_MAX_NS = 3e6  # inputs: hot warms up the ops faster than this (as their cold calibration sample reads)


class Latency(Mode):
    """Round s in driver process p of a job's samples, for every (p, s) the policy asks. A fast op
    runs as k copies in one timed region, each copy on fresh inputs and each copy's output checked."""

    def __init__(self, job: Job, op: BenchOp):
        super().__init__(job, op)
        self.met_target = 0  # consecutive checks at which the interval met the target

    def last(self, p: int, s: int) -> bool:
        return p + 1 >= self.job.policy.processes and s + 1 >= self.job.policy.rounds

    def steps(self, sl: Slice) -> Iterator[None]:
        """The slice one request at a time: the runner alternates libraries between requests.
        Interleaved (policy.interleave "sample", and another library on the op), a request holds
        about TICK_S of samples, and a cheap op warms up again in every request (another library
        ran since); every sample is tagged with the runner's tick, and the slice's budget counts
        the job's own requests, not the others'."""
        pol, out = self.job.policy, self.out
        req = Requests(sl.drv, self.job, self.op, sl.prep, out, sl.process, sl.process * pol.rounds + sl.round)
        if sl.round == 0:
            sl.drv.reset_peak()
        n0 = len(out.samples)  # samples from earlier rounds
        spent = 0.0
        t0 = time.monotonic()
        if not out.copies:  # calibrated once, in the first process, and kept for the whole job
            calibrate(req, sl.tick())
            warm_n = 0
        else:
            warm_n = warm_count(pol, out, sl.round)  # warm-up samples leading the slice's first request
        spent += time.monotonic() - t0
        lim = limits(pol)
        tick_s = TICK_S if sl.interleaved else None
        while not (reason := self.stop(len(out.samples) - n0, lim, lim.slice_s - spent)):
            t0 = time.monotonic()
            want = request_size(out, lim, len(out.samples) - n0, lim.slice_s - spent, warm_n, tick_s)
            _, got, scal = req.batch(want, out.copies, warm_n)
            req.keep(got, scal, sl.tick())
            warm_n = warm_count(pol, out, sl.round, again=True) if tick_s else 0
            spent += time.monotonic() - t0
            yield
        out.stop_reason = reason
        out.elapsed_s += spent

    def slice(self, sl: Slice) -> None:
        for _ in self.steps(sl):
            pass

    def stop(self, n: int, lim: Limits, left_s: float) -> str:
        """Why the slice ends after its n samples ("" while it goes on): the interval at the target
        on two checks in a row (stopping at the first lucky look would shrink its coverage), the
        slice's budget spent once the floor is reached, or its share of max_samples."""
        out = self.out
        if n >= lim.min_n:
            summary = summarize([total(x) for x in out.samples], out.process, out.round)
            met = summary.rel_ci_half_width is not None and summary.rel_ci_half_width <= self.job.policy.target_rel_ci
            self.met_target = self.met_target + 1 if met else 0
            if self.met_target >= 2:
                return "target_ci"
        if n >= lim.floor_n and left_s <= 0:
            return "budget"
        if n >= lim.max_n:
            return "max_samples"
        return ""


class Limits(NamedTuple):
    """A slice's share of the job's limits."""

    min_n: int
    max_n: int
    floor_n: int  # samples the slice takes even past its budget
    slice_s: float


def limits(pol: Policy) -> Limits:
    rounds = pol.processes * pol.rounds  # every limit is shared out over the job's slices
    min_n = math.ceil(pol.min_samples / rounds)
    # The budget binds for slow operations once the rounds together hold enough samples for an
    # interval: min_samples is a wish, not a reason to spend 20 s on one key generation.
    floor_n = min(min_n, math.ceil(MIN_CI_SAMPLES / rounds))
    return Limits(min_n, math.ceil(pol.max_samples / rounds), floor_n, pol.budget_s / rounds)


def request_size(out: Outcome, lim: Limits, n: int, left: float, warm_n: int, tick_s: float | None = None) -> int:
    """One request for what the slice's budget holds (a request's fixed cost, its pool and its
    decryptions, is paid once), at least up to the floor, at most ~0.5 s and 20 samples; interleaved,
    one tick's worth (at least one sample), so that the libraries' samples stay adjacent."""
    per = max(out.wall_per_sample * out.copies, 1e-6)
    if tick_s is not None:
        return max(1, min(lim.max_n - n, int(tick_s / per)))
    fits = int(max(left, 0) / per) - warm_n
    return max(1, lim.floor_n - n, min(lim.max_n - n, fits, 20, int(0.5 / per)))


def calibrate(req: Requests, tick: int) -> None:
    """The job's very first warm-up, a request of its own: it sizes the copies per region and
    decides hot or cold inputs, for the whole job."""
    pol, out = req.job.policy, req.out
    # No warm-up asked for (the search's runs, a deep measurement, a smoke run): the first sample counts,
    # and runs as it comes, cold. Warming its steps would be a hidden warm-up, and would run every step twice:
    # at depth 60 a whole evaluation more, 94 s of a verification's 193.
    warm, _, warm_scalars = req.batch(0, 1, max(pol.warmup, 1), cold=pol.warmup == 0)
    if pol.warmup == 0:
        req.keep(warm, warm_scalars, tick)
    out.warmup = warm[: pol.warmup]
    t_op = float(np.median([total(w) for w in warm]))
    # A warm-up doubles an op's cost for what it buys: 10-30% on ops under a millisecond, 1-2%
    # on slower ones in SEAL (benchmarks/fidelity_seal.py, hot against cold), but 5-25% on
    # Lattigo's 1-3 ms ops (fidelity_lattigo.py, N = 2^14: CKKS mul_into 1.35 -> 1.03 of
    # Lattigo's own loop, rescale_into 1.23 -> 1.05; a cold sample reads them above 1 ms);
    # nothing on a keygen.
    hot = pol.inputs == "hot" and t_op < HOT_MAX_NS and req.op.group != "keygen"
    out.input_state = "hot" if hot else "cold"
    if hot and pol.warmup == 0:
        out.notes.add(FIRST_COLD_NOTE)
    out.copies = 1 if hot else copies_for(req.job, req.op, req.base, t_op)


def warm_count(pol: Policy, out: Outcome, s: int, again: bool = False) -> int:
    """Warm-up samples leading round s of a calibrated job: a fresh process warms up as the policy
    asks; every round of a cheap op, hot or cold, with WARM_ROUND samples at least. The other
    libraries ran since, and the driver woke from idle: with one request a round (quick suite, 3
    samples a round) the round's first sample read 13% slow in median and 83% at the 90th
    percentile (Lattigo, hot) after no warm-up, 4% and 13% (cold) after one; after two, 0-2% and
    10-22%, and the median interval half-width of Lattigo's cases fell from 5.4-6.5% to 3.8-4.6%.
    `again`: a later request of an interleaved slice, after the other libraries' requests."""
    if not pol.warmup:
        return 0
    return max(pol.warmup if s == 0 and not again else 0, WARM_ROUND if _cheap(out) else 0)


def _cheap(out: Outcome) -> bool:
    """A sample short enough that cold caches show in it (slower ones warm themselves up)."""
    return float(np.median([total(x) for x in out.samples or out.warmup])) * out.copies < WARM_ROUND_NS


class Requests:
    """A slice's requests to its driver process, in round r over all processes."""

    def __init__(self, drv: Driver, job: Job, op: BenchOp, prep: Prepared, out: Outcome, p: int, r: int):
        self.drv, self.job, self.op, self.prep, self.out, self.p, self.r = drv, job, op, prep, out, p, r
        # Inputs depend on the case and the round, never on the library: every library gets the
        # same vectors and scalars in the same order.
        self.rng = np.random.default_rng([job.policy.seed, int(job.input_key, 16) % 2**32, r])
        self.base = prep.programs[job.key]
        self.pooled = self.base.poolable() if job.scheme in RLWE and op.gen is None else []
        if self.pooled:
            self.base = self.base.pooled(self.pooled)
            out.notes.add(POOL_NOTE)
        # Noise, sizes and levels: read once per job, in its first request. Reading one can cost a
        # driver far more than the op (OpenFHE's noise budget: 0.13 s of serialization and Python NTTs
        # per reading at N = 8192, against a 50 us add): 11 s of the quick suite at one reading per
        # process. CKKS precision still comes from every checked output.
        self.facts_due = not out.copies

    def batch(self, count: int, k: int, warm: int = 0,
              cold: bool = False) -> tuple[list[dict[str, float]], list[dict[str, float]], list]:
        """One request: `warm` warm-up samples (their times apart), then `count` samples; `cold`: its steps
        not warmed up whatever the input state."""
        out, facts = self.out, self.facts_due
        self.facts_due = False
        program = self.base.replicate(k) if facts else replace(self.base.replicate(k), noise=[], sizes=[], levels=[])
        if not cold and (out.input_state or self.job.policy.inputs) == "hot":
            program = program.warmed()
        drawn = draw(self.job, self.op, self.prep, self.rng, warm + count, k, self.pooled, out, self.p)
        (got, scal), wall = run_checked(self.drv, self.job, self.op, self.prep, program, drawn, out)
        if not facts or not out.wall_per_sample:  # batches are sized from the cost of a copy alone
            out.wall_per_sample = wall / ((warm + count) * k)
        return got[:warm], got[warm:], scal[warm:]

    def keep(self, got: list[dict[str, float]], scal: list, tick: int) -> None:
        self.out.samples += got
        self.out.process += [self.p] * len(got)
        self.out.round += [self.r] * len(got)
        self.out.tick += [tick] * len(got)
        self.out.scalars += scal
