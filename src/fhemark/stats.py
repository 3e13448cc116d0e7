"""Estimates from raw samples: computed here once, never in drivers."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 2000


CI_LEVEL = 0.95
CI_METHOD = "order statistics (distribution-free, binomial coverage >= 95%)"
RUN_METHOD = ("widened to a 95% prediction interval for another run's median: Student t on the log medians of "
              "its slices (driver process x round, spread over the run's duration), so the machine's drift "
              "between slices is inside it")
# Fewer slices give a prediction too wide to use (t_{k-1} sqrt(2/k) is 3.5 standard deviations at
# k = 3, 1.5 at k = 6): below this the interval is the order-statistic one alone, and says so.
MIN_SLICES = 6

# Two-sided 95% quantiles of Student's t by degrees of freedom (a table: no SciPy dependency);
# between listed values the next lower one is used, which is wider, never narrower.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 20: 2.086, 25: 2.060,
         30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t975(df: int) -> float:
    return _T975[max(k for k in _T975 if k <= df)]


def run_interval(center: float, slice_values: np.ndarray) -> tuple[float, float] | None:
    """Where another run's estimate would fall, 95%: the run's estimate is (about) the mean of k
    slice values, and so is the next run's, so their difference has twice the variance of one
    mean: center x/÷ exp(t_{k-1} s sqrt(2/k)), with s the spread of the log slice values. Log
    scale because times are positive and their drift multiplies."""
    k = int(slice_values.size)
    if k < MIN_SLICES or center <= 0 or np.any(slice_values <= 0):
        return None
    half = t975(k - 1) * float(np.log(slice_values).std(ddof=1)) * math.sqrt(2 / k)
    return center * math.exp(-half), center * math.exp(half)


def hull(*intervals: tuple[float, float] | None) -> tuple[float, float] | None:
    got = [iv for iv in intervals if iv is not None]
    return (min(lo for lo, _ in got), max(hi for _, hi in got)) if got else None


def _coverage(n: int, j: int) -> float:
    """Coverage of [x_(j), x_(n+1-j)] (1-based order statistics) for the median:
    P(j <= B <= n - j) with B ~ Binomial(n, 1/2), whatever the distribution."""
    tail = sum(math.comb(n, i) for i in range(j)) / 2 ** n
    return 1 - 2 * tail


def min_ci_samples(level: float = CI_LEVEL) -> int:
    """The fewest samples for which an order-statistic interval reaches `level` (6 at 95%)."""
    n = 1
    while _coverage(n, 1) < level:
        n += 1
    return n


MIN_CI_SAMPLES = min_ci_samples()


def median_ci(samples: np.ndarray, level: float = CI_LEVEL) -> tuple[float, float] | None:
    """The narrowest symmetric order-statistic interval of the median with coverage >= level,
    or None when there are too few samples for any (fewer than 6 at 95%)."""
    n = int(samples.size)
    if n < MIN_CI_SAMPLES:
        return None
    # _coverage(n, j + 1) for j = 1, 2, ... with its binomial tail kept as it grows: recomputing the
    # tail at every j made an interval of 2000 samples take seconds (each step a sum of big binomials).
    j, term, tail, whole = 1, n, 1 + n, 2 ** n   # term: C(n, j); tail: the sum of C(n, i) for i <= j
    while j + 1 <= n + 1 - (j + 1) and 1 - 2 * tail / whole >= level:
        j += 1
        term = term * (n - j + 1) // j
        tail += term
    a = np.sort(samples)
    return float(a[j - 1]), float(a[n - j])


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    stdev: float
    mad: float
    min: float
    max: float
    ci95: tuple[float, float] | None  # None: too few samples for a 95% interval
    rel_ci_half_width: float | None
    outliers_mild: int    # Tukey: beyond 1.5 IQR, within 3 IQR
    outliers_severe: int  # beyond 3 IQR
    processes: int = 1
    process_medians: tuple[float, ...] = ()
    ci_method: str = CI_METHOD


def tukey_labels(samples: np.ndarray) -> list[str]:
    """'' / 'mild' / 'severe' per sample: outliers are labelled, never dropped."""
    q1, q3 = np.percentile(samples, [25, 75])
    iqr = q3 - q1
    out = []
    for x in samples:
        d = max(q1 - x, x - q3)
        out.append("severe" if d > 3 * iqr else "mild" if d > 1.5 * iqr else "")
    return out


def summarize(samples_ns: list[float] | np.ndarray, process: list[int] | None = None,
              rounds: list[int] | None = None) -> Summary:
    """Estimates from raw samples. `process[i]` and `rounds[i]` name the driver process and the
    round sample i came from. The order-statistic interval covers only the spread within the
    samples; a shared machine drifts by more between minutes, so with several slices (process x
    round) the interval is widened to predict where another run's median falls (`run_interval`
    on the slice medians), and with several processes to span every process's median."""
    a = np.asarray(samples_ns, dtype=np.float64)
    if a.size == 0:
        raise ValueError("no samples")
    med = float(np.median(a))
    ci = median_ci(a)
    method = CI_METHOD
    procs = sorted(set(process)) if process else [0]
    pmeds: tuple[float, ...] = ()
    if len(procs) > 1:
        p = np.asarray(process)
        pmeds = tuple(float(np.median(a[p == k])) for k in procs)
        if ci is not None:
            ci = (min(ci[0], *pmeds), max(ci[1], *pmeds))
        method = CI_METHOD + f", widened to span the medians of {len(procs)} driver processes"
    slices = list(zip(process or [0] * a.size, rounds or [0] * a.size))
    keys = sorted(set(slices))
    if ci is not None and len(keys) >= MIN_SLICES:
        idx = np.asarray([keys.index(x) for x in slices])
        ci = hull(ci, run_interval(med, np.array([np.median(a[idx == i]) for i in range(len(keys))])))
        method += "; " + RUN_METHOD
    labels = tukey_labels(a)
    return Summary(
        n=int(a.size), median=med, mean=float(a.mean()), stdev=float(a.std(ddof=1)) if a.size > 1 else 0.0,
        mad=float(np.median(np.abs(a - med))), min=float(a.min()), max=float(a.max()), ci95=ci,
        rel_ci_half_width=(ci[1] - ci[0]) / 2 / med if ci is not None and med > 0 else None,
        outliers_mild=labels.count("mild"), outliers_severe=labels.count("severe"),
        processes=len(procs), process_medians=pmeds, ci_method=method if ci is not None else
        f"none: fewer than {MIN_CI_SAMPLES} samples give no 95% order-statistic interval")


