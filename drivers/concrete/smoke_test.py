#!/usr/bin/env python3
"""Smoke test of the Concrete driver: every primitive it lists on 8-bit integers, checked against
plaintext (every copy of a timed region), chained additions (a sum of three, as multiadd), a timed
keygen whose keys then add, and the refusals.

Run with the driver's venv (or any Python with numpy):
    ~/.cache/fhemark/venv-concrete/bin/python drivers/concrete/smoke_test.py [bits]
Exit status 0 when every check passes; 77 when the driver is not built. One compile of the 8-bit
module and three key generations: about 20-30 s on 2 cores.
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python_shared"))
from smoke_client import FAILS, PASSES, Driver, check, dec, step, venv_python  # noqa: E402
from jsonl_driver import vec_out  # noqa: E402

PY = venv_python("concrete")
RNG = np.random.default_rng(20261123)
REF = {"int_add": lambda x, y, m: (x + y) % m,
       "int_lt": lambda x, y, m: (x < y).astype(np.uint64), "int_gt": lambda x, y, m: (x > y).astype(np.uint64)}


def u64(a):
    # u64 on the wire, as the orchestrator sends bit-scheme inputs: the shared vec_out writes i64 (same bytes below 2^63)
    return dict(vec_out(np.asarray(a, dtype=np.int64)), dtype="u64")


def main():
    if not os.path.exists(PY):
        print("concrete driver not built (%s missing): run drivers/concrete/build.sh" % PY)
        return 77
    bits = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    mod = 1 << bits
    d = Driver(PY, HERE)
    cap = d.req(type="capabilities")
    res = cap["result"]
    check("capabilities", cap["ok"] and res["library"] == "concrete" and res["protocol"] == 2
          and res["threads"] == int(os.environ.get("FHEMARK_THREADS", "1")), (res.get("library_version"), res["threads"]))
    sc = res["schemes"].get("tfhe_int", {})
    ops = set(sc.get("ops", []))
    check("tfhe_int only, ops", sorted(res["schemes"]) == ["tfhe_int"] and set(REF) | {"keygen", "encrypt_sk", "decrypt"} == ops,
          sorted(ops))
    check("deviations name listed ops", set(sc.get("deviations", {})) <= ops)

    rep = d.req(type="setup", setup_id="bad", scheme="tfhe_bool", params={"preset": "default"})
    check("tfhe_bool unsupported", not rep["ok"] and rep["error"]["kind"] == "unsupported", rep.get("error"))
    rep = d.req(type="setup", setup_id="bad", scheme="tfhe_int", params={"preset": "default", "bits": 12})
    check("bits 12 invalid", not rep["ok"] and rep["error"]["kind"] == "invalid_params", rep.get("error"))
    rep = d.req(type="setup", setup_id="bad", scheme="tfhe_int", params={"preset": "NOPE", "bits": 8})
    check("unknown preset invalid", not rep["ok"] and rep["error"]["kind"] == "invalid_params", rep.get("error"))

    t0 = time.time()
    rep = d.req(type="setup", setup_id="s", scheme="tfhe_int", params={"preset": "default", "bits": bits})
    eff = rep["result"]["effective"] if rep["ok"] else {}
    check("setup", rep["ok"] and eff.get("bits") == bits and eff.get("num_blocks") == bits // 2
          and eff.get("security_bits_target") == 128 and eff.get("bootstrap_keys"),
          rep.get("error") or {k: eff.get(k) for k in ("preset", "p_fail", "compile_s", "keygen_s")})
    print("    setup %.1f s; keys: %s" % (time.time() - t0, eff.get("bootstrap_keys")))
    if not rep["ok"]:
        d.close()
        return 1
    sizes = rep["result"]["sizes_bytes"]
    check("sizes", all(sizes.get(k, 0) > 0 for k in ("client_key", "server_key", "ciphertext")), sizes)

    def run(steps, timed, outputs, inputs, sizes=(), n=1):
        prog = {"steps": steps, "timed": [t if isinstance(t, dict) else {"name": t, "steps": [t]} for t in timed],
                "outputs": outputs, "noise": [], "sizes": list(sizes), "levels": []}
        return d.req(type="run", setup_id="s", program=prog,
                     samples=[{"inputs": {k: u64(v) for k, v in inputs.items()}} for _ in range(n)])

    def verify(name, rep, wants):
        if not rep["ok"]:
            check(name, False, rep["error"])
            return None
        ok = True
        for smp in rep["result"]["samples"]:
            for o, want in wants.items():
                got = dec(smp["outputs"][o]).astype(np.uint64)
                ok = ok and got.shape == want.shape and bool(np.all(got == want))
        ns = [sum(smp["ns"].values()) for smp in rep["result"]["samples"]]
        check(name, ok, "%.3f s" % (np.median(ns) / 1e9))
        return rep["result"]

    x = RNG.integers(0, mod, 3, dtype=np.uint64)
    y = RNG.integers(0, mod, 3, dtype=np.uint64)
    y[1] = x[1]  # an equal pair
    enc = [step("cx", "encrypt_sk", "x"), step("cy", "encrypt_sk", "y")]
    verify("encrypt_sk", run(enc[:1] + [step("z", "decrypt", "cx")], ["cx"], ["z"], {"x": x}), {"z": x})
    verify("decrypt", run(enc[:1] + [step("z", "decrypt", "cx")], ["z"], ["z"], {"x": x}), {"z": x})
    for op, f in REF.items():
        r = verify(op, run(enc + [step("cz", op, "cx", "cy"), step("z", "decrypt", "cz")], ["cz"], ["z"],
                           {"x": x, "y": y}, sizes=["cz"]), {"z": f(x, y, mod)})
        if op == "int_add" and r:
            check("size of an array of 3", r["sizes_bytes"].get("cz", 0) == 3 * sizes["ciphertext"], r["sizes_bytes"])
            check("notes", any("table lookups" in n for n in r["notes"]), r["notes"])

    # three copies in one region, every copy checked
    steps, ins, wants = [], {}, {}
    for i in range(3):
        a, b = RNG.integers(0, mod, 1, dtype=np.uint64), RNG.integers(0, mod, 1, dtype=np.uint64)
        ins.update({"x.%d" % i: a, "y.%d" % i: b})
        wants["z.%d" % i] = (a < b).astype(np.uint64)
        steps += [step("cx.%d" % i, "encrypt_sk", "x.%d" % i), step("cy.%d" % i, "encrypt_sk", "y.%d" % i)]
    steps += [step("cz.%d" % i, "int_lt", "cx.%d" % i, "cy.%d" % i) for i in range(3)]
    steps += [step("z.%d" % i, "decrypt", "cz.%d" % i) for i in range(3)]
    verify("int_lt#3", run(steps, [{"name": "cz", "steps": ["cz.0", "cz.1", "cz.2"]}], list(wants), ins), wants)

    # a sum of three, one timed region per addition (the multiadd_3x<bits> program), then a comparison of a sum
    w = [RNG.integers(0, mod, 1, dtype=np.uint64) for _ in range(3)]
    steps = [step("c%d" % i, "encrypt_sk", "w%d" % i) for i in range(3)]
    steps += [step("s1", "int_add", "c0", "c1"), step("s2", "int_add", "s1", "c2"), step("z", "decrypt", "s2"),
              step("l", "int_lt", "s2", "c0"), step("zl", "decrypt", "l")]
    total = (w[0] + w[1] + w[2]) % mod
    verify("chained adds (two regions), lt of a sum", run(steps, ["s1", "s2"], ["z", "zl"], {"w%d" % i: w[i] for i in range(3)}),
           {"z": total, "zl": (total < w[0]).astype(np.uint64)})

    # key generation timed, then the new keys encrypt, add and decrypt
    steps = [step("k", "keygen"), step("cx", "encrypt_sk", "x", key="k"), step("cy", "encrypt_sk", "y", key="k"),
             step("cz", "int_add", "cx", "cy", key="k"), step("z", "decrypt", "cz", key="k")]
    r = verify("keygen, then its keys add", run(steps, ["k"], ["z"], {"x": x, "y": y}, sizes=["k"]),
               {"z": (x + y) % mod})
    check("keygen size", bool(r) and r["sizes_bytes"].get("k", 0) > 1_000_000, r and r["sizes_bytes"])
    # a ciphertext under the new keys does not decrypt under the setup's
    steps = [step("k", "keygen"), step("cx", "encrypt_sk", "x", key="k"), step("z", "decrypt", "cx")]
    rep = run(steps, ["k"], ["z"], {"x": x})
    check("keygen makes other keys", rep["ok"] and not np.array_equal(dec(rep["result"]["samples"][0]["outputs"]["z"]), x))

    # refusals
    for op in ("int_mul", "int_sub", "int_eq"):
        rep = run(enc + [step("cz", op, "cx", "cy"), step("z", "decrypt", "cz")], ["cz"], ["z"], {"x": x, "y": y})
        check(op + " unsupported", not rep["ok"] and rep["error"]["kind"] == "unsupported", rep.get("error"))
    rep = run(enc + [step("l", "int_lt", "cx", "cy"), step("cz", "int_add", "l", "cy"), step("z", "decrypt", "cz")],
              ["cz"], ["z"], {"x": x, "y": y})
    check("a comparison bit into int_add unsupported", not rep["ok"] and rep["error"]["kind"] == "unsupported",
          rep.get("error"))
    rep = run(enc + [step("c1", "int_add", "cx", "cy"), step("c2", "int_add", "c1", "cy"), step("z", "decrypt", "c2")],
              [{"name": "r", "steps": ["c1", "c2"]}], ["z"], {"x": x, "y": y})
    check("region reading its own step", not rep["ok"] and rep["error"]["kind"] == "internal", rep.get("error"))
    rep = run([step("cx", "encrypt_sk", "x"), step("z", "decrypt", "cx")], ["cx"], ["z"], {"x": np.array([mod])})
    check("input out of range", not rep["ok"] and rep["error"]["kind"] == "internal", rep.get("error"))
    d.close()
    print("%d passed, %d failed" % (len(PASSES), len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
