"""Estimates from raw samples: computed here once, never in drivers."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    stdev: float
    mad: float
    min: float
    max: float
    ci95: tuple[float, float]  # bootstrap interval of the median
    rel_ci_half_width: float
    outliers_mild: int    # Tukey: beyond 1.5 IQR, within 3 IQR
    outliers_severe: int  # beyond 3 IQR

    def as_dict(self) -> dict:
        return asdict(self)


def median_ci(samples: np.ndarray, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap of the median (seeded: the same samples give the same interval)."""
    if samples.size == 1:
        return float(samples[0]), float(samples[0])
    rng = np.random.default_rng(seed)
    meds = np.median(rng.choice(samples, size=(BOOTSTRAP_RESAMPLES, samples.size), replace=True), axis=1)
    lo, hi = np.percentile(meds, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(lo), float(hi)


def tukey_labels(samples: np.ndarray) -> list[str]:
    """'' / 'mild' / 'severe' per sample: outliers are labelled, never dropped."""
    q1, q3 = np.percentile(samples, [25, 75])
    iqr = q3 - q1
    out = []
    for x in samples:
        d = max(q1 - x, x - q3)
        out.append("severe" if d > 3 * iqr else "mild" if d > 1.5 * iqr else "")
    return out


def summarize(samples_ns: list[float] | np.ndarray) -> Summary:
    a = np.asarray(samples_ns, dtype=np.float64)
    if a.size == 0:
        raise ValueError("no samples")
    med = float(np.median(a))
    lo, hi = median_ci(a)
    labels = tukey_labels(a)
    return Summary(
        n=int(a.size), median=med, mean=float(a.mean()), stdev=float(a.std(ddof=1)) if a.size > 1 else 0.0,
        mad=float(np.median(np.abs(a - med))), min=float(a.min()), max=float(a.max()), ci95=(lo, hi),
        rel_ci_half_width=(hi - lo) / 2 / med if med > 0 else 0.0,
        outliers_mild=labels.count("mild"), outliers_severe=labels.count("severe"))
