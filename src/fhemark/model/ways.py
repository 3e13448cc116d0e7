"""The ways one computation can be run: its polynomials by Horner's rule or at logarithmic depth,
and at logarithmic depth by the library's evaluator (a native program) or by fhemark's program of
primitives. Each way is a Workload of its own, named after the file's (`<name>__horner`,
`<name>__portable`, ...), with the file and digest of the one it comes from, so that any process
that measures it finds it again from its ref (workload_file.resolve) like the file's own.
"""

from __future__ import annotations

from dataclasses import replace

from .workload import Workload

WAYS = ("log", "horner")  # how `choose --polynomial` may evaluate the program's polynomials
SEP = "__"


def named(w: Workload, native: bool | None = None, polynomial: str | None = None) -> Workload:
    """`w` run another way: with (native) or without the library's routines, its polynomials by
    `polynomial` (None: as written). The same computation: the replay and the inputs are its own."""
    native = w.native if native is None else native
    polynomial = polynomial or w.polynomial
    if native == w.native and polynomial == w.polynomial:
        return w
    tags = [t for t in (polynomial if polynomial != w.polynomial else None,
                        "portable" if w.native and not native else "native" if native and not w.native else None) if t]
    return replace(w, name=w.name + SEP + "_".join(tags), native=native, polynomial=polynomial)


def variants(w: Workload) -> list[Workload]:
    """Every way `choose` may run `w` in (what a ref may name besides `w` itself)."""
    found = [named(w, n, p) for n in (w.native, False) for p in (None, *WAYS)]
    return list({v.name: v for v in found}.values())


def find(w: Workload, name: str) -> Workload | None:
    """The way of `w` called `name` (None: no way of it), a way of one of its ways included: choose
    runs a way's program without the library's routines (`<name>__log__portable`)."""
    return next((x for v in variants(w) for x in (v, *variants(v)) if x.name == name), None)


def evaluated(v: Workload, scheme: str) -> list[str]:
    """Per polynomial of the program, who evaluates it and how: 'library' (the library's own
    evaluator, one step), 'fhemark' (fhemark's logarithmic-depth program of primitives) or
    'horner' (Horner's rule in primitives)."""
    return v.circuit(scheme)[0].evaluated


def routine(v: Workload, scheme: str) -> str | None:
    """What a row says of the way: 'library', 'fhemark' (log depth), 'horner', or a mix joined by
    '+'; None where the program has no polynomial."""
    seen = list(dict.fromkeys(evaluated(v, scheme)))
    return "+".join(seen) if seen else None
