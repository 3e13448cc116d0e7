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
from ..model.ops import RLWE, BenchOp
from ..model.rotations import galois_steps, keyed_steps, spell_steps
from ..model.params import ParamSpec, _validated, resolve
from ..model.semantics import Plain
from .conformance_extras import INPUT_LENGTH, bits_extras, rlwe_extras

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
# The Galois keys every case setup makes: step 1 and the power-of-two set with the row swap /
# conjugation (a rotation without a key of its own is spelled as keyed steps by model/rotations.py,
# as for every job). The files spell them out per ring (`setup.rotations`: N -> steps).
ROTATIONS, POW2 = [1], True
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
MULTI_SAMPLE = {"add", "mul_scalar", "rotate_random", "gate_and", "pbs", "int_add", "netlist_gates",
                "linear_transform_scalar_diagonal"}
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
    if scheme in RLWE:  # every case's setup has the same keys: rotations without their own are spelled by them
        row = plain.row_length()
        program = dataclasses.replace(program, steps=spell_steps(program.steps, row,
                                                     keyed_steps(row, ROTATIONS, POW2)))
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
        for op in rlwe_extras(scheme, secure, len(spec.q_bits) - 1):
            cases.append(_case(f"{scheme}/{op.name}", scheme, op, plain, params, rng, True,
                               samples=SAMPLES if op.name in MULTI_SAMPLE else 1))
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
            **_setup(_rlwe_cases(SECURE_CASE_PARAMS, SECURE_DEEP_CKKS, secure=True), allow_insecure=False)}


def _setup(cases: list[dict], allow_insecure: bool) -> dict:
    """The file's setup (the same keys at every RLWE ring: its Galois steps per N) and its cases."""
    rings = sorted({c["params"]["N"] for c in cases if c["scheme"] in RLWE})
    return {"setup": {"rotations": {str(n): galois_steps(n // 2, ROTATIONS, POW2) for n in rings},
                      "allow_insecure": allow_insecure}, "cases": cases}


def _ties(op: BenchOp) -> BenchOp:
    def gen(p: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        x, y = rng.integers(0, p.t, size=p.slots, dtype=np.uint64), rng.integers(0, p.t, size=p.slots, dtype=np.uint64)
        return {"x": x, "y": np.where(np.arange(p.slots) % 2, y, x)}  # ties in every other element
    return dataclasses.replace(op, gen=gen)


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
        for op in bits_extras(scheme):
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
            **_setup(cases, allow_insecure=True)}


def load(secure: bool = False) -> dict:
    return json.loads(path(secure).read_text())


def capability_snapshot(caps: dict) -> dict:
    """What a driver promises, in the form checked in under protocol/capabilities/: per scheme its ops
    (the cases it must pass) and whether it can run insecure parameters. Its deviation texts have
    one home, the driver's own capabilities.json (static_facts), which its reply must serve."""
    return {"protocol": caps["protocol"], "library": caps["library"],
            **({"memory": caps["memory"]} if caps.get("memory") else {}),  # what a search predicts with (advise/memory.py)
            **({"bootstrapping": caps["bootstrapping"]} if caps.get("bootstrapping") else {}),  # limits.bootstrapping
            "schemes": {name: {"ops": sorted(sc["ops"]),
                               **({"insecure_params": False} if sc.get("limits", {}).get("insecure") is False else {}),
                               **({"limits": sc["limits"]} if sc.get("limits") else {})}  # what a search reads (limits.py)
                        for name, sc in sorted(caps["schemes"].items())}}


def static_facts(library: str) -> dict:
    """The driver's capabilities.json: the static facts of its capabilities reply (PROTOCOL.md), its
    deviation texts among them; the driver adds its ops and what it computes."""
    from .registry import manifests

    return json.loads((manifests()[library].folder / "capabilities.json").read_text())


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
