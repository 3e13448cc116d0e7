"""Records `recommend` derives from measured ones, never stored: a workload a candidate never ran,
costed by the single operations it adds up (`Modelled`), and a throughput record costed at the host's
time per evaluation (`Amortised`). Each is a Record, so every reader reads it as one."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ..store.record import Record


class Source(BaseModel):
    """A single-op record a modelled workload adds up: how many of it, from which run and job."""

    model_config = ConfigDict(frozen=True)
    op: str
    count: int
    run_id: str
    job_key: str
    median_ns: float


class Modelled(Record):
    """An application workload a candidate never ran, costed by the sum of its steps' single-op
    medians (recommend._model_missing_workloads). It keeps its single ops' setup (recommend._CARRIED),
    nothing measured on it, and `sources`: the single ops it adds up, whose runs and jobs are its own."""

    suite: str = ""
    run_id: str = ""
    job_key: str = ""
    timestamp: float = 0.0
    env: dict[str, Any] = {}
    sources: list[Source]

    @property
    def run_ids(self) -> list[str]:
        return sorted({s.run_id for s in self.sources if s.run_id})

    @property
    def job_keys(self) -> list[str]:
        return [s.job_key for s in self.sources]


class Amortised(Record):
    """A throughput record costed at the host's time per evaluation at saturation (recommend.amortised): its
    median and interval are 1 / its rate; the time of one evaluation under that load stays as latency_ns."""

    latency_ns: float | None = None
