"""Small CKKS workloads every compiler row starts with, declared with lengths (the built-in
catalog's apps draw their inputs with functions, to fill every slot, which a compiler's input
cannot say). Each is a `Workload` of the public API, as a user writes one."""

from __future__ import annotations

import re

from ..model.apps.workloads import dot, poly_ckks
from ..model.workload import Constant, Uniform, Workload


def _square_plus_one(c):
    sq = c.rescaled(c.square(c.encrypted("x")))
    return c.add_plain(sq, c.constant(1.0, like=sq))


def _affine(c):
    x = c.encrypted("x")
    wx = c.rescaled(c.mul_plain(x, c.plaintext_like("w", x)))
    return c.add_plain(wx, c.plaintext_like("b", wx))


_INT_OPS = {"add": lambda c, x, y: c.add(x, y), "mul": lambda c, x, y: c.mul(x, y),
            "max": lambda c, x, y: c.compare("max", x, y)}


def _integer(name: str) -> Workload | None:
    """add_i<bits>, mul_i<bits>, max_i<bits>: two encrypted unsigned integers (mod 2^bits), HEIR's
    TFHE-rs row's own (compile/tfhe_rs.py)."""
    m = re.fullmatch(r"(add|mul|max)_i(8|16|32|64)", name)
    if not m:
        return None
    op, bits = _INT_OPS[m.group(1)], int(m.group(2))
    top = (1 << bits) - 1
    return Workload(name, lambda c: op(c, c.encrypted("x"), c.encrypted("y")),
                    {"x": Uniform(0, top), "y": Uniform(0, top)}, ("tfhe_int",),
                    f"{m.group(1)} two encrypted {bits}-bit integers", bits=bits)


def builtin(name: str) -> Workload | None:
    """dot_<n>: x . y; poly_<k>: a degree-k polynomial, coefficients fixed per run (the catalog's
    poly_<k> draws them per sample as plaintexts, which HEIR would take as arguments too);
    sqplus1_<n>: x*x + 1; affine_<n>: w*x + b with plaintext w, b (elementwise)."""
    m = re.fullmatch(r"(dot|poly|sqplus1|affine)_(\d+)", name)
    if not m:
        return _integer(name)
    kind, n = m.group(1), int(m.group(2))
    if not 1 <= n <= 1 << 15:
        return None
    if kind == "dot":
        return Workload(name, lambda c: dot(c, n), {"x": Uniform(-1, 1, length=n), "y": Uniform(-1, 1, length=n)},
                        ("ckks",), f"inner product of two encrypted {n}-vectors")
    if kind == "poly":
        if n > 16:
            return None
        coeffs = {f"c{i}": Constant(round(((-1) ** i) * 0.5 / (i + 1), 6)) for i in range(n + 1)}
        return Workload(name, lambda c: poly_ckks(c, n), {"x": Uniform(-1, 1, length=8), **coeffs}, ("ckks",),
                        f"real polynomial of degree {n} on 8 encrypted values")
    if kind == "sqplus1":
        return Workload(name, _square_plus_one, {"x": Uniform(-1, 1, length=n)}, ("ckks",), f"x*x + 1 on {n} encrypted values")
    return Workload(name, _affine, {"x": Uniform(-1, 1, length=n), "w": Uniform(-1, 1, length=n), "b": Uniform(-1, 1, length=n)},
                    ("ckks",), f"w*x + b on {n} encrypted values, w and b plaintext")
