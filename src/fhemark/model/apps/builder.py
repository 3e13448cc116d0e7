"""A workload written once, as the algorithm reads: every call adds one protocol step to the
program (timed, in a region of its own: the steps depend on each other) and records the same
arithmetic on cleartext, so the reference a decrypted result is checked against is the
algorithm itself, replayed on the plaintext inputs."""

from __future__ import annotations

import operator
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..bitops import INT_SEMANTICS
from ..program import Program, decrypted, encrypted, step
from ..semantics import Plain
from . import diagonals as diagonal_method
from . import polynomial

Env = dict[str, Any]


# TFHE-family integers (PROTOCOL-bits.md): the integer op each arithmetic call becomes.
_WORDS = {"add": "int_add", "sub": "int_sub", "mul": "int_mul"}
COMPARISONS = ("gt", "ge", "lt", "eq", "min", "max")


@dataclass
class Circuit:
    """The vocabulary of a computation (fhemark.workload's public API): encrypted inputs,
    server-side plaintexts, add, sub, multiply, rotate, rescale, sums, polynomials, and the
    libraries' own routines in a native circuit. `plain` is the slot layout once a setup says
    it (None while the program's shape alone is read)."""

    scheme: str
    native: bool = False  # the library's own routines (inner_sum, ...) where the portable program spells them out
    plain: Plain | None = None
    # How every polynomial (poly_eval and horner alike) is evaluated: None as the program wrote it,
    # "log" at logarithmic depth (the library's evaluator in a native circuit, else fhemark's),
    # "horner" by Horner's rule: the ways `choose --polynomial` sets side by side.
    polynomial: str | None = None
    # A native computation on a library without its routines: fhemark's run in their place (ways.named), and
    # every routine the computation asks for, rotate_sum's inner_sum included, is said to be fhemark's.
    fallback: bool = False
    # Per routine the computation asks for (poly_eval for every polynomial, inner_sum, inner_product,
    # linear_transform): (routine, who runs it): "library", "fhemark" (its program of primitives) or "horner".
    evaluated: list[tuple[str, str]] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    timed: list[str] = field(default_factory=list)
    replay: list[tuple[str, Callable[[Plain, Env], np.ndarray]]] = field(default_factory=list)
    levels: int = 0  # levels consumed (rescales, mod switches) on the deepest path so far
    # A bootstrapping set's way (ways.bootstrapped): the levels a bootstrap gives back. A ciphertext that
    # would go below them is bootstrapped first, where its levels run out (`_room`); None: only where the
    # program itself calls `bootstrap`.
    refresh: int | None = None
    _booted: dict[str, str] = field(default_factory=dict)  # value -> its bootstrapped copy
    _count: int = 0
    _depth: dict[str, int] = field(default_factory=dict)  # value -> levels consumed on its way
    _lowered: dict[tuple[str, int], str] = field(default_factory=dict)  # (value, depth) -> its mod-switched copy
    _pt_level: dict[str, int] = field(default_factory=dict)  # CKKS plaintext -> the level it is encoded at
    constants: dict[str, float] = field(default_factory=dict)  # inputs the program itself names: value in every slot
    rotated: dict[str, tuple[str, int]] = field(default_factory=dict)  # inputs made from another: name -> (input, k)

    @property
    def ckks(self) -> bool:
        return self.scheme == "ckks"

    @property
    def words(self) -> bool:
        """TFHE-family integers: one encrypted integer per value, no slots, no levels."""
        return self.scheme.startswith("tfhe")

    @property
    def slots(self) -> int | None:
        """Values per ciphertext (None until a setup says)."""
        return self.plain.slots if self.plain else None

    def _name(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def _op(self, prim: str, args: tuple[str, ...], fn: Callable[[Plain, Env], np.ndarray], **attrs: Any) -> str:
        out = self._name("t")
        self.steps.append(step(out, prim, *args, **attrs))
        self.timed.append(out)
        self.replay.append((out, fn))
        depth = max((self.level_of(a) for a in args), default=0) + (prim in ("rescale", "mod_switch"))
        self._depth[out] = depth
        self.levels = max(self.levels, depth)
        return out

    def level_of(self, ct: str) -> int:
        """Levels `ct` has consumed below the top (0: a fresh ciphertext)."""
        return self._depth.get(ct, 0)

    def bootstrap(self, ct: str) -> str:
        """CKKS: `ct` with its levels refreshed, values unchanged (the library's bootstrapping: the set must
        be a bootstrapping one, which `choose` searches for a program that calls it). Made once per value."""
        if not self.ckks:
            raise ValueError(f"bootstrap is CKKS's here ({self.scheme}: its levels are not refreshed this way)")
        if ct not in self._booted:
            out = self._op("bootstrap", (ct,), lambda p, e: e[ct])
            self._depth[out] = 0
            self._booted[ct] = out
        return self._booted[ct]

    def _room(self, ct: str, levels: int = 1) -> str:
        """`ct`, bootstrapped first where a bootstrapping set's levels would run out under `levels` more
        (the placement's rule: a value is bootstrapped only when an operation needs levels it has not
        got, so a chain of d levels takes the fewest bootstraps, ceil(d / refresh) - 1)."""
        if self.refresh is None or not self.ckks or self.level_of(ct) + levels <= self.refresh:
            return ct
        if levels > self.refresh:
            raise ValueError(f"a step consumes {levels} levels, more than a bootstrap gives back ({self.refresh})")
        return self.bootstrap(ct)

    def _room_plain(self, ct: str, pt: str) -> tuple[str, str]:
        """`_room` for a ciphertext meeting a plaintext encoded like it: where `ct` is bootstrapped, the
        plaintext is encoded again like its copy (untimed, as the first was)."""
        fresh = self._room(ct)
        if fresh == ct or pt not in self._pt_level:
            return ct, pt
        enc = next(s for s in self.steps if s["out"] == pt)
        again = f"{pt}_b{fresh}"
        if again not in self._pt_level:
            self.steps.append({**enc, "out": again, "attrs": {**(enc.get("attrs") or {}), "like": fresh}})
            self.replay.append((again, lambda p, e: e[pt]))
            self._pt_level[again] = self.level_of(fresh)
        return fresh, again

    # inputs: untimed, as a client prepares them
    def encrypted(self, name: str) -> str:
        self.steps += [step(f"c{name}", "encrypt_sk", name)] if self.words else encrypted(name)
        self.replay.append((f"c{name}", lambda p, e: e[name]))
        return f"c{name}"

    def plaintext(self, name: str) -> str:
        """A server-side plaintext (model weights): encoded outside the timed work."""
        self.steps.append(step(f"p{name}", "encode", name))
        self.replay.append((f"p{name}", lambda p, e: e[name]))
        return f"p{name}"

    def plaintext_like(self, name: str, ct: str) -> str:
        """A server-side plaintext to combine with `ct` (add_plain, mul_plain), encoded untimed
        once `ct` exists. CKKS: at ct's level and exact scale (encode's `like` attr), so that it
        adds to ct exactly: after a rescale a ciphertext's scale is Delta^2 / q_i, not Delta, and
        SEAL refuses to add terms whose scales differ. Other schemes: `plaintext(name)`."""
        if not self.ckks:
            return self.plaintext(name)
        self.steps.append(step(f"p{name}", "encode", name, like=ct))
        self.replay.append((f"p{name}", lambda p, e: e[name]))
        self._pt_level[f"p{name}"] = self.level_of(ct)
        return f"p{name}"

    def constant(self, value: float, like: str | None = None) -> str:
        """A server-side constant, `value` in every slot, as a plaintext (with `like`: encoded like that
        ciphertext, see plaintext_like). BFV/BGV: an integer, taken modulo t."""
        if not self.ckks and float(value) != int(value):
            raise ValueError(f"constant {value!r}: BFV/BGV plaintexts are integers (modulo t)")
        name = f"const{len(self.constants)}_"
        self.constants[name] = value
        return self.plaintext_like(name, like) if like is not None else self.plaintext(name)

    def rotated_plaintext(self, name: str, k: int, like: str) -> str:
        """Input `name` rotated by k (rot_k, as `rotate`), as a server-side plaintext encoded like `like`
        (plaintext_like): the client's vector rotated on cleartext before it is encoded, untimed, as a
        linear transformation's pre-rotated diagonals are. The sample carries it as an input of its own
        (Workload.draw); the reference rotates `name` itself."""
        if k == 0:
            return self.plaintext_like(name, like)
        made = f"{name}_rot{k}_".replace("-", "m")
        self.rotated[made] = (name, k)
        pt = f"p{made}"
        self.steps.append(step(pt, "encode", made, like=like) if self.ckks else step(pt, "encode", made))
        self.replay.append((pt, lambda p, e: p.rotate(e[name], k)))
        if self.ckks:
            self._pt_level[pt] = self.level_of(like)
        return pt

    def _meets(self, ct: str, pt: str) -> None:
        """CKKS: a plaintext meets a ciphertext at its own level (a library refuses, or worse, at run
        time): said while the program is built, with the fix."""
        if self.ckks and self._pt_level.get(pt, 0) != self.level_of(ct):
            raise ValueError(f"plaintext {pt[1:]!r} is encoded at level {self._pt_level.get(pt, 0)} and meets a "
                             f"ciphertext {self.level_of(ct)} level(s) down: use c.plaintext_like({pt[1:]!r}, ct)")

    # the timed work
    def rescaled(self, ct: str) -> str:
        """CKKS: divide out the scale a product added (one level); other schemes: as is."""
        if not self.ckks:
            return ct
        return self._op("rescale", (ct,), lambda p, e: e[ct])

    def mod_switch(self, ct: str) -> str:
        """Drop one level, values unchanged (CKKS: scale unchanged)."""
        ct = self._room(ct)
        return self._op("mod_switch", (ct,), lambda p, e: e[ct])

    def down_to(self, ct: str, like: str) -> str:
        """`ct` mod-switched down to `like`'s level (as is where it is there already): one
        mod_switch per level, each made once and reused (Horner needs x at every level)."""
        target = self.level_of(like)
        if self.refresh is not None and self.level_of(ct) > target:
            return ct  # `like` was bootstrapped: the libraries that bootstrap multiply across levels themselves
        if self.level_of(ct) > target:
            raise ValueError(f"{ct} is below {like}'s level: a mod switch cannot raise it")
        cur = ct
        for depth in range(self.level_of(ct) + 1, target + 1):
            key = (ct, depth)
            if key not in self._lowered:
                self._lowered[key] = self.mod_switch(cur)
            cur = self._lowered[key]
        return cur

    def mul(self, a: str, b: str) -> str:
        a, b = self._room(a), self._room(b)
        return self._op(_WORDS["mul"] if self.words else "mul_relin", (a, b), lambda p, e: p.mul(e[a], e[b]))

    def square(self, a: str) -> str:
        """a * a, relinearized (CKKS: not rescaled)."""
        if self.words:
            return self.mul(a, a)
        a = self._room(a)
        return self._op("square_relin", (a,), lambda p, e: p.mul(e[a], e[a]))

    def mul_plain(self, a: str, pt: str) -> str:
        a, pt = self._room_plain(a, pt)
        self._meets(a, pt)
        return self._op("mul_plain", (a, pt), lambda p, e: p.mul(e[a], e[pt]))

    def mul_scalar(self, a: str, scalar: int | float) -> str:
        a = self._room(a)
        return self._op("mul_scalar", (a,), lambda p, e: p.mul(e[a], scalar), scalar=scalar)

    def add(self, a: str, b: str) -> str:
        return self._op(_WORDS["add"] if self.words else "add", (a, b), lambda p, e: p.add(e[a], e[b]))

    def sub(self, a: str, b: str) -> str:
        return self._op(_WORDS["sub"] if self.words else "sub", (a, b), lambda p, e: p.sub(e[a], e[b]))

    def compare(self, how: str, a: str, b: str) -> str:
        """TFHE-family integers: `how` in gt, ge, lt, eq (1 or 0), min, max."""
        if not self.words or how not in COMPARISONS:
            raise ValueError(f"compare({how!r}) is for tfhe_int values, one of {', '.join(COMPARISONS)}")
        semantics = INT_SEMANTICS[f"int_{how}"]
        return self._op(f"int_{how}", (a, b), lambda p, e: semantics(p, np.asarray(e[a], np.uint64), np.asarray(e[b], np.uint64)))

    def add_plain(self, a: str, pt: str) -> str:
        self._meets(a, pt)
        return self._op("add_plain", (a, pt), lambda p, e: p.add(e[a], e[pt]))

    def rotate(self, a: str, k: int) -> str:
        prim = "rotate" if self.ckks else "rotate_rows"
        return self._op(prim, (a,), lambda p, e: p.rotate(e[a], k), steps=k)

    def rotate_sum(self, a: str, n: int) -> str:
        """Every slot i gets the sum of slots i .. i + n - 1 (n a power of two): log2(n) rotations,
        or the library's `inner_sum` in a native circuit (and fhemark's where it stands in for it)."""
        if self.native or self.fallback:
            return self.inner_sum(a, n)
        return self._rotate_add(a, n)

    def _rotate_add(self, a: str, n: int) -> str:
        """fhemark's inner_sum: log2(n) rotate-and-add steps, by 1, 2, 4, ..., n / 2 (those Galois
        keys); no level."""
        k = 1
        while k < n:
            a = self.add(a, self.rotate(a, k))
            k *= 2
        return a

    # The library's own routines in a native circuit: one step each, replayed as their definition.
    # Elsewhere fhemark's program of primitives computes the same (the same reference checks both).
    def inner_sum(self, a: str, n: int) -> str:
        n = _power_of_two(n)
        if not self.native:
            self.evaluated.append(("inner_sum", "fhemark"))
            return self._rotate_add(a, n)
        self.evaluated.append(("inner_sum", "library"))
        return self._op("inner_sum", (a,), lambda p, e: _window_sum(p, e[a], n), n=n)

    def inner_product(self, a: str, b: str, n: int) -> str:
        """x * y relinearized, then `inner_sum` (CKKS: not rescaled)."""
        n = _power_of_two(n)
        if not self.native:
            self.evaluated.append(("inner_product", "fhemark"))
            return self._rotate_add(self.mul(a, b), n)
        self.evaluated.append(("inner_product", "library"))
        a, b = self._room(a), self._room(b)
        return self._op("inner_product", (a, b), lambda p, e: _window_sum(p, p.mul(e[a], e[b]), n), n=n)

    def linear_transform(self, v: str, diagonals: dict[int, str]) -> str:
        """sum_k diag_k * rot_k(v) over plaintext diagonals given as inputs (CKKS: not rescaled; the
        rescale after it spends the product's level). Native: the library's routine, the diagonals
        travelling as the step's vec arguments (the driver encodes them untimed). Otherwise fhemark's
        diagonal method, baby-step giant-step where it saves rotations (diagonals.py)."""
        ks = diagonal_method.check(diagonals)
        if not self.native:
            self.evaluated.append(("linear_transform", "fhemark"))
            return diagonal_method.evaluate(self, v, ks, lambda k, g, like: self.rotated_plaintext(diagonals[k], -g, like))
        self.evaluated.append(("linear_transform", "library"))
        v = self._room(v)
        names = [diagonals[k] for k in ks]

        def apply(p: Plain, e: Env) -> np.ndarray:
            terms = [p.mul(e[n], p.rotate(e[v], k)) for k, n in zip(ks, names)]
            out = terms[0]
            for t in terms[1:]:
                out = p.add(out, t)
            return out
        return self._op("linear_transform", (v, *names), apply, diagonals=ks)

    def poly_eval(self, x: str, coeffs: list[str | float | None]) -> str:
        """sum_i c_i x^i at logarithmic depth, `coeffs` lowest degree first. In a native circuit
        (CKKS), the library's polynomial evaluator: one step, the coefficients numbers or names of
        per-sample scalars; its levels are the library's (Lattigo: ceil(log2(d + 1)); OpenFHE's
        EvalPoly more, model/routines.py), and the record has those the driver reports. Otherwise
        fhemark's own evaluation in primitives (polynomial.py): ceil(log2(d + 1)) levels on every
        library, the coefficients numbers or names of inputs (one value per slot, as horner's)."""
        if self.polynomial == "horner":
            return self.horner(x, coeffs)
        if not (self.native and self.ckks):
            self.evaluated.append(("poly_eval", "fhemark"))
            return polynomial.evaluate(self, x, coeffs)
        self.evaluated.append(("poly_eval", "library"))
        if any(c is None for c in coeffs):
            coeffs = [0.0 if c is None else c for c in coeffs]
        wire = [f"${c}" if isinstance(c, str) else c for c in coeffs]
        x = self._room(x, polynomial.levels(len(coeffs) - 1))

        def apply(p: Plain, e: Env) -> np.ndarray:
            cs = [float(e[c]) if isinstance(c, str) else float(c) for c in coeffs]
            return np.polynomial.polynomial.polyval(e[x], cs)
        out = self._op("poly_eval", (x,), apply, coeffs=wire)
        self._depth[out] = self.level_of(x) + polynomial.levels(len(coeffs) - 1)
        self.levels = max(self.levels, self._depth[out])
        return out

    def horner(self, x: str, coeffs: list[str | float | None]) -> str:
        """p(x) = sum_i c_i x^i by Horner's rule, (((c_d x + c_{d-1}) x + c_{d-2}) x + ...) + c_0:
        `coeffs` lowest degree first; `coeffs[i]` a number or the name of the plaintext input of c_i
        (None or 0: a coefficient known to be zero, whose addition is left out; c_d must be given).
        Every constant is a plaintext encoded like the ciphertext it meets, and x is mod-switched
        down to the accumulator's level before each product. d products in sequence: CKKS
        consumes d levels. Under `polynomial="log"`: poly_eval's way instead."""
        if self.polynomial == "log":
            if self.native and self.ckks and all(not isinstance(c, str) for c in coeffs):  # its names: scalars
                return self.poly_eval(x, coeffs)
            self.evaluated.append(("poly_eval", "fhemark"))
            return polynomial.evaluate(self, x, coeffs)
        if coeffs[-1] is None or len(coeffs) < 2:
            raise ValueError("Horner needs a leading coefficient and degree >= 1")
        self.evaluated.append(("poly_eval", "horner"))
        acc = self.rescaled(self.mul_plain(x, self._coefficient(coeffs[-1], x)))
        for i in range(len(coeffs) - 2, -1, -1):
            if coeffs[i] is not None and coeffs[i] != 0:
                acc = self.add_plain(acc, self._coefficient(coeffs[i], acc))
            if i:
                acc = self.rescaled(self.mul(acc, self.down_to(x, acc)))
        return acc

    def _coefficient(self, c: str | float, like: str) -> str:
        """A polynomial's coefficient: the name of an input, or a number (a constant)."""
        return self.plaintext_like(c, like) if isinstance(c, str) else self.constant(c, like)

    def sum(self, cts: list[str]) -> str:
        """A balanced tree of additions."""
        while len(cts) > 1:
            cts = [self.add(cts[i], cts[i + 1]) if i + 1 < len(cts) else cts[i] for i in range(0, len(cts), 2)]
        return cts[0]

    # what the workload hands back
    def program(self, *outs: str) -> Program:
        """Decrypt and decode each result: `z`, or `z0`, `z1`, ... for several."""
        if self.words:  # integers decrypt to values directly, nothing to decode
            names = ["z"] if len(outs) == 1 else [f"z{i}" for i in range(len(outs))]
            return Program(self.steps + [step(n, "decrypt", o) for n, o in zip(names, outs)], list(self.timed),
                           outputs=names, sizes=[outs[0]])
        if len(outs) == 1:
            return Program(self.steps + decrypted(outs[0]), list(self.timed), noise=[outs[0]], sizes=[outs[0]],
                           levels=[outs[0]])
        dec = [s for i, o in enumerate(outs)
               for s in (step(f"pz{i}", "decrypt", o), step(f"z{i}", "decode", f"pz{i}"))]
        return Program(self.steps + dec, list(self.timed), outputs=[f"z{i}" for i in range(len(outs))],
                       noise=list(outs), sizes=[outs[0]], levels=[outs[0]])  # noise: the least is the record's

    def reference(self, plain: Plain, inputs: dict[str, Any], *outs: str) -> np.ndarray | dict[str, np.ndarray]:
        """The outputs `program(*outs)` decrypts, computed on cleartext (`inputs`: the sample's
        vectors and scalars)."""
        env: Env = dict(inputs)
        for name, fn in self.replay:
            env[name] = fn(plain, env)
        return env[outs[0]] if len(outs) == 1 else {f"z{i}": env[o] for i, o in enumerate(outs)}

    def counts(self) -> dict[str, int]:
        """Timed steps per primitive: what a cost model adds up."""
        return dict(Counter(s["op"] for s in self.steps if s["out"] in self.timed))


def _power_of_two(n: int) -> int:
    """n as an int (a numpy integer too), where it is a power of two (PROTOCOL.md inner_sum)."""
    try:
        m = operator.index(n) if not isinstance(n, bool) else 0
    except TypeError:
        m = 0
    if m < 1 or m & (m - 1):
        raise ValueError(f"an inner sum over {n!r} slots: n must be a power of two (PROTOCOL.md inner_sum)")
    return m


def _window_sum(p: Plain, x: np.ndarray, n: int) -> np.ndarray:
    """out[i] = sum_{j<n} x[i + j], rotations within a row: what inner_sum computes."""
    out = x
    for j in range(1, n):
        out = p.add(out, p.rotate(x, j))
    return out
