"""Sweeps on several machines through Dask's distributed scheduler, one benchmark per host at a
time.

The unit sent to a worker is a block: every group of one (scheme, parameter set), all libraries
together, because the libraries of a block are measured interleaved in rounds and that pairing
only means something on one machine at one time. A worker takes a per-host semaphore before it
measures, so two workers on one host never benchmark at once, and streams each job's records
through a queue as the job finishes; the orchestrator writes them to the one store as they
arrive. A worker that dies loses only its block in flight: the scheduler gives the block to
another worker once (`allowed-failures`), and after that its unfinished jobs are recorded as
failed; jobs already streamed are not measured twice.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import replace
from typing import Any, Callable

from ..errors import UserError
from ..plan.jobs import Job, Plan
from ..store.record import Record
from .records import failed

ALLOWED_FAILURES = 1   # a block whose worker dies is given to another worker once
BENCH_LEASE = "fhemark-bench-{host}"


def _dask() -> Any:
    try:
        import distributed
    except ImportError:
        raise UserError("--cluster needs Dask's distributed scheduler, which is not installed",
                        "pip install 'fhemark[cluster]' (or distributed) into this environment") from None
    return distributed


def connect(spec: str) -> Any:
    """A client for `local:N` (a LocalCluster of N single-threaded worker processes on this
    machine) or `tcp://host:port` (a running scheduler)."""
    distributed = _dask()
    import dask
    # A dead worker's host lease is given back after lease-timeout: short, so a retried block does
    # not wait half a minute for the semaphore its dead predecessor held.
    dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                     "distributed.scheduler.locks.lease-timeout": "10s",
                     "distributed.scheduler.locks.lease-validation-interval": "2s"})
    if spec.startswith("local:"):
        try:
            n = int(spec.split(":", 1)[1])
        except ValueError:
            n = 0
        if not 1 <= n <= 64:
            raise UserError(f"--cluster {spec}: local needs a worker count", "write e.g. --cluster local:2")
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=40)
        return distributed.Client(cluster)
    if spec.startswith("tcp://"):
        host, _, port = spec[len("tcp://"):].rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536 or host.count("[") != host.count("]"):
            raise UserError(f"--cluster {spec}: not a scheduler address", "write tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786 "
                            "or tcp://[::1]:8786")
        try:
            return distributed.Client(spec, timeout=30)
        except OSError as exc:
            raise UserError(f"--cluster {spec}: no scheduler answers ({exc})",
                            "start one with `dask scheduler` and workers with `dask worker ADDRESS --nthreads 1`") from None
    raise UserError(f"--cluster {spec}: unknown", "use local:N or tcp://HOST:PORT")


def blocks(plan: Plan) -> list[Plan]:
    """One sub-plan per (scheme, parameter set), in the plan's order."""
    out: dict[tuple, list] = {}
    for g in plan.groups:
        out.setdefault((g.scheme, g.params), []).append(g)
    return [replace(plan, groups=gs) for gs in out.values()]


class _Stream:
    """What a worker's Runner writes to instead of a store: each job's records go to the queue, as the
    fields they were made with (plain data, which Dask's serializer takes; `execute` makes them records
    again)."""

    def __init__(self, queue: Any):
        self.queue = queue
        self.pending: dict[str, list[dict]] = {}

    def add(self, run_id: str, job_key: str, record: Record) -> None:
        self.pending.setdefault(job_key, []).append(record.model_dump(exclude_unset=True))

    def flush(self, job_key: str) -> None:
        self.queue.put((job_key, self.pending.pop(job_key, [])))


def _measure_block(block: Plan, run_id: str, queue_name: str, skip: set[str]) -> str:
    """Runs on a worker: one benchmark per host at a time, records streamed as jobs finish."""
    from distributed import Queue, Semaphore

    from ..locations import project_root
    from .metadata import environment
    from .runner import Runner

    host = socket.gethostname()
    stream = _Stream(Queue(queue_name))
    with Semaphore(max_leases=1, name=BENCH_LEASE.format(host=host)):
        env = {**environment(block.suite.threads, project_root()), "worker_pid": os.getpid()}
        Runner(block, stream, run_id, env, skip, lambda job, recs: stream.flush(job.key)).execute()
    return host


def execute(plan: Plan, client: Any, run_id: str, store: Any, skip: set[str],
            on_record: Callable[[Job, list[Record]], None]) -> None:
    """Every block of the plan on the cluster; each job's records written to `store` as it arrives."""
    from distributed import Queue

    queue_name = f"fhemark-{run_id}"
    queue = Queue(queue_name, client=client)
    jobs = {j.key: j for j in plan.jobs}
    done: set[str] = set(skip)

    def drain() -> None:
        n = queue.qsize()  # polled, not waited on: a timed-out wait is logged as an error by the scheduler
        for key, fields in queue.get(batch=n) if n else []:
            if key in done:  # a retried block measured it again: the first result stands
                continue
            done.add(key)
            recs = [Record.model_validate(f) for f in fields]
            for rec in recs:
                store.add(run_id, key, rec)
            on_record(jobs[key], recs)

    pending = {client.submit(_measure_block, b, run_id, queue_name, set(skip), pure=False): b for b in blocks(plan)}
    while pending:
        time.sleep(0.2)
        drain()
        for fut in [f for f in pending if f.done()]:
            block = pending.pop(fut)
            if fut.status == "error":
                drain()  # whatever it streamed before it failed
                why = fut.exception()
                for job in (j for j in block.jobs if j.key not in done):
                    rec = _failed(job, run_id, f"its worker failed twice: {type(why).__name__}: {why}")
                    store.add(run_id, job.key, rec)
                    done.add(job.key)
                    on_record(job, [rec])
    drain()


def _failed(job: Job, run_id: str, why: str) -> Record:
    return failed(job, run_id, "crashed", why)
