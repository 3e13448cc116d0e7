"""`fhemark run --smoke`: a suite's smoke form, which runs it as a user runs it, in bounded time.

The smoke form keeps the suite's shape: every case, library, scheme, op and workload, the thread
axis as written (`all`, lists), and the policy's structure (driver processes, interleaved rounds,
mode, inputs, timeouts). It shrinks what only costs time:

- samples: one per slice (processes x rounds), no warm-up, the smallest budget; throughput mode
  grows k once (1, then 2 processes at once);
- parameter sets: in each case, the sets of its smallest ring (bit schemes: the narrowest
  integers), with the next larger ones only where an op or a scheme of the case needs them;
- vector lengths: the shortest and the longest the case sweeps.

A case whose smallest ring is above `SMOKE_MAX_N` (CKKS bootstrapping at N = 2^16: gigabytes of
keys and minutes to make them) cannot shrink: it is left out with one line that says so.
Smoke runs are named `<suite>-smoke` and their environment says `smoke: true` (every record's
`env`), so no table or comparison mistakes them for measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.params import ParamSet, resolve
from .jobs import _ops_for  # the planner's own rule for which ops a set holds
from .suites import Case, Policy, Suite

SMOKE_MAX_N = 16384  # the largest ring a smoke run builds: the shipped suites' common chain c16384
SMOKE_MAX_BATCH = 2  # throughput mode: k = 1, then 2 processes at once (the search grows k once)


@dataclass(frozen=True)
class Smoke:
    """A suite's smoke form, and one line for each case it leaves out (empty `suite.cases` when all)."""

    suite: Suite
    skipped: list[str]


def smoke_policy(policy: Policy) -> dict:
    """The fields a smoke run changes: the fewest samples the policy's slices allow (one per slice),
    no warm-up, the smallest budget (the sampling then stops at its floor); in throughput mode, k
    grown once."""
    slices = policy.processes * policy.rounds
    return {"warmup": 0, "min_samples": 1, "max_samples": slices, "budget_s": 1e-3,
            "max_batch": min(policy.max_batch or SMOKE_MAX_BATCH, SMOKE_MAX_BATCH)}


def _size(params: ParamSet) -> tuple[int, int]:
    return params.N, params.bits or 0


def _planned(case: Case, spec, refs: dict, where: str) -> tuple[tuple[int, int], set[tuple[str, str]]]:
    """A parameter set's size (its largest over the case's schemes) and the (scheme, op) pairs it plans."""
    size, ops = (0, 0), set()
    for scheme in dict.fromkeys(case.schemes):
        params = resolve(spec, scheme, where)
        size = max(size, _size(params))
        ops |= {(scheme, op) for op in _ops_for(case.ops, scheme, params, refs)}
    return size, ops


def smallest_sets(case: Case, refs: dict, where: str = "case") -> tuple[list, int]:
    """The case's sets of its smallest size, and of the next sizes up while some (scheme, op) of the
    case is planned only at a larger one, in the case's order; and the smallest ring of the case."""
    planned = [(spec, *_planned(case, spec, refs, f"{where}.params[{pi}]")) for pi, spec in enumerate(case.params)]
    want = set().union(*(ops for _, _, ops in planned))
    sizes, have = set(), set()
    for size in sorted({s for _, s, _ in planned}):
        if sizes and have >= want:
            break
        sizes.add(size)
        have |= set().union(*(ops for _, s, ops in planned if s == size))
    return [spec for spec, s, _ in planned if s in sizes], min(s for _, s, _ in planned)[0]


def _what(case: Case) -> str:
    libs = "every library" if case.libraries == "all" else ", ".join(case.libraries)
    ops = case.ops if isinstance(case.ops, str) else ", ".join(case.ops)
    return f"{libs}; {', '.join(case.schemes)}; {ops}"


def _case(suite: Suite, case: Case, where: str) -> tuple[Case | None, str]:
    """The case's smoke form, or None and the line that says why it cannot have one."""
    kept, ring = smallest_sets(case, suite.refs(), where)
    if ring > SMOKE_MAX_N:
        return None, (f"smoke: skipped {suite.name} {where} ({_what(case)}): its smallest ring is N = {ring}, "
                      f"above the smoke form's largest, N = {SMOKE_MAX_N} (its keys alone take gigabytes and "
                      "minutes to make); run the suite without --smoke to measure it")
    merged = suite.case_policy(case, where)
    slots = sorted(set(case.slots)) if case.slots else None
    return case.model_copy(update={
        "params": kept, "slots": slots and list(dict.fromkeys([slots[0], slots[-1]])),
        "policy": {**case.policy, **smoke_policy(merged)} if case.policy else {}}), ""


def smoke(suite: Suite) -> Smoke:
    """The suite's smoke form (see the module's words), named `<suite>-smoke`."""
    cases, skipped = [], []
    for ci, case in enumerate(suite.cases):
        small, why = _case(suite, case, f"cases[{ci}]")
        if small is None:
            skipped.append(why)
        else:
            cases.append(small)
    policy = Policy(**{**suite.policy.model_dump(), **smoke_policy(suite.policy)})
    return Smoke(suite.model_copy(update={"name": f"{suite.name}-smoke", "policy": policy, "cases": cases,
                                          "full_cases": []}), skipped)


def without_versions(suite: Suite) -> Suite:
    """The suite with every `library@version` left out of its cases: what a smoke run builds (a
    version is a build of its own, minutes for TFHE-rs); a version not built here is skipped, said
    in one line, as any library not built is."""
    cases = [c.model_copy(update={"libraries": [lib for lib in c.libraries if "@" not in lib]})
             if c.libraries != "all" else c for c in suite.cases]
    return suite.model_copy(update={"cases": cases})
