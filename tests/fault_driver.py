"""A protocol-v2 driver that is correct (plaintext 'encryption': the identity, BFV semantics mod T)
except for the faults named on its command line, one per operation: `fault_driver.py OP=FAULT ...`.

Faults, each happening while the driver runs OP (a primitive of the program it was sent):
  crash      exits with status 139 and a line on stderr
  exit0      exits with status 0, answering nothing
  hang       never answers
  oom        allocates memory until it is stopped
  stray      prints one line that is not JSON (a library's warning on stdout), then answers correctly
  garbage    answers with a line that is not JSON instead of the reply
  wrong_id   answers, but under another request's id
  partial    writes half a reply and exits
  wrong      answers a wrong result (every slot off by one)
  notime     answers without the time of its timed region
  negative   answers a negative time
  zero       answers a time of 0 ns (what a driver that forgot to read its clock would send)
  binary     writes bytes that are not UTF-8 on stdout (a line) and stderr (200 KB, more than a pipe
             holds), then answers correctly
  binerr     writes 200 KB of bytes that are not UTF-8 on stderr only, then answers correctly
  wrong_second  correct in the first process started, wrong (as `wrong`) in every later one: the
             processes claim the file named by FAULT_CLAIM (throughput mode's k processes)
Special names: `start=crash` exits before reading anything; `caps=v1` answers capabilities as protocol v1;
`setup=refuse` refuses every setup with invalid_params.
"""

import base64
import json
import os
import sys
import time

import numpy as np
from kept_pools import pool_values

T = 12289
OPS = ["encode", "decode", "encrypt_pk", "encrypt_sk", "decrypt", "add", "sub", "mul", "mul_relin", "square",
       "relinearize", "negate"]
FAULTS = dict(a.split("=", 1) for a in sys.argv[1:])
COUNTS: dict[str, int] = {}  # how often each op ran in this process
SETUPS: set[str] = set()     # the setups this process made


def _later_process() -> bool:
    """False for the first process to claim FAULT_CLAIM, True for every one after it."""
    claim = os.environ.get("FAULT_CLAIM")
    if not claim:
        return False
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL))
        return False
    except FileExistsError:
        return True


LATER = _later_process() if "wrong_second" in FAULTS.values() else False


class Stop(Exception):
    """The fault already wrote what it writes: no reply."""


def vec(v):
    return np.frombuffer(base64.b64decode(v["b64"]), dtype="<i8")


def enc(a):
    return {"dtype": "i64", "b64": base64.b64encode(np.asarray(a, dtype="<i8").tobytes()).decode()}


