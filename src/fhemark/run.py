"""Execute a plan: set up drivers, measure every job adaptively, check every
sample against the plaintext reference, stream each result to the store.

The only module that talks to drivers. A driver failure ends its own job (or
setup group), is recorded with its kind, and the run goes on.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from .checks import check
from .drivers import manifests
from .errors import DriverError
from .host import Activity, merged
from .messages import Capabilities, Effective, RunResult, Sample, Vector
from .catalog import lookup
from .ops import BenchOp, Program, base_name
from .plan import Group, Job, Plan
from .security import Estimate, estimates
from .semantics import Plain
from .stats import MIN_CI_SAMPLES, summarize
from .store import Store
from .supervise import Driver, deferred_sigint
from .throughput import saturate

OnRecord = Callable[[Job, list[dict]], None]
WARM_ROUND_NS = 20e6  # a sample shorter than this is warmed up again in every round


@dataclass
class Prepared:
    """A group whose driver answered setup: what jobs of the group need."""

    group: Group
    setup_id: str
    caps: Capabilities
    effective: Effective
    sizes: dict[str, int]
    plain: Plain
    setup_s: float  # wall time of the setup request: context and every key


PARALLELISM_MIN_NS = 1_000_000  # samples whose timed regions are shorter say nothing of parallelism


@dataclass
class Outcome:
    """What one job measured, before it is laid out as records."""

    samples: list[dict[str, float]] = field(default_factory=list)  # per sample: timed region -> ns per copy
    process: list[int] = field(default_factory=list)  # per sample: the driver process it came from
    round: list[int] = field(default_factory=list)  # per sample: the interleaved round (over all processes)
    scalars: list[dict] = field(default_factory=list)  # per sample: the scalars of every copy (e.g. rotation steps)
    warmup: list[dict[str, float]] = field(default_factory=list)
    copies: int = 0  # copies of the op per timed region (0: not calibrated yet)
    wall_per_sample: float = 0.0  # wall time of one copy of a sample, request included: sizes the batches
    met_target: int = 0  # consecutive checks at which the interval met the target
    activity: list[dict | None] = field(default_factory=list)
    overhead_ns: list[int] = field(default_factory=list)
    noise: list[float] = field(default_factory=list)
    precision: list[float] = field(default_factory=list)
    max_error: float = 0.0
    sizes: dict[str, int] = field(default_factory=dict)
    levels: dict[str, int] = field(default_factory=dict)
    notes: set[str] = field(default_factory=set)
    stop_reason: str = ""
    elapsed_s: float = 0.0
    # CPU and wall time summed over the timed regions of every sample whose driver reported its CPU
    # time (cpu_ns): their ratio is the parallelism the library really used.
    cpu_ns: float = 0.0
    cpu_wall_ns: float = 0.0
    depth: int | None = None          # depth probes: the largest k that decrypted correctly
    depth_limit: str | None = None    # and what happened at k + 1
    noise_by_depth: list[float] = field(default_factory=list)
    precision_before: list[float] = field(default_factory=list)  # of the input, where the program outputs "z0"
    throughput: dict | None = None  # throughput mode: the rate at the best k and how it was found


class Runner:
    def __init__(self, plan: Plan, store: Store, run_id: str, env: dict, skip: set[str] | None = None,
                 on_record: OnRecord | None = None):
        self.plan, self.store, self.run_id, self.env = plan, store, run_id, env
        self.skip = skip or set()
        self.on_record = on_record or (lambda job, recs: None)
        self.drivers: dict[tuple[str, int], Driver] = {}
        self.caps: dict[tuple[str, int], Capabilities] = {}  # one driver process per (library, threads)
        self.cancel = threading.Event()

    # -- drivers -----------------------------------------------------------------
    def driver(self, library: str, threads: int = 1) -> Driver:
        """The driver process of a library at a thread count: the count is the process's environment
        (FHEMARK_THREADS, OMP_NUM_THREADS, ...), set before the library starts."""
        if (library, threads) not in self.drivers:
            self.drivers[(library, threads)] = Driver(manifests()[library], threads, self.cancel)
        return self.drivers[(library, threads)]

    def extra_driver(self, library: str, threads: int, prep: Prepared) -> Driver:
        """Another process of a library, with its own keys for `prep`'s setup (throughput mode's k);
        the caller stops it."""
        drv = Driver(manifests()[library], threads, self.cancel)
        self._setup(prep.group, prep.setup_id, drv)
        return drv

    def capabilities(self, library: str, threads: int = 1) -> Capabilities:
        if (library, threads) not in self.caps:
            self.caps[(library, threads)] = Capabilities(**self.driver(library, threads).request("capabilities",
                                                                                               timeout_s=120))
        return self.caps[(library, threads)]

    def close(self) -> None:
        for d in self.drivers.values():
            d.stop()

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise KeyboardInterrupt

    # -- the run -------------------------------------------------------------------
    def execute(self) -> None:
        """Run every job not in `skip`. Ctrl-C raises KeyboardInterrupt once the job in flight is
        abandoned (its driver killed); everything recorded before it is in the store."""
        with deferred_sigint(self.cancel):
            self._execute()

    def _execute(self) -> None:
        try:
            for key_groups in self._by_params():
                skipped = [g for g in key_groups if not self._wanted(g)]
                for job in (j for g in skipped for j in g.jobs):
                    self.on_record(job, [])  # nothing to record: the library has no such scheme
                key_groups = [g for g in key_groups if g not in skipped]
                self._rounds(key_groups)
        except KeyboardInterrupt:
            for d in self.drivers.values():
                d.kill()  # a polite shutdown would wait for a busy driver's answer
            raise
        finally:
            self.close()

    def _rounds(self, key_groups: list[Group]) -> None:
        """Every library's jobs for one parameter set, in driver processes (each after the first a
        fresh process with fresh keys) and, inside each, interleaved rounds: op by op, every
        library's job takes its slice of samples before any takes its next, so the machine's drift
        reaches every library alike; the spread between slices goes into the interval."""
        processes = max((j.policy.processes for g in key_groups for j in g.jobs), default=1)
        rounds = max((j.policy.rounds for g in key_groups for j in g.jobs), default=1)
        ops = list(dict.fromkeys(j.op for g in key_groups for j in g.jobs))
        pending: dict[str, Outcome] = {}
        done: set[str] = set(self.skip)
        for p in range(processes):
            if p > 0:
                for g in key_groups:
                    if (g.library, g.threads) in self.drivers:
                        self.drivers[(g.library, g.threads)].stop()
            prepared = {id(g): self._prepare(g) for g in key_groups
                        if any(j.key not in done and p < j.policy.processes for j in g.jobs)}
            for s in range(rounds):
                for op in ops:
                    for g in key_groups:
                        for job in (j for j in g.jobs if j.op == op):
                            if job.key in done or p >= job.policy.processes or s >= job.policy.rounds:
                                continue
                            self._check_cancel()
                            if self._job(job, prepared[id(g)], (p, s), pending):
                                done.add(job.key)
    def _wanted(self, g: Group) -> bool:
        """`libraries: all` means every library that has the scheme: the others are skipped, not failed."""
        if any(j.named for j in g.jobs):
            return True
        try:
            return g.scheme in self.capabilities(g.library, g.threads).schemes
        except DriverError:
            return True  # let the group record why the driver failed

    def _by_params(self) -> list[list[Group]]:
        out: dict[tuple, list[Group]] = {}
        for g in self.plan.groups:
            out.setdefault((g.scheme, g.params, g.threads), []).append(g)
        return list(out.values())

    def _prepare(self, g: Group) -> Prepared | DriverError:
        setup_id = f"{g.scheme}-{g.params.N}-{abs(hash(g.params)) % 10**8}"
        try:
            caps = self.capabilities(g.library, g.threads)
            if g.scheme not in caps.schemes:
                raise DriverError("unsupported", f"{g.library} has no {g.scheme.upper()}")
            t0 = time.monotonic()
            result = self._setup(g, setup_id)
            setup_s = time.monotonic() - t0
            eff = Effective(**result["effective"])
            if g.params.kind == "rlwe" and not (eff.N and eff.q_bits and eff.slots):
                raise DriverError("internal", f"{g.library} setup result lacks N, q_bits or slots")
            self._check_security(g, eff)
        except DriverError as exc:
            return exc
        return Prepared(g, setup_id, caps, eff, result.get("sizes_bytes", {}), _plain(g, eff), setup_s)

    def _check_security(self, g: Group, eff: Effective) -> None:
        """What the library really built is checked too: a library may add moduli
        (OpenFHE's special primes) or choose them itself (presets)."""
        sec = self.plan.suite.security
        est = _security(g.params.kind, eff).get(sec.table if g.params.kind == "rlwe" else "library")
        if est is None:  # the library states no security level for its set: recorded as unknown
            return
        if est.bits < sec.min_bits and not self.plan.allow_insecure:
            raise DriverError("insecure_params", f"{g.library} built log QP = {eff.log_qp:.1f} at N = {eff.N}: "
                                                 f"{est.describe()} bits under {sec.table}, below {sec.min_bits}; "
                                                 f"use --allow-insecure to run it marked")

    def _timeout(self, g: Group) -> float:
        return max(j.policy.timeout_s for j in g.jobs)

    def _job(self, job: Job, prep: Prepared | DriverError, slot: tuple[int, int],
             pending: dict[str, "Outcome"]) -> bool:
        """One (process, round) slice of a job; True when the job is finished and its records are stored."""
        op = lookup(job.op, job.scheme)
        outcome = pending.setdefault(job.key, Outcome())
        drv = self.drivers.get((job.library, job.threads))
        activity = Activity(drv.proc.pid if drv is not None and drv.alive else None)
        p, s = slot
        # depth probes and throughput (its own processes and windows) run once
        last = (p + 1 >= job.policy.processes and s + 1 >= job.policy.rounds) or op.chain is not None \
            or job.policy.mode == "throughput"
        try:
            # What the library cannot do at all is said first, even when its setup failed.
            caps = self.caps.get((job.library, job.threads))
            if caps is not None and job.scheme in caps.schemes:
                missing = op.program(job.scheme).primitives() - set(caps.schemes[job.scheme].ops)
                if missing:
                    raise DriverError("unsupported",
                                      f"{job.library} has no {', '.join(sorted(missing))} for {job.scheme}")
            if isinstance(prep, DriverError):
                raise prep
            drv = self.driver(job.library, job.threads)
            if prep.setup_id not in drv.setups:  # the driver was restarted after a failure
                self._reprepare(prep)
            if op.chain:
                self._probe_depth(job, op, prep, outcome)
            elif job.policy.mode == "throughput":
                saturate(self, job, op, prep, outcome)
            else:
                self._measure(job, op, prep, outcome, p, s)
            error = None
        except DriverError as exc:
            error, last = exc, True
        outcome.activity.append(activity.finish())
        if not last:
            return False
        del pending[job.key]
        records = self._records(job, op, prep, outcome if error is None else None, error)
        host = merged(outcome.activity)
        for rec in records:
            rec["host_activity"] = host
            self.store.add(self.run_id, job.key, rec)
        self.on_record(job, records)
        return True

    def _setup(self, g: Group, setup_id: str, drv: Driver | None = None) -> dict:
        """Context and keys for a group, kept alive in the driver under setup_id."""
        drv = drv or self.driver(g.library, g.threads)
        result = drv.request(
            "setup", timeout_s=self._timeout(g), setup_id=setup_id, scheme=g.scheme, params=g.params.wire(),
            rotations=g.rotations, rotations_pow2=g.rotations_pow2, allow_insecure=self.plan.allow_insecure,
            memory_limit_mb=g.jobs[0].policy.memory_limit_mb)
        drv.setups.add(setup_id)
        return result

    def _reprepare(self, prep: Prepared) -> None:
        """After a crash or timeout the driver restarted without the setup: make it again."""
        self._setup(prep.group, prep.setup_id)

    # -- measurement ---------------------------------------------------------------
    def _measure(self, job: Job, op: BenchOp, prep: Prepared, out: Outcome, p: int, s: int) -> None:
        """Round s in driver process p of a job's samples. A fast op runs as k copies in one
        timed region, each copy on fresh inputs and each copy's output checked; the stop rule
        needs the interval at the target on two checks in a row, so that stopping at the first
        lucky look does not shrink the interval's coverage."""
        pol = job.policy
        rounds = pol.processes * pol.rounds  # every limit below is shared out over them
        r = p * pol.rounds + s
        # Inputs depend on the case and the round, never on the library: every library gets the
        # same vectors and scalars in the same order.
        rng = np.random.default_rng([pol.seed, int(job.input_key, 16) % 2**32, r])
        base = op.build(job.scheme, prep.plain)
        drv = self.driver(job.library, job.threads)

        # Noise, sizes and levels: read in the first batch of each driver process (fresh keys), not
        # in every round. Reading one can cost a driver far more than the op (OpenFHE's noise
        # budget: 0.13 s of serialization and Python NTTs per reading at N = 8192, against a 50 us
        # add): one reading per process cut OpenFHE's share of the quick suite from 48 s to 31 s.
        # The noise budget is the minimum over those readings (1 bit higher than over one per
        # round in 5 of 34 OpenFHE cases); CKKS precision still comes from every checked output.
        facts_due = s == 0

        def batch(count: int, k: int) -> tuple[list[dict[str, float]], list[dict]]:
            nonlocal facts_due
            facts, facts_due = facts_due, False
            program = base.replicate(k) if facts else replace(base.replicate(k), noise=[], sizes=[], levels=[])
            draws, samples = self.draw(job, op, prep, rng, count, k)
            t0 = time.monotonic()
            raw = drv.request("run", timeout_s=pol.timeout_s, memory_limit_mb=pol.memory_limit_mb,
                              setup_id=prep.setup_id, program=program.wire(), samples=samples)
            wall = time.monotonic() - t0
            got = self.absorb(job, op, prep, program, draws, RunResult(**raw), out)
            if not facts or not out.wall_per_sample:  # batches are sized from the cost of a copy alone
                out.wall_per_sample = wall / (count * k)
            return got

        if s == 0:
            drv.reset_peak()
        started = time.monotonic()
        if s == 0 or not out.copies:  # a fresh process warms up
            warm, warm_scalars = batch(max(pol.warmup, 1), 1)
        elif pol.warmup and self._cheap(out):
            # Its later rounds too, when the op is cheap: the other libraries ran since, and the first
            # sample of a round read 4-10% slow in median, 34-51% at the 90th percentile (quick suite).
            batch(1, out.copies)
            if r == 0:
                out.warmup = warm[: pol.warmup]
            if pol.warmup == 0:  # no warm-up asked for: the first sample counts
                out.samples += warm
                out.process += [p] * len(warm)
                out.round += [r] * len(warm)
                out.scalars += warm_scalars
        if not out.copies:  # calibrated once, in the first process, and kept for the whole job
            t_op = float(np.median([self._total(w) for w in warm]))
            out.copies = max(1, min(pol.max_iters, math.ceil(pol.min_sample_us * 1e3 / max(t_op, 1.0)))) \
                if op.repeatable(base) else 1
        k = out.copies
        min_n, max_n = math.ceil(pol.min_samples / rounds), math.ceil(pol.max_samples / rounds)
        # The budget binds for slow operations once the rounds together hold enough samples for an
        # interval: min_samples is a wish, not a reason to spend 20 s on one key generation.
        floor_n = min(min_n, math.ceil(MIN_CI_SAMPLES / rounds))
        n0 = len(out.samples)  # samples from earlier rounds
        t_run = time.monotonic()
        while True:
            n = len(out.samples) - n0
            if n >= min_n:
                summary = summarize([self._total(x) for x in out.samples], out.process, out.round)
                met = summary.rel_ci_half_width is not None and summary.rel_ci_half_width <= pol.target_rel_ci
                out.met_target = out.met_target + 1 if met else 0
                if out.met_target >= 2:
                    out.stop_reason = "target_ci"
                    break
            if n >= floor_n and time.monotonic() - t_run >= pol.budget_s / rounds:
                out.stop_reason = "budget"
                break
            if n >= max_n:
                out.stop_reason = "max_samples"
                break
            goal = floor_n if n < floor_n else min_n if n < min_n else max_n  # look again at each of these
            size = max(1, min(20, int(0.25 / max(out.wall_per_sample * k, 1e-6))))  # ~0.25 s per request
            want = max(1, min(size, goal - n))
            got, scal = batch(want, k)
            out.samples += got
            out.process += [p] * len(got)
            out.round += [r] * len(got)
            out.scalars += scal
        out.elapsed_s += time.monotonic() - started

    def draw(self, job: Job, op: BenchOp, prep: Prepared, rng: np.random.Generator, count: int,
              k: int) -> tuple[list, list[Sample]]:
        """`count` samples of k copies, each copy on inputs and scalars of its own."""
        draws = [[(self._inputs(op, prep, job, rng), op.scalars(prep.plain, rng)) for _ in range(k)]
                 for _ in range(count)]
        suffix = _suffix(k)
        samples = [Sample(inputs={suffix(n, i): Vector.of(v) for i, (vecs, _) in enumerate(d) for n, v in vecs.items()},
                          scalars={suffix(n, i): x for i, (_, sc) in enumerate(d) for n, x in sc.items()})
                   for d in draws]
        return draws, samples

    def absorb(self, job: Job, op: BenchOp, prep: Prepared, program: Program, draws: list, res: RunResult,
                out: Outcome) -> tuple[list[dict[str, float]], list[dict]]:
        """A driver's answer to `_draw`'s samples: every output of every copy checked, the facts kept;
        the times per copy, and the scalars drawn."""
        count, k = len(draws), len(draws[0])
        _check_reply(job, program, res, count)
        suffix = _suffix(k)
        outputs = list(dict.fromkeys(base_name(o) for o in program.outputs)) if k > 1 else program.outputs
        for d, smp in zip(draws, res.samples):  # every output is there (_check_reply)
            for i, (vecs, sc) in enumerate(d):
                got = {o: smp.outputs[suffix(o, i)] for o in outputs}
                self._check(job, op, prep.plain, vecs, sc, got, out)
        out.overhead_ns.append(res.overhead_ns)
        for smp in res.samples:
            # The CPU clock is read outside the wall clock, through the driver's own language
            # (a Python call, a system call): microseconds that only a region of a millisecond
            # or more makes negligible (TenSEAL's 8 us encode regions read 1.5-2.7 "threads").
            if smp.cpu_ns and set(smp.cpu_ns) == set(smp.ns) and sum(smp.ns.values()) >= PARALLELISM_MIN_NS:
                out.cpu_ns += sum(smp.cpu_ns.values())
                out.cpu_wall_ns += sum(smp.ns.values())
        out.noise += [res.noise_budget_bits[n] for n in program.noise if n in res.noise_budget_bits]
        out.sizes.update({base_name(n): v for n, v in res.sizes_bytes.items()})
        out.levels.update({base_name(n): v for n, v in res.levels.items()})
        out.notes.update(res.notes)
        scal = [[sc for _, sc in d] for d in draws] if any(sc for d in draws for _, sc in d) else [None] * count
        return [{k_: v / k for k_, v in smp.ns.items()} for smp in res.samples], scal

    def _probe_depth(self, job: Job, op: BenchOp, prep: Prepared, out: Outcome) -> None:
        """Run x * y^k for k = 1, 2, ... until the result stops decrypting
        correctly (noise) or the library refuses (levels): a measured limit."""
        rng = np.random.default_rng([job.policy.seed, int(job.input_key, 16) % 2**32])
        drv = self.driver(job.library, job.threads)
        out.stop_reason = "depth_limit"
        drv.reset_peak()
        started = time.monotonic()
        out.depth = 0
        for k in range(1, job.policy.max_depth + 1):
            program = op.chain(job.scheme, k)
            vecs = self._inputs(op, prep, job, rng)
            sample = Sample(inputs={n: Vector.of(v) for n, v in vecs.items()})
            try:
                res = RunResult(**drv.request("run", timeout_s=job.policy.timeout_s,
                                              memory_limit_mb=job.policy.memory_limit_mb, setup_id=prep.setup_id,
                                              program=program.wire(), samples=[sample]))
                _check_reply(job, program, res, 1)
                self._check(job, op, prep.plain, vecs, {"depth": k}, res.samples[0].outputs, out)
            except DriverError as exc:
                if exc.kind not in ("wrong_result", "internal", "invalid_params"):
                    raise
                out.depth_limit = f"at depth {k}: {exc.kind}: {exc.message}"
                if not drv.alive or prep.setup_id not in drv.setups:
                    self._reprepare(prep)
                break
            out.depth = k
            out.samples = [{"chain": float(sum(res.samples[0].ns.values()))}]
            out.noise_by_depth += [res.noise_budget_bits.get(n) for n in program.noise if n in res.noise_budget_bits]
            out.overhead_ns.append(res.overhead_ns)
        else:
            out.stop_reason = "max_depth"
        if out.depth == 0 and out.depth_limit is not None:
            # Not even one multiplication decrypts correctly: that is a failure, not depth 0.
            raise DriverError("wrong_result", f"no multiplication decrypted correctly ({out.depth_limit})")
        out.noise = out.noise_by_depth[-1:]
        out.elapsed_s = time.monotonic() - started

    @staticmethod
    def _inputs(op: BenchOp, prep: Prepared, job: Job, rng: np.random.Generator) -> dict[str, np.ndarray]:
        if op.gen is not None:
            return op.gen(prep.plain, rng)
        return {n: prep.plain.random(rng, job.slots) for n in op.inputs}

    @staticmethod
    def _cheap(out: Outcome) -> bool:
        """A sample short enough that cold caches show in it (slower ones warm themselves up)."""
        return float(np.median([Runner._total(x) for x in out.samples or out.warmup])) * out.copies < WARM_ROUND_NS

    @staticmethod
    def _total(sample: dict[str, int]) -> float:
        return float(sum(sample.values()))

    def _check(self, job: Job, op: BenchOp, plain: Plain, vecs: dict, scalars: dict,
               outputs: dict[str, Vector], out: Outcome) -> None:
        """Every checked output of one copy against its plaintext reference."""
        expected = op.expected(plain, vecs, scalars)
        for name, want in expected.items():
            if name not in outputs:
                raise DriverError("wrong_result", f"driver returned no output '{name}' to check")
            c = check(plain, want, outputs[name].array(), job.policy.min_precision_bits)
            if c.precision_bits is not None:
                out.precision.append(c.precision_bits)
                out.max_error = max(out.max_error, c.max_abs_error or 0.0)
            if not c.passed:
                raise DriverError("wrong_result", c.message + ("" if name == "z" else f" (output {name})"))
        if "z0" in outputs and "z0" not in expected:  # e.g. bootstrapping: how precise the input was
            before = check(plain, expected["z"], outputs["z0"].array(), 0.0)
            if before.precision_bits is not None:
                out.precision_before.append(before.precision_bits)

    # -- records (the export contract) -------------------------------------------------
    def _records(self, job: Job, op: BenchOp, prep: Prepared | DriverError, out: Outcome | None,
                 error: DriverError | None) -> list[dict]:
        ok_prep = isinstance(prep, Prepared)
        caps = self.caps.get((job.library, job.threads))
        eff = prep.effective if ok_prep else None
        log_qp = eff.log_qp if eff else float(job.params.log_qp_nominal)
        bits = job.params.kind == "bits"
        if eff is not None:
            sec = _security(job.params.kind, eff)
        else:  # setup failed: what was asked for, where a table applies
            sec = estimates(job.params.N, max(log_qp, 1)) if not bits and job.params.preset is None else {}
        table = "library" if bits else self.plan.suite.security.table
        mismatch = _param_mismatch(job, eff) if eff else []
        base: dict[str, Any] = {
            "library": job.library,
            "library_version": caps.library_version if caps else None,
            "driver_version": caps.driver_version if caps else None,
            "library_build": caps.build if caps else None,
            "wraps": manifests()[job.library].wraps or None,
            "scheme": job.scheme,
            "params": {**job.params.wire(), "name": job.params.name, "log_qp": log_qp,
                       "log_qp_nominal": job.params.log_qp_nominal,
                       "N": eff.N if eff and bits else job.params.N},
            "effective_params": eff.model_dump() if eff else None,
            "params_match": not mismatch if eff else None,
            "params_mismatch": mismatch,
            "security_bits": sec[table].bits if table in sec else None,
            "security_table": table,
            "security": {t: {"bits": e.bits, "below_table": e.below_table} for t, e in sec.items()},
            "insecure": table in sec and sec[table].bits < self.plan.suite.security.min_bits,
            "p_fail_log2": eff.p_fail if eff else None,
            "slots": job.slots or (eff.slots if eff else job.params.slots(job.scheme)),
            "vector_length": job.slots,  # as the suite asked: null means every slot
            "threads": job.threads,  # as asked; what the driver says it uses, and whether the library uses it:
            "threads_used": caps.threads if caps else None,
            "threads_honoured": caps.threads_honoured if caps else None,
            "mode": job.policy.mode,  # latency: one evaluation at a time; throughput: k at once (throughput_*)
            **({"workload": op.facts} if op.facts else {}),
            "job_key": job.key,
            "suite": self.plan.suite.name,
            "run_id": self.run_id,
            "timestamp": time.time(),
            "env": self.env,
        }
        if error is not None or out is None:
            err = error or DriverError("internal", "no outcome")
            return [{**base, "op": job.op, "title": op.title, "status": err.kind, "error": err.message,
                     "check_passed": False if err.kind == "wrong_result" else None, "samples_ns": [],
                     "median_ns": None, "ci95_ns": None, "noise_budget_bits": None, "precision_bits": None,
                     "sizes_bytes": dict(prep.sizes) if ok_prep else {}, "peak_rss_bytes": None,
                     "driver_overhead_ns": None}]
        shared = {
            **base, "status": "ok", "error": None, "check_passed": True,
            "noise_budget_bits": min(out.noise) if out.noise else None,
            "precision_bits": min(out.precision) if out.precision else None,
            "max_abs_error": out.max_error if out.precision else None,
            "sizes_bytes": {**prep.sizes, **{f"output:{k}": v for k, v in out.sizes.items()}},
            "levels": out.levels,
            "peak_rss_bytes": self.driver(job.library, job.threads).peak_rss_bytes(),
            "parallelism": out.cpu_ns / out.cpu_wall_ns if out.cpu_wall_ns > 0 else None,
            "driver_overhead_ns": float(np.median(out.overhead_ns)) if out.overhead_ns else None,
            "copies": out.copies, "iters": out.copies,  # iters: the export contract's older name
            "stop_reason": out.stop_reason, "target_rel_ci": job.policy.target_rel_ci,
            "budget_s": job.policy.budget_s, "elapsed_s": out.elapsed_s, "notes": sorted(out.notes),
            "setup_s": prep.setup_s,
            "precision_bits_before": min(out.precision_before) if out.precision_before else None,
        }
        if out.throughput:
            shared.update(out.throughput)
        if any(out.scalars):
            shared["sample_scalars"] = out.scalars  # per sample, per copy: e.g. the rotation steps drawn
        program = op.build(job.scheme, prep.plain)
        devs = caps.schemes[job.scheme].deviations if caps and job.scheme in caps.schemes else {}

        def deviations(regions: list[str]) -> dict[str, str]:
            """What the library's timed work adds to or lacks from the canonical boundary."""
            inside = Program(program.steps, regions, regions=program.regions).timed_primitives()
            return {p: devs[p] for p in inside if p in devs}

        if op.chain:
            return [{**shared, "op": job.op, "title": op.title, "depth": out.depth, "depth_limit": out.depth_limit,
                     "deviations": deviations(program.timed),
                     "noise_by_depth": out.noise_by_depth, "check_passed": out.depth > 0,
                     "precision_by_depth": out.precision[:out.depth],  # CKKS: after each multiplication that passed
                     "precision_bits": out.precision[out.depth - 1] if out.depth and out.precision else None,
                     "samples_ns": [s["chain"] for s in out.samples], "median_ns": None, "ci95_ns": None}]
        if op.stages is None:  # one timed region, or several that make one operation (their sum)
            return [_timed({**shared, "deviations": deviations(program.timed)}, job.op, op.title,
                           [sum(s.values()) for s in out.samples], [sum(s.values()) for s in out.warmup], out)]
        recs = []
        for stage, regions in {**op.stages, "total": tuple(program.timed)}.items():
            regions = [x for x in regions if x in program.timed]  # e.g. no rescale outside CKKS
            # every region is in every sample (_check_reply): no missing time reads as zero
            recs.append(_timed({**shared, "deviations": deviations(regions)}, f"{job.op}/{stage}",
                               f"{op.title}: {stage}", [sum(s[x] for x in regions) for s in out.samples],
                               [sum(s[x] for x in regions) for s in out.warmup], out))
        return recs


def _suffix(k: int) -> Callable[[str, int], str]:
    """The name of copy i of a value when a region holds k copies (Program.replicate's naming)."""
    return (lambda n, i: f"{n}.{i}") if k > 1 else (lambda n, i: n)


def _check_reply(job: Job, program: Program, res: RunResult, count: int) -> None:
    """A reply that lacks a sample, a region's time or an output is an error of the job: a
    missing time must never read as zero, a missing output never as unchecked."""
    if len(res.samples) != count:
        raise DriverError("internal", f"{job.library} returned {len(res.samples)} samples for {count}")
    want_ns, want_out = set(program.timed), set(program.outputs)
    for i, s in enumerate(res.samples):
        if set(s.ns) != want_ns:
            raise DriverError("internal", f"{job.library} sample {i}: times for {sorted(s.ns)}, "
                                          f"expected one per timed region {sorted(want_ns)}")
        # A region made at least one library call: no clock reads zero or less for it, and a result
        # timed at 0 ns would be ranked as free (recommend picked one "at 0 ns per evaluation").
        if any(v <= 0 for v in s.ns.values()) or any(v < 0 for v in s.cpu_ns.values()):
            raise DriverError("internal", f"{job.library} sample {i}: an impossible time {s.ns} (cpu {s.cpu_ns}): "
                                          "a region of library calls cannot take zero or negative time")
        if missing := want_out - set(s.outputs):
            raise DriverError("internal", f"{job.library} sample {i}: no output {sorted(missing)}")


def _timed(shared: dict, op: str, title: str, samples: list[float], warmup: list[float], out: Outcome) -> dict:
    s = summarize(samples, out.process, out.round)
    slots = shared["slots"]
    return {**shared, "op": op, "title": title, "samples_ns": samples, "sample_process": out.process,
            "sample_round": out.round,
            "warmup_ns": warmup, "median_ns": s.median, "mean_ns": s.mean, "stdev_ns": s.stdev, "mad_ns": s.mad,
            "min_ns": s.min, "max_ns": s.max, "ci95_ns": list(s.ci95) if s.ci95 else None,
            "rel_ci_half_width": s.rel_ci_half_width, "ci_method": s.ci_method, "processes": s.processes,
            "process_medians_ns": list(s.process_medians),
            "outliers": {"mild": s.outliers_mild, "severe": s.outliers_severe},
            "ns_per_slot": s.median / slots if slots else None}


def _plain(g: Group, eff: Effective) -> Plain:
    """The plaintext arithmetic of a setup, from what the library reported."""
    if g.params.kind == "rlwe":
        return Plain(g.scheme, eff.slots, eff.t)
    modulus = {"tfhe_bool": 2, "tfhe_int": 1 << (g.params.bits or 64)}.get(g.scheme) or \
        int(getattr(eff, "message_modulus", None) or 4)
    return Plain(g.scheme, 1, modulus)


def _security(kind: str, eff: Effective | None) -> dict[str, Estimate]:
    """RLWE: both tables, from the moduli the library built. Bit schemes: the
    library's own stated target for its parameter set (no table applies)."""
    if kind == "rlwe":
        return estimates(eff.N, max(eff.log_qp, 1)) if eff else {}
    target = eff.security_bits_target if eff else None
    return {"library": Estimate("library", target, False, 0)} if target else {}


def _param_mismatch(job: Job, eff: Effective) -> list[str]:
    """Differences between what was asked and what the library really used."""
    want = job.params
    if want.preset is not None:  # the library chose the moduli: only N was asked for
        return [] if want.N == eff.N else [f"N: asked {want.N}, used {eff.N}"]
    diffs = []
    sigma = getattr(eff, "sigma", None)  # drivers report it where the library has one
    for name, a, b in (("N", want.N, eff.N), ("q_bits", list(want.q_bits), eff.q_bits),
                       ("p_bits", list(want.p_bits), eff.p_bits), ("t", want.t, eff.t),
                       ("scale_bits", want.scale_bits, eff.scale_bits),
                       ("sigma", want.sigma, sigma if sigma is not None else want.sigma)):
        if a != b and not (name in ("scale_bits", "sigma") and a is not None and b is not None and abs(a - b) < 1e-6):
            diffs.append(f"{name}: asked {a}, used {b}")
    return diffs
