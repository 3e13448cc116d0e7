"""Libraries set against each other on one case: which is fastest and by how many times, read
from each library's floor (stats.floor: its time in the host's fastest state), with an interval
for another run's ratio. One rule for the report's ratio tables and overview, the terminal's ties,
choose's `*` and recommend: on a shared host the medians of two libraries move with how often the
host slowed each down, the floors do not."""

from __future__ import annotations

from ..stats import FLOOR_METHOD, FloorRatio, floor, floor_ratio
from ..store.record import Record

METHOD = FLOOR_METHOD


def speed(rec: Record) -> float:
    """What the fastest is chosen by: the floor of its samples (the median where none were kept)."""
    return floor(rec.samples_ns) if rec.samples_ns else float(rec.median_ns or 0.0)


def fastest(recs: list[Record]) -> Record:
    return min(recs, key=speed)


def versus(rec: Record, base: Record) -> FloorRatio | None:
    """rec's floor over base's, with its interval; None where either kept no samples."""
    if not rec.samples_ns or not base.samples_ns:
        return None
    return floor_ratio(rec.samples_ns, base.samples_ns)


def shown(fr: FloorRatio | None) -> str:
    """" [1.02, 1.21]" or why there is no interval."""
    if fr is None:
        return " (no samples kept: no CI)"
    if fr.ci95 is None:
        return f" (no CI: {min(fr.n)} samples)"
    return f" [{fr.ci95[0]:.2f}, {fr.ci95[1]:.2f}]"


def within(rec: Record, best: Record, by_samples: bool = True) -> bool:
    """Whether the data cannot tell rec from the best: its ratio's interval reaches 1; where the
    records kept no samples for one, or their figure is not their samples' (`by_samples` False: a
    rate at saturation), their medians' intervals overlap."""
    fr = versus(rec, best) if by_samples else None
    if fr is not None and fr.ci95 is not None:
        return fr.ci95[0] <= 1
    lo, hi = median_bounds(rec)[0], median_bounds(best)[1]
    return lo is None or hi is None or lo <= hi


def median_bounds(r: Record) -> tuple[float, float]:
    """The median's 95% interval; with too few samples for one (n < 6), the samples' range."""
    return tuple(r.ci95_ns) if r.ci95_ns else (r.min_ns or r.median_ns, r.max_ns or r.median_ns)
