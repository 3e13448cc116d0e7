"""The one door into measurement, `measure(plan, store)`, and the run's flow behind it, without
its presentation: which run it is (new, or the one --resume continues), which jobs are left,
where they run (here or on a Dask cluster), and what the records say went wrong. The CLI prints;
this decides. `fhemark run`, `compare --recheck`, `choose`, `params` and the benchmarks all
measure through `measure`."""

from __future__ import annotations

import fcntl
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable

from ..errors import UserError
from ..locations import project_root
from ..plan.jobs import Job, Plan, check_size
from ..store.record import Record
from ..store.sqlite import Store
from .lease import hold
from .metadata import environment
from .runner import OnRecord, Runner

IN_MEMORY = Path(":memory:")


@dataclass
class Session:
    store: Store
    plan: Plan
    run_id: str
    env: dict
    skip: set[str]          # jobs an earlier (resumed) run already finished
    todo: list[Job]
    notes: list[str]        # what the user should read before the run starts (a resume, a plan's size)
    lock: IO | None = None  # held while the run is measured: one writer per run


def _hold(store: Store, run_id: str) -> IO | None:
    """The run's lock, held by this process until it ends: a second `run --resume` of the same run
    (or a resume while the run itself goes on) would measure the remaining jobs twice. It is taken
    beside the store's real file (links resolved), so no other name of the same file escapes it."""
    if Path(store.path) == IN_MEMORY:  # a store no other process can see
        return None
    real = Path(store.path).resolve()
    folder = real.parent / f".{real.name}.locks"
    try:
        folder.mkdir(exist_ok=True)
        f = open(folder / run_id, "a+")
    except OSError as exc:
        raise UserError(f"cannot lock run {run_id} beside {store.path} ({exc.strerror or exc})",
                        "make the store's folder writable")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise UserError(f"run {run_id} in {store.path} is being measured by another fhemark process",
                        "wait for it to finish (or stop it), then --resume; or start a new run without --resume")
    return f


def _jobs(n: int) -> str:
    return f"{n} job" + ("" if n == 1 else "s")


def plan_hash(plan: Plan) -> str:
    return hashlib.sha256(json.dumps(plan.to_json(), sort_keys=True).encode()).hexdigest()[:16]


def edited_workloads(stored_plan: dict, refs: dict) -> list[str]:
    """The user's computations a stored plan measured whose files now hold other bytes: one phrase
    each, naming the file and both digests."""
    out = []
    for w in (stored_plan.get("suite") or {}).get("workloads") or []:
        now = refs.get(w.get("name"))
        if now is not None and now.sha256 != w.get("sha256"):
            out.append(f"{now.file} (sha256 {w.get('sha256')} then, {now.sha256} now)")
    return out


def _resumable(store: Store, plan: Plan, suite_hash: str, job_keys: set[str], notes: list[str]) -> dict | None:
    """The run --resume continues: the newest of this exact plan; or, when the suite file changed in a way
    that changed no job (a description, a comment), the newest of the suite. A changed plan is refused."""
    name = plan.suite.name
    prev = store.latest_run(suite_hash)
    if prev is not None:
        return prev
    other = store.latest_run_of_suite(name)
    if other is None:
        notes.append(f"nothing to resume: {store.path} has no run of suite '{name}'; starting a new run")
        return None
    old = store.plan_keys(other["run_id"])
    if old == job_keys:
        notes.append(f"suite '{name}' was edited since run {other['run_id']}, but every job is the same: resuming it")
        return other
    edited = edited_workloads(store.run_plan(other["run_id"]), plan.suite.refs())
    if edited:
        raise UserError(f"--resume: the workload file {'; '.join(edited)} changed since run {other['run_id']} in "
                        f"{store.path} measured it, so that run cannot be continued with it",
                        "run without --resume to measure the edited computation as a new run, or restore the file "
                        "to continue the old one")
    raise UserError(f"--resume: suite '{name}' changed since its run {other['run_id']} in {store.path} "
                    f"({_jobs(len(job_keys - old))} new or changed, {_jobs(len(old - job_keys))} gone), so that run cannot be "
                    "continued", "run without --resume to start a new run, or undo the change (same suite file and "
                    "--library, --allow-insecure, --full flags) to continue the old one")


