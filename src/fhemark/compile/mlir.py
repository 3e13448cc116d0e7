"""A workload's cleartext meaning as HEIR's input: one `func.func` over f32 tensors whose encrypted
arguments carry `{secret.secret}`, in the `arith`/`tensor`/`affine` dialects.

The workload's `compute(c)` is run on a `Meaning` in place of the Circuit: the same vocabulary,
but each call writes what it means, not how a library does it. `rotate_sum(x, n)` is a sum of the
first n values (a loop), not log2(n) rotations; rescales, mod switches and relinearizations are no
meaning at all and vanish; encodings are the compiler's to choose. HEIR then does its own packing,
levels and parameters. A call with no cleartext meaning here (a slot rotation, a linear transform
over a layout's diagonals) raises `Unsupported`, one line, and the row is skipped.

A value is a tensor of n f32 (n: the input's `Uniform.length`) or, after a sum, one f32: slot 0 of
the library's result, which is where the reference is read for it (Emitted.reads)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.workload import Constant, Uniform, Workload


class Unsupported(Exception):
    """The workload uses something this translation cannot say to HEIR (one line)."""


@dataclass(frozen=True)
class Arg:
    name: str     # the workload's input name
    length: int
    secret: bool


@dataclass(frozen=True)
class Emitted:
    """What HEIR is given, and how to read its results against the workload's reference."""

    func: str                     # the MLIR function's name (HEIR's Go functions are named after it)
    text: str                     # the module
    args: tuple[Arg, ...]         # in the function's order
    reads: tuple[int | None, ...]  # per output: the slots it is compared on (n: slots 0..n-1; None: slot 0, a scalar)


@dataclass(frozen=True)
class _V:
    ssa: str
    n: int | None      # None: a scalar f32
    secret: bool

    @property
    def type(self) -> str:
        return "f32" if self.n is None else f"tensor<{self.n}xf32>"


def _f(x: float) -> str:
    return f"{float(x):.17e}"


