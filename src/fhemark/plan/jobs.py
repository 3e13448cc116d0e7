"""Expand a suite into a frozen plan: groups of jobs sharing one driver setup.

Everything the run needs is resolved here (parameters validated, security
estimated and enforced, policies merged), so the run only executes.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from collections.abc import Mapping
from functools import cached_property, lru_cache
from typing import Protocol

from ..errors import UserError
from ..model import estimator as lattice
from ..model import workload_file
from ..model.catalog import BOOTSTRAP, DEPTH, INTO, MICRO, PIPELINES, SIZED, known, lookup, unknown_op
from ..model.ops import BenchOp
from ..model.params import SCHEMES_BITS, SCHEMES_RLWE, ParamSet, resolve
from ..model.rotations import galois_steps
from ..model.security import Estimate, at_level, judge, ring_secret
from ..model.workload import WorkloadRef
from .suites import Policy, Suite, thread_counts


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
    workload: WorkloadRef | None = None  # a user's computation: found by its file's content

    @cached_property
    def key(self) -> str:
        """Identity of the resolved case: what resume skips and what comparisons match on. A user's
        computation is the file's content too: an edited file is another case."""
        return _digest([self.library, self.scheme, _wire(self.params), self.op, self.slots,
                        _dump(self.policy), self.threads, self.allow_insecure]
                       + ([self.workload.sha256] if self.workload else []))

    def bench_op(self) -> BenchOp:
        """What the job measures: a built-in op, or the user's computation loaded from its file (in
        whatever process asks: a UserError when the file is gone or changed)."""
        op = op_named(self.op, self.scheme, self.workload)
        if op is None:
            raise UserError(f"{self.op} has no {self.scheme} program", "plan the job again")
        return op

    @cached_property
    def input_key(self) -> str:
        """What a job's random inputs are drawn from: the case without the library, so every
        library gets the same inputs (and the same rotation steps) in the same order."""
        return _digest([self.scheme, _wire(self.params), self.op, self.slots, self.policy.seed])

    @cached_property
    def pool_key(self) -> str:
        """What the pool a driver process keeps for the job's setup is drawn from: the case without
        the library and the op, so every library's pool holds the same vectors."""
        return _digest([self.scheme, _wire(self.params), self.slots, self.policy.seed])


def op_named(name: str, scheme: str, ref: WorkloadRef | None) -> BenchOp | None:
    """A built-in op by name, or a user's computation by its file's content."""
    return workload_file.bench_op(ref, scheme) if ref is not None else lookup(name, scheme)


def _digest(parts: list) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


# A plan holds many jobs sharing a few parameter sets and policies: their JSON forms are made once.
@lru_cache(maxsize=4096)
def _wire(params: ParamSet) -> dict:
    return params.wire()


# Policy fields added after stores existed: left out of a job's key while at their default, so a
# job measured before they existed keeps its key (compare and --resume match it) until it uses them.
_LATER_FIELDS = ("mode", "max_batch", "interleave")


@lru_cache(maxsize=4096)
def _dump(policy: Policy) -> dict:
    later = {f for f in _LATER_FIELDS if getattr(policy, f) == Policy.model_fields[f].default}
    return policy.model_dump(exclude=later)


@dataclass
class Group:
    """Jobs that share one setup (library, scheme, parameter set)."""

    library: str
    scheme: str
    params: ParamSet
    security: Estimate | None
    jobs: list[Job] = field(default_factory=list)
    threads: int = 1

    @property
    def rotations(self) -> list[int]:
        """The Galois key steps of the setup, spelled out: every op's own, and the power-of-two set
        and the row swap / conjugation (0) where an op wants them."""
        ops = [j.bench_op() for j in self.jobs]
        return galois_steps(self.params.N // 2, {r for op in ops for r in op.rotations},
                            any(op.rotations_pow2 for op in ops))


@dataclass
class Plan:
    suite: Suite
    groups: list[Group]
    allow_insecure: bool
    unavailable: list[str] = field(default_factory=list)  # named by the suite, not built here: skipped
    optional: list[str] = field(default_factory=list)  # named by optional cases only, not built here: skipped

    @property
    def jobs(self) -> list[Job]:
        return [j for g in self.groups for j in g.jobs]

    def to_json(self) -> dict:
        return {"suite": self.suite.model_dump(), "allow_insecure": self.allow_insecure,
                "jobs": [{"key": j.key, "library": j.library, "scheme": j.scheme, "params": j.params.wire(),
                          "op": j.op, "slots": j.slots, **({"workload": j.workload.wire()} if j.workload else {})}
                         for j in self.jobs]}


