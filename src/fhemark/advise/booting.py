"""Bootstrapping as a way to run a computation (CKKS): the library's own bootstrapping set, with the
program bootstrapped where that set's levels run out.

A library that bootstraps declares its set (drivers/limits.py `bootstrapping`: the preset, its ring,
the levels a bootstrap gives back). The program is rebuilt as that set's way (ways.bootstrapped): a
ciphertext is bootstrapped only when an operation needs levels it has not got (Circuit._room), so a
chain of d levels takes the fewest bootstraps a set of r levels allows, ceil(d / r) - 1, and a program
that places `bootstrap` itself keeps its own. `choose` searches this set beside the library's smallest
ring that holds the whole depth, and ranks both: a small ring with k bootstraps against a large ring
with none is the trade-off an expert weighs. The set is judged where its bootstrapping keys live
(records.judged_log_qp), its peak memory predicted from the library's measured one (memory.booted)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

from ..drivers.limits import BootstrapSet, bootstrap_sets
from ..model import ways
from ..model.requirements import derive
from ..model.workload import Workload
from .advisor import Need
from .candidates import Candidate


@dataclass(frozen=True)
class Booted:
    way: Workload       # the program, bootstrapped where the set's levels run out
    need: Need          # its need at the set: the levels of its longest stretch between bootstraps
    spec: dict          # the library's bootstrapping set, as a suite names it
    bootstraps: int     # bootstraps per evaluation
    then: tuple[Booted, ...] = ()  # the more precise sets, tried in turn where this one is short of precision


def calls(w: Workload, scheme: str) -> bool:
    """Whether the program places a bootstrap itself (it runs only at a bootstrapping set)."""
    return scheme == "ckks" and any(s["op"] == "bootstrap" for s in w.program(scheme).steps)


def way(v: Workload, lib: str, need: Need, placed: bool, margin: float = 0.0) -> Booted | str | None:
    """`v` on `lib`'s bootstrapping set, where the program needs more levels than a bootstrap gives back
    or places bootstraps itself (`placed`: `calls`); None where neither holds (the ring search answers
    it), a reason where the library declares no bootstrapping, the program cannot run between its
    bootstraps, or no set is expected to reach the precision. Of the sets that pack the program's values,
    the cheapest whose expected precision (`expected`) reaches the requirement and the search's `margin`,
    else the most precise; the more precise ones after it (`then`)."""
    sets = bootstrap_sets(lib, need.scheme) if need.scheme == "ckks" else []
    if not sets:
        return f"{lib} declares no bootstrapping set for {need.scheme.upper()}" if placed else None
    if need.depth <= min(b.levels for b in sets) and not placed:
        return None
    packing = [b for b in sets if b.packs(need.slots)]
    if not packing:
        widest = max(sets, key=lambda x: x.max_slots or x.N // 2)
        return (f"{lib}'s bootstrapping sets pack at most {widest.max_slots or widest.N // 2} slots "
                f"({widest.preset}), and the program needs {need.slots}")
    ats = [(b, _at(v, need, b)) for b in packing]
    runs = [(b, x) for b, x in ats if isinstance(x, Booted) and (placed or need.depth > b.levels)]
    if not runs:
        return next((x for _, x in ats if isinstance(x, str)), None)
    if need.precision:
        reach = [(b, x) for b, x in runs if expected(b, x.bootstraps) >= need.precision]
        if not reach:
            b, x = max(runs, key=lambda r: expected(r[0], r[1].bootstraps))
            return (f"{x.bootstraps} bootstraps of {b.preset} (N = {b.N}): about {expected(b, x.bootstraps):.1f} bits "
                    f"expected ({b.precision_bits:g} measured after one, less log2 of {x.bootstraps}), below the "
                    f"{need.precision:g} asked")
        runs = reach
    want = need.precision + margin if need.precision else None
    first = next((r for r in runs if want is None or expected(r[0], r[1].bootstraps) >= want),
                 max(runs, key=lambda r: r[0].precision_bits))
    then = sorted((r for r in runs if r[0].precision_bits > first[0].precision_bits), key=lambda r: r[0].precision_bits)
    return replace(first[1], then=tuple(x for _, x in then))


def expected(b: BootstrapSet, bootstraps: int) -> float:
    """The precision a program bootstrapped `bootstraps` times at `b` may keep: the set's measured precision
    after one bootstrap, less log2 of the bootstraps (their errors add up); a set whose precision was not
    measured is not ruled out. An estimate that picks where to begin, the search's runs deciding (the
    driver's bootstrap keeps a chain's value at a fresh input's precision: tests/test_bootstrap.py)."""
    if not b.precision_bits:
        return math.inf
    return b.precision_bits - math.log2(max(1, bootstraps))


def _at(v: Workload, need: Need, b: BootstrapSet) -> Booted | str:
    """`v` bootstrapped where `b`'s levels run out, and its need there; a reason where it cannot run between
    two bootstraps."""
    booted = ways.bootstrapped(v, b.levels)
    ring = min(need.rings) if need.insecure and need.rings else b.N  # the tests' toy ring: insecure, marked so
    try:
        req = derive(booted, need.scheme)
    except ValueError as exc:  # a step needs more levels than a bootstrap gives back
        return f"bootstrapping ({b.preset}, {b.levels} levels between bootstraps): {exc}"
    return Booted(booted, replace(need, depth=req.levels), b.spec(ring), req.counts.get("bootstrap", 0))


def searched(boot: Booted | str, lib: str, scheme: str, by: str | None,
             search: Callable[[Workload, Need, dict], Candidate]) -> Candidate:
    """The bootstrapping set's row: `search(way, need, spec)` verifies it as any set is (every output of
    every sample checked, then the worst input found), and where it falls short of precision the library's
    more precise sets in turn; or the reason there is none."""
    if isinstance(boot, str):
        return Candidate(lib, scheme, origin=f"{lib}-bootstrap", tried=[boot])
    tried: list[str] = []
    for b in (boot, *boot.then):
        c = search(b.way, b.need, b.spec)
        c.tried[:0] = tried
        c.workload, c.routine, c.levels_needed, c.bootstraps = b.way, by, b.need.depth, b.bootstraps
        if c.verified or c.last_refusal != "precision_short":
            return c
        tried = c.tried
    return c