# The host's fastest state, read as the samples within this factor of a job's fastest: on this
# project's 2-core VM the speed flips between levels 1.6-1.7x apart from one sample to the next
# (N = 8192 mul_relin: 10 ms and 17-18 ms in adjacent 20 ms turns), while inside a level samples
# spread by about 5%; 10% is two of those spreads.
FLOOR_BAND = 1.1
# What another run's ratio varies by beyond the samples (fresh keys, memory layout, the core's
# fast level that day), added in quadrature: the run-to-run standard deviation of a floor ratio,
# 2.2% in median over three runs of a 7-op suite (docs/methodology.md). With drivers pinned to one
# core the bootstrap alone reads 3-4% on the quick suite's 18 samples, and another run's ratio fell
# inside 88% of those intervals; with this term 91% (quick suite, two runs, 191 ratios, 2026-11-28).
RUN_SD = 0.02
FLOOR_METHOD = (f"floor: the median of the samples within {FLOOR_BAND}x of the fastest (the host's fastest state); "
                "95% prediction interval for another run's ratio from a bootstrap of each side's samples, "
                f"with {RUN_SD:.0%} of run-to-run spread beside")
FLOOR_RESAMPLES = 1000
# The bootstrap of an estimator anchored on a minimum reads its spread short (the bootstrap of
# extremes is not consistent): widened by this, another run's ratio fell inside the interval 95% of
# the time in simulation (tests/test_stats.py: fast share 0.2-0.8, 36 samples a side), 85% without.
FLOOR_WIDEN = 1.4