MAX_MULTIADD = 4096
_OP_GROUPS = {"all": MICRO + INTO + PIPELINES + DEPTH + BOOTSTRAP, "micro": MICRO, "into": INTO,
              "pipelines": PIPELINES, "depth": DEPTH}


def _ops_for(case_ops, scheme: str, params: ParamSet, refs: dict[str, WorkloadRef]) -> list[str]:
    names = _OP_GROUPS[case_ops] if isinstance(case_ops, str) else case_ops
    # An op that does not exist for this scheme or parameter set is simply not planned (a case may
    # list ops of several schemes); one that applies nowhere in its case is refused by _check_ops.
    return [n for n in dict.fromkeys(names)
            if (op := op_named(n, scheme, refs.get(n))) is not None and op.applies(params)]


def _check_ops(case_ops, where: str, refs: dict[str, WorkloadRef]) -> None:
    if isinstance(case_ops, str):
        return
    for name in case_ops:
        m = re.fullmatch(r"multiadd_(\d+)x(\d+)", name)
        if m and int(m.group(1)) > MAX_MULTIADD:  # its netlist is built while planning: minutes, gigabytes
            raise UserError(f"{where}.ops: '{name}' sums {int(m.group(1))} integers, more than {MAX_MULTIADD}",
                            f"use multiadd_<n>x<bits> with n from 2 to {MAX_MULTIADD}")
        if not known(name) and name not in refs:
            raise unknown_op(name, f"{where}.ops", "run `fhemark list ops` for the names (workloads: "
                                                   f"{', '.join(form for form, _ in SIZED.values())})")


def _unplanned(name: str, schemes: list[str], where: str, tried: list[tuple[str, ParamSet]],
               ref: WorkloadRef | None) -> UserError:
    """An op the case names that exists for none of its schemes or parameter sets: what it needs,
    beside what each set offers, where the op says (an application's levels and values)."""
    offered = sorted({s for s in SCHEMES_RLWE + SCHEMES_BITS if op_named(name, s, ref) is not None})
    if not set(offered) & set(schemes):
        return UserError(f"{where}.ops: '{name}' is not offered for {', '.join(schemes)} (only for "
                         f"{', '.join(offered) or 'no scheme'})",
                         "remove it or add a scheme that has it; `fhemark list ops` shows which")
    why = []
    for scheme, params in tried:
        op = op_named(name, scheme, ref)
        facts = (op.facts or {}) if op is not None else {}
        if op is None or params.kind != "rlwe" or not params.N or not params.q_bits:
            continue
        levels, row = len(params.q_bits) - 1, params.N // 2
        if facts.get("depth") and levels < facts["depth"]:
            why.append(f"{scheme.upper()} {params.label()}: needs {facts['depth']} levels, has {levels}")
        elif facts.get("workload") != "poly" and facts.get("size") and facts["size"] > row:
            why.append(f"{scheme.upper()} {params.label()}: packs {facts['size']} values in one row, holds {row}")
    if why:
        return UserError(f"{where}.ops: '{name}' does not apply to any parameter set of the case ({'; '.join(why)})",
                         "add a larger parameter set (more primes, or a larger N), or remove the op")
    return UserError(f"{where}.ops: '{name}' does not apply to any parameter set of the case "
                     f"(e.g. an integer width or a plaintext modulus it needs)",
                     "remove it or add a parameter set it applies to (docs/methodology.md names the sized "
                     "workloads: multiadd_<n>x<bits>, compare_<bits>, ...)")


def _check_slots(slots: list[int] | None, scheme: str, params: ParamSet, where: str) -> None:
    """Vector lengths fit the ciphertext: 1..slot count (N for BFV/BGV, N/2 for CKKS, 1 for bit schemes)."""
    if not slots:
        return
    if params.kind == "bits":
        if any(v != 1 for v in slots):
            raise UserError(f"{where}.slots: {scheme} holds one value per ciphertext, so vector lengths do not apply",
                            f"remove slots from the case, or move {scheme} to a case of its own")
        return
    have = params.slots(scheme)
    for v in slots:
        if not 1 <= v <= have:
            raise UserError(f"{where}.slots: a vector length of {v} does not fit a {scheme} ciphertext "
                            f"({params.label()}: {have} slots)",
                            f"use vector lengths from 1 to {have}, or a larger N")


def judged(params: ParamSet, table: str, min_bits: int) -> Estimate:
    """A ternary RLWE set's verdict: the table's where it has the set and the level asked is one of its
    rows; the lattice estimator's where the table is silent (an N with no row, below 128 bits, or a
    `--security` level between its rows, which only the estimate can place a set against)."""
    secret = ring_secret(params.wire(), params.N)  # a sparse secret is in no table: the estimate judges it
    return at_level(judge(lattice.rlwe(params.N, max(params.log_qp_nominal, 1), secret, params.sigma), table), min_bits)


