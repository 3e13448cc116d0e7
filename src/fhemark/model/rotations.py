"""Rotations by a step that has no Galois key of its own, spelled once, here, as the keyed steps
a driver applies one after the other (PROTOCOL.md `rotate_rows`/`rotate`: `steps` may be a list).

Every library would otherwise choose its own composition (SEAL's C++ by NAF digits, the other
drivers each by their own code): one spelling makes the work the same in every library, and
the record says what ran. A step is taken modulo the row (N/2 slots); of its two representatives
r and r - row the one with fewer non-adjacent-form digits is used, and a digit of a whole row
(the identity) is dropped."""

from __future__ import annotations

from typing import Any, Iterable

from .apps.diagonals import rotations as diagonal_steps


def naf(value: int) -> list[int]:
    """The non-adjacent form of value as signed powers of two, lowest first."""
    sign, value, out, i = value < 0, abs(value), [], 0
    while value:
        digit = 2 - (value & 3) if value & 1 else 0
        value = (value - digit) >> 1
        if digit:
            out.append((-digit if sign else digit) << i)
        i += 1
    return out


def pow2_steps(row: int) -> set[int]:
    """The keyed steps of a "pow2" Galois key set: +/- 2^i below the row length."""
    return {s << i for i in range(row.bit_length()) if 1 << i < row for s in (1, -1)}


def keyed_steps(row: int, rotations: Iterable[int] = (), pow2: bool = False) -> set[int]:
    """The steps a key set has a key of their own for, each also modulo the row."""
    keyed = set(rotations) | (pow2_steps(row) if pow2 else set())
    return keyed | {k % row for k in keyed}


def galois_steps(row: int, rotations: Iterable[int] = (), pow2: bool = False) -> list[int]:
    """A key set's steps as PROTOCOL.md's `rotations` and `keygen_galois` spell them: the steps
    asked and, with pow2, every +/- 2^i step of the row and 0 (the row swap / conjugation)."""
    return sorted(set(rotations) | (pow2_steps(row) | {0} if pow2 else set()))


def spell(k: int, row: int, keyed: set[int]) -> int | list[int]:
    """k itself when it has a key (or is the identity); else its digits when they all have keys;
    else k, which the driver refuses with the step it lacks a key for."""
    r = k % row
    if r == 0 or k in keyed or r in keyed:
        return k
    options = [[d for d in naf(c) if d % row] for c in (r, r - row)]
    digits = min(options, key=len)
    return digits if all(d in keyed or d % row in keyed for d in digits) else k


ROTATIONS = ("rotate", "rotate_rows", "rotate_into", "rotate_rows_into")


def routine_steps(st: dict) -> list[int]:
    """The rotation steps fhemark's own program of a routine step uses (its Galois keys, apps/builder.py):
    inner_sum and inner_product 1, 2, ..., n / 2; linear_transform its baby and giant steps
    (apps/diagonals.py). What a library's routine asks for may differ; a count of keys stays comparable."""
    attrs = st.get("attrs") or {}
    if st["op"] in ("inner_sum", "inner_product"):
        return [1 << i for i in range(max(attrs["n"] - 1, 0).bit_length())]
    if st["op"] == "linear_transform":
        return diagonal_steps(attrs["diagonals"])
    return []


def spell_steps(steps: list[dict], row: int, keyed: set[int], galois: dict[str, set[int]] | None = None) -> list[dict]:
    """The program's steps with every literal rotation spelled against its key set: the setup's
    (`keyed`), or that of the keygen_galois result its `key` attr names (`galois`)."""
    galois = dict(galois or {})
    out = []
    for st in steps:
        attrs: dict[str, Any] = st.get("attrs") or {}
        if st["op"] == "keygen_galois":
            made = attrs.get("steps", "pow2")
            galois[st["out"]] = keyed_steps(row, pow2=True) if made == "pow2" else keyed_steps(row, made)
        k = attrs.get("steps")
        if st["op"] in ROTATIONS and isinstance(k, int):
            spelled = spell(k, row, galois.get(attrs.get("key"), keyed))
            if spelled != k:
                st = {**st, "attrs": {**attrs, "steps": spelled}}
        out.append(st)
    return out
