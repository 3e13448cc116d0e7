"""Export every stored measurement, one record each (the contract in docs/export.md)."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from .record import FIELDS, FORMAT_VERSION
from .sqlite import Store

# CSV columns: every field of the record; the first 43 in the order earlier versions wrote them
# (readers by position keep working), the others after them in the record's order. Nested
# values are written as JSON text.
_EARLIER = ["run_id", "suite", "timestamp", "library", "library_version", "scheme", "op", "status",
            "check_passed", "params", "security_bits", "security_table", "insecure", "params_match", "slots",
            "threads", "iters", "median_ns", "ci95_ns", "mean_ns", "stdev_ns", "mad_ns", "min_ns", "max_ns",
            "rel_ci_half_width", "stop_reason", "outliers", "noise_budget_bits", "precision_bits",
            "ci_method", "processes", "copies", "deviations", "sizes_bytes", "levels", "peak_rss_bytes",
            "driver_overhead_ns", "host_activity", "error", "notes", "samples_ns", "env", "job_key"]
CSV_COLUMNS = _EARLIER + [f for f in FIELDS if f not in _EARLIER]


def records(store: Store, run_id: str | None = None) -> list[dict]:
    """The stored records as the export writes them, each stamped with the export's format_version:
    the fields each was stored with (a field it never had stays absent, one stored null stays null)."""
    return [{**r.model_dump(exclude_unset=True), "format_version": FORMAT_VERSION} for r in store.records(run_id)]


def finite(value: Any) -> Any:
    """`value` with every float that JSON cannot hold (Infinity, -Infinity, NaN) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def strict_json(value: Any, indent: int | None = 1) -> str:
    """JSON that every parser reads: non-finite numbers are written as null (never `Infinity`)."""
    return json.dumps(finite(value), indent=indent, allow_nan=False)


def to_json(recs: list[dict]) -> str:
    return strict_json(recs)


def to_csv(recs: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    w.writeheader()
    for r in recs:
        r = finite(r)  # an empty cell, as for any missing value
        w.writerow({k: strict_json(v, None) if isinstance(v, (dict, list, bool)) else v for k, v in r.items()})
    return buf.getvalue()
