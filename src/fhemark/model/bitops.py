"""Operations of the bit and integer schemes (PROTOCOL-bits.md) and the
Study 4 workloads, written once for every scheme that can run them:

- `multiadd_<n>x<bits>`: the sum of n integers. tfhe_bool: the carry-save
  netlist (full-adder layers, then one Kogge-Stone adder) as gate steps,
  one timed region per depth (circuits/gates.py); tfhe_int: native integer additions; BFV/BGV:
  homomorphic additions of whole integers, as Study 4 did with SEAL.
- `compare_<bits>`: [X < Y]. tfhe_bool: the carry out of Y + NOT(X) by
  Kogge-Stone; tfhe_int: the native comparison.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from .circuits import Netlist, carry_save_sum, compare_lt
from .circuits.gates import gate_program
from .ops import BenchOp
from .program import Program, encrypted, step
from .semantics import Plain

BOOL, SHORT, INT = ("tfhe_bool",), ("tfhe_shortint",), ("tfhe_int",)
GATES2 = ("and", "or", "xor", "nand", "nor", "xnor")


def _enc(v: str) -> list[dict]:
    return [step(f"c{v}", "encrypt_sk", v)]


def _dec(ct: str) -> list[dict]:
    return [step("z", "decrypt", ct)]


def _binary(prim: str, n_args: int = 2, **attrs: Any) -> Callable[[str], Program]:
    names = ["x", "y", "w"][:n_args]

    def build(scheme: str) -> Program:
        steps = [s for v in names for s in _enc(v)] + [step("cz", prim, *[f"c{v}" for v in names], **attrs)]
        return Program(steps + _dec("cz"), ["cz"], sizes=["cz"])
    return build


# The evaluation a timed keygen is proved by: one bootstrapped op with the new server key.
_KEY_USE = {"tfhe_bool": "and", "tfhe_shortint": "short_add", "tfhe_int": "int_add"}


def _keygen(scheme: str) -> Program:
    """Time client + server key generation, then encrypt, evaluate one op with the new server key
    and decrypt: a server key the time paid for but that does not work fails the check."""
    steps = [step("k", "keygen"), step("cx", "encrypt_sk", "x", key="k"), step("cy", "encrypt_sk", "y", key="k"),
             step("cz", _KEY_USE[scheme], "cx", "cy", key="k"), step("z", "decrypt", "cz", key="k")]
    return Program(steps, ["k"], sizes=["k"])


def _keygen_expect(p: Plain, v: dict, s: dict) -> np.ndarray:
    x, y = _u(v["x"]), _u(v["y"])
    return x & y if p.scheme == "tfhe_bool" else p.add(x, y)


def _codec(timed: str) -> Callable[[str], Program]:
    def build(scheme: str) -> Program:
        return Program(_enc("x") + _dec("cx"), [timed], sizes=["cx"])
    return build


def _u(x) -> np.ndarray:
    return np.asarray(x, dtype=np.uint64)


_GATE = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
         "nand": lambda a, b: 1 - (a & b), "nor": lambda a, b: 1 - (a | b), "xnor": lambda a, b: 1 - (a ^ b)}
INT_SEMANTICS = {"int_add": lambda p, x, y: p.add(x, y), "int_sub": lambda p, x, y: p.sub(x, y),
        "int_mul": lambda p, x, y: p.mul(x, y), "int_gt": lambda p, x, y: _u(x > y), "int_ge": lambda p, x, y: _u(x >= y),
        "int_lt": lambda p, x, y: _u(x < y), "int_eq": lambda p, x, y: _u(x == y),
        "int_min": lambda p, x, y: np.minimum(x, y), "int_max": lambda p, x, y: np.maximum(x, y)}


def _lut(p: Plain, rng: np.random.Generator) -> dict:
    return {"lut": [int(v) for v in rng.integers(0, p.t, size=int(p.t))]}


def static_ops() -> list[BenchOp]:
    xy = ("x", "y")
    ops = [BenchOp("keygen", "key generation (client + server keys)", BOOL + SHORT + INT, _keygen,
                   _keygen_expect, inputs=("x", "y"), group="keygen"),
           BenchOp("encrypt", "encrypt (secret key)", BOOL + SHORT + INT, _codec("cx"), lambda p, v, s: v["x"]),
           BenchOp("decrypt_bits", "decrypt", BOOL + SHORT + INT, _codec("z"), lambda p, v, s: v["x"])]
    for g in GATES2:
        ops.append(BenchOp(f"gate_{g}", f"{g.upper()} gate (bootstrapped)", BOOL, _binary(g),
                           lambda p, v, s, g=g: _GATE[g](_u(v["x"]), _u(v["y"])), inputs=xy))
    ops.append(BenchOp("gate_not", "NOT gate", BOOL, _binary("not", 1), lambda p, v, s: 1 - _u(v["x"])))
    ops.append(BenchOp("gate_mux", "MUX gate", BOOL, _binary("mux", 3),
                       lambda p, v, s: np.where(_u(v["x"]) == 1, _u(v["y"]), _u(v["w"])), inputs=("x", "y", "w")))
    ops.append(BenchOp("short_add", "shortint add", SHORT, _binary("short_add"), lambda p, v, s: p.add(v["x"], v["y"]),
                       inputs=xy))
    ops.append(BenchOp("short_mul", "shortint multiply", SHORT, _binary("short_mul"),
                       lambda p, v, s: p.mul(v["x"], v["y"]), inputs=xy))
    ops.append(BenchOp("pbs", "programmable bootstrap (lookup table)", SHORT, _binary("pbs", 1, lut="$lut"),
                       lambda p, v, s: _u(s["lut"])[_u(v["x"]).astype(np.int64)], scalars=_lut))
    for name, f in INT_SEMANTICS.items():
        ops.append(BenchOp(name, f"integer {name[4:]}", INT, _binary(name), lambda p, v, s, f=f: f(p, _u(v["x"]), _u(v["y"])),
                           inputs=xy))
    return ops


# -- Study 4 workloads ----------------------------------------------------------------

def _int_bits(v: np.ndarray, nbits: int) -> np.ndarray:
    """Little-endian bits of each value, number after number."""
    return ((v[:, None] >> np.arange(nbits, dtype=np.uint64)) & np.uint64(1)).reshape(-1)


def _circuit_op(name: str, title: str, net: Netlist, numbers: int, nbits: int, model: dict) -> BenchOp:
    def gen(p: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        vals = rng.integers(0, 1 << nbits, size=numbers, dtype=np.uint64) if nbits < 64 else \
            rng.integers(0, 1 << 64, size=numbers, dtype=np.uint64)
        return {"x": _int_bits(vals, nbits)}

    program = gate_program(net)
    return BenchOp(name, title, BOOL, lambda scheme: program,
                   lambda p, v, s: net.evaluate(_u(v["x"]).astype(np.uint8)[:, None])[:, 0].astype(np.uint64),
                   group="circuit", gen=gen, facts={"circuit": net.stats(), "cost_model": model, "bits": nbits,
                                                    "numbers": numbers, "method": "gate netlist, one region per depth"})


def _sum_chain(prim: str, n: int, encode: bool) -> Callable[[str], Program]:
    """x0 + x1 + ... one addition after the other (every addition timed)."""
    def build(scheme: str) -> Program:
        names = [f"x{i}" for i in range(n)]
        steps = [s for v in names for s in (encrypted(v) if encode else _enc(v))]
        acc = f"c{names[0]}"
        for i in range(1, n):
            steps.append(step(f"s{i}", prim, acc, f"c{names[i]}"))
            acc = f"s{i}"
        steps += [step("pz", "decrypt", acc), step("z", "decode", "pz")] if encode else _dec(acc)
        timed = [f"s{i}" for i in range(1, n)]
        return Program(steps, timed, noise=[acc] if encode else [], sizes=[acc])
    return build


def _word_gen(n: int, nbits: int) -> Callable[[Plain, np.random.Generator], dict]:
    def gen(p: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        # The orchestrator pads to the slot count itself for RLWE (one value in slot 0 per number).
        out = {}
        for i in range(n):
            v = np.zeros(1 if p.words else p.slots, dtype=np.uint64 if p.words else np.int64)
            v[0] = rng.integers(0, 1 << nbits, dtype=np.uint64) if nbits < 64 else rng.integers(0, 1 << 64, dtype=np.uint64)
            out[f"x{i}"] = v
        return out
    return gen


def _sum_expect(n: int) -> Callable:
    def expect(p: Plain, v: dict, s: dict) -> np.ndarray:
        acc = v["x0"]
        for i in range(1, n):
            acc = p.add(acc, v[f"x{i}"])
        return acc
    return expect


@lru_cache(maxsize=None)
def circuit(name: str) -> list[BenchOp] | None:
    """The ops behind a parametrised name, one per scheme family."""
    m = re.fullmatch(r"multiadd_(\d+)x(\d+)", name)
    if m:
        n, nbits = int(m.group(1)), int(m.group(2))
        if n < 2 or not 1 <= nbits <= 64:
            return None
        model = {"full_adder_layers": n - 2, "kogge_stone_levels": 1 + 2 * math.ceil(math.log2(nbits)),
                 "note": "Study 4: (n - 2) full-adder layers + one Kogge-Stone adder"}
        title = f"sum of {n} {nbits}-bit integers"
        word = {"numbers": n, "bits": nbits, "method": "word-wise additions", "additions": n - 1}
        return [
            _circuit_op(name, title + " (carry-save + Kogge-Stone netlist)", carry_save_sum(n, nbits), n, nbits, model),
            BenchOp(name, title + " (native integer additions)", INT, _sum_chain("int_add", n, False), _sum_expect(n),
                    inputs=tuple(f"x{i}" for i in range(n)), group="circuit", gen=_word_gen(n, nbits),
                    applies=lambda ps, nb=nbits: ps.bits == nb, facts={**word, "method": "native integer additions"}),
            BenchOp(name, title + " (homomorphic additions of whole integers)", ("bfv", "bgv"),
                    _sum_chain("add", n, True), _sum_expect(n), inputs=tuple(f"x{i}" for i in range(n)),
                    group="circuit", gen=_word_gen(n, nbits),
                    # exact only when the sum cannot wrap modulo t
                    applies=lambda ps, nb=nbits, n=n: ps.t is not None and ps.t.bit_length() > nb + math.ceil(math.log2(n)),
                    facts=word),
        ]
    m = re.fullmatch(r"compare_(\d+)", name)
    if m:
        nbits = int(m.group(1))
        if not 1 <= nbits <= 4096:
            return None
        model = {"multiplicative_levels": 1 + 2 * math.ceil(math.log2(nbits)) if nbits > 1 else 1,
                 "note": "Study 4: Kogge-Stone on nb bits needs 1 + 2 log2(nb) levels"}
        def lt(p, v, s):
            return _u(v["x0"] < v["x1"])

        return [
            _circuit_op(name, f"compare two {nbits}-bit integers (carry of Y + NOT X, Kogge-Stone netlist)",
                        compare_lt(nbits), 2, nbits, model),
            BenchOp(name, f"compare two {nbits}-bit integers (native)", INT, _binary_named("int_lt"), lt,
                    inputs=("x0", "x1"), group="circuit", gen=_word_gen(2, nbits),
                    applies=lambda ps, nb=nbits: ps.bits == nb, facts={"bits": nbits, "method": "native comparison"}),
            _rlwe_compare(name, nbits, model),
        ]
    return None


def _rlwe_netlist_program(net: Netlist) -> Callable[[str], Program]:
    """The netlist as BFV/BGV arithmetic modulo t = 2 on one bit per ciphertext
    (constant polynomials): XOR = add, AND = multiply + relinearize, NOT = add 1,
    OR = a + b + ab, MUX(s, a, b) = b + s(a + b). Every gate is timed; the sum
    is the circuit's time. How deep it gets before decryption fails is measured."""
    def build(scheme: str) -> Program:
        steps = [step("pone", "encode_coeffs", "one"), step("pzero", "encode_coeffs", "zero")]
        for i in range(net.n_inputs):
            steps += [step(f"p{i}", "encode_coeffs", f"b{i}"), step(f"w{i}", "encrypt_sk", f"p{i}")]
        timed: list[str] = []

        def emit(out: str, op: str, *args: str) -> str:
            steps.append(step(out, op, *args))
            timed.append(out)
            return out

        for name, out, *a in net.gates:
            w, x = f"w{out}", [f"w{i}" for i in a]
            if name == "const":
                steps.append(step(w, "encrypt_sk", "pone" if a[0] else "pzero"))
            elif name == "xor":
                emit(w, "add", *x)
            elif name == "and":
                emit(w, "mul_relin", *x)
            elif name == "not":
                emit(w, "add_plain", x[0], "pone")
            elif name in ("or", "nor"):
                s1, s2 = emit(f"{w}s", "add", *x), emit(f"{w}m", "mul_relin", *x)
                emit(w if name == "or" else f"{w}o", "add", s1, s2)
                if name == "nor":
                    emit(w, "add_plain", f"{w}o", "pone")
            elif name in ("nand", "xnor"):
                emit(f"{w}i", "mul_relin" if name == "nand" else "add", *x)
                emit(w, "add_plain", f"{w}i", "pone")
            elif name == "mux":
                s1 = emit(f"{w}s", "add", x[1], x[2])
                emit(w, "add", x[2], emit(f"{w}m", "mul_relin", x[0], s1))
        res = f"w{net.outputs[0]}"
        steps += [step("pz", "decrypt", res), step("z", "decode_coeffs", "pz")]
        return Program(steps, timed, noise=[res], sizes=[res], levels=[res])
    return build