def start(store: Store, plan: Plan, env: dict, resume: bool, yes: bool) -> Session:
    """A new run in the store, or the one --resume continues; refuses (UserError) a plan too large
    without --yes before anything is stored."""
    suite_hash, jobs, notes = plan_hash(plan), plan.jobs, []
    prev = _resumable(store, plan, suite_hash, {j.key for j in jobs}, notes) if resume else None
    lock = _hold(store, prev["run_id"]) if prev else None  # before the finished jobs are read
    skip = store.done_keys(prev["run_id"]) if prev else set()
    todo = [j for j in jobs if j.key not in skip]
    size, large = check_size(todo, store.job_seconds(), yes)
    if large:  # asked for with --yes: still say how big it is
        notes.append(f"plan: {size}")
    if prev:
        run_id = prev["run_id"]
        notes.append(f"resuming run {run_id}: {len(skip)} of {len(jobs)} jobs already done")
    else:
        run_id = store.start_run(plan.suite.name, suite_hash, plan.allow_insecure, env, plan.to_json())
        lock = _hold(store, run_id)
    return Session(store, plan, run_id, env, skip, todo, notes, lock)


@dataclass
class Measured:
    """What `measure` did: the run it measured into, and that run's records."""

    run_id: str
    records: list[Record]
    store: Store


def measure(plan: Plan, store: Store | None = None, *, env: dict | None = None, resume: bool = False,
            yes: bool = True, client: Any = None, on_start: Callable[[Session], None] = lambda ses: None,
            on_record: OnRecord = lambda job, recs: None,
            on_wait: Callable[[str], None] = lambda holder: None) -> Measured:
    """Measure a plan into a store (None: an in-memory one, gone with the result): a new run, or the
    one --resume continues; here, or on the Dask cluster `client` (connect). `on_start` sees the
    session before the first job (its notes, the jobs left); `on_record` each job's records as they
    are stored; `on_wait` is told who holds the host's lease when another fhemark measures here
    (lease.py), and the jobs wait for it. The run is marked finished and its lock released when
    every job has ended."""
    store = store if store is not None else Store(IN_MEMORY)
    env = env if env is not None else environment(plan.suite.threads, project_root())
    ses = start(store, plan, env, resume, yes)
    try:
        on_start(ses)
        with hold(f"suite {plan.suite.name}, run {ses.run_id} into {store.path}", on_wait):
            execute(ses, on_record, client)
    except BaseException:
        if ses.lock is not None:
            ses.lock.close()
        raise
    finish(ses)
    return Measured(ses.run_id, list(store.records(ses.run_id)), store)


def finish(s: Session) -> None:
    """The run is finished: marked so in the store, and its lock released (a later --resume may take it)."""
    s.store.finish_run(s.run_id)
    if s.lock is not None:
        s.lock.close()


def connect(cluster_spec: str | None) -> Any:
    """The Dask client a run will use, or None to run here: connected before the run is started, so
    that a cluster refused or not answering leaves no empty run behind."""
    if not cluster_spec:
        return None
    from . import cluster
    return cluster.connect(cluster_spec)


def execute(s: Session, on_record: OnRecord, client: Any = None) -> None:
    """Every job left, here or on the cluster; each job's records are in the store as it finishes."""
    if client is None:
        Runner(s.plan, s.store, s.run_id, s.env, s.skip, on_record).execute()
        return
    from . import cluster
    cluster.execute(s.plan, client, s.run_id, s.store, s.skip, on_record)


def disconnect(client: Any) -> None:
    if client is None:
        return
    started = getattr(client, "cluster", None)
    client.close()
    if started is not None:  # a LocalCluster this run started
        started.close()


@dataclass
class Tally:
    """What the records say went wrong: failures (exit status 1) and refusals (a library refusing a
    parameter set: said once per setup, not a failure)."""

    failures: list[str] = field(default_factory=list)
    refusals: dict[str, str] = field(default_factory=dict)

    def add(self, job: Job, recs: list[Record]) -> None:
        for r in recs[:1]:
            if r.status in ("invalid_params", "insecure_params"):
                self.refusals.setdefault(f"{job.library} {job.scheme} {job.params.label()}", f"{r.status}: {r.error}")
            elif r.status not in ("ok", "unsupported"):
                self.failures.append(f"{job.library} {job.scheme} N={job.params.N} {job.op}: {r.status}: {r.error}")
