"""fhemark's own polynomial evaluation at logarithmic depth, written once in the primitives every
driver runs (mul, square, mul_plain, add, add_plain, rescale): what a library without a polynomial
evaluator (SEAL, or any library where a workload asks for the portable program) runs in place of
`poly_eval`.

The polynomial is split at the largest power of two s <= d, p(x) = low(x) + x^s high(x), and
both halves are split again, down to c_0 + c_1 x: the powers x^(2^a) by repeated squaring, one
ciphertext product per split whose upper half is not a constant. Degree d consumes
bit_length(d) = ceil(log2(d + 1)) levels, the least a product tree can (x^s is s's log2 levels
deep and high(x) of degree below s at most as deep; their product is one more), against Horner's
d. A constant is multiplied in where it costs no extra level: c x^s as one plaintext product of
x^s, c_0 as a plaintext addition.

CKKS scales. SEAL adds two ciphertexts only when their scales are equal, and after a rescale a
scale is Delta^2 / q, which differs from one prime to the next. Every value here is kept at its
level's canonical scale S: x's at its own level, and S' = S^2 / q one level down. A product of two
values of the same level (x^s high(x)) and a value times a plaintext encoded `like` it (c x^s) both
land there; so does a lower term brought down to the sum's level by a product with 1 encoded
`like` it and a rescale (a mod switch would keep the old scale, and the sum would be refused).
"""

from __future__ import annotations

from typing import Protocol


class Circuit(Protocol):
    """What the evaluation asks of the circuit it writes into (builder.Circuit): named here, so
    that the builder, which calls this module, is not imported back."""

    def level_of(self, ct: str) -> int: ...
    def square(self, a: str) -> str: ...
    def mul(self, a: str, b: str) -> str: ...
    def mul_plain(self, a: str, p: str) -> str: ...
    def add(self, a: str, b: str) -> str: ...
    def add_plain(self, a: str, p: str) -> str: ...
    def rescaled(self, a: str) -> str: ...
    def constant(self, value: float, like: str) -> str: ...
    def plaintext_like(self, name: str, like: str) -> str: ...

Coefficient = str | float | int | None


def levels(degree: int) -> int:
    """Levels the evaluation consumes for a polynomial of this degree (its products in sequence)."""
    return max(degree, 0).bit_length()


def degree(coeffs: list[Coefficient]) -> int:
    """The highest power with a coefficient that is not known to be zero (-1: none)."""
    return max((i for i, c in enumerate(coeffs) if _given(c)), default=-1)


def _given(c: Coefficient) -> bool:
    return c is not None and (isinstance(c, str) or float(c) != 0.0)


def evaluate(c: Circuit, x: str, coeffs: list[Coefficient]) -> str:
    """sum_i coeffs[i] x^i, lowest degree first: a number, or the name of an input holding c_i in
    every slot (None or 0: left out). The result is levels(degree) below x."""
    d = degree(coeffs)
    if d < 1:
        raise ValueError("a polynomial evaluation needs a nonzero coefficient of degree >= 1")
    return _Tree(c, x).poly(list(coeffs[:d + 1]))


class _Tree:
    def __init__(self, c: Circuit, x: str):
        self.c = c
        self.powers = {1: x}                       # x^(2^a), a levels below x
        self.lifted: dict[tuple[str, int], str] = {}  # (value, level) -> that value brought down there
        self.ones: dict[int, str] = {}            # level -> 1 encoded like a value of that level

    def power(self, e: int) -> str:
        if e not in self.powers:
            half = self.power(e // 2)
            self.powers[e] = self.c.rescaled(self.c.square(half))
        return self.powers[e]

    def constant(self, coef: Coefficient, like: str) -> str:
        return self.c.plaintext_like(coef, like) if isinstance(coef, str) else self.c.constant(float(coef), like)

    def meet(self, a: str, b: str) -> tuple[str, str]:
        """`a` and `b` at the deeper of their levels. On a bootstrapping set either may be the deeper
        one: a bootstrap placed inside one operand's subtree gives its levels back."""
        level = max(self.c.level_of(a), self.c.level_of(b))
        return self.lift(a, level), self.lift(b, level)

    def lift(self, ct: str, level: int) -> str:
        """`ct` at `level` (at or below its own) and its canonical scale: times 1 and rescaled, once per
        level (CKKS); other schemes have no scale to meet, and the libraries add across their levels alike."""
        c = self.c
        if not c.ckks:
            return ct
        start = ct
        while c.level_of(ct) < level:
            key = (start, c.level_of(ct) + 1)
            if key not in self.lifted:
                at = c.level_of(ct)
                if at not in self.ones:
                    self.ones[at] = c.constant(1.0, like=ct)
                self.lifted[key] = c.rescaled(c.mul_plain(ct, self.ones[at]))
            ct = self.lifted[key]
        return ct

    def poly(self, cs: list[Coefficient]) -> str:
        """cs of degree d >= 1 (cs[d] given): the value, bit_length(d) levels below x."""
        c = self.c
        d = len(cs) - 1
        s = 1 << (d.bit_length() - 1)
        xs = self.power(s)
        high, low = cs[s:], cs[:s]
        if degree(high) == 0:
            term = c.rescaled(c.mul_plain(xs, self.constant(high[0], xs)))
        else:
            term = c.rescaled(c.mul(*self.meet(xs, self.poly(high[:degree(high) + 1]))))
        dl = degree(low)
        if dl == 0:
            return c.add_plain(term, self.constant(low[0], term))
        if dl > 0:
            return c.add(*self.meet(term, self.poly(low[:dl + 1])))
        return term
