"""What the fidelity benchmarks share: one fhemark run of one library's jobs through the Python
API (Suite, plan.build, measure, a store of the caller's), with a callback after every job so the
reference can run back to back with it, the within-5% share that the issue's goal reads, and how
a benchmark that did not run says so (one line, a non-zero exit)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable


class Failure(Exception):
    """Something did not run: one line for the user, exit status 1 (2 for setup problems)."""

    def __init__(self, line: str, code: int = 1):
        super().__init__(line)
        self.code = code


def first_of(lines: list[str]) -> str:
    """The first problem, and how many more there are."""
    return lines[0] + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else "")


def exit_with(main: Callable[[], int]) -> None:
    """Run a benchmark's main: its status, or a Failure's one line on stderr and its code."""
    try:
        sys.exit(main())
    except Failure as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.code)


def run_fhemark(library: str, scheme: str, params: dict | str, ops: list[str], threads: int, policy: dict, db: Path,
                env: dict, between_jobs: Callable, name: str) -> dict[str, dict]:
    """{op: record as the export writes it}; between_jobs(job) runs after each job's record is stored."""
    from fhemark.measure import measure
    from fhemark.plan.jobs import build
    from fhemark.plan.suites import Suite
    from fhemark.store.sqlite import Store

    suite = Suite(name=name, threads=threads, policy=policy,
                  cases=[{"libraries": [library], "schemes": [scheme], "ops": ops, "params": [params]}])
    plan = build(suite, [library], allow_insecure=False)
    store = Store(db)

    def progress(job, recs):
        r = recs[0]
        extra = f"{r.median_ns / 1e3:.1f} us" if r.median_ns else f"{r.status}: {r.error}"
        print(f"  fhemark {library} {scheme} {job.op} ({policy.get('inputs', 'hot')}): {extra}", flush=True)
        between_jobs(job)

    measured = measure(plan, store, env=env, on_record=progress)
    recs = {r.op: r.model_dump(exclude_unset=True) for r in measured.records}
    store.close()
    return recs


def within(ratios: list[float | None], tolerance: float = 0.05) -> str:
    """'k of n cells (p%) within ±5%': the share the fidelity goal is stated in."""
    got = [r for r in ratios if r]
    k = sum(abs(r - 1) <= tolerance for r in got)
    return f"{k} of {len(got)} cells ({100 * k / max(len(got), 1):.0f}%) within ±{100 * tolerance:.0f}%"
