"""What a library's own routine consumes, where it is not what the program's tree counts: the
levels a native program needs on one library, so that the search gives each library the chain its
routine needs (OpenFHE's EvalPoly spends more levels than a power tree; a library refusing a chain
one level short is not a library that cannot run the program).

The program counts a `poly_eval` at the power tree's ceil(log2(d + 1)) levels: Lattigo's evaluator
(Paterson-Stockmeyer over the monomial basis, its scale management absorbing the constants) and
TenSEAL's polyval spend that. A driver whose library spends more declares it, by degree, in its
capabilities (limits.routine_levels: OpenFHE's EvalPoly, EvalPolyLinear below degree 5 and
Paterson-Stockmeyer above, as OpenFHE tabulates it); the driver refuses a shorter chain by the same
table, read from the same file, and the search gives the library those levels.

The other routines consume no level in either way, the library's or fhemark's (apps/builder.py):
inner_sum is rotations and additions (fhemark's: log2(n) of each, Galois keys 1, 2, ..., n / 2);
inner_product one ciphertext product and that sum; linear_transform plaintext-diagonal products, left
unrescaled like the library's (fhemark's: baby-step giant-step, apps/diagonals.py, Galois keys for its
baby and giant steps). The product's level is spent by the rescale the program writes after them, which
the program counts; BFV/BGV count the product as one multiplication in sequence (requirements.py).
Which library offers which routine (`promised`) decides where fhemark's program runs in their place.
"""

from __future__ import annotations

from typing import Sequence

from .declared import declaring, snapshot
from .program import Program
from .requirements import LOWERING

def tree_levels(degree: int) -> int:
    """A power tree's levels for a polynomial of this degree: ceil(log2(d + 1))."""
    return max(degree, 0).bit_length()


def table_levels(table: Sequence[Sequence[int]], degree: int) -> int:
    """Levels by a driver's routine_levels table ([highest degree, levels] pairs, PROTOCOL.md): the first
    pair whose degree is at least `degree`; past the table, one more a doubling."""
    for top, lv in table:
        if degree <= top:
            return lv
    top, lv = table[-1]
    return lv + degree.bit_length() - top.bit_length()


def step_levels(library: str | None, step: dict) -> int:
    """Levels one step consumes on `library` (None: as the program counts them)."""
    op, attrs = step["op"], step.get("attrs") or {}
    if op in LOWERING:
        return 1
    if op != "poly_eval":
        return 0
    degree = len(attrs.get("coeffs", [0, 0])) - 1
    own = level_tables(library).get(op) if library else None
    return table_levels(own, degree) if own else tree_levels(degree)


def levels(prog: Program, library: str | None = None) -> int:
    """CKKS levels consumed on the program's deepest path when `library` runs it."""
    at: dict[str, int] = {}
    for s in prog.steps:
        at[s["out"]] = max((at.get(a, 0) for a in s["args"]), default=0) + step_levels(library, s)
    return max(at.values(), default=0)


def extra_levels(prog: Program, library: str) -> int:
    """Levels `library`'s routines need beyond what the program counts (0 for most)."""
    return max(0, levels(prog, library) - levels(prog))


def uses(prog: Program) -> list[str]:
    """The library routines the program calls (a native program's steps that no primitive is)."""
    return sorted({s["op"] for s in prog.steps if s["op"] in ROUTINES})


ROUTINES = ("inner_sum", "inner_product", "linear_transform", "poly_eval")


def promised(library: str) -> dict[str, frozenset[str]]:
    """Per scheme, the ops `library`'s driver promises (its snapshot)."""
    return {name: frozenset(sc.get("ops") or ()) for name, sc in (snapshot(library).get("schemes") or {}).items()}


def level_tables(library: str) -> dict[str, list[list[int]]]:
    """Per routine, the levels `library`'s own CKKS routine consumes by degree, where its driver declares
    them (limits.routine_levels: OpenFHE's EvalPoly spends more than a power tree)."""
    ckks = (snapshot(library).get("schemes") or {}).get("ckks") or {}
    return (ckks.get("limits") or {}).get("routine_levels") or {}


def counting() -> list[str]:
    """The libraries whose drivers declare routine levels of their own."""
    return [lib for lib in declaring() if level_tables(lib)]


def lacking(prog: Program, library: str, scheme: str) -> list[str]:
    """The ops the program calls that `library`'s driver does not promise for `scheme`: on a native
    program, the routines it lacks (SEAL: every one; TenSEAL: linear_transform), where fhemark's may
    stand in; on fhemark's program, the primitives they need (TenSEAL has no rotate, no CKKS rescale)."""
    have = promised(library).get(scheme, frozenset())
    return sorted(prog.primitives() - have)
