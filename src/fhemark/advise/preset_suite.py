"""`fhemark run --workload FILE`: the loaded computations on every library at a common preset that holds
them (or the sets given), each library running the computation's way it can (its own routines, or
fhemark's in their place)."""

from __future__ import annotations

from ..drivers.registry import available
from ..errors import UserError
from ..model import routines, ways
from ..model.requirements import DEFAULT_INT_BITS, for_all
from ..model.workload import INT_SCHEMES, Workload, WorkloadRef
from ..plan.suites import Case, Suite, add_workload
from . import measuring


# The common presets (params.py) a `run --workload` uses when no --params is given: the first
# whose chain holds the program (CKKS levels; BFV/BGV multiplications in sequence, t of 20 bits).
PRESET_REACH = (("c8192", 2, 2), ("c16384", 7, 5))  # (name, CKKS levels, BFV/BGV multiplications)


def preset_suite(workloads: list[Workload], params: list[str | dict] | None) -> Suite:
    """A suite that runs the loaded workloads on every library with each scheme they name: at the
    given presets, or at the smallest common preset that holds each scheme's program. A library
    without a routine the program calls runs the computation's portable way (fhemark's routines)."""
    cases = []
    found: dict[str, WorkloadRef] = {}
    for w in workloads:
        for scheme, req in for_all(w).items():
            if scheme in INT_SCHEMES:
                sets: list = [integer_set(w)]
            elif params:
                sets = list(params)
            else:
                reach = [name for name, lv, mu in PRESET_REACH if req.depth <= (lv if scheme == "ckks" else mu)]
                if not reach:
                    raise UserError(f"{w.source or w.name}: {w.name} on {scheme.upper()} needs depth {req.depth}, more than "
                                    "the common presets hold", f"run `fhemark choose {w.source or 'FILE'}` to find "
                                    "parameters for it, or give --params")
                sets = reach[:1]
            for way, libs in _by_routines(w, scheme):
                cases.append(Case(libraries=libs, schemes=[scheme], params=sets, ops=[way.name]))
                add_workload(found, way.ref)
    return Suite(name="-".join(w.name for w in workloads)[:100], threads=1,
                 policy=measuring.MEASURE, cases=cases, workloads=list(found.values()))


def _by_routines(w: Workload, scheme: str) -> list[tuple[Workload, list[str] | str]]:
    """The computation's way on each library: its own where it calls no routine or the library offers
    every op it calls, else its portable way (fhemark's routines in the library's place) where the
    library has the primitives those need; else its own, whose refusal names what the library lacks.
    The libraries named where the ways differ (those built here that run the scheme)."""
    prog = w.program(scheme)
    if not routines.uses(prog):
        return [(w, "all")]
    portable = ways.named(w, native=False)
    libs = [lib for lib in available() if scheme in routines.promised(lib)]
    other = [lib for lib in libs if routines.lacking(prog, lib, scheme)
             and not routines.lacking(portable.program(scheme), lib, scheme)]
    if not other:  # every library here runs its own way (or none is built: the plan says so)
        return [(w, "all")]
    own = [lib for lib in libs if lib not in other]
    return [(v, found) for v, found in ((w, own), (portable, other)) if found]


def integer_set(w: Workload) -> dict:
    """TFHE-family integers: the library's default set at the workload's width (no search: the
    library's preset is its parameter choice, every operation bootstrapped)."""
    return {"preset": "default", "bits": w.bits or DEFAULT_INT_BITS}
