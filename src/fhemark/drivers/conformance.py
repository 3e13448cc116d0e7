"""Conformance cases: fixed inputs -> expected decrypted outputs, for every
benchmark operation and scheme, generated from the same programs and plaintext
semantics the benchmarks use. `protocol/conformance/cases.json` is this
module's output (`python -m fhemark.drivers.conformance`); a test keeps them equal.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import zlib
from pathlib import Path

import numpy as np

from ..locations import project_root
from ..model.apps.builder import Circuit
from ..model.catalog import CATALOG, INTO, MICRO, lookup
from ..model.circuits import Builder
from ..model.ops import RLWE, BenchOp, Program, decrypted, encrypted, step
from ..model.params import ParamSpec, _validated, resolve
from ..model.semantics import Plain

# Small, INSECURE parameters (explicitly: conformance checks values, not speed).
CASE_PARAMS = {
    "bfv": ParamSpec(N=2048, q_bits=[36, 36], p_bits=[37], t=12289),
    "bgv": ParamSpec(N=2048, q_bits=[36, 36], p_bits=[37], t=12289),
    "ckks": ParamSpec(N=2048, q_bits=[45, 30, 30], p_bits=[45], scale_bits=30),
}
# The same cases at a secure common chain (the c8192 preset's), for drivers whose library cannot be
# told to accept insecure parameters (TenSEAL builds SEAL with its 128-bit check, always).
SECURE_CASE_PARAMS = {
    "bfv": ParamSpec(N=8192, q_bits=[45, 45, 45], p_bits=[60], t=786433),
    "bgv": ParamSpec(N=8192, q_bits=[45, 45, 45], p_bits=[60], t=786433),
    "ckks": ParamSpec(N=8192, q_bits=[50, 40, 40], p_bits=[60], scale_bits=40),
}
# A degree-7 polynomial in logarithmic depth needs 3 levels (OpenFHE's EvalPoly 4: the coefficient
# products take one more); the CKKS case chain has 2.
DEEP_CKKS = ParamSpec(N=2048, q_bits=[45, 30, 30, 30, 30], p_bits=[45], scale_bits=30)
SECURE_DEEP_CKKS = ParamSpec(N=16384, q_bits=[50] + [40] * 7, p_bits=[60], scale_bits=40)  # the c16384 chain
# The Galois keys every case setup makes (rotations without a key of their own are composed).
SETUP = {"rotations": [1], "rotations_pow2": True}
INPUT_LENGTH = 8
CKKS_TOLERANCE = 1e-3
# Bit schemes: the library's default set; small integers and circuits.
BITS_CASES = {
    "tfhe_bool": ("default", 2, ["multiadd_3x4", "compare_4"]),
    "tfhe_shortint": ("default", 4, []),
    "tfhe_int": ({"preset": "default", "bits": 8}, 1 << 8, ["multiadd_3x8", "compare_8"]),
}


def path(secure: bool = False) -> Path:
    return project_root() / "protocol" / "conformance" / ("cases-secure.json" if secure else "cases.json")


def _sparse(v: np.ndarray) -> dict:
    idx = np.flatnonzero(v)
    vals = [int(x) for x in v[idx]] if v.dtype.kind in "iu" else v[idx].tolist()
    return {"slots": int(v.size), "nonzero": [[int(i), x] for i, x in zip(idx, vals)]}


def dense(sparse: dict) -> np.ndarray:
    kind = np.float64 if any(isinstance(x, float) for _, x in sparse["nonzero"]) else np.uint64
    out = np.zeros(sparse["slots"], dtype=kind)
    for i, x in sparse["nonzero"]:
        out[i] = x
    return out


COPIES = 3  # every op that may be repeated in a timed region is also checked as 3 copies in one region
SAMPLES = 3  # these ops' single-copy cases run 3 samples in one request, each with its own inputs and scalars
MULTI_SAMPLE = {"add", "mul_scalar", "rotate_random", "gate_and", "pbs", "int_add", "netlist_gates"}
# Comparisons get inputs with ties (y = x in every other element): x > y and x >= y differ only there.
TIES = {"int_gt", "int_ge", "int_lt", "int_eq", "int_min", "int_max"}
# A second integer width: the driver's code for another radix size (16 bits: 8 blocks of 2 bits).
WIDER_INT = ({"preset": "default", "bits": 16}, 1 << 16, ["int_add", "int_gt"])


def _head(v: np.ndarray) -> np.ndarray:
    """The part of a padded input vector the case file keeps: INPUT_LENGTH values, or up to the last
    nonzero one where an op's inputs reach further (row ends, the second BFV/BGV row)."""
    nz = np.flatnonzero(v)
    return v[:max(INPUT_LENGTH, int(nz[-1]) + 1 if nz.size else 0)]


