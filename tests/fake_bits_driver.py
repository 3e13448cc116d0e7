"""A plaintext tfhe_bool driver (protocol v2 + bits) for security-gate tests: 'encryption' is the
identity, gates are numpy's, and its setup reports the facts of OpenFHE's binfhe STD128 set, which
the library calls 128-bit and the estimator puts at about 123 bits (tests/test_security_used.py)."""

import base64
import json
import sys

import numpy as np
from kept_pools import pool_values

FACTS = {"preset": "STD128_GINX", "security_bits_target": 128, "lwe_dimension": 554, "polynomial_size": 1024,
         "lwe_problems": [{"name": "LWE (n=554)", "n": 554, "log_q": 15, "secret": "ternary", "noise_std": 3.19},
                          {"name": "RLWE (N=1024)", "n": 1024, "log_q": 26.999977996801817, "secret": "ternary",
                           "noise_std": 3.19, "samples": 1024}]}
GATES = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
OPS = ["keygen", "encrypt_sk", "decrypt", "not", *GATES]


def vec(v):
    return np.frombuffer(base64.b64decode(v["b64"]), dtype="<u8" if v["dtype"] == "u64" else "<i8").astype(np.uint64)


def out(a):
    return {"dtype": "u64", "b64": base64.b64encode(np.asarray(a, dtype="<u8").tobytes()).decode()}


def value(st, vals):
    a = [vals[x] for x in st["args"]]
    if st["op"] in GATES:
        return GATES[st["op"]](a[0], a[1])
    if st["op"] == "not":
        return 1 - a[0]
    return a[0] if a else np.zeros(0, dtype=np.uint64)  # encrypt_sk, decrypt: the identity; keygen: nothing


def run(req):
    prog = req["program"]
    regions = {r["steps"][0]: r["name"] for r in prog["timed"]}
    pool = pool_values(req, vec, value)
    samples = []
    for s in req["samples"]:
        vals = {k: vec(v) for k, v in s["inputs"].items()} | pool
        ns = {}
        for st in prog["steps"]:
            vals[st["out"]] = value(st, vals)
            if st["out"] in regions:
                ns[regions[st["out"]]] = 1000
        samples.append({"ns": ns, "outputs": {o: out(vals[o]) for o in prog["outputs"]}})
    return {"samples": samples, "overhead_ns": 10}


for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "capabilities":
        res = {"protocol": 2, "library": "fakebits", "library_version": "0", "driver_version": "0", "threads": 1,
               "extensions": ["bits"], "schemes": {"tfhe_bool": {"ops": OPS}}}
    elif req["type"] == "setup":
        res = {"effective": FACTS}
    elif req["type"] == "run":
        res = run(req)
    else:
        print(json.dumps({"v": 2, "id": req["id"], "ok": True, "result": {}}), flush=True)
        break
    print(json.dumps({"v": 2, "id": req["id"], "ok": True, "result": res}), flush=True)