def send(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def fault(op: str, req_id: int) -> str | None:
    kind = FAULTS.get(op)
    if kind is None:
        return None
    COUNTS[op] = COUNTS.get(op, 0) + 1
    if kind == "crash":
        sys.stderr.write(f"fault driver: {op} crashed (imitation)\n")
        sys.stderr.flush()
        os._exit(139)
    if kind == "exit0":
        os._exit(0)
    if kind == "hang":
        time.sleep(3600)
    if kind == "oom":
        hog = []
        while True:
            hog.append(bytearray(b"x" * (20 * 2**20)))
            time.sleep(0.005)
    if kind == "stray" and COUNTS[op] == 1:
        print(f"WARNING: {op} is slow on this CPU (a library talking on stdout)", flush=True)
        return None
    if kind == "garbage":
        print("this is not json", flush=True)
        raise Stop
    if kind in ("binary", "binerr") and COUNTS[op] == 1:
        sys.stderr.buffer.write(b"\xff\xfe\xfa not utf-8 \x80\n" * 12000)
        sys.stderr.flush()
        if kind == "binary":
            sys.stdout.buffer.write(b"\xff\xfe library noise \x80\n")
            sys.stdout.flush()
        return None
    if kind == "wrong_second":
        return "wrong" if LATER else None
    if kind == "partial":
        sys.stdout.write('{"v": 2, "id": ')
        sys.stdout.flush()
        os._exit(1)
    return kind


def value(op: str, a: list, kind: str | None):
    if op == "add":
        r = (a[0] + a[1]) % T
    elif op == "sub":
        r = (a[0] - a[1]) % T
    elif op in ("mul", "mul_relin"):
        r = (a[0] * a[1]) % T
    elif op == "square":
        r = (a[0] * a[0]) % T
    elif op == "negate":
        r = (-a[0]) % T
    else:
        r = a[0]
    return (r + 1) % T if kind == "wrong" else r



def run(req) -> dict:
    prog = req["program"]
    regions = {r["name"]: r["steps"] for r in prog["timed"]}
    timed_steps = {s: name for name, steps in regions.items() for s in steps}
    samples = []
    notime = negative = zero = False
    pool = pool_values(req, vec, lambda st, pool: value(st["op"], [pool[x] for x in st["args"]], None))
    for s in req["samples"]:
        vals = {k: vec(v) for k, v in s["inputs"].items()} | pool
        scalars = s.get("scalars", {})
        ns: dict[str, int] = {}
        for st in prog["steps"]:
            # The fault of an op strikes where it is measured: an `add` that only sums two pool
            # ciphertexts into another op's input is no `add` job.
            kind = fault(st["op"], req["id"]) if st["out"] in timed_steps else None
            notime |= kind == "notime"
            negative |= kind == "negative"
            zero |= kind == "zero"
            args = [vals[scalars[x[1:]] if x.startswith("$") else x] for x in st["args"]]
            vals[st["out"]] = value(st["op"], args, kind)
            if st["out"] in timed_steps:
                name = timed_steps[st["out"]]
                ns[name] = ns.get(name, 0) + 1000
        if notime:
            ns.pop(next(iter(ns)), None)
        if negative:
            ns = {k: -v for k, v in ns.items()}
        if zero:
            ns = {k: 0 for k in ns}
        samples.append({"ns": ns, "outputs": {o: enc(vals[o]) for o in prog["outputs"]}})
    return {"samples": samples, "overhead_ns": 10}


def main() -> None:
    if FAULTS.get("start") == "crash":
        sys.stderr.write("fault driver: cannot start (imitation)\n")
        sys.exit(3)
    for line in sys.stdin:
        req = json.loads(line)
        rid, kind = req["id"], req["type"]
        if kind == "capabilities":
            v = 1 if FAULTS.get("caps") == "v1" else 2
            send({"v": v, "id": rid, "ok": True,
                  "result": {"protocol": v, "library": "fault", "library_version": "0", "driver_version": "0",
                             "threads": 1, "schemes": {"bfv": {"ops": OPS}}}})
        elif kind == "setup":
            if FAULTS.get("setup") == "refuse":
                send({"v": 2, "id": rid, "ok": False, "error": {"kind": "invalid_params", "message": "no such set"}})
                continue
            p = req["params"]
            SETUPS.add(req["setup_id"])
            send({"v": 2, "id": rid, "ok": True,
                  "result": {"effective": {"N": p["N"], "q_primes": [(1 << b) - 1 for b in p["q_bits"]],  # b bits
                                           "p_primes": [(1 << b) - 1 for b in p["p_bits"]], "t": p["t"], "slots": p["N"]}}})
        elif kind == "run":
            if req["setup_id"] not in SETUPS:  # as every real driver: a run needs its setup's keys
                send({"v": 2, "id": rid, "ok": False, "error": {"kind": "internal", "message": "unknown setup_id"}})
                continue
            try:
                result = run(req)
            except Stop:
                continue
            wrong_id = any(FAULTS.get(st["op"]) == "wrong_id" for st in req["program"]["steps"])
            send({"v": 2, "id": rid + 1 if wrong_id else rid, "ok": True, "result": result})
        else:
            send({"v": 2, "id": rid, "ok": True, "result": {}})
            break


if __name__ == "__main__":
    main()
