"""Integer circuits on little-endian bit vectors (bit 0 first), as Study 4
built them: ripple-carry and Kogge-Stone adders, the carry-save multi-operand
adder (full-adder layers reduce three numbers to two until two remain, then one
Kogge-Stone adder), and comparison as the carry-out of Y + NOT(X)."""

from __future__ import annotations

from .netlist import Builder, Netlist


def half_adder(b: Builder, x: int, y: int) -> tuple[int, int]:
    return b.xor(x, y), b.and_(x, y)


def full_adder(b: Builder, x: int, y: int, c: int) -> tuple[int, int]:
    p = b.xor(x, y)
    return b.xor(p, c), b.or_(b.and_(x, y), b.and_(p, c))


def _ripple(b: Builder, xs: list[int], ys: list[int]) -> list[int]:
    s, c = half_adder(b, xs[0], ys[0])
    out = [s]
    for x, y in zip(xs[1:], ys[1:]):
        s, c = full_adder(b, x, y, c)
        out.append(s)
    return out + [c]


def _prefix(b: Builder, g: list[int], p: list[int]) -> list[int]:
    """Kogge-Stone parallel prefix: G[i] = carry out of bits 0..i.
    Each level costs an AND then an OR: 2 multiplicative levels, log2(n) levels."""
    n = len(g)
    g, p = list(g), list(p)
    d = 1
    while d < n:
        ng, np_ = list(g), list(p)
        for i in range(d, n):
            ng[i] = b.or_(g[i], b.and_(p[i], g[i - d]))
            if i >= 2 * d:  # P is only needed where a later level still reads it
                np_[i] = b.and_(p[i], p[i - d])
        g, p = ng, np_
        d *= 2
    return g


def _kogge_stone(b: Builder, xs: list[int], ys: list[int], keep_carry: bool) -> list[int]:
    g = [b.and_(x, y) for x, y in zip(xs, ys)]
    p = [b.xor(x, y) for x, y in zip(xs, ys)]
    carries = _prefix(b, g, p)
    out = [p[0]] + [b.xor(p[i], carries[i - 1]) for i in range(1, len(xs))]
    return out + ([carries[-1]] if keep_carry else [])


def ripple_carry_add(nbits: int) -> Netlist:
    b = Builder(2 * nbits)
    return b.build(_ripple(b, b.inputs(0, nbits), b.inputs(nbits, nbits)))


def kogge_stone_add(nbits: int) -> Netlist:
    """(X + Y) with the carry out: nbits + 1 output bits."""
    b = Builder(2 * nbits)
    return b.build(_kogge_stone(b, b.inputs(0, nbits), b.inputs(nbits, nbits), keep_carry=True))


def carry_save_sum(n: int, nbits: int) -> Netlist:
    """Sum of n nbits-bit numbers modulo 2^nbits (inputs: number after number)."""
    if n < 2:
        raise ValueError("need at least two numbers")
    b = Builder(n * nbits)
    nums = [b.inputs(i * nbits, nbits) for i in range(n)]
    while len(nums) > 2:  # one full-adder layer: three numbers become two
        x, y, z = nums[:3]
        sums, carries = [], [b.const(0)]
        for i in range(nbits):
            s, c = full_adder(b, x[i], y[i], z[i])
            sums.append(s)
            carries.append(c)
        nums = nums[3:] + [sums, carries[:nbits]]  # the carry word is shifted left by one bit
    return b.build(_kogge_stone(b, nums[0], nums[1], keep_carry=False))


def compare_lt(nbits: int) -> Netlist:
    """[X < Y]: the carry out of Y + NOT(X) (= Y - X - 1 + 2^nbits >= 2^nbits).
    Inputs X then Y; one output bit."""
    b = Builder(2 * nbits)
    xs, ys = b.inputs(0, nbits), b.inputs(nbits, nbits)
    nx = [b.not_(x) for x in xs]
    g = [b.and_(y, x) for y, x in zip(ys, nx)]
    p = [b.xor(y, x) for y, x in zip(ys, nx)]
    return b.build([_prefix(b, g, p)[-1]])