@dataclass(frozen=True)
class FloorRatio:
    ratio: float                          # floor(a) / floor(b)
    ci95: tuple[float, float] | None      # 95% interval; None below 6 samples a side
    n: tuple[int, int]                    # samples of a and b
    p: float | None = None                # two-sided: how often floors this far apart arise from equal ones


def floor(samples: list[float] | np.ndarray) -> float:
    """An operation's time in the host's fastest state: the median of the samples within
    FLOOR_BAND of the fastest. A shared host only ever slows an op down, and how often it does
    changes from minute to minute; the median moves with that share, the floor does not (three
    runs of one suite: the ratio between two libraries' floors varied by 1.6% in median from run
    to run, their medians' by 3.9%, p90 3.8% against 15%)."""
    a = np.asarray(samples, dtype=np.float64)
    return float(np.median(a[a <= a.min() * FLOOR_BAND]))


def _floors(rng: np.random.Generator, a: np.ndarray) -> np.ndarray:
    """The floor of FLOOR_RESAMPLES resamples of `a`, at once."""
    x = np.sort(rng.choice(a, size=(FLOOR_RESAMPLES, a.size), replace=True), axis=1)
    c = (x <= x[:, :1] * FLOOR_BAND).sum(axis=1)  # the band's samples lead each sorted row
    rows = np.arange(FLOOR_RESAMPLES)
    return (x[rows, (c - 1) // 2] + x[rows, c // 2]) / 2


Parts = list[tuple[float, list[float] | np.ndarray]]  # (weight, samples): a cost made of several ops


def floor_ratio(a: list[float] | np.ndarray, b: list[float] | np.ndarray, another_run: bool = True,
                widen: float = 1.0) -> FloorRatio:
    """How many times slower a is than b in the host's fastest state, with a 95% interval: the
    spread of the ratio over bootstrap resamples of each side's samples (the host's state flips
    from one sample to the next, so samples, not slices, are the units), FLOOR_WIDEN wider for what
    the bootstrap misses. `another_run`: where another run's ratio of the two falls (libraries of
    one run: sqrt 2 wider, since that run varies too, and RUN_SD beside); otherwise the ratio's own
    interval and its p value (two runs compared: each side is one run). `widen`: a further factor on
    the spread, for what the caller knows varies beside the samples (compare: a host shift read from
    other libraries)."""
    return cost_ratio([(1.0, a)], [(1.0, b)], another_run, widen)


def cost_ratio(a: Parts, b: Parts, another_run: bool = True, widen: float = 1.0) -> FloorRatio:
    """floor_ratio of two costs, each a weighted sum of ops' floors (a workload's n multiplications
    and m rotations), every op's samples resampled on their own."""
    a = [(w, np.asarray(x, dtype=np.float64)) for w, x in a]
    b = [(w, np.asarray(x, dtype=np.float64)) for w, x in b]
    n = (min(x.size for _, x in a), min(x.size for _, x in b))
    ratio = sum(w * floor(x) for w, x in a) / sum(w * floor(x) for w, x in b)
    if min(n) < MIN_CI_SAMPLES or ratio <= 0:
        return FloorRatio(ratio, None, n)
    rng = np.random.default_rng(0)  # the same data gives the same interval in every report
    logs = np.log(sum(w * _floors(rng, x) for w, x in a) / sum(w * _floors(rng, x) for w, x in b))
    sd = widen * FLOOR_WIDEN * float(logs.std(ddof=1))
    if another_run:
        sd = math.hypot(sd * math.sqrt(2), RUN_SD)
    half = 1.96 * sd
    p = math.erfc(abs(math.log(ratio)) / sd / math.sqrt(2)) if sd > 0 else (1.0 if ratio == 1 else 0.0)
    return FloorRatio(ratio, (ratio * math.exp(-half), ratio * math.exp(half)), n, p)
