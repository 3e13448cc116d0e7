"""How a job is measured, one interface for every mode: the runner chooses a job's mode once
(latency: latency.py, the depth probe: depth.py, throughput: throughput.py), gives it each of the
job's (process, round) slices in turn, and asks it whether that slice was the job's last; the
mode adds what it measured to its outcome, which records.py lays out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Iterator

from ..drivers.supervise import Driver
from ..model.ops import BenchOp
from ..plan.jobs import Job
from .prepared import Outcome, Prepared


@dataclass(frozen=True)
class Slice:
    """One (process, round) slice of a job as the runner hands it over: the job's driver, with the
    setup made in it, and what a mode may ask the runner for."""

    drv: Driver
    prep: Prepared
    process: int
    round: int
    interleaved: bool               # taking turns with other libraries' slices request by request (runner._cell)
    reprepare: Callable[[], None]   # the setup again, in a driver that restarted after a failure
    tick: Callable[[], int]         # the runner's tick now: samples of two libraries with one tick were taken adjacent
    spare: Callable[[], Driver]     # another process of the library, with keys of its own for the setup: the mode stops it
    own: Callable[[int], None]      # a process of the job's own (a spare, before it stops): its CPU is not contention


class Mode(ABC):
    """A job's way of being measured, with the outcome its slices add to."""

    outcome: type[Outcome] = Outcome

    def __init__(self, job: Job, op: BenchOp):
        self.job, self.op = job, op
        self.out = self.outcome()

    def last(self, p: int, s: int) -> bool:
        """Whether slice (process p, round s) is the job's last. A mode that runs processes and
        windows of its own runs in one slice."""
        return True

    @abstractmethod
    def slice(self, sl: Slice) -> None:
        """Measure one slice into `out`; a DriverError ends the job with its kind."""

    def steps(self, sl: Slice) -> Iterator[None]:
        """The slice in steps, yielding between them, so the runner can alternate libraries inside
        one slice; a mode that cannot be cut measures its slice in one step."""
        self.slice(sl)
        yield
