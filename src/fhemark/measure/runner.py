"""Which slice runs next: the driver pool (one process per library and thread count), setups and
their second security check, and the processes x rounds interleaving; each job's mode (mode.py:
latency, the depth probe or throughput) measures its slices, records.py lays out what it measured.
A driver failure ends its own job (or setup group), is recorded with its kind, and the run goes on.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterator

import numpy as np

from ..drivers.protocol import Capabilities, Effective
from ..drivers.registry import manifests
from ..drivers.supervise import Driver, deferred_sigint
from ..errors import DriverError, UserError
from ..model import guard, workload_file
from ..model.ops import BenchOp
from ..model.program import Program
from ..model.security import deciding
from ..plan.jobs import Group, Job, Plan
from ..store.record import Record
from ..store.sqlite import Store
from .affinity import measuring_cpus
from .depth import Depth
from .host import Activity, merged
from .mode import Mode, Slice
from .prepared import Prepared
from .records import RecordContext, failed, judged_log_qp, layout, plain_of, security_of
from .latency import Latency
from .throughput import Throughput

OnRecord = Callable[[Job, list[Record]], None]
HELD_KEYS_MAX = 1 << 30  # a driver process that made keys beyond this is not kept for the next parameter set


class Runner:
    def __init__(self, plan: Plan, store: Store, run_id: str, env: dict, skip: set[str] | None = None,
                 on_record: OnRecord | None = None):
        self.plan, self.store, self.run_id, self.env = plan, store, run_id, env
        self.skip = skip or set()
        self.on_record = on_record or (lambda job, recs: None)
        self.drivers: dict[tuple[str, int], Driver] = {}
        self.caps: dict[tuple[str, int], Capabilities] = {}  # one driver process per (library, threads)
        self.cancel = threading.Event()
        self._tick = 0  # counts the turns of interleaved slices: samples' sample_tick

    # -- drivers -----------------------------------------------------------------
    def driver(self, library: str, threads: int = 1) -> Driver:
        """The driver process of a library at a thread count: the count is the process's environment
        (FHEMARK_THREADS, OMP_NUM_THREADS, ...), set before the library starts."""
        if (library, threads) not in self.drivers:
            self.drivers[(library, threads)] = Driver(manifests()[library], threads, self.cancel)
        drv = self.drivers[(library, threads)]
        drv.pin(measuring_cpus(threads))  # every library on one core (affinity.py); throughput unpins its own
        return drv

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
        pending: dict[str, Mode] = {}  # jobs with a slice measured and more to come
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
                    cell = [(job, prepared[id(g)]) for g in key_groups for job in g.jobs
                            if job.op == op and job.key not in done and p < job.policy.processes
                            and s < job.policy.rounds]
                    done |= self._cell(cell, (p, s), pending)
        # A driver keeps every setup it made: a set's keys past HELD_KEYS_MAX leave with its process, not beside the
        # next set's (choose at depth 60: a 2^17 set's 1.8 GB of keys beside a bootstrapping set's 16 GB).
        for g in key_groups:
            prep = prepared.get(id(g))
            if isinstance(prep, Prepared) and sum(v for k, v in prep.sizes.items() if k.endswith(("_key", "_keys"))) \
                    > HELD_KEYS_MAX and (g.library, g.threads) in self.drivers:
                self.drivers[(g.library, g.threads)].stop()
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
            # A driver that cannot build a sparse secret would build its ternary one: refused before, from its capabilities.
            weights = caps.schemes[g.scheme].limits.get("sparse_secret", [])
            if g.params.hamming_weight and weights != "any" and g.params.hamming_weight not in weights:
                raise DriverError("unsupported", f"{g.library} builds no sparse ternary {g.scheme.upper()} secret of "
                                                 f"h = {g.params.hamming_weight} (its capabilities' sparse_secret: "
                                                 f"{', '.join(map(str, weights)) or 'none'})")
            t0 = time.monotonic()
            try:
                result = self._setup(g, setup_id)
            except UserError as exc:  # the setup's rotations read every job's op: a user's file gone or edited
                raise DriverError("workload_error", exc.line())
            setup_s = time.monotonic() - t0
            eff = Effective(**result["effective"])
            if g.params.kind == "rlwe" and not (eff.N and eff.q_bits and eff.slots):
                raise DriverError("internal", f"{g.library} setup result lacks N, q_primes or slots")
            self._check_security(g, eff)
        except DriverError as exc:
            return exc
        return Prepared(g, setup_id, caps, eff, result.get("sizes_bytes", {}), plain_of(g, eff), setup_s)

    def _check_security(self, g: Group, eff: Effective) -> None:
        """What the library really built is checked too: a library may add moduli
        (OpenFHE's special primes) or choose them itself (presets, every TFHE-family set). The verdict
        is the one its record carries (`deciding`): a TFHE-family set's is the estimate's, whatever
        the library states."""
        sec = self.plan.suite.security
        verdicts = security_of(g.params.kind, eff)
        table, est = deciding(verdicts, sec.table, sec.min_bits)
        if est is None:  # nothing judges the set (no table, no dimensions, no stated level): recorded as unknown
            return
        if est.bits < sec.min_bits and not self.plan.allow_insecure:
            built = (f"log QP = {judged_log_qp(eff):.1f} at N = {eff.N}" if g.params.kind == "rlwe" else
                     f"{eff.preset or g.params.label()}")
            stated = verdicts.get("library")
            claim = f" (the library states {stated.bits})" if stated is not None and table != "library" else ""
            raise DriverError("insecure_params", f"{g.library} built {built}: {est.describe()} bits under {table}"
                                                 f"{claim}, below {sec.min_bits}; use --allow-insecure to run it marked")

    def _timeout(self, g: Group) -> float:
        return max(j.policy.timeout_s for j in g.jobs)

    def _cell(self, cell: list[tuple[Job, Prepared | DriverError]], slot: tuple[int, int],
              pending: dict[str, Mode]) -> set[str]:
        """One op's slices of a round, for every library measuring it; the keys of the jobs it finished.
        Interleaved (policy.interleave "sample"), the slices take turns request by request, in a
        random order each turn, under one window of host activity whose own processes are all of
        theirs; otherwise each slice runs whole in turn, with a window of its own."""
        finished: set[str] = set()
        turns: list[Turn] = []
        sharing = sum(job.policy.interleave == "sample" for job, _ in cell) > 1  # alone, nothing to take turns with
        for job, prep in cell:
            self._check_cancel()
            turn = self._start(job, prep, slot, pending, sharing and job.policy.interleave == "sample")
            if turn is None:
                finished.add(job.key)
            else:
                turns.append(turn)
        together = [t for t in turns if t.interleaved and t.gen is not None]
        rng = np.random.default_rng([self.plan.suite.policy.seed, *slot, len(cell)])
        window = Activity(*(t.pid for t in together))
        for turn in together:
            turn.window = window
        running = list(together)
        while running:
            self._tick += 1
            for turn in [running[i] for i in rng.permutation(len(running))]:
                self._check_cancel()
                if not turn.advance():
                    running.remove(turn)
        reading = window.finish()
        for turn in turns:
            if turn in together:
                turn.mode.out.activity.append(reading)
            else:
                turn.window = Activity(turn.pid)
                while turn.advance():
                    self._tick += 1
                turn.mode.out.activity.append(turn.window.finish())
            if turn.last:
                self._finish(turn, pending)
                finished.add(turn.job.key)
        return finished

    def _start(self, job: Job, prep: Prepared | DriverError, slot: tuple[int, int],
               pending: dict[str, Mode], interleaved: bool) -> Turn | None:
        """A job's slice ready to step, or None when the job failed before it (its record stored)."""
        try:
            op = job.bench_op()
        except UserError as exc:  # a user's computation whose file is gone or changed: this job fails
            self._store(job, [failed(job, self.run_id, "workload_error", exc.line(), self.plan.suite.name)])
            return None
        if job.key not in pending:  # the job's first slice
            pending[job.key] = mode_for(job, op)
        turn = Turn(job, op, prep, pending[job.key], pending[job.key].last(*slot), interleaved)
        try:
            self._check_supported(job, op)
            if isinstance(prep, DriverError):
                raise prep
            drv = self.driver(job.library, job.threads)
            if not drv.alive or prep.setup_id not in drv.setups:  # restarted after a failure, or died between jobs
                self._reprepare(prep)
            program_of(job, op, prep)
            turn.pid = drv.proc.pid if drv.alive else None
            turn.gen = turn.mode.steps(Slice(drv, prep, *slot, interleaved, lambda: self._reprepare(prep), lambda: self._tick,
                                             lambda: self.extra_driver(job.library, job.threads, prep),
                                             lambda pid: turn.window.own_process(pid)))
        except DriverError as exc:
            turn.fail(exc)
        return turn

    def _finish(self, turn: Turn, pending: dict[str, Mode]) -> None:
        """The job's records laid out and stored, after its last slice (or its failure)."""
        del pending[turn.job.key]
        out = turn.mode.out
        records = layout(turn.job, turn.op, turn.prep, out if turn.error is None else None, turn.error,
                         self._context(turn.job, turn.error is None, merged(out.activity)))
        self._store(turn.job, records)

    def _check_supported(self, job: Job, op: BenchOp) -> None:
        """What the library cannot do at all is said first, even when its setup failed."""
        caps = self.caps.get((job.library, job.threads))
        if caps is not None and job.scheme in caps.schemes:
            missing = op.program(job.scheme).primitives() - set(caps.schemes[job.scheme].ops)
            if missing:
                raise DriverError("unsupported", f"{job.library} has no {', '.join(sorted(missing))} for {job.scheme}")

    def _store(self, job: Job, records: list[Record]) -> None:
        for rec in records:
            self.store.add(self.run_id, job.key, rec)
        self.on_record(job, records)

    def _setup(self, g: Group, setup_id: str, drv: Driver | None = None) -> dict:
        """Context and keys for a group, kept alive in the driver under setup_id."""
        drv = drv or self.driver(g.library, g.threads)
        result = drv.request(
            "setup", timeout_s=self._timeout(g), setup_id=setup_id, scheme=g.scheme, params=g.params.wire(),
            rotations=g.rotations, ops=sorted({p for j in g.jobs for p in j.bench_op().program(g.scheme).primitives()}),
            allow_insecure=self.plan.allow_insecure,
            memory_limit_mb=g.jobs[0].policy.memory_limit_mb)
        drv.setups.add(setup_id)
        drv.pools = {p for p in drv.pools if not p.startswith(f"{setup_id}/")}  # kept with the setup it replaced
        return result

    def _reprepare(self, prep: Prepared) -> None:
        """After a crash or timeout the driver restarted without the setup: make it again."""
        self._setup(prep.group, prep.setup_id)

    def _context(self, job: Job, ok: bool, host: dict | None) -> RecordContext:
        drv = self.drivers.get((job.library, job.threads))
        return RecordContext(self.plan.suite, self.run_id, self.env, self.caps.get((job.library, job.threads)),
                             manifests()[job.library].wraps, drv.peak_rss_bytes() if ok and drv is not None else None,
                             host)


class Turn:
    """A job's slice as a cell steps it: its mode's steps, and how it ended."""

    def __init__(self, job: Job, op: BenchOp, prep: Prepared | DriverError, mode: Mode, last: bool, interleaved: bool):
        self.job, self.op, self.prep, self.mode, self.last = job, op, prep, mode, last
        self.interleaved = interleaved  # takes turns with other libraries' slices, request by request
        self.gen: Iterator[None] | None = None
        self.error: DriverError | None = None
        self.pid: int | None = None
        self.window: Activity | None = None  # the host activity the slice is measured under

    def fail(self, exc: DriverError) -> None:
        self.error, self.last, self.gen = exc, True, None

    def advance(self) -> bool:
        """One step of the slice; False once it is over (measured, or failed with its kind)."""
        if self.gen is None:
            return False
        try:
            next(self.gen)
            return True
        except StopIteration:
            self.gen = None
        except DriverError as exc:
            self.fail(exc)
        return False


def mode_for(job: Job, op: BenchOp) -> Mode:
    """A job's mode, chosen once: a chain is probed for its depth, a throughput policy runs k
    processes at once, and everything else is sampled for its latency."""
    if op.chain:
        return Depth(job, op)
    if job.policy.mode == "throughput":
        return Throughput(job, op)
    return Latency(job, op)


def program_of(job: Job, op: BenchOp, prep: Prepared) -> Program:
    """The job's program at its setup's parameters, built once per (job, setup); a user's computation
    that fails to build there (a loop, a raise at this ring) fails the job, not the run."""
    if job.key not in prep.programs:
        built = workload_file.build(op, job.scheme, prep.plain)
        if isinstance(built, guard.Fault):
            raise DriverError("workload_error", f"{built.where}: {built.what} while building {job.op} at "
                                                f"{job.params.label()}")
        prep.programs[job.key] = built
    return prep.programs[job.key]
