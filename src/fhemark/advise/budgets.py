"""How long a deep set's verification may take. A deep set's evaluation takes seconds (depth 40 at
N = 2^16: 45 s on this project's 2-core VM) to minutes (depth 60 at N = 2^17: 105 s): the search's drawn
samples, the worst-input search's EDGES + SEARCH evaluations and the measurement's samples would take hours
a set. Each is bounded by a time, from the evaluation time the search's runs measured, and the answer says
what was cut and by how much."""

from __future__ import annotations

import time

from . import measuring
from ..store.record import Record
from .candidates import Answer
from .worst import EDGES, ROUND, SEARCH, runs

WORST_BUDGET_S = 300.0   # the worst-input search of one set
MEASURE_BUDGET_S = 300.0  # the measurement of one set
# An evaluation this long: the search's next sets are verified on one drawn sample a fresh-key process, not
# SEARCH_SAMPLES (at depth 60, N = 2^17, the second took 105 s of a set's 330; the worst-input search and the
# measurement that follow a passing set check several more, under keys of their own).
SLOW_EVALUATION_S = 30.0
DEEP_MEASURE = {"warmup": 0, "min_samples": 4, "max_samples": 4, "processes": 2, "rounds": 2}


def evaluation_s(rec: Record | None, wall_s: float, samples: int) -> float:
    """One evaluation as a verification measured it: its median, or, where no sample was kept (its
    outputs failed), its wall time a sample, key generation included (an upper bound)."""
    return rec.median_ns / 1e9 if rec is not None and rec.median_ns else wall_s / max(1, samples)


def verify_samples(eval_s: float, default: int) -> tuple[int, str]:
    """The drawn samples a fresh-key process of the next set's verification runs, after a set whose
    evaluation took `eval_s`; and '' or what was cut."""
    if eval_s <= SLOW_EVALUATION_S or default <= 1:
        return default, ""
    return 1, (f"verification: 1 drawn sample a fresh-key process of the default {default} (an evaluation of the "
               f"program at the set before took {eval_s:.0f} s, over {SLOW_EVALUATION_S:.0f} s)")


def worst_budget(eval_s: float | None, per: int = 1) -> tuple[tuple[int, int], str]:
    """The worst-input search's (edges, search) inputs for a set whose evaluation takes `eval_s` and holds
    `per` inputs (worst.packing), and '' or what was cut: the evaluations (worst.runs) fit WORST_BUDGET_S."""
    full = runs(EDGES, SEARCH, per)
    if not eval_s or eval_s * full <= WORST_BUDGET_S:
        return (EDGES, SEARCH), ""
    n = int(WORST_BUDGET_S / eval_s)
    if per > 1:  # the edges in one evaluation, then as many rounds as the rest allows (one at least)
        edges, search = min(EDGES, per), max(1, n - 1) * ROUND
        n = runs(edges, search, per)
        return (edges, search), (f"worst-input search: {n} evaluations of the default {full}, {per} inputs each (the edges "
                                 f"in one, {n - 1} rounds of search; an evaluation takes {eval_s:.1f} s, the budget "
                                 f"{WORST_BUDGET_S:.0f} s)")
    # Two rounds of search at least, where they fit the budget twice over; slower, the edges alone, two at
    # least (all inputs at one end, then the other): a bootstrapped depth-60 evaluation of 155 s took its
    # floor of eight evaluations to 21 minutes.
    if n < ROUND:
        n = edges = max(2, n)
    else:
        n = max(2 * ROUND, n // ROUND * ROUND)
        edges = n // 2
    return (edges, n - edges), (f"worst-input search: {n} evaluations of the default {full} ({edges} at the edges, "
                                f"{n - edges} searched; an evaluation takes {eval_s:.1f} s, the budget {WORST_BUDGET_S:.0f} s)")


def measure_policy(ans: Answer) -> tuple[dict, str]:
    """The measurement's policy, and '' or what was cut where the slowest verified set's evaluation would
    take its samples past MEASURE_BUDGET_S."""
    policy = {**measuring.MEASURE, "mode": ans.objective}
    slowest = max((c.eval_s or 0.0 for c in ans.chosen if c.verified), default=0.0)
    full = policy["min_samples"] + policy["warmup"] * policy["processes"] * policy["rounds"]
    if slowest * full <= MEASURE_BUDGET_S:
        return policy, ""
    deep = {**policy, **DEEP_MEASURE}
    return deep, (f"measurement: {deep['min_samples']} samples a set in {deep['processes']} processes x "
                  f"{deep['rounds']} rounds, no warm-up, where the default takes at least {policy['min_samples']} "
                  f"after {policy['warmup']} warm-up a slice (the slowest evaluation takes {slowest:.1f} s, the "
                  f"budget {MEASURE_BUDGET_S:.0f} s a set)")


def share(end: float | None, left: int) -> float | None:
    """When one of `left` ways of the search still to begin must stop beginning sets: now plus an even share
    of the time left before the --budget's `end` (time.monotonic())."""
    if end is None:
        return None
    now = time.monotonic()
    return now + max(0.0, end - now) / max(1, left)
