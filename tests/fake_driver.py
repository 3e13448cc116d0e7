"""A misbehaving driver for supervision tests: plaintext 'encryption' (identity)
with BFV semantics, protocol v2, plus one failure per operation:
add, rotate_rows, rotate_columns: correct; sub: wrong result; mul: crashes; square: hangs;
mul_plain: grows past any sane memory limit; add_plain: answers garbage;
mul_scalar: right except in the first of several copies in a region (the copy a
driver that decrypts only the last copy would never look at); square_relin: gives
no time for its region; keygen_galois: makes the keys of positive steps only, and a
rotation without its key returns zeros."""

import base64
import json
import sys
import time

import numpy as np
from kept_pools import pool_values

T = 12289
N = 2048


def vec(v):
    return np.frombuffer(base64.b64decode(v["b64"]), dtype="<i8")


def out(a):
    return {"dtype": "i64", "b64": base64.b64encode(np.asarray(a, dtype="<i8").tobytes()).decode()}


OPS = ["encode", "decode", "encrypt_pk", "decrypt", "add", "sub", "mul", "square", "mul_plain", "add_plain",
       "mul_scalar", "square_relin", "keygen_galois", "rotate_rows", "rotate_columns"]


def full(r):
    f = np.zeros(N, dtype=np.int64)
    f[: len(r)] = r
    return f


def rotate(x, k, keys):
    if keys is not None and k not in keys:
        return np.zeros(N, dtype=np.int64)
    return np.roll(x.reshape(2, -1), -k, axis=1).reshape(-1)


def step_value(st, vals, scalars, copy_index):
    a = [vals[scalars[x[1:]] if x.startswith("$") else x] for x in st["args"]]
    attrs = {k: scalars[v[1:]] if isinstance(v, str) and v.startswith("$") else v
             for k, v in st.get("attrs", {}).items()}
    keys = vals.get(attrs["key"]) if "key" in attrs else None
    op = st["op"]
    if op == "mul":
        sys.stderr.write("fake driver: segfault imitation\n")
        sys.stderr.flush()
        sys.exit(139)
    if op == "square":
        time.sleep(3600)
    if op == "mul_plain":
        hog = [bytearray(b"x" * (50 * 2**20)) for _ in range(100)]  # noqa: F841
        time.sleep(3600)
    if op == "add":
        return (a[0] + a[1]) % T
    if op == "sub":
        return (a[0] + a[1]) % T
    if op == "mul_scalar":
        right = (a[0] * int(attrs["scalar"])) % T
        return (right + 1) % T if copy_index == 0 else right
    if op == "square_relin":
        return (a[0] * a[0]) % T
    if op == "keygen_galois":
        steps = attrs["steps"]
        made = [1 << i for i in range(10)] if steps == "pow2" else steps
        return {int(k) for k in made if int(k) > 0} | ({"swap"} if steps == "pow2" else set())
    if op == "rotate_rows":
        return rotate(a[0], int(attrs["steps"]), keys)
    if op == "rotate_columns":
        return a[0].reshape(2, -1)[::-1].reshape(-1) if keys is None or "swap" in keys else np.zeros(N, np.int64)
    return full(a[0])



def run(req):
    prog = req["program"]
    first = {r["steps"][0]: r for r in prog["timed"]}
    samples = []
    pool = pool_values(req, vec, lambda st, pool: step_value(st, pool, {}, None))
    for s in req["samples"]:
        vals = {k: vec(v) for k, v in s["inputs"].items()}
        scalars = s.get("scalars", {})
        vals.update(pool)
        ns = {}
        steps = prog["steps"]
        i = 0
        while i < len(steps):
            region = first.get(steps[i]["out"])
            batch = steps[i: i + len(region["steps"])] if region else [steps[i]]
            for j, st in enumerate(batch):
                if st["op"] == "add_plain":
                    print("this is not json", flush=True)
                    return None
                vals[st["out"]] = step_value(st, vals, scalars, j if len(batch) > 1 else None)
            if region and batch[0]["op"] != "square_relin":
                ns[region["name"]] = 1000 * len(batch) + int(np.random.randint(0, 50))
            i += len(batch)
        samples.append({"ns": ns, "outputs": {o: out(vals[o]) for o in prog["outputs"]}})
    warm = sum(bool(st.get("discard")) for st in prog["steps"])
    return {"samples": samples, "overhead_ns": 10, **({"notes": [f"{warm} warm-up step(s)"]} if warm else {})}


for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "capabilities":
        res = {"protocol": 2, "library": "fake", "library_version": sys.argv[1] if len(sys.argv) > 1 else "0",
               "driver_version": "0", "threads": 1,
               "schemes": {"bfv": {"ops": OPS}}}
    elif req["type"] == "setup":
        p = req["params"]
        res = {"effective": {"N": p["N"], "q_primes": [(1 << b) - 1 for b in p["q_bits"]],  # b bits each
                             "p_primes": [(1 << b) - 1 for b in p["p_bits"]], "t": p["t"], "slots": p["N"]}}
    elif req["type"] == "run":
        res = run(req)
        if res is None:
            continue
    else:
        print(json.dumps({"v": 2, "id": req["id"], "ok": True, "result": {}}), flush=True)
        break
    print(json.dumps({"v": 2, "id": req["id"], "ok": True, "result": res}), flush=True)
