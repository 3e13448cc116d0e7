"""Conformance cases: fixed inputs -> expected decrypted outputs, for every
benchmark operation and scheme, generated from the same programs and plaintext
semantics the benchmarks use. `protocol/conformance/cases.json` is this
module's output (`python -m fhemark.conformance`); a test keeps them equal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from .locations import project_root
from .catalog import CATALOG, MICRO, lookup
from .params import ParamSpec, _validated, resolve
from .semantics import Plain

# Small, INSECURE parameters (explicitly: conformance checks values, not speed).
CASE_PARAMS = {
    "bfv": ParamSpec(N=2048, q_bits=[36, 36], p_bits=[37], t=12289),
    "bgv": ParamSpec(N=2048, q_bits=[36, 36], p_bits=[37], t=12289),
    "ckks": ParamSpec(N=2048, q_bits=[45, 30, 30], p_bits=[45], scale_bits=30),
}
INPUT_LENGTH = 8
CKKS_TOLERANCE = 1e-3
# Bit schemes: the library's default set; small integers and circuits.
BITS_CASES = {
    "tfhe_bool": ("default", 2, ["multiadd_3x4", "compare_4"]),
    "tfhe_shortint": ("default", 4, []),
    "tfhe_int": ({"preset": "default", "bits": 8}, 1 << 8, ["multiadd_3x8", "compare_8"]),
}


def path() -> Path:
    return project_root() / "protocol" / "conformance" / "cases.json"


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


def generate() -> dict:
    cases = []
    for scheme, spec in CASE_PARAMS.items():
        params = _validated(spec, scheme, "conformance")
        plain = Plain(scheme, params.slots(scheme), params.t)
        rng = np.random.default_rng(20261122)
        for name in MICRO:
            op = CATALOG[name]
            if scheme not in op.schemes:
                continue
            vecs = {n: plain.random(rng, INPUT_LENGTH) for n in op.inputs}
            if not plain.exact:  # short decimals keep the file readable
                vecs = {n: np.round(v, 3) for n, v in vecs.items()}
            scalars = op.scalars(plain, rng)
            if isinstance(scalars.get("s"), float):
                scalars["s"] = round(scalars["s"], 3)
            cases.append({
                "name": f"{scheme}/{name}", "scheme": scheme, "op": name, "insecure": True,
                "params": params.wire(), "program": op.program(scheme).wire(),
                "inputs": {n: v[:INPUT_LENGTH].tolist() for n, v in vecs.items()}, "scalars": scalars,
                "expected": {"z": _sparse(op.expect(plain, vecs, scalars))},
                "tolerance": 0 if plain.exact else CKKS_TOLERANCE,
            })
    for scheme, (spec, modulus, workloads) in BITS_CASES.items():
        params = resolve(spec, scheme)
        plain = Plain(scheme, 4, modulus)
        rng = np.random.default_rng(20261123)
        names = [n for n in MICRO if scheme in CATALOG[n].schemes] + workloads
        for name in names:
            op = lookup(name, scheme)
            vecs = op.gen(plain, rng) if op.gen else {n: plain.random(rng) for n in op.inputs}
            scalars = op.scalars(plain, rng)
            cases.append({
                "name": f"{scheme}/{name}", "scheme": scheme, "op": name, "insecure": False,
                "params": params.wire(), "program": op.program(scheme).wire(),
                "inputs": {n: [int(x) for x in v] for n, v in vecs.items()}, "scalars": scalars,
                "expected": {"z": _sparse(np.asarray(op.expect(plain, vecs, scalars), dtype=np.uint64))},
                "tolerance": 0,
            })
    return {"version": 1, "note": "RLWE cases use insecure parameters on purpose: they check values, not speed",
            "setup": {"rotations": [1], "rotations_pow2": True, "allow_insecure": True}, "cases": cases}


def load() -> dict:
    return json.loads(path().read_text())


if __name__ == "__main__":
    text = json.dumps(generate(), indent=1) + "\n"
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        sys.exit(0 if path().read_text() == text else 1)
    path().write_text(text)
