"""Estimates from raw samples: computed here once, never in drivers."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

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
    j = 1
    while j + 1 <= n + 1 - (j + 1) and _coverage(n, j + 1) >= level:
        j += 1
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

    def as_dict(self) -> dict:
        return asdict(self)


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


@dataclass(frozen=True)
class PairedRatio:
    ratio: float                          # median(a) / median(b) over all samples
    ci95: tuple[float, float] | None      # from the rounds both were measured in; None below 6 rounds
    rounds: int


def paired_ratio(a: list[float], a_rounds: list[int], b: list[float], b_rounds: list[int]) -> PairedRatio:
    """How many times slower a is than b, with an interval that a drifting machine does not
    fake: in each round both were measured in (interleaved, so a slow minute hits both), the
    ratio of the two round medians; the hull of the order-statistic interval of those ratios'
    median and the prediction interval of another run's ratio (`run_interval`)."""
    av, bv, ar, br = (np.asarray(x, dtype=np.float64) for x in (a, b, a_rounds, b_rounds))
    common = sorted(set(ar.tolist()) & set(br.tolist()))
    per_round = np.array([np.median(av[ar == r]) / np.median(bv[br == r]) for r in common])
    ratio = float(np.median(av) / np.median(bv))
    ci = median_ci(per_round) if per_round.size else None
    return PairedRatio(ratio, hull(ci, run_interval(ratio, per_round)) if ci else None, len(common))


def _bootstrap_medians(rng: np.random.Generator, a: np.ndarray) -> np.ndarray:
    return np.median(rng.choice(a, size=(BOOTSTRAP_RESAMPLES, a.size), replace=True), axis=1)


def ratio_ci(base: np.ndarray, new: np.ndarray, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap of median(new) / median(base), both sides resampled independently."""
    rng = np.random.default_rng(seed)
    mb, mn = _bootstrap_medians(rng, base), _bootstrap_medians(rng, new)
    lo, hi = np.percentile(mn / mb, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(lo), float(hi)


def _u_distribution(n1: int, n2: int) -> np.ndarray:
    """Counts of the Mann-Whitney U statistic over all orderings of n1 + n2 distinct values."""
    # f[i][j] = distribution of U for sizes (i, j); U(i, j) = U(i-1, j) shifted by j  +  U(i, j-1)
    f = [[np.ones(1)] * (n2 + 1)] + [[np.ones(1)] + [None] * n2 for _ in range(n1)]
    for i in range(1, n1 + 1):
        for j in range(1, n2 + 1):
            a = np.concatenate([np.zeros(j), f[i - 1][j]])
            b = f[i][j - 1]
            out = np.zeros(i * j + 1)
            out[:a.size] += a
            out[:b.size] += b
            f[i][j] = out
    return f[n1][n2]


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of the Mann-Whitney U test (a rank test: no normality assumed).
    Exact for small samples without ties, normal approximation with tie correction otherwise."""
    n1, n2 = a.size, b.size
    both = np.concatenate([a, b])
    order = both.argsort(kind="mergesort")
    ranks = np.empty(both.size)
    ranks[order] = np.arange(1, both.size + 1)
    _, inverse, counts = np.unique(both, return_inverse=True, return_counts=True)
    ranks = (np.bincount(inverse, weights=ranks) / counts)[inverse]  # mid-ranks for ties
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    ties = counts.max() > 1
    if not ties and n1 * n2 <= 900:
        dist = _u_distribution(n1, n2)
        dist = dist / dist.sum()
        k = int(round(min(u, n1 * n2 - u)))
        return float(min(1.0, 2 * dist[:k + 1].sum()))
    n = n1 + n2
    sigma2 = n1 * n2 / 12 * ((n + 1) - (counts ** 3 - counts).sum() / (n * (n - 1)))
    if sigma2 <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / np.sqrt(sigma2)
    return float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))
