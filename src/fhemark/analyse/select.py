"""Which stored records count: the newest per job (a resumed or repeated run shows once), and
whether the host was busy while one was measured, and how much of a run was spent measuring."""

from __future__ import annotations

from ..store.record import Record
from .versions import base_library


def latest(recs: list[Record]) -> list[Record]:
    """Keep the newest record per (job, op): a resumed or repeated run shows once. Versions are
    kept apart first (versions_apart), so a newer version never hides an older one's record."""
    out: dict[tuple, Record] = {}
    for r in versions_apart(recs):
        out[(r.job_key, r.op)] = r
    return list(out.values())


def versions_apart(recs: list[Record]) -> list[Record]:
    """Every reader groups by `library`; a library name measured at several versions (two stores
    merged, a run before and after the pin moved) is renamed lib@version on each of its records,
    job key included, so no table, overview, ranking or average ever holds two versions in one cell."""
    seen: dict[str, set] = {}
    for r in recs:
        seen.setdefault(r.library, set()).add(r.library_version)
    mixed = {lib for lib, versions in seen.items() if len(versions) > 1}
    if not mixed:
        return recs
    return [r.model_copy(update={"library": f"{base_library(r.library)}@{r.library_version or 'unknown'}",
                                 "job_key": f"{r.job_key}@{r.library_version or 'unknown'}"})
            if r.library in mixed else r for r in recs]


def contended(rec: Record) -> bool:
    """Other processes or the hypervisor took CPU while the job ran (measure/host.py)."""
    return bool((rec.host_activity or {}).get("contended"))


def timed_seconds(recs: list[Record]) -> float:
    """Seconds spent inside timed regions (samples x copies, warm-ups included): the rest of a
    run's wall time is setup, keys, fresh inputs encrypted, outputs decrypted and checked."""
    total = 0.0
    for r in recs:
        if r.status != "ok" or r.depth is not None or ("/" in r.op and not r.op.endswith("/total")):
            continue
        total += sum(r.samples_ns) * (r.copies or 1) + sum(r.warmup_ns)
    return total / 1e9
