"""Compare two runs case by case, for regression tracking.

A change is flagged only when the rank test says the samples differ (p < alpha)
*and* the whole bootstrap interval of the ratio of medians lies beyond the noise
threshold (criterion's rule, with asv's rank test). Cases match on the job key
(the resolved case: library, scheme, parameters, operation, vector length,
sampling policy, threads), so a library upgrade is compared with itself and a
changed sampling policy is "not comparable" rather than a false change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import UserError
from ..stats import mann_whitney_p, ratio_ci
from .select import contended, latest

# Environment facts that must match for timings to be comparable at all.
HOST_KEYS = (("cpu", "model"), ("cpu", "logical_cores"), ("threads",))

SLOWER, FASTER, SAME, FAILED, STILL_FAILING, FIXED, ADDED, REMOVED, SKIPPED = (
    "slower", "faster", "same", "failed", "still failing", "fixed", "added", "removed", "not compared")
# A library without the operation, or refusing the parameter set, in both runs: nothing to compare.
NOT_MEASURED = ("unsupported", "invalid_params", "insecure_params")


@dataclass(frozen=True)
class Change:
    label: str
    verdict: str
    base: dict | None
    new: dict | None
    ratio: float | None = None
    ratio_ci: tuple[float, float] | None = None
    p_value: float | None = None
    why: str = ""


@dataclass
class Comparison:
    changes: list[Change]
    host_diffs: list[str] = field(default_factory=list)  # accepted with --other-host: shown with the table

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.changes)

    @property
    def geomean(self) -> float | None:
        """Geometric mean of new/base over the cases timed in both runs."""
        r = [c.ratio for c in self.changes if c.ratio]
        return float(math.exp(np.mean(np.log(r)))) if r else None

    @property
    def exit_status(self) -> int:
        """0 nothing worse, 1 a case got slower, 2 a case that passed in the baseline failed."""
        if self.count(FAILED):
            return 2
        return 1 if self.count(SLOWER) else 0


def label(r: dict) -> str:
    p = r["params"]
    slots = f" {r['vector_length']} values" if r.get("vector_length") else ""
    return f"{r['library']} {r['scheme'].upper()} {p.get('name') or 'N=%d' % p['N']}{slots} {r['op']}"


def host_diffs(base_env: dict, new_env: dict) -> list[str]:
    out = []
    for path in HOST_KEYS:
        a, b = base_env, new_env
        for k in path:
            a, b = (a or {}).get(k), (b or {}).get(k)
        if a != b:
            out.append(f"{'.'.join(path)}: {a} vs {b}")
    return out


def _usable(r: dict) -> bool:
    return r["status"] == "ok" and r.get("check_passed") is not False


def compare_case(base: dict | None, new: dict | None, threshold: float, alpha: float) -> Change:
    lab = label(new or base)
    if base is None:
        return Change(lab, ADDED, None, new)
    if new is None:
        return Change(lab, REMOVED, base, None)
    if not _usable(new):
        why = f"{new['status']}: {new.get('error') or ''}".strip()
        if not _usable(base):  # known before: reported, but not what this comparison is judging
            return Change(lab, SKIPPED if new["status"] in NOT_MEASURED else STILL_FAILING, base, new, why=why)
        return Change(lab, FAILED, base, new, why=why)
    if not _usable(base):
        return Change(lab, FIXED, base, new, why=f"was {base['status']}")
    if (base.get("deviations") or {}) != (new.get("deviations") or {}):
        # The library now times different work for this op (PROTOCOL.md boundaries): another case.
        return Change(lab, SKIPPED, base, new, why=f"different work timed: {_work(base)} -> {_work(new)}")
    if "depth" in new:  # a depth probe: the measured depth is the result, not a time
        d0, d1 = base["depth"], new["depth"]
        verdict = SAME if d1 == d0 else FAILED if d1 < d0 else FIXED
        return Change(lab, verdict, base, new, why=f"depth {d0} -> {d1}")
    a, b = np.asarray(base["samples_ns"], float), np.asarray(new["samples_ns"], float)
    if a.size == 0 or b.size == 0:
        return Change(lab, SKIPPED, base, new, why="no samples")
    ratio = float(np.median(b) / np.median(a))
    lo, hi = ratio_ci(a, b)
    p = mann_whitney_p(a, b)
    if p < alpha and lo > 1 + threshold:
        verdict = SLOWER
    elif p < alpha and hi < 1 - threshold:
        verdict = FASTER
    else:
        verdict = SAME
    # The smallest two-sided p a rank test can give is 2 / C(n1 + n2, n1): with fewer samples nothing can be flagged.
    why = [] if 2 / math.comb(a.size + b.size, a.size) < alpha else \
        [f"{a.size} vs {b.size} samples: too few for the rank test to reach p < {alpha:g}"]
    why += [f"{side} run on a busy host" for side, r in (("base", base), ("new", new)) if contended(r)]
    return Change(lab, verdict, base, new, ratio, (lo, hi), p, "; ".join(why))


def _work(r: dict) -> str:
    return "; ".join(f"{op}: {text}" for op, text in sorted((r.get("deviations") or {}).items())) or "canonical"


def compare(base_recs: list[dict], new_recs: list[dict], base_env: dict, new_env: dict,
            threshold: float = 0.02, alpha: float = 0.05, other_host: bool = False) -> Comparison:
    base = {(r["job_key"], r["op"]): r for r in latest(base_recs)}
    new = {(r["job_key"], r["op"]): r for r in latest(new_recs)}
    diffs = host_diffs(base_env, new_env)
    if diffs and not other_host:
        raise UserError(f"the runs were measured on different hosts ({'; '.join(diffs)}): their timings do not compare",
                        "rerun both on one machine, or pass --other-host to compare anyway (marked)")
    if not base.keys() & new.keys():
        # A gate that judged nothing must not pass: an empty run (interrupted, refused) or another
        # suite's run would otherwise read "N removed", exit 0.
        raise UserError(f"the runs have no case in common ({len(base)} in the baseline, {len(new)} in the new run): "
                        "the comparison would judge nothing",
                        "compare a run with one of the same suite (same library, scheme, parameters, op, policy, threads)")
    changes = [compare_case(base.get(k), new.get(k), threshold, alpha)
               for k in list(base) + [k for k in new if k not in base]]
    return Comparison(changes, diffs)
