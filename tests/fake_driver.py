"""A misbehaving driver for supervision tests: plaintext 'encryption' (identity)
with BFV semantics, plus one failure per operation:
add: correct; sub: wrong result; mul: crashes; square: hangs;
mul_plain: grows past any sane memory limit; add_plain: answers garbage."""

import base64
import json
import sys
import time

import numpy as np

T = 12289


def vec(v):
    return np.frombuffer(base64.b64decode(v["b64"]), dtype="<i8")


def out(a):
    return {"dtype": "i64", "b64": base64.b64encode(np.asarray(a, dtype="<i8").tobytes()).decode()}


OPS = ["encode", "decode", "encrypt_pk", "decrypt", "add", "sub", "mul", "square", "mul_plain", "add_plain"]


def run(req):
    samples = []
    for s in req["samples"]:
        vals = {k: vec(v) for k, v in s["inputs"].items()}
        ns = {}
        for st in req["program"]["steps"]:
            a = [vals[x] for x in st["args"]]
            op = st["op"]
            if op == "mul":
                sys.stderr.write("fake driver: segfault imitation\n")
                sys.stderr.flush()
                sys.exit(139)
            if op == "square":
                time.sleep(3600)
            if op == "mul_plain":
                hog = [bytearray(b"x" * (50 * 2**20)) for _ in range(100)]
                time.sleep(3600)
            if op == "add_plain":
                print("this is not json", flush=True)
                return None
            r = {"add": lambda: (a[0] + a[1]) % T, "sub": lambda: (a[0] + a[1]) % T}.get(op, lambda: a[0])()
            full = np.zeros(2048, dtype=np.int64)
            full[: len(r)] = r
            vals[st["out"]] = full
            if st["out"] in req["program"]["timed"]:
                ns[st["out"]] = 1000 + int(np.random.randint(0, 50))
        samples.append({"ns": ns, "outputs": {o: out(vals[o]) for o in req["program"]["outputs"]}})
    return {"samples": samples, "overhead_ns": 10}


for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "capabilities":
        res = {"protocol": 1, "library": "fake", "library_version": "0", "driver_version": "0", "threads": 1,
               "schemes": {"bfv": {"ops": OPS}}}
    elif req["type"] == "setup":
        p = req["params"]
        res = {"effective": {"N": p["N"], "q_bits": p["q_bits"], "p_bits": p["p_bits"], "log_q": sum(p["q_bits"]),
                             "log_qp": sum(p["q_bits"]) + sum(p["p_bits"]), "t": p["t"], "slots": p["N"]}}
    elif req["type"] == "run":
        res = run(req)
        if res is None:
            continue
    else:
        print(json.dumps({"v": 1, "id": req["id"], "ok": True, "result": {}}), flush=True)
        break
    print(json.dumps({"v": 1, "id": req["id"], "ok": True, "result": res}), flush=True)
