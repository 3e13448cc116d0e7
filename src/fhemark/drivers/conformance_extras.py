"""Conformance cases beyond the catalog's benchmark operations: what the drivers' own smoke tests
used to check (rotations at the edges of the row, Galois keys used by composed rotations, keys of
new secret keys, mixed encryptions, per-sample `$name` diagonals, netlists), as cases every driver
that lists the ops runs (fhemark.drivers.conformance writes them into the case files)."""

from __future__ import annotations

import numpy as np

from ..model.apps.builder import Circuit
from ..model.circuits import Builder
from ..model.circuits.gates import gate_program
from ..model.ops import RLWE, BenchOp
from ..model.program import Program, decrypted, encrypted, step
from ..model.semantics import Plain
from ..model.rotations import galois_steps

INPUT_LENGTH = 8  # the values of a drawn input vector (the rest of the slots: zero padding)


def _rotations(scheme: str, rot_steps: list[int], key: str | None = None) -> tuple[list[dict], list[str]]:
    """cx rotated by every step (one region "cz": the rotations are independent), each decrypted
    to z<i>."""
    attrs = {"key": key} if key else {}
    rot = "rotate" if scheme == "ckks" else "rotate_rows"
    steps = [step(f"cz{i}", rot, "cx", steps=s, **attrs) for i, s in enumerate(rot_steps)]
    for i in range(len(rot_steps)):
        steps += [step(f"pz{i}", "decrypt", f"cz{i}"), step(f"z{i}", "decode", f"pz{i}")]
    return steps, [f"cz{i}" for i in range(len(rot_steps))]


