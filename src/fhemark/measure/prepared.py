"""What a job's slices share: the group's setup as its driver answered it (with what the driver
process keeps for it: pools of ciphertexts, programs built once), and the job's outcome as its
slices add to it, before records.py lays it out. Every mode of measurement starts from these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..drivers.protocol import Capabilities, Effective, Pool
from ..model.program import Program
from ..model.semantics import Plain
from ..plan.jobs import Group

Pair = tuple[int, int]


@dataclass
class Kept:
    """The pool a driver process keeps for one setup and vector length (pool.py)."""

    pool: Pool  # whole: the first request in a process sends it so, later ones only its id
    vecs: list[np.ndarray]


@dataclass
class JobPairs:
    """The kept pool's pairs in the order one job takes them in one driver process."""

    process: int
    order: list[Pair]
    used: int = 0


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
    pools: dict[int, Kept] = field(default_factory=dict)  # kept by the driver process, by vector length
    programs: dict[str, Program] = field(default_factory=dict)  # by job key: built once per (job, setup)


@dataclass
class Outcome:
    """What one job measured, before it is laid out as records; a mode adds fields of its own
    (depth.DepthOutcome, throughput.ThroughputOutcome)."""

    samples: list[dict[str, float]] = field(default_factory=list)  # per sample: timed region -> ns per copy
    process: list[int] = field(default_factory=list)  # per sample: the driver process it came from
    round: list[int] = field(default_factory=list)  # per sample: the interleaved round (over all processes)
    tick: list[int] = field(default_factory=list)  # per sample: the runner's tick, shared by the libraries' adjacent requests
    scalars: list[dict] = field(default_factory=list)  # per sample: the scalars of every copy (e.g. rotation steps)
    warmup: list[dict[str, float]] = field(default_factory=list)
    copies: int = 0  # copies of the op per timed region (0: not calibrated yet)
    wall_per_sample: float = 0.0  # wall time of one copy of a sample, request included: sizes the batches
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
    precision_before: list[float] = field(default_factory=list)  # of the input, where the program outputs "z0"
    # "hot": every timed region warmed up just before it (Program.warmed), one copy per region;
    # "cold": copies on operands all made before the region. Decided at calibration ("": not yet).
    input_state: str = ""
    pairs: JobPairs | None = None  # of the kept pool, in this driver process


def total(sample: dict[str, float]) -> float:
    """A sample's time: its timed regions summed (a pipeline's stages, a circuit's depths)."""
    return float(sum(sample.values()))