class Driver(Protocol):
    """What the plan reads of a driver's manifest (drivers.registry.Manifest), given by the caller:
    the plan sits below the drivers and does not look them up itself."""

    library: str

    @property
    def available(self) -> bool: ...


Known = Mapping[str, Driver] | list[str]


def _library(name: str, known: Known) -> str:
    """A suite's or --library's name as jobs and records carry it: `openfhe@1.5.1` is a library of its
    own (its own driver, interleaved with the others); an alias becomes the driver's name, with
    the version as given; a version the driver does not support is refused by the mapping's lookup."""
    if isinstance(known, Mapping):
        return known[name].library if name in known else name.lower()
    return name


def _built(lib: str, available: list[str], known: Known) -> bool:
    return lib in available or (isinstance(known, Mapping) and "@" in lib and lib in known and known[lib].available)


def build(suite: Suite, available: list[str], allow_insecure: bool = False,
          only_libraries: list[str] | None = None, known: Known | None = None) -> Plan:
    """`available`: drivers built here; `known`: every driver this checkout has, by name (the
    registry's manifests, which also resolve aliases and `library@version`; a list of names where no
    versions are asked for). A known but unbuilt library is skipped and listed, an unknown one is an error.

    Linear in the number of jobs: duplicates (a case repeating another) are found by key."""
    known = known if known is not None else available
    allow_insecure = allow_insecure or suite.security.allow_insecure
    _check_count(suite, available)
    refs = suite.refs()
    groups: dict[tuple, Group] = {}
    seen: set[str] = set()
    unavailable: set[str] = set()
    optional: set[str] = set()  # Case.optional's libraries not built here: skipped, saying how to include them
    only = {_library(lib, known) for lib in only_libraries or []}  # as the suite's names are resolved
    for ci, case in enumerate(suite.cases):
        where = f"cases[{ci}]"
        libs = available if case.libraries == "all" else [_library(lib, known) for lib in case.libraries]
        if only_libraries:
            libs = [lib for lib in libs if lib in only]
        _check_known(libs, known, where)
        built = [lib for lib in libs if _built(lib, available, known)]
        (optional if case.optional else unavailable).update(lib for lib in libs if lib not in built)
        libs = list(dict.fromkeys(built))
        policy = suite.case_policy(case, where)
        _check_ops(case.ops, where, refs)
        planned: set[str] = set()
        tried: list[tuple[str, ParamSet]] = []  # (scheme, parameter set) pairs of the case
        for scheme in dict.fromkeys(case.schemes):
            if scheme not in SCHEMES_RLWE + SCHEMES_BITS:
                raise UserError(f"{where}.schemes: unknown scheme '{scheme}'",
                                f"use {', '.join(SCHEMES_RLWE + SCHEMES_BITS)}")
            for pi, spec in enumerate(case.params):
                params = resolve(spec, scheme, f"{where}.params[{pi}]")
                _check_slots(case.slots, scheme, params, where)
                ops = _ops_for(case.ops, scheme, params, refs)
                planned.update(ops)
                tried.append((scheme, params))
                est = _secure(suite, params, scheme, f"{where}.params[{pi}]", allow_insecure)
                for lib, threads in ((lib, t) for t in thread_counts(case.threads or suite.threads) for lib in libs):
                    jobs = [Job(lib, scheme, params, op, slots, policy, threads, allow_insecure,
                                named=case.libraries != "all", workload=refs.get(op))
                            for slots in dict.fromkeys(case.slots or [None]) for op in ops]
                    fresh = [j for j in jobs if j.key not in seen]  # a case repeating another's job adds nothing
                    seen.update(j.key for j in fresh)
                    if fresh:
                        groups.setdefault((lib, scheme, params, threads),
                                          Group(lib, scheme, params, est, threads=threads)).jobs.extend(fresh)
        if not isinstance(case.ops, str):
            for name in case.ops:
                if name not in planned:
                    raise _unplanned(name, list(dict.fromkeys(case.schemes)), where, tried, refs.get(name))
    if not groups:
        raise UserError(f"suite '{suite.name}' has no job to run here"
                        + (f" ({', '.join(sorted(unavailable))} not built)" if unavailable else ""),
                        "check its libraries, schemes and ops against `fhemark list`; build drivers with make setup")
    return Plan(suite, _interleaved(list(groups.values())), allow_insecure, sorted(unavailable),
                sorted(optional - unavailable))