# Rotation steps at the edges, by row length: none, negative, composed, half a row and more, the last
# step before a full turn; and a full turn or more either way (PROTOCOL.md: a step is modulo the row).
EDGE_STEPS = {"rotate_steps": lambda row: [0, -1, 3, -5, row // 2 + 7, row - 1],
              "rotate_full_turn": lambda row: [row, row + 3, -row - 1]}


def _edge_inputs(p: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Values at the start and at the end of the row, and (BFV/BGV) at the start of the second row:
    a rotation must wrap within its row."""
    x = np.zeros(p.slots, dtype=np.int64 if p.exact else np.float64)
    row = p.row_length()
    for lo, n in ((0, INPUT_LENGTH), (row - 4, 4)) + (((row, 4),) if p.exact else ()):
        x[lo:lo + n] = rng.integers(1, p.t, size=n) if p.exact else rng.uniform(-1.0, 1.0, size=n)
    return {"x": x}


def _rotate_steps(name: str) -> BenchOp:
    def build(scheme: str, plain: Plain) -> Program:
        rots, names = _rotations(scheme, EDGE_STEPS[name](plain.row_length()))
        return Program(encrypted("x") + rots, ["cz"], outputs=[f"z{i}" for i in range(len(names))],
                       levels=names[-1:], regions={"cz": names})
    return BenchOp(name, "rotations by steps at the edges of the row", RLWE,
                   lambda scheme: build(scheme, Plain(scheme, 16 if scheme != "ckks" else 8, 17)),  # the shape only
                   lambda p, v, s: {f"z{i}": p.rotate(v["x"], k) for i, k in enumerate(EDGE_STEPS[name](p.row_length()))},
                   gen=_edge_inputs, sized=build)


def _galois_with(key_steps, rot_steps: list[int]) -> BenchOp:
    """keygen_galois timed, then x rotated by `rot_steps` with the new keys; "pow2": the ring's
    full power-of-two set, as fhemark spells it (model/rotations.galois_steps)."""
    def build(scheme: str, plain: Plain | None = None) -> Program:
        rots, names = _rotations(scheme, rot_steps, key="k")
        keys = galois_steps(plain.row_length() if plain else 4, pow2=True) if key_steps == "pow2" else key_steps
        return Program([step("k", "keygen_galois", steps=keys)] + encrypted("x") + rots, ["k"],
                       outputs=[f"z{i}" for i in range(len(names))])
    name = "keygen_galois_signed" if key_steps != "pow2" else "keygen_galois_pow2_composed"
    return BenchOp(name, f"Galois keys {key_steps}, used by rotations {rot_steps}", RLWE, build,
                   lambda p, v, s: {f"z{i}": p.rotate(v["x"], k) for i, k in enumerate(rot_steps)}, group="keygen",
                   sized=build)


def _keygen_public_of_new_secret(scheme: str) -> Program:
    """A public key for a new secret key: encrypt with it, decrypt with that secret key."""
    steps = [step("sk2", "keygen_secret"), step("k", "keygen_public", key="sk2"), step("px", "encode", "x"),
             step("cx", "encrypt_pk", "px", key="k")] + decrypted("cx", key="sk2")
    return Program(steps, ["k"])


def _encrypt_mixed(into: str) -> BenchOp:
    """Every stage timed; a public-key and a secret-key encryption in one region, multiplied."""
    def build(scheme: str) -> Program:
        steps = [step("px", "encode" + into, "x"), step("py", "encode" + into, "y"),
                 step("cx", "encrypt_pk" + into, "px"), step("cy", "encrypt_sk" + into, "py"),
                 step("cz", "mul_relin" + into, "cx", "cy"), step("pz", "decrypt" + into, "cz"),
                 step("z", "decode" + into, "pz")]
        return Program(steps, ["encode", "encrypt", "cz", "pz", "z"], noise=["cz"], sizes=["cz"], levels=["cz"],
                       regions={"encode": ["px", "py"], "encrypt": ["cx", "cy"]})
    return BenchOp("encrypt_mixed" + into, "encode, encrypt (pk and sk in one region), multiply, decrypt, decode"
                   + (", all _into" if into else ""), RLWE, build, lambda p, v, s: p.mul(v["x"], v["y"]),
                   inputs=("x", "y"), group="pipeline")


def _mod_switch_add(scheme: str) -> Program:
    """Both operands a level down (one region), then added."""
    steps = encrypted("x") + encrypted("y") + [step("a", "mod_switch", "cx"), step("b", "mod_switch", "cy"),
                                               step("cz", "add", "a", "b")] + decrypted("cz")
    return Program(steps, ["ms", "cz"], noise=["cz"], sizes=["cz"], levels=["a", "cz"], regions={"ms": ["a", "b"]})


def rlwe_extras(scheme: str, secure: bool, top: int) -> list[BenchOp]:
    """The extra cases of an RLWE scheme whose case chain has levels 0..top."""
    xy = ("x", "y")
    ops = [BenchOp("keygen_public_of_new_secret", "public key of a new secret key", RLWE, _keygen_public_of_new_secret,
                   lambda p, v, s: v["x"], group="keygen"),
           _galois_with([-1, -3, 5], [-1, -3, 5]),
           _galois_with("pow2", [11]),
           BenchOp("keygen_relin_into", "relinearization keys used by mul_relin_into", RLWE,
                   lambda sch: Program([step("k", "keygen_relin")] + encrypted("x") + encrypted("y")
                                       + [step("cz", "mul_relin_into", "cx", "cy", key="k")] + decrypted("cz"), ["k"]),
                   lambda p, v, s: p.mul(v["x"], v["y"]), inputs=xy, group="keygen"),
           _encrypt_mixed(""), _encrypt_mixed("_into"),
           BenchOp("mod_switch_add", "two operands a level down, added", RLWE, _mod_switch_add,
                   lambda p, v, s: p.add(v["x"], v["y"]), inputs=xy, group="pipeline")]
    if not secure:
        # their inputs reach the end of the row (4,100 values at N = 8192): not in the secure file, whose
        # library (TenSEAL) has no rotations
        ops[:0] = [_rotate_steps(name) for name in EDGE_STEPS]
    if scheme == "ckks":
        ops.append(BenchOp("mul_scalar_int", "multiply by an integer scalar", ("ckks",),
                           lambda sch: Program(encrypted("x") + [step("cz", "mul_scalar", "cx", scalar="$s")]
                                               + decrypted("cz"), ["cz"], levels=["cz"]),
                           lambda p, v, s: p.mul(v["x"], s["s"]),
                           scalars=lambda p, r: {"s": int(r.choice([-3, -2, 2, 3]))}))
        if not secure:  # TenSEAL, the secure cases' library, cannot encode below the top level
            below_top = top - 1
            ops.append(BenchOp("encode_level", "encode at the level below the top, encrypt, add to itself", ("ckks",),
                               lambda sch: Program([step("px", "encode", "x", level=below_top), step("cx", "encrypt_pk", "px"),
                                                    step("cz", "add", "cx", "cx")] + decrypted("cz"), ["px"],
                                                   sizes=["cz"], levels=["cx", "cz"]),
                               lambda p, v, s: p.add(v["x"], v["x"])))
    ops.append(_linear_transform_scalar())
    return [o for o in ops if scheme in o.schemes]


def _linear_transform_scalar() -> BenchOp:
    """linear_transform whose diagonal list holds a `$k` (PROTOCOL.md: a list attr may hold `$name`
    scalars), a different k for every sample of the request: the driver reads it per sample and
    makes the Galois keys the routine needs for it."""
    names = ("d0", "d1", "d2")

    def build(scheme: str) -> Program:
        steps = encrypted("x") + [step("cz", "linear_transform", "cx", *names, diagonals=[0, "$k", 3])] + decrypted("cz")
        return Program(steps, ["cz"], noise=["cz"], sizes=["cz"], levels=["cz"])

    def expect(p: Plain, v: dict, s: dict) -> np.ndarray:
        out = None
        for k, d in zip((0, s["k"], 3), names):
            term = p.mul(v[d], p.rotate(v["x"], k))
            out = term if out is None else p.add(out, term)
        return out
    return BenchOp("linear_transform_scalar_diagonal", "linear_transform with diagonals [0, $k, 3], k per sample",
                   RLWE, build, expect, inputs=("x", *names),
                   scalars=lambda p, r: {"k": int(r.choice([1, 2, 5, 6, 7]))})


def _pbs_literal(scheme: str, plain: Plain) -> Program:
    """pbs with a literal table (built once per request) on every input of the message space."""
    lut = [(3 * i + 1) % plain.t for i in range(plain.t)]
    return Program([step("cx", "encrypt_sk", "x"), step("cz", "pbs", "cx", lut=lut), step("z", "decrypt", "cz")],
                   ["cz"], sizes=["cz"])


def _every_gate():
    """A netlist with every gate kind, both constants, a gate reading one wire twice, a mux whose
    selector is also an operand, and an input as a repeated output."""
    b = Builder(3)
    one, zero = b.const(1), b.const(0)
    same, flip, neg, mux = b.and_(0, 0), b.xor(1, one), b.not_(2), b.gate("mux", 0, 1, 2)
    nand, nor = b.gate("nand", same, flip), b.gate("nor", neg, zero)
    xnor = b.gate("xnor", mux, nand)
    return b.build([same, flip, neg, mux, nand, nor, xnor, b.gate("mux", xnor, xnor, zero), 1, 1])


def _same_operand(scheme: str) -> Program:
    """Gates given one ciphertext twice (OpenFHE's binfhe needs a copy there): x xor x, x and x."""
    steps = [step("cx", "encrypt_sk", "x"), step("a", "xor", "cx", "cx"), step("b", "and", "cx", "cx"),
             step("z0", "decrypt", "a"), step("z1", "decrypt", "b")]
    return Program(steps, ["cz"], outputs=["z0", "z1"], sizes=["a"], regions={"cz": ["a", "b"]})


def _netlist_gates() -> BenchOp:
    net = _every_gate()
    program = gate_program(net)
    return BenchOp("netlist_gates", "a netlist of every gate kind as gate steps, one region per depth", ("tfhe_bool",),
                   lambda scheme: program,
                   lambda p, v, s: net.evaluate(np.asarray(v["x"], dtype=np.uint8)).astype(np.uint64),
                   gen=lambda p, r: {"x": r.integers(0, 2, size=net.n_inputs, dtype=np.uint64)})


def bits_extras(scheme: str) -> list[BenchOp]:
    if scheme == "tfhe_bool":
        return [_netlist_gates(), BenchOp("gate_same_operand", "gates reading one ciphertext twice", ("tfhe_bool",),
                                          _same_operand, lambda p, v, s: {"z0": 0 * v["x"], "z1": v["x"]}),
                _netlist_adders()]
    if scheme == "tfhe_shortint":
        return [BenchOp("pbs_literal", "pbs with a literal table on every input", ("tfhe_shortint",),
                        lambda sch: _pbs_literal(sch, Plain(sch, 4, 4)),
                        lambda p, v, s: (3 * v["x"] + 1) % np.uint64(p.t),
                        gen=lambda p, r: {"x": np.arange(p.t, dtype=np.uint64)}, sized=_pbs_literal)]
    circ = Circuit("tfhe_int")
    x, y = circ.encrypted("x"), circ.encrypted("y")
    total = circ.add(x, y)
    below = circ.compare("lt", total, x)
    return [BenchOp("compare_of_sum", "x + y, then [x + y < x] (a comparison of a computed value)", ("tfhe_int",),
                    lambda sch: circ.program(total, below), lambda p, v, s: circ.reference(p, v, total, below),
                    inputs=("x", "y"))]


# A 2-bit adder: inputs a0 a1 b0 b1, outputs s0 s1 carry.
ADDER = [["xor", 4, 0, 2], ["and", 5, 0, 2], ["xor", 6, 1, 3], ["xor", 7, 6, 5], ["and", 8, 1, 3], ["and", 9, 6, 5],
         ["or", 10, 8, 9]]
ADDER_OUTPUTS = [4, 7, 10]


def _adders(count: int):
    """`count` copies of the adder side by side in one netlist: copy i reads inputs 4i .. 4i + 3."""
    b = Builder(4 * count)
    outs = []
    for i in range(count):
        wire = {w: 4 * i + w for w in range(4)}
        for name, out, *args in ADDER:
            wire[out] = b.gate(name, *(wire[a] for a in args))
        outs += [wire[o] for o in ADDER_OUTPUTS]
    return b.build(outs)


def _netlist_adders() -> BenchOp:
    """The adder on all 16 inputs at once (16 adders, one netlist), checked against a + b as well."""
    net = _adders(16)
    bits = np.array([(v >> i) & 1 for v in range(16) for i in range(4)], dtype=np.uint64)

    def expect(p: Plain, v: dict, s: dict) -> np.ndarray:
        got = net.evaluate(np.asarray(v["x"], dtype=np.uint8)).astype(np.uint64)
        sums = [(v_ & 3) + (v_ >> 2) for v_ in range(16)]
        assert got.tolist() == [(a >> i) & 1 for a in sums for i in range(3)], "the adder netlist is not a + b"
        return got
    program = gate_program(net)
    return BenchOp("netlist_adder_all_inputs", "a 2-bit adder on all 16 inputs", ("tfhe_bool",),
                   lambda scheme: program, expect, gen=lambda p, r: {"x": bits})