def _draw(op, plain: Plain, rng: np.random.Generator, copies: int) -> tuple[dict, dict, dict]:
    """Fresh inputs and scalars for every copy, and every output's expected value."""
    suffix = (lambda n, i: f"{n}.{i}") if copies > 1 else (lambda n, i: n)
    inputs, scalars, expected = {}, {}, {}
    for i in range(copies):
        if op.gen:
            vecs = op.gen(plain, rng)
        else:
            vecs = {n: plain.random(rng, INPUT_LENGTH if not plain.words else None) for n in op.inputs}
        if not plain.exact:  # short decimals keep the file readable
            vecs = {n: np.round(v, 3) for n, v in vecs.items()}
        sc = op.scalars(plain, rng)
        if isinstance(sc.get("s"), float):
            sc["s"] = round(sc["s"], 3)
        for n, v in vecs.items():
            inputs[suffix(n, i)] = [int(x) for x in v] if plain.words else _head(v).tolist()
        scalars.update({suffix(n, i): x for n, x in sc.items()})
        for n, want in op.expected(plain, vecs, sc).items():
            want = np.asarray(want, dtype=np.uint64) if plain.words else want
            expected[suffix(n, i)] = _sparse(want)
    return inputs, scalars, expected


def _case(name: str, scheme: str, op, plain: Plain, params, rng: np.random.Generator, insecure: bool,
          copies: int = 1, samples: int = 1) -> dict:
    """One case: the op's program (as `copies` copies in one timed region), fresh inputs per copy,
    and every output's expected value; `samples` > 1 adds `more_samples`, each with its own inputs,
    scalars and expected values, sent in the same request."""
    program = op.build(scheme, plain).replicate(copies)
    inputs, scalars, expected = _draw(op, plain, rng, copies)
    case = {"name": name + (f"#{copies}" if copies > 1 else ""), "scheme": scheme, "op": op.name,
            "insecure": insecure, "params": params.wire(), "program": program.wire(), "inputs": inputs,
            "scalars": scalars, "expected": expected, "tolerance": 0 if plain.exact else CKKS_TOLERANCE}
    if samples > 1:  # from a generator of their own: the other cases' inputs stay as they were
        more = np.random.default_rng([20261129, zlib.crc32(case["name"].encode())])
        case["more_samples"] = [dict(zip(("inputs", "scalars", "expected"), _draw(op, plain, more, copies)))
                                for _ in range(samples - 1)]
    return case


def _encode_like() -> BenchOp:
    """encode's `like` attr: c encoded at the level and exact scale of x * y after its rescale
    (Delta^2 / q, one level down), then added to it: what Horner's rule does at every step. One
    copy only: a copy's `like` would have to be renamed with it, and Program.replicate renames
    only key/from/to."""
    circ = Circuit("ckks")
    prod = circ.rescaled(circ.mul(circ.encrypted("x"), circ.encrypted("y")))
    out = circ.add_plain(prod, circ.plaintext_like("c", prod))
    return BenchOp("encode_like", "encode like a ciphertext, then add it", ("ckks",),
                   lambda scheme: circ.program(out), lambda p, v, s: circ.reference(p, v, out), inputs=("x", "y", "c"))


def _routines(scheme: str) -> list[BenchOp]:
    """The library routines of native variants (PROTOCOL.md, "Library routines") on 8-slot inputs:
    windows and diagonals that reach past the inputs into the zero padding, a non-power-of-two
    rotation among the diagonals, and per-sample coefficients (`$name` in a list attr)."""
    def one(name: str, inputs: tuple[str, ...], build, scalars=None) -> BenchOp:
        circ = Circuit(scheme, native=True)
        out = build(circ)
        return BenchOp(name, f"library routine {name}", (scheme,), lambda s: circ.program(out),
                       lambda p, v, sc: circ.reference(p, {**v, **sc}, out), inputs=inputs,
                       **({"scalars": scalars} if scalars else {}))

    ops = [one("inner_sum", ("x",), lambda c: c.inner_sum(c.encrypted("x"), 4)),
           one("inner_product", ("x", "y"), lambda c: c.inner_product(c.encrypted("x"), c.encrypted("y"), 4)),
           one("linear_transform", ("x", "d0", "d1", "d3"),
               lambda c: c.linear_transform(c.encrypted("x"), {0: "d0", 1: "d1", 3: "d3"}))]
    if scheme == "ckks":
        for deg in (3, 7):
            coeffs = [f"a{i}" for i in range(deg + 1)]
            ops.append(one(f"poly_eval_{deg}", ("x",), lambda c, coeffs=coeffs: c.poly_eval(c.encrypted("x"), coeffs),
                           lambda p, r, coeffs=coeffs: {a: round(float(r.uniform(-1, 1)), 3) for a in coeffs}))
    return ops


