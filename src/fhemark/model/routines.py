"""What a library's own routine consumes, where it is not what the program's tree counts: the
levels a native program needs on one library, so that the search gives each library the chain its
routine needs (OpenFHE's EvalPoly spends more levels than a power tree; a library refusing a chain
one level short is not a library that cannot run the program).

The program counts a `poly_eval` at the power tree's ceil(log2(d + 1)) levels: Lattigo's evaluator
(Paterson-Stockmeyer over the monomial basis, its scale management absorbing the constants) and
TenSEAL's polyval spend that. OpenFHE's EvalPoly (under FLEXIBLEAUTO, as under FIXEDMANUAL) spends more: EvalPolyLinear
below degree 5 (the powers by a binary tree, then one level for the coefficient products),
EvalPolyPS from degree 5, whose depth OpenFHE tabulates (src/pke/examples/FUNCTION_EVALUATION.md,
"Polynomial degree - multiplicative depth"); the driver refuses a shorter chain with the same
count (drivers/openfhe/routines.py), and tests/test_poly_eval.py holds the two to each other.

The other routines consume no level in either way, the library's or fhemark's (apps/builder.py):
inner_sum is rotations and additions (fhemark's: log2(n) of each, Galois keys 1, 2, ..., n / 2);
inner_product one ciphertext product and that sum; linear_transform plaintext-diagonal products, left
unrescaled like the library's (fhemark's: baby-step giant-step, apps/diagonals.py, Galois keys for its
baby and giant steps). The product's level is spent by the rescale the program writes after them, which
the program counts; BFV/BGV count the product as one multiplication in sequence (requirements.py).
Which library offers which routine (`promised`) decides where fhemark's program runs in their place.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Callable

from ..locations import project_root
from .program import Program
from .requirements import LOWERING

# OpenFHE's table: the highest degree EvalPolyPS evaluates within a number of levels.
OPENFHE_PS_DEPTH = ((5, 3), (13, 4), (27, 5), (59, 6), (119, 7), (247, 8), (495, 9), (1007, 10), (2031, 11))


def tree_levels(degree: int) -> int:
    """A power tree's levels for a polynomial of this degree: ceil(log2(d + 1))."""
    return max(degree, 0).bit_length()


def openfhe_poly_levels(degree: int) -> int:
    """Levels OpenFHE's EvalPoly consumes for a polynomial of this degree (the driver's FLEXIBLEAUTO; FIXEDMANUAL the same)."""
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


@lru_cache(maxsize=None)
def promised(library: str) -> dict[str, frozenset[str]]:
    """Per scheme, the ops `library`'s driver promises: its checked-in capabilities snapshot
    (protocol/capabilities/, which a conformance test holds to the driver's live reply), read without
    starting the driver. Empty for a library with no snapshot."""
    path = project_root() / "protocol" / "capabilities" / f"{library}.json"
    if not path.is_file():
        return {}
    schemes = json.loads(path.read_text()).get("schemes") or {}
    return {name: frozenset(sc.get("ops") or ()) for name, sc in schemes.items()}


def lacking(prog: Program, library: str, scheme: str) -> list[str]:
    """The ops the program calls that `library`'s driver does not promise for `scheme`: on a native
    program, the routines it lacks (SEAL: every one; TenSEAL: linear_transform), where fhemark's may
    stand in; on fhemark's program, the primitives they need (TenSEAL has no rotate, no CKKS rescale)."""
    have = promised(library).get(scheme, frozenset())
    return sorted(prog.primitives() - have)
