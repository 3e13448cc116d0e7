"""How the answers measure: every policy `params` and `choose` run with, in one place, the typed
cases and suites they measure, and their one call into measurement (`fhemark.measure.measure`).

Four ways of measuring, each for one question:
- a set is proven for `params` by the depth probe, x * y^k until it stops decrypting (DEPTH_PROBE);
- `params` then times multiply and rotate at the accepted set (TIMING);
- a set is proven for `choose` by running the program itself in fresh-key processes, a few
  samples each, every output checked (search_policy);
- `choose`'s chosen sets, and `run --workload`'s presets, are measured as the apps suite is:
  2 processes x 3 interleaved rounds (MEASURE).
"""

from __future__ import annotations

from typing import Callable

from ..measure import measure
from ..model.workload import Workload
from ..plan.jobs import build
from ..plan.suites import Case, Suite
from ..store.record import Record
from ..store.sqlite import Store

DEPTH_PROBE = {"timeout_s": 600.0}
TIMING = {"min_samples": 6, "max_samples": 12, "budget_s": 2.0, "rounds": 1}
MEASURE = {"warmup": 1, "min_samples": 6, "max_samples": 20, "target_rel_ci": 0.05, "budget_s": 2.0,
           "processes": 2, "rounds": 3}


def depth_probe(depth: int, precision: float | None, seed: int) -> dict:
    """The probe runs one multiplication past the depth asked; CKKS outputs must hold `precision` bits."""
    return {**DEPTH_PROBE, "max_depth": depth + 1, "seed": seed,
            **({"min_precision_bits": float(precision)} if precision is not None else {})}


def search_policy(repeats: int, samples: int) -> dict:
    """`repeats` fresh driver processes (fresh keys), `samples` each, no warm-up: whether a set is
    correct, not how fast it is."""
    n = repeats * samples
    return {"warmup": 0, "min_samples": n, "max_samples": n, "processes": repeats, "rounds": 1,
            "min_sample_us": 0.0, "budget_s": 60.0, "timeout_s": 600.0}


def case(library: str, scheme: str, spec: dict, ops: list[str]) -> Case:
    """Ops on one library and scheme at one parameter set."""
    return Case(libraries=[library], schemes=[scheme], params=[spec], ops=ops)


def suite(name: str, cases: list[Case], policy: dict, security: int, table: str, threads: int = 1,
          workloads: list[Workload] = (), insecure: bool = False) -> Suite:
    """A suite made in code: the cases, the policy, the security asked, and the user's computations
    the cases name (found again by their files' content in whatever process measures them)."""
    return Suite(name=name, threads=threads, policy=policy,
                 security={"min_bits": security, "table": table, "allow_insecure": insecure},
                 cases=cases, workloads=[w.ref for w in workloads if w.ref])


def run_suite(suite: Suite, libraries: list[str], store: Store | None,
              progress: Callable[[str], None] = lambda what: None) -> list[Record]:
    """Measure a suite made in code (into `store`, or an in-memory one); its records (`progress`:
    each job as it ends)."""
    return measure(build(suite, libraries), store,
                   on_record=lambda job, recs: progress(f"{job.library} {job.scheme} N={job.params.N} {job.op}")).records
