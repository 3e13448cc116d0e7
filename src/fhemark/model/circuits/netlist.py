"""Gate netlists: build, evaluate in plaintext, count gates and depth."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

# Gates that need a ciphertext multiplication in BFV/BGV with t = 2 (XOR is an
# addition, NOT adds 1): they make the multiplicative depth.
MULTIPLICATIVE = {"and", "or", "nand", "nor", "mux"}
# Gates a TFHE library evaluates without bootstrapping.
FREE_IN_TFHE = {"not", "const"}

_EVAL = {
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "nand": lambda a, b: 1 - (a & b), "nor": lambda a, b: 1 - (a | b), "xnor": lambda a, b: 1 - (a ^ b),
    "not": lambda a: 1 - a, "mux": lambda s, a, b: np.where(s == 1, a, b),
}


@dataclass(frozen=True)
class Netlist:
    n_inputs: int
    gates: tuple[tuple, ...]  # (name, out, *args) in evaluation order
    outputs: tuple[int, ...]

    def evaluate(self, inputs: np.ndarray) -> np.ndarray:
        """inputs: (n_inputs, L) bits for L independent instances -> (len(outputs), L)."""
        w: dict[int, np.ndarray] = {i: np.asarray(inputs[i], dtype=np.uint8) for i in range(self.n_inputs)}
        width = np.asarray(inputs).shape[1:] if np.ndim(inputs) > 1 else ()
        for name, out, *args in self.gates:
            if name == "const":
                w[out] = np.full(width, args[0], dtype=np.uint8)
            else:
                w[out] = _EVAL[name](*(w[a] for a in args)).astype(np.uint8)
        return np.stack([w[o] for o in self.outputs])

    def counts(self) -> dict[str, int]:
        return dict(Counter(g[0] for g in self.gates))

    def depths(self) -> dict[str, int]:
        """multiplicative: AND-type gates on the longest path (BFV/BGV with t = 2);
        bootstrapped: gates a TFHE library bootstraps on the longest path."""
        mult = {i: 0 for i in range(self.n_inputs)}
        boot = dict(mult)
        for name, out, *args in self.gates:
            deps = [a for a in args] if name != "const" else []
            mult[out] = max((mult[a] for a in deps), default=0) + (name in MULTIPLICATIVE)
            boot[out] = max((boot[a] for a in deps), default=0) + (name not in FREE_IN_TFHE)
        return {"multiplicative": max((mult[o] for o in self.outputs), default=0),
                "bootstrapped": max((boot[o] for o in self.outputs), default=0)}

    def stats(self) -> dict:
        c = self.counts()
        return {"gates": sum(c.values()), "by_gate": c,
                "bootstrapped_gates": sum(v for k, v in c.items() if k not in FREE_IN_TFHE), **self.depths()}


class Builder:
    """Appends gates; every gate writes a new wire."""

    def __init__(self, n_inputs: int):
        self.n_inputs = n_inputs
        self._next = n_inputs
        self.gates: list[tuple] = []
        self._consts: dict[int, int] = {}

    def inputs(self, start: int, count: int) -> list[int]:
        return list(range(start, start + count))

    def gate(self, name: str, *args: int) -> int:
        out = self._next
        self._next += 1
        self.gates.append((name, out, *args))
        return out

    def const(self, bit: int) -> int:
        if bit not in self._consts:
            self._consts[bit] = self.gate("const", bit)
        return self._consts[bit]

    def and_(self, a: int, b: int) -> int:
        return self.gate("and", a, b)

    def or_(self, a: int, b: int) -> int:
        return self.gate("or", a, b)

    def xor(self, a: int, b: int) -> int:
        return self.gate("xor", a, b)

    def not_(self, a: int) -> int:
        return self.gate("not", a)

    def build(self, outputs: list[int]) -> Netlist:
        return Netlist(self.n_inputs, tuple(self.gates), tuple(outputs))