def _bit_inputs(net: Netlist, numbers: int, nbits: int) -> Callable[[Plain, np.random.Generator], dict]:
    def gen(p: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        vals = rng.integers(0, 1 << min(nbits, 63), size=numbers, dtype=np.uint64)
        bits_ = _int_bits(vals, nbits).astype(np.int64)
        out = {f"b{i}": bits_[i:i + 1] for i in range(net.n_inputs)}
        return {**out, "one": np.ones(1, np.int64), "zero": np.zeros(1, np.int64)}
    return gen


def _rlwe_bit_expect(net: Netlist) -> Callable:
    def expect(p: Plain, v: dict, s: dict) -> np.ndarray:
        bits_ = np.array([v[f"b{i}"][0] for i in range(net.n_inputs)], dtype=np.uint8)[:, None]
        z = np.zeros(p.slots, dtype=np.int64)  # a constant polynomial: every other coefficient is 0
        z[0] = net.evaluate(bits_)[0, 0]
        return z
    return expect


def _rlwe_compare(name: str, nbits: int, model: dict) -> BenchOp:
    net = compare_lt(nbits)
    return BenchOp(name, f"compare two {nbits}-bit integers (Kogge-Stone netlist, BFV/BGV with t = 2)", ("bfv", "bgv"),
                   _rlwe_netlist_program(net), _rlwe_bit_expect(net), group="circuit", gen=_bit_inputs(net, 2, nbits),
                   applies=lambda ps: ps.t == 2 and not ps.batching,
                   facts={"circuit": net.stats(), "cost_model": model, "bits": nbits, "numbers": 2,
                          "method": "netlist, t = 2 (AND = multiply, XOR = add)"})


def _binary_named(prim: str) -> Callable[[str], Program]:
    def build(scheme: str) -> Program:
        steps = _enc("x0") + _enc("x1") + [step("cz", prim, "cx0", "cx1")] + _dec("cz")
        return Program(steps, ["cz"], sizes=["cz"])
    return build
