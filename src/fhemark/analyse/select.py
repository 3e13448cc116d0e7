"""Which stored records count: the newest per job (a resumed or repeated run shows once), and
whether the host was busy while one was measured, and how much of a run was spent measuring."""

from __future__ import annotations

from ..store.record import Record


def latest(recs: list[Record]) -> list[Record]:
    """Keep the newest record per (job, op): a resumed or repeated run shows once."""
    out: dict[tuple, Record] = {}
    for r in recs:
        out[(r.job_key, r.op)] = r
    return list(out.values())


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