# -- what the drivers' own smoke tests used to check, as cases -------------------------------------

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
    """keygen_galois timed, then x rotated by `rot_steps` with the new keys."""
    def build(scheme: str) -> Program:
        rots, names = _rotations(scheme, rot_steps, key="k")
        return Program([step("k", "keygen_galois", steps=key_steps)] + encrypted("x") + rots, ["k"],
                       outputs=[f"z{i}" for i in range(len(names))])
    name = "keygen_galois_signed" if key_steps != "pow2" else "keygen_galois_pow2_composed"
    return BenchOp(name, f"Galois keys {key_steps}, used by rotations {rot_steps}", RLWE, build,
                   lambda p, v, s: {f"z{i}": p.rotate(v["x"], k) for i, k in enumerate(rot_steps)}, group="keygen")


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


def _rlwe_extras(scheme: str, secure: bool) -> list[BenchOp]:
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
            below_top = len(CASE_PARAMS["ckks"].q_bits) - 2
            ops.append(BenchOp("encode_level", "encode at the level below the top, encrypt, add to itself", ("ckks",),
                               lambda sch: Program([step("px", "encode", "x", level=below_top), step("cx", "encrypt_pk", "px"),
                                                    step("cz", "add", "cx", "cx")] + decrypted("cz"), ["px"],
                                                   sizes=["cz"], levels=["cx", "cz"]),
                               lambda p, v, s: p.add(v["x"], v["x"])))
    return [o for o in ops if scheme in o.schemes]


def _rlwe_cases(params_by_scheme: dict[str, ParamSpec], deep: ParamSpec, secure: bool = False) -> list[dict]:
    cases = []
    for scheme, spec in params_by_scheme.items():
        params = _validated(spec, scheme, "conformance")
        plain = Plain(scheme, params.slots(scheme), params.t)
        rng = np.random.default_rng(20261122)
        for name in MICRO + INTO:
            op = CATALOG[name]
            if scheme not in op.schemes:
                continue
            cases.append(_case(f"{scheme}/{name}", scheme, op, plain, params, rng, True,
                               samples=SAMPLES if name in MULTI_SAMPLE else 1))
            if op.repeatable(op.program(scheme)):
                cases.append(_case(f"{scheme}/{name}", scheme, op, plain, params, rng, True, COPIES))
        for op in _routines(scheme):
            at, on = params, plain
            if op.name.startswith("poly_eval"):
                at = _validated(deep, scheme, "conformance")
                on = Plain(scheme, at.slots(scheme), at.t)
            cases.append(_case(f"{scheme}/{op.name}", scheme, op, on, at, np.random.default_rng(20261125), True))
            cases.append(_case(f"{scheme}/{op.name}", scheme, op, on, at, np.random.default_rng(20261126), True,
                               COPIES))
        rng = np.random.default_rng(20261127)
        for op in _rlwe_extras(scheme, secure):
            cases.append(_case(f"{scheme}/{op.name}", scheme, op, plain, params, rng, True))
    params = _validated(params_by_scheme["ckks"], "ckks", "conformance")
    cases.append(_case("ckks/encode_like", "ckks", _encode_like(), Plain("ckks", params.slots("ckks")), params,
                       np.random.default_rng(20261124), True))
    return cases


FIELDS = ("a name ending in #3 runs three copies of the op in one timed region; more_samples: further samples "
          "sent in the same request, each with its own inputs, scalars and expected outputs")


def generate_secure() -> dict:
    """The RLWE cases at SECURE_CASE_PARAMS, for drivers that refuse insecure parameters."""
    return {"version": 2, "note": "the RLWE cases at a secure common chain (c8192), for libraries that cannot run "
                                  "insecure parameters; " + FIELDS,
            "setup": {**SETUP, "allow_insecure": False},
            "cases": _rlwe_cases(SECURE_CASE_PARAMS, SECURE_DEEP_CKKS, secure=True)}