@dataclass
class Meaning:
    """The Circuit vocabulary (apps/builder.py) as cleartext meaning, for a CKKS workload."""

    inputs: dict[str, Any]
    scheme: str = "ckks"
    native: bool = False
    fallback: bool = False
    polynomial: str | None = None
    lines: list[str] = field(default_factory=list)
    args: list[Arg] = field(default_factory=list)
    values: dict[str, _V] = field(default_factory=dict)
    _count: int = 0

    # the Circuit's read-only facts a compute may branch on
    @property
    def ckks(self) -> bool:
        return True

    @property
    def words(self) -> bool:
        return False

    def _new(self, n: int | None, secret: bool, rhs: str) -> str:
        self._count += 1
        name = f"v{self._count}"
        self.values[name] = v = _V(f"%{name}", n, secret)
        self.lines.append(f"    {v.ssa} = {rhs}")
        return name

    def _length(self, name: str) -> int:
        spec = self.inputs.get(name) if isinstance(self.inputs, dict) else None
        if isinstance(spec, Uniform) and spec.length:
            return int(spec.length)
        if isinstance(spec, Constant) and spec.length:
            return int(spec.length)
        raise Unsupported(f"input {name!r} has no declared length (Uniform(lo, hi, length=n)): HEIR needs the tensor's size")

    def _arg(self, name: str, secret: bool) -> str:
        n = self._length(name)
        key = f"{'c' if secret else 'p'}{name}"
        if key not in self.values:
            self.args.append(Arg(name, n, secret))
            self.values[key] = _V(f"%{name}", n, secret)
        return key

    # inputs
    def encrypted(self, name: str) -> str:
        return self._arg(name, True)

    def plaintext(self, name: str) -> str:
        spec = self.inputs.get(name) if isinstance(self.inputs, dict) else None
        if isinstance(spec, Constant):
            return self._const(float(spec.value), spec.length)
        return self._arg(name, False)

    def plaintext_like(self, name: str, ct: str) -> str:
        return self.plaintext(name)

    def constant(self, value: float, like: str | None = None) -> str:
        return self._const(float(value), None)

    def _const(self, value: float, length: int | None) -> str:
        """A constant in every slot: its shape is settled where it meets a value (_pair)."""
        self._count += 1
        name = f"k{self._count}"
        self.values[name] = _V(_f(value), -1 if length is None else length, False)  # n=-1: any shape
        return name

    def _materialise(self, name: str, n: int | None) -> _V:
        """The value as an SSA value of n slots (None: a scalar): a constant written out in that
        shape, a vector meeting a scalar read at its slot 0."""
        v = self.values[name]
        if not v.ssa.startswith("%"):  # a constant: it fills whatever shape it meets
            rhs = f"arith.constant {v.ssa} : f32" if n is None else f"arith.constant dense<{v.ssa}> : tensor<{n}xf32>"
            return self.values[self._new(n, False, rhs)]
        if v.n is not None and n is None:
            self._count += 1
            idx = f"%i{self._count}"
            self.lines.append(f"    {idx} = arith.constant 0 : index")
            return self.values[self._new(None, v.secret, f"tensor.extract {v.ssa}[{idx}] : {v.type}")]
        return v

    def _pair(self, a: str, b: str) -> tuple[_V, _V]:
        va, vb = self.values[a], self.values[b]
        shapes = [v.n for v in (va, vb) if v.n != -1]
        n = None if None in shapes else (min(shapes) if shapes else None)
        if shapes and n is not None and len(set(shapes)) > 1:
            raise Unsupported(f"values of {shapes[0]} and {shapes[1]} slots meet: say the shorter one's length")
        return self._materialise(a, n), self._materialise(b, n)

    def _binary(self, op: str, a: str, b: str) -> str:
        x, y = self._pair(a, b)
        return self._new(x.n, x.secret or y.secret, f"arith.{op} {x.ssa}, {y.ssa} : {x.type}")

    # arithmetic: its meaning, nothing of how
    def add(self, a: str, b: str) -> str:
        return self._binary("addf", a, b)

    def sub(self, a: str, b: str) -> str:
        return self._binary("subf", a, b)

    def mul(self, a: str, b: str) -> str:
        return self._binary("mulf", a, b)

    def square(self, a: str) -> str:
        return self._binary("mulf", a, a)

    def add_plain(self, a: str, pt: str) -> str:
        return self._binary("addf", a, pt)

    def mul_plain(self, a: str, pt: str) -> str:
        return self._binary("mulf", a, pt)

    def mul_scalar(self, a: str, scalar: float) -> str:
        return self._binary("mulf", a, self._const(float(scalar), None))

    def rescaled(self, ct: str) -> str:
        return ct

    def mod_switch(self, ct: str) -> str:
        return ct

    def down_to(self, ct: str, like: str) -> str:
        return ct

    def rotate_sum(self, a: str, n: int) -> str:
        """Slot 0 of the library's window sum: the sum of the first n values."""
        v = self._materialise(a, self.values[a].n if self.values[a].n != -1 else None)
        if v.n is None:
            raise Unsupported("rotate_sum of a single value: its other slots have no meaning here")
        n = min(n, v.n)
        self._count += 1
        k = self._count
        self.lines += [f"    %z{k} = arith.constant 0.0 : f32",
                       f"    %s{k} = affine.for %i{k} = 0 to {n} iter_args(%acc{k} = %z{k}) -> (f32) {{",
                       f"      %e{k} = tensor.extract {v.ssa}[%i{k}] : {v.type}",
                       f"      %a{k} = arith.addf %acc{k}, %e{k} : f32",
                       f"      affine.yield %a{k} : f32",
                       "    }"]
        name = f"s{k}"
        self.values[name] = _V(f"%s{k}", None, v.secret)
        return name

    inner_sum = rotate_sum

    def inner_product(self, a: str, b: str, n: int) -> str:
        return self.rotate_sum(self.mul(a, b), n)

    def horner(self, x: str, coeffs: list) -> str:
        acc = self.mul_plain(x, self._coef(coeffs[-1]))
        for i in range(len(coeffs) - 2, -1, -1):
            if coeffs[i] is not None and coeffs[i] != 0:
                acc = self.add_plain(acc, self._coef(coeffs[i]))
            if i:
                acc = self.mul(acc, x)
        return acc

    poly_eval = horner  # the meaning is the polynomial; how to evaluate it is HEIR's choice

    def _coef(self, c) -> str:
        return self.plaintext(c) if isinstance(c, str) else self._const(float(c), None)

    def sum(self, cts: list[str]) -> str:
        acc = cts[0]
        for c in cts[1:]:
            acc = self.add(acc, c)
        return acc

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        raise Unsupported(f"{name}: no cleartext meaning for HEIR here (phase 1 knows sums, products and polynomials)")


def emit(workload: Workload) -> Emitted:
    """HEIR's input for a CKKS workload; Unsupported (one line) where it cannot be said."""
    if "ckks" not in workload.schemes:
        raise Unsupported(f"{workload.name} has no CKKS form: the heir->lattigo row is CKKS")
    if callable(workload.inputs):
        raise Unsupported(f"{workload.name} draws its inputs with a function: declare them (Uniform/Constant) "
                          "so their lengths are known")
    m = Meaning(dict(workload.inputs))
    outs = workload.compute(m)
    outs = (outs,) if isinstance(outs, str) else tuple(outs)
    results = [m._materialise(o, None) if m.values[o].n == -1 else m.values[o] for o in outs]
    if not any(r.secret for r in results):
        raise Unsupported(f"{workload.name}: no output depends on an encrypted input")
    func = workload.name if workload.name.isidentifier() else "workload"
    params = ", ".join(f"%{a.name}: tensor<{a.length}xf32>" + (" {secret.secret}" if a.secret else "") for a in m.args)
    rtypes = ", ".join(r.type for r in results)
    text = "\n".join([
        "module {",
        f"  func.func @{func}({params}) -> ({rtypes}) {{",
        *m.lines,
        f"    func.return {', '.join(r.ssa for r in results)} : {rtypes}",
        "  }",
        "}", ""])
    return Emitted(func, text, tuple(m.args), tuple(r.n for r in results))
