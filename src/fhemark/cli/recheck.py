"""`fhemark compare --recheck`: the cases a comparison flagged, measured once more with a few steady
controls, into a store of their own beside the new run's, so that a gate fails on a change that a
second measurement sees too, not on one run's bad minutes of a shared host."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from ..analyse.compare import FASTER, SLOWER, Comparison, confirmed, recheck_keys
from ..drivers.registry import available, manifests
from ..errors import UserError
from ..locations import project_root
from ..measure import measure
from ..measure.metadata import environment
from ..plan.jobs import Plan, build
from ..plan.suites import Suite
from ..store.record import Record
from ..store.sqlite import Store
from .application import console


def recheck_store(new_db: Path) -> Path:
    """Where a store's rechecks go: beside it, so its own `latest` stays the run that was judged."""
    return new_db.with_name(f"{new_db.stem}.recheck{new_db.suffix or '.db'}")


def recheck(first: Comparison, judge: Callable[[list[Record], dict], Comparison], new_store: Store,
            new_id: str) -> Comparison:
    """The comparison with its flagged cases judged again on a fresh measurement (confirmed);
    judge(records, env) is the comparison with the same baseline and settings."""
    flagged, controls = recheck_keys(first)
    if not flagged and not controls:
        console.print("recheck: nothing flagged, nothing to measure again", highlight=False, markup=False)
        return first
    plan = _plan_of(new_store, new_id, set(flagged) | set(controls))
    where = recheck_store(Path(new_store.path))
    console.print(f"recheck: measuring {len(flagged)} flagged case(s) again with {len(controls)} steady one(s) "
                  f"(the machine-wide shift, a library flagged as a whole) into {where}", highlight=False, markup=False)
    store = Store(where)
    try:
        env = environment(plan.suite.threads, project_root())
        done = measure(plan, store, env=env)
        again = judge(done.records, env)
    finally:
        store.close()
    result = confirmed(first, again, done.run_id)
    flagged_now = [(a, b) for a, b in zip(first.changes, result.changes) if a.verdict in (SLOWER, FASTER)]
    libs_now = [(a, b) for a, b in zip(first.libraries, result.libraries) if a.verdict in (SLOWER, FASTER)]
    console.print(f"recheck (run {done.run_id}): {sum(a.verdict == b.verdict for a, b in flagged_now)} of "
                  f"{len(flagged_now)} flagged case(s) and {sum(a.verdict == b.verdict for a, b in libs_now)} of "
                  f"{len(libs_now)} flagged libraries confirmed", highlight=False, markup=False)
    return result


def _plan_of(store: Store, run_id: str, keys: set[str]) -> Plan:
    """The jobs of a run's stored plan with these keys, planned again from its stored suite."""
    stored = store.run_plan(run_id)
    fix = "compare without --recheck, or run the suite again and compare that run"
    try:
        suite = Suite(**stored["suite"])
    except (KeyError, TypeError, ValidationError):
        raise UserError(f"run {run_id} in {store.path} has no stored suite this fhemark can plan again", fix)
    full = build(suite, available(), bool(stored.get("allow_insecure")), None, known=manifests())
    groups = [replace(g, jobs=[j for j in g.jobs if j.key in keys]) for g in full.groups]
    plan = replace(full, groups=[g for g in groups if g.jobs], unavailable=[],
                   suite=suite.model_copy(update={"name": f"{suite.name} recheck"}))
    missing = len(keys - {j.key for j in plan.jobs})
    if missing == len(keys):
        raise UserError(f"none of the {len(keys)} cases to recheck can be planned here (their drivers are not built, "
                        "or the suite's cases changed meaning)", fix)
    if missing:
        console.print(f"recheck: {missing} of {len(keys)} cases cannot be planned here and keep their verdicts",
                      highlight=False, markup=False)
    return plan
