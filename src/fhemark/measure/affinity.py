"""Which CPU the driver processes measure on. On a shared VM each virtual core has a speed of its
own at any moment (its sibling thread on the host busy or not), and a driver left to the scheduler
moves between them: two libraries' adjacent samples then often come from different cores and share
little of the host's state. Every latency driver of a run is pinned to one core, the same for all
libraries, so that samples taken in turn see the same core (2-core VM, 2026-11-28, 6 ops x BFV and
CKKS at N = 8192, three runs each way, alternated: the spread of two libraries' paired log ratio
0.22-0.27 free, 0.10-0.17 pinned; docs/methodology.md "What decides on a shared host").

FHEMARK_PIN_CPU=off leaves the drivers to the scheduler; FHEMARK_PIN_CPU=N picks core N. Either
way the run's environment records it (`driver_cpus`)."""

from __future__ import annotations

import os

PIN_ENV = "FHEMARK_PIN_CPU"


def allowed() -> list[int]:
    """The cores this process may run on, in order (all of them where the OS cannot say)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def measuring_cpus(threads: int) -> frozenset[int] | None:
    """The cores a latency driver of `threads` threads is pinned to, None for no pinning: the last
    `threads` cores (the first ones take the system's interrupts and the orchestrator's start),
    never all of them, nor where the user turned it off or the OS cannot pin."""
    want = os.environ.get(PIN_ENV, "").strip().lower()
    cores = allowed()
    if want in ("off", "no", "none", "false") or not hasattr(os, "sched_setaffinity") or threads >= len(cores):
        return None
    if want:
        try:
            first = cores.index(int(want))
        except ValueError:
            return None  # a core this process may not use: the environment says "not pinned"
        return frozenset(cores[first:first + threads]) if first + threads <= len(cores) else None
    return frozenset(cores[-threads:])


def describe(counts: list[int]) -> str:
    """The run environment's word on pinning, as a reader of a record needs it: per thread count of
    the run (a suite's axis, `threads: all` or a list, gives several), where its latency drivers ran."""
    words = []
    for threads in counts:
        cpus = measuring_cpus(threads)
        where = ("not pinned (left to the OS scheduler)" if cpus is None else
                 f"latency drivers pinned to core {', '.join(map(str, sorted(cpus)))} of {len(allowed())}")
        words.append(where if len(counts) == 1 else f"{threads} thread(s): {where}")
    return "; ".join(words)