def _check_known(libs: list[str], known: Known, where: str) -> None:
    for lib in libs:
        if lib not in known and lib.partition("@")[0] not in known:
            raise UserError(f"{where}.libraries: unknown library '{lib}'",
                            f"use one of {', '.join(known) or 'none'} (`fhemark list libraries`)")


def _secure(suite: Suite, params: ParamSet, scheme: str, where: str, allow_insecure: bool) -> Estimate | None:
    """The set's security estimate, where it is below the suite's bound only with allow_insecure; None for
    bit schemes' sets and library presets, checked after setup from what the library built."""
    if params.kind != "rlwe" or params.preset is not None:
        return None
    est = judged(params, suite.security.table, suite.security.min_bits)
    if est.bits < suite.security.min_bits and not allow_insecure:
        bound = f" (the bound is {est.bound_128} bits)" if est.judged_by == "table" else ""
        raise UserError(
            f"{where} ({params.label()}, {scheme}): log QP = {params.log_qp_nominal} at "
            f"N = {params.N} gives {est.describe()} bits under {est.table}, below the required "
            f"{suite.security.min_bits}{bound}",
            "use a larger N or a smaller modulus, or pass --allow-insecure to run it marked insecure")
    return est


# -- how big a plan is -------------------------------------------------------------------------------

# Beyond either, `fhemark run` shows the plan's size and estimate and asks for --yes: far above every
# built-in suite (study4 --full included), so only a sweep the user did not mean to write stops here.
MAX_JOBS = 5000
# Beyond this many jobs (counted from the suite's axes, before anything is built) a plan is not
# built at all: 12 million took 339 s and gigabytes only to be refused by the size check.
MAX_PLANNED = 100_000


def _check_count(suite: Suite, available: list[str]) -> None:
    """An upper bound of the plan's jobs from the axes alone (libraries x schemes x sets x ops x
    vector lengths x thread counts): a sweep far beyond any run is one line before it is built."""
    total = 0
    for case in suite.cases:
        libs = len(available) if case.libraries == "all" else len(case.libraries)
        ops = len(_OP_GROUPS[case.ops]) if isinstance(case.ops, str) else len(case.ops)
        total += (libs * len(case.schemes) * len(case.params) * ops * len(case.slots or [None])
                  * len(thread_counts(case.threads or suite.threads)))
    if total > MAX_PLANNED:
        raise UserError(f"the suite asks for up to {total:,} jobs, more than the {MAX_PLANNED:,} a plan is built for "
                        "(counted from its axes: libraries x schemes x parameter sets x ops x vector lengths x threads)",
                        "split the suite, or sweep fewer values on one axis")
MAX_ESTIMATE_S = 48 * 3600.0


def estimate_s(jobs: list[Job], history: dict[str, float]) -> tuple[float, int]:
    """Seconds the jobs should take: what each took in earlier runs of the store where it was measured,
    else its policy's budget (the sampling stops there, warm-up and slow single samples aside).
    Also returns how many estimates came from earlier runs."""
    total, measured = 0.0, 0
    for j in jobs:
        took = history.get(j.key)
        if took is not None:
            total, measured = total + took, measured + 1
        else:
            total += j.policy.budget_s
    return total, measured


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def check_size(jobs: list[Job], history: dict[str, float], yes: bool, max_jobs: int = MAX_JOBS,
               max_s: float = MAX_ESTIMATE_S) -> tuple[str, bool]:
    """A line describing the plan's size, and whether it is above what a user would expect; above it
    without --yes, a UserError that shows both and asks for --yes."""
    secs, measured = estimate_s(jobs, history)
    source = (f"from earlier runs for {measured} of them, from budget_s for the rest" if 0 < measured < len(jobs)
              else "from earlier runs" if measured else "from each job's budget_s")
    line = f"{len(jobs)} jobs, estimated {duration(secs)} ({source})"
    large = len(jobs) > max_jobs or secs > max_s
    if large and not yes:
        raise UserError(f"the plan has {line}, more than the {max_jobs} jobs or {duration(max_s)} expected of a run",
                        "pass --yes to run it anyway, or narrow the suite (cases, slots, ops, --library)")
    return line, large


def _interleaved(groups: list[Group]) -> list[Group]:
    """Alternate libraries (A B A B ...) for the same scheme and parameters, so
    that machine drift over a run is not blamed on one library."""
    by_key: dict[tuple, list[Group]] = {}
    for g in groups:
        by_key.setdefault((g.scheme, g.params), []).append(g)
    return [g for gs in by_key.values() for g in gs]
