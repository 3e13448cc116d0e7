"""A workload written once, as the algorithm reads: every call adds one protocol step to the
program (timed, in a region of its own: the steps depend on each other) and records the same
arithmetic on cleartext, so the reference a decrypted result is checked against is the
algorithm itself, replayed on the plaintext inputs."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..ops import Program, decrypted, encrypted, step
from ..semantics import Plain

Env = dict[str, Any]


@dataclass
class Circuit:
    scheme: str
    steps: list[dict] = field(default_factory=list)
    timed: list[str] = field(default_factory=list)
    replay: list[tuple[str, Callable[[Plain, Env], np.ndarray]]] = field(default_factory=list)
    levels: int = 0  # CKKS rescales (levels consumed) on the deepest path so far
    _count: int = 0

    @property
    def ckks(self) -> bool:
        return self.scheme == "ckks"

    def _name(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def _op(self, prim: str, args: tuple[str, ...], fn: Callable[[Plain, Env], np.ndarray], **attrs: Any) -> str:
        out = self._name("t")
        self.steps.append(step(out, prim, *args, **attrs))
        self.timed.append(out)
        self.replay.append((out, fn))
        return out

    # inputs: untimed, as a client prepares them
    def encrypted(self, name: str) -> str:
        self.steps += encrypted(name)
        self.replay.append((f"c{name}", lambda p, e: e[name]))
        return f"c{name}"

    def plaintext(self, name: str) -> str:
        """A server-side plaintext (model weights): encoded outside the timed work."""
        self.steps.append(step(f"p{name}", "encode", name))
        self.replay.append((f"p{name}", lambda p, e: e[name]))
        return f"p{name}"

    # the timed work
    def rescaled(self, ct: str) -> str:
        """CKKS: divide out the scale a product added (one level); other schemes: as is."""
        if not self.ckks:
            return ct
        return self._op("rescale", (ct,), lambda p, e: e[ct])

    def mul(self, a: str, b: str) -> str:
        return self._op("mul_relin", (a, b), lambda p, e: p.mul(e[a], e[b]))

    def mul_plain(self, a: str, pt: str) -> str:
        return self._op("mul_plain", (a, pt), lambda p, e: p.mul(e[a], e[pt]))

    def mul_scalar(self, a: str, scalar: int | float) -> str:
        return self._op("mul_scalar", (a,), lambda p, e: p.mul(e[a], scalar), scalar=scalar)

    def add(self, a: str, b: str) -> str:
        return self._op("add", (a, b), lambda p, e: p.add(e[a], e[b]))

    def add_plain(self, a: str, pt: str) -> str:
        return self._op("add_plain", (a, pt), lambda p, e: p.add(e[a], e[pt]))

    def rotate(self, a: str, k: int) -> str:
        prim = "rotate" if self.ckks else "rotate_rows"
        return self._op(prim, (a,), lambda p, e: p.rotate(e[a], k), steps=k)

    def rotate_sum(self, a: str, n: int) -> str:
        """Every slot i gets the sum of slots i .. i + n - 1 (n a power of two): log2(n) rotations."""
        k = 1
        while k < n:
            a = self.add(a, self.rotate(a, k))
            k *= 2
        return a

    def sum(self, cts: list[str]) -> str:
        """A balanced tree of additions."""
        while len(cts) > 1:
            cts = [self.add(cts[i], cts[i + 1]) if i + 1 < len(cts) else cts[i] for i in range(0, len(cts), 2)]
        return cts[0]

    # what the workload hands back
    def program(self, *outs: str) -> Program:
        """Decrypt and decode each result: `z`, or `z0`, `z1`, ... for several."""
        if len(outs) == 1:
            return Program(self.steps + decrypted(outs[0]), list(self.timed), noise=[outs[0]], sizes=[outs[0]],
                           levels=[outs[0]])
        dec = [s for i, o in enumerate(outs)
               for s in (step(f"pz{i}", "decrypt", o), step(f"z{i}", "decode", f"pz{i}"))]
        return Program(self.steps + dec, list(self.timed), outputs=[f"z{i}" for i in range(len(outs))],
                       noise=[outs[0]], sizes=[outs[0]], levels=[outs[0]])

    def reference(self, plain: Plain, inputs: dict[str, np.ndarray], *outs: str) -> np.ndarray | dict[str, np.ndarray]:
        """The outputs `program(*outs)` decrypts, computed on cleartext."""
        env: Env = dict(inputs)
        for name, fn in self.replay:
            env[name] = fn(plain, env)
        return env[outs[0]] if len(outs) == 1 else {f"z{i}": env[o] for i, o in enumerate(outs)}

    def counts(self) -> dict[str, int]:
        """Timed steps per primitive: what a cost model adds up."""
        return dict(Counter(s["op"] for s in self.steps if s["out"] in self.timed))
