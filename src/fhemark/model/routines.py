"""What a library's own routine consumes, where it is not what the program's tree counts: the
levels a native program needs on one library, so that the search gives each library the chain its
routine needs (OpenFHE's EvalPoly spends more levels than a power tree; a library refusing a chain
one level short is not a library that cannot run the program).

The program counts a `poly_eval` at the power tree's ceil(log2(d + 1)) levels: Lattigo's evaluator
(Paterson-Stockmeyer over the monomial basis, its scale management absorbing the constants) and
TenSEAL's polyval spend that. OpenFHE's EvalPoly under FIXEDMANUAL spends more: EvalPolyLinear
below degree 5 (the powers by a binary tree, then one level for the coefficient products),
EvalPolyPS from degree 5, whose depth OpenFHE tabulates (src/pke/examples/FUNCTION_EVALUATION.md,
"Polynomial degree - multiplicative depth"); the driver refuses a shorter chain with the same
count (drivers/openfhe/routines.py), and tests/test_poly_eval.py holds the two to each other.
"""

from __future__ import annotations

from typing import Callable

from .program import Program
from .requirements import LOWERING

# OpenFHE's table: the highest degree EvalPolyPS evaluates within a number of levels.
OPENFHE_PS_DEPTH = ((5, 3), (13, 4), (27, 5), (59, 6), (119, 7), (247, 8), (495, 9), (1007, 10), (2031, 11))


def tree_levels(degree: int) -> int:
    """A power tree's levels for a polynomial of this degree: ceil(log2(d + 1))."""
    return max(degree, 0).bit_length()


def openfhe_poly_levels(degree: int) -> int:
    """Levels OpenFHE's EvalPoly consumes for a polynomial of this degree (FIXEDMANUAL)."""
    if degree < 5:
        return (degree - 1).bit_length() + 1
    for top, lv in OPENFHE_PS_DEPTH:
        if degree <= top:
            return lv
    top, lv = OPENFHE_PS_DEPTH[-1]
    return lv + degree.bit_length() - top.bit_length()


# (library, routine) -> levels it consumes, from the step's attrs; absent: the program's own count.
LEVELS: dict[tuple[str, str], Callable[[dict], int]] = {
    ("openfhe", "poly_eval"): lambda attrs: openfhe_poly_levels(len(attrs.get("coeffs", [0, 0])) - 1),
}


def step_levels(library: str | None, step: dict) -> int:
    """Levels one step consumes on `library` (None: as the program counts them)."""
    op, attrs = step["op"], step.get("attrs") or {}
    if op in LOWERING:
        return 1
    if op != "poly_eval":
        return 0
    own = LEVELS.get((library, op)) if library else None
    return own(attrs) if own else tree_levels(len(attrs.get("coeffs", [0, 0])) - 1)


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
