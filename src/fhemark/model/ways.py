"""The ways one computation can be run: its polynomials by Horner's rule or at logarithmic depth,
and its routines (a polynomial at logarithmic depth, inner_sum, inner_product, linear_transform) by the
library's own (a native program) or by fhemark's programs of primitives, which is how a library
without the routine runs a native computation (its `__portable` way). Each way is a Workload of its
own, named after the file's (`<name>__horner`, `<name>__portable`, ...), with the file and digest of
the one it comes from, so that any process that measures it finds it again from its ref
(workload_file.resolve) like the file's own.
"""

from __future__ import annotations

from dataclasses import replace

from .workload import Workload

WAYS = ("log", "horner")  # how `choose --polynomial` may evaluate the program's polynomials
SEP = "__"
BOOT = "boot"  # the tag of a bootstrapping set's way: <name>__boot<levels>


def named(w: Workload, native: bool | None = None, polynomial: str | None = None) -> Workload:
    """`w` run another way: with (native) or without the library's routines, its polynomials by
    `polynomial` (None: as written). The same computation: the replay and the inputs are its own."""
    native = w.native if native is None else native
    polynomial = polynomial or w.polynomial
    if native == w.native and polynomial == w.polynomial:
        return w
    tags = [t for t in (polynomial if polynomial != w.polynomial else None,
                        "portable" if w.native and not native else "native" if native and not w.native else None) if t]
    # fhemark's routines stand in for the library's where the computation asked for the library's
    fallback = not native and (w.native or w.fallback)
    return replace(w, name=w.name + SEP + "_".join(tags), native=native, polynomial=polynomial, fallback=fallback)


def bootstrapped(w: Workload, levels: int) -> Workload:
    """`w` on a bootstrapping set whose bootstrap gives back `levels` levels: bootstrapped where they run
    out (Circuit._room). A way of its own (`<name>__boot<levels>`): its program has the bootstrap steps."""
    return replace(w, name=f"{w.name}{SEP}{BOOT}{levels}", refresh=levels)


def variants(w: Workload) -> list[Workload]:
    """Every way `choose` may run `w` in (what a ref may name besides `w` itself)."""
    found = [named(w, n, p) for n in (w.native, False) for p in (None, *WAYS)]
    return list({v.name: v for v in found}.values())


def find(w: Workload, name: str) -> Workload | None:
    """The way of `w` called `name` (None: no way of it), a way of one of its ways included: choose
    runs a way's program without the library's routines (`<name>__log__portable`)."""
    base, sep, tag = name.rpartition(SEP + BOOT)
    if sep and tag.isdigit():  # a bootstrapping set's way of one of the ways (bootstrapped)
        found = w if base == w.name else find(w, base)
        return bootstrapped(found, int(tag)) if found is not None else None
    return next((x for v in variants(w) for x in (v, *variants(v)) if x.name == name), None)


def evaluated(v: Workload, scheme: str) -> list[tuple[str, str]]:
    """Per routine the program asks for (poly_eval for every polynomial), who runs it and how:
    (routine, 'library') the library's own, one step; (routine, 'fhemark') fhemark's program of
    primitives (a polynomial at logarithmic depth); ('poly_eval', 'horner') Horner's rule."""
    return v.circuit(scheme)[0].evaluated


def routine(v: Workload, scheme: str) -> str | None:
    """Who runs the way's routines, as a row says it: 'library', 'fhemark', 'horner', or a mix joined
    by '+'; None where the program asks for none."""
    seen = list(dict.fromkeys(who for _, who in evaluated(v, scheme)))
    return "+".join(seen) if seen else None


# How a row names who ran each routine
TEXT = {("poly_eval", "library"): "the library's polynomial evaluator",
        ("poly_eval", "fhemark"): "fhemark's log-depth polynomial",
        ("poly_eval", "horner"): "Horner's rule"}


def text(v: Workload, scheme: str) -> str | None:
    """`routine` in words, each routine named (None where the program asks for none)."""
    pairs = dict.fromkeys(evaluated(v, scheme))
    words = [TEXT.get(p) or f"{'the library' if p[1] == 'library' else p[1]}'s {p[0]}" for p in pairs]
    return " and ".join(dict.fromkeys(words)) if words else None
