"""Expand a suite into a frozen plan: groups of jobs sharing one driver setup.

Everything the run needs is resolved here (parameters validated, security
estimated and enforced, policies merged), so the run only executes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from pydantic import ValidationError

from .errors import UserError
from .catalog import BOOTSTRAP, DEPTH, INTO, MICRO, PIPELINES, known, lookup
from .params import SCHEMES_BITS, SCHEMES_RLWE, ParamSet, resolve
from .security import Estimate, estimate
from .suites import Policy, Suite


@dataclass(frozen=True)
class Job:
    library: str
    scheme: str
    params: ParamSet
    op: str
    slots: int | None
    policy: Policy
    threads: int
    allow_insecure: bool
    # Named by the suite (not via `libraries: all`): a missing scheme is then reported, not skipped.
    named: bool = True

    @property
    def key(self) -> str:
        """Identity of the resolved case: what resume skips and what comparisons match on."""
        blob = json.dumps([self.library, self.scheme, self.params.wire(), self.op, self.slots,
                           self.policy.model_dump(), self.threads, self.allow_insecure], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def input_key(self) -> str:
        """What a job's random inputs are drawn from: the case without the library, so every
        library gets the same inputs (and the same rotation steps) in the same order."""
        blob = json.dumps([self.scheme, self.params.wire(), self.op, self.slots, self.policy.seed], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class Group:
    """Jobs that share one setup (library, scheme, parameter set)."""

    library: str
    scheme: str
    params: ParamSet
    security: Estimate | None
    jobs: list[Job] = field(default_factory=list)

    @property
    def rotations(self) -> list[int]:
        return sorted({r for j in self.jobs for r in lookup(j.op, j.scheme).rotations})

    @property
    def rotations_pow2(self) -> bool:
        return any(lookup(j.op, j.scheme).rotations_pow2 for j in self.jobs)


@dataclass
class Plan:
    suite: Suite
    groups: list[Group]
    allow_insecure: bool
    unavailable: list[str] = field(default_factory=list)  # named by the suite, not built here: skipped

    @property
    def jobs(self) -> list[Job]:
        return [j for g in self.groups for j in g.jobs]

    def to_json(self) -> dict:
        return {"suite": self.suite.model_dump(), "allow_insecure": self.allow_insecure,
                "jobs": [{"key": j.key, "library": j.library, "scheme": j.scheme, "params": j.params.wire(),
                          "op": j.op, "slots": j.slots} for j in self.jobs]}


def _ops_for(case_ops, scheme: str, params: ParamSet, where: str) -> list[str]:
    groups = {"all": MICRO + INTO + PIPELINES + DEPTH + BOOTSTRAP, "micro": MICRO, "into": INTO, "pipelines": PIPELINES,
              "depth": DEPTH}
    if isinstance(case_ops, str):
        names = groups[case_ops]
    else:
        for name in case_ops:
            if not known(name):
                raise UserError(f"{where}.ops: unknown operation '{name}'",
                                "run `fhemark list ops` for the names (workloads: multiadd_<n>x<bits>, compare_<bits>)")
        names = case_ops
    # An op that does not exist for this scheme or parameter set is simply not planned.
    return [n for n in names if (op := lookup(n, scheme)) is not None and op.applies(params)]


def build(suite: Suite, available: list[str], allow_insecure: bool = False,
          only_libraries: list[str] | None = None, known: list[str] | None = None) -> Plan:
    """`available`: drivers built here; `known`: every driver this checkout has
    (a known but unbuilt library is skipped and listed, an unknown one is an error)."""
    known = known if known is not None else available
    groups: dict[tuple, Group] = {}
    unavailable: set[str] = set()
    for ci, case in enumerate(suite.cases):
        where = f"cases[{ci}]"
        libs = available if case.libraries == "all" else case.libraries
        if only_libraries:
            libs = [lib for lib in libs if lib in only_libraries]
        for lib in libs:
            if lib not in known:
                raise UserError(f"{where}.libraries: unknown library '{lib}'",
                                f"use one of {', '.join(known) or 'none'} (`fhemark list libraries`)")
        unavailable.update(lib for lib in libs if lib not in available)
        libs = [lib for lib in libs if lib in available]
        try:
            policy = Policy(**{**suite.policy.model_dump(), **case.policy})
        except ValidationError as exc:
            err = exc.errors()[0]
            raise UserError(f"{where}.policy.{'.'.join(map(str, err['loc']))}: {err['msg']}",
                            "see the policy fields in the README (Suites)")
        for scheme in case.schemes:
            if scheme not in SCHEMES_RLWE + SCHEMES_BITS:
                raise UserError(f"{where}.schemes: unknown scheme '{scheme}'",
                                f"use {', '.join(SCHEMES_RLWE + SCHEMES_BITS)}")
            for pi, spec in enumerate(case.params):
                params = resolve(spec, scheme, f"{where}.params[{pi}]")
                ops = _ops_for(case.ops, scheme, params, where)
                # Bit schemes' sets and library presets are checked after setup, from what the library built.
                est = estimate(params.N, max(params.log_qp_nominal, 1), suite.security.table) \
                    if params.kind == "rlwe" else None
                if params.preset is None and est.bits < suite.security.min_bits and not allow_insecure:
                    raise UserError(
                        f"{where}.params[{pi}] ({params.label()}, {scheme}): log QP = {params.log_qp_nominal} at "
                        f"N = {params.N} gives {est.describe()} bits under {est.table}, below the required "
                        f"{suite.security.min_bits} (the bound is {est.bound_128} bits)",
                        "use a larger N or a smaller modulus, or pass --allow-insecure to run it marked insecure")
                for lib in libs:
                    g = groups.setdefault((lib, scheme, params), Group(lib, scheme, params, est))
                    for slots in case.slots or [None]:
                        for op in ops:
                            job = Job(lib, scheme, params, op, slots, policy, suite.threads, allow_insecure,
                                      named=case.libraries != "all")
                            if all(j.key != job.key for j in g.jobs):
                                g.jobs.append(job)
    if not groups:
        raise UserError(f"suite '{suite.name}' has no job to run here"
                        + (f" ({', '.join(sorted(unavailable))} not built)" if unavailable else ""),
                        "check its libraries, schemes and ops against `fhemark list`; build drivers with make setup")
    return Plan(suite, _interleaved(list(groups.values())), allow_insecure, sorted(unavailable))


def _interleaved(groups: list[Group]) -> list[Group]:
    """Alternate libraries (A B A B ...) for the same scheme and parameters, so
    that machine drift over a run is not blamed on one library."""
    by_key: dict[tuple, list[Group]] = {}
    for g in groups:
        by_key.setdefault((g.scheme, g.params), []).append(g)
    return [g for gs in by_key.values() for g in gs]