def _ties(op: BenchOp) -> BenchOp:
    def gen(p: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        x, y = rng.integers(0, p.t, size=p.slots, dtype=np.uint64), rng.integers(0, p.t, size=p.slots, dtype=np.uint64)
        return {"x": x, "y": np.where(np.arange(p.slots) % 2, y, x)}  # ties in every other element
    return dataclasses.replace(op, gen=gen)


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
    program = Program([step("cx", "encrypt_sk", "x"), step("cz", "netlist", "cx", netlist="$net"),
                       step("z", "decrypt", "cz")], ["cz"], sizes=["cz"])
    return BenchOp("netlist_gates", "a netlist of every gate kind, given as a per-sample $scalar", ("tfhe_bool",),
                   lambda scheme: program,
                   lambda p, v, s: net.evaluate(np.asarray(v["x"], dtype=np.uint8)).astype(np.uint64),
                   scalars=lambda p, r: {"net": net.wire()},
                   gen=lambda p, r: {"x": r.integers(0, 2, size=net.n_inputs, dtype=np.uint64)})


def _bits_extras(scheme: str) -> list[BenchOp]:
    if scheme == "tfhe_bool":
        return [_netlist_gates(), BenchOp("gate_same_operand", "gates reading one ciphertext twice", ("tfhe_bool",),
                                          _same_operand, lambda p, v, s: {"z0": 0 * v["x"], "z1": v["x"]})]
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


def _bits_case(scheme: str, name: str, op: BenchOp, plain: Plain, params, rng, prefix: str = "") -> list[dict]:
    """The op's case (MULTI_SAMPLE: several samples) and its copies case; with a prefix (a width), the first only."""
    if name in TIES:
        op = _ties(op)
    out = [_case(f"{scheme}/{prefix}{name}", scheme, op, plain, params, rng, False,
                 samples=SAMPLES if name in MULTI_SAMPLE and not prefix else 1)]
    if name in MICRO and op.repeatable(op.program(scheme)) and not prefix:
        out.append(_case(f"{scheme}/{prefix}{name}", scheme, op, plain, params, rng, False, COPIES))
    return out


def generate() -> dict:
    cases = _rlwe_cases(CASE_PARAMS, DEEP_CKKS)
    for scheme, (spec, modulus, workloads) in BITS_CASES.items():
        params = resolve(spec, scheme)
        plain = Plain(scheme, 4, modulus)
        rng = np.random.default_rng(20261123)
        names = [n for n in MICRO if scheme in CATALOG[n].schemes] + workloads
        for name in names:
            cases += _bits_case(scheme, name, lookup(name, scheme), plain, params, rng)
        for op in _bits_extras(scheme):
            cases.append(_case(f"{scheme}/{op.name}", scheme, op, plain, params, rng, False,
                               samples=SAMPLES if op.name in MULTI_SAMPLE else 1))
    spec, modulus, names = WIDER_INT
    params = resolve(spec, "tfhe_int")
    rng = np.random.default_rng(20261128)
    for name in names:
        cases += _bits_case("tfhe_int", name, lookup(name, "tfhe_int"), Plain("tfhe_int", 4, modulus), params, rng,
                            prefix=f"bits{spec['bits']}/")
    return {"version": 2, "note": "RLWE cases use insecure parameters on purpose: they check values, not speed; "
                                  + FIELDS,
            "setup": {**SETUP, "allow_insecure": True}, "cases": cases}


def load(secure: bool = False) -> dict:
    return json.loads(path(secure).read_text())


def capability_snapshot(caps: dict) -> dict:
    """What a driver promises, in the form checked in under protocol/capabilities/."""
    return {"protocol": caps["protocol"], "library": caps["library"],
            "schemes": {name: {"ops": sorted(sc["ops"]), "deviations": dict(sorted(sc.get("deviations", {}).items())),
                               **({"insecure_params": False} if sc.get("limits", {}).get("insecure") is False else {})}
                        for name, sc in sorted(caps["schemes"].items())}}


def write_snapshot(library: str) -> Path:
    """Ask the built driver for its capabilities and check them in."""
    from .registry import manifests
    from .supervise import Driver

    drv = Driver(manifests()[library])
    try:
        snap = capability_snapshot(drv.request("capabilities"))
    finally:
        drv.stop()
    out = project_root() / "protocol" / "capabilities" / f"{library}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(snap, indent=1) + "\n")
    return out


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--snapshot":
        for lib in sys.argv[2:]:
            print(write_snapshot(lib))
        sys.exit(0)
    texts = {path(secure): json.dumps(gen(), indent=1) + "\n" for secure, gen in ((False, generate), (True, generate_secure))}
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        sys.exit(0 if all(p.exists() and p.read_text() == t for p, t in texts.items()) else 1)
    for p, t in texts.items():
        p.write_text(t)
