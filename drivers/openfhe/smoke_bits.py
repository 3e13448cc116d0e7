#!/usr/bin/env python3
"""Smoke test of the OpenFHE driver's `tfhe_bool` scheme (binfhe gates, PROTOCOL-bits.md).

    ~/.cache/fhemark/venv-openfhe/bin/python drivers/openfhe/smoke_bits.py [PRESET ...]

Default presets: STD128_GINX and STD128_LMKCDEY. Per preset: setup (one key generation),
every gate on random bits, mux, k copies of a gate in one timed region, the 2-bit adder
netlist of PROTOCOL-bits.md (plus a netlist with const wires, a repeated wire and a mux), a
timed `keygen` whose key is used afterwards (and a gate run with another key on its
ciphertexts comes out wrong: the gate with {"key": "k"} bootstraps with the timed key), and bad
requests. Everything is checked against plaintext; AND-gate and BTKeyGen times are printed.
Exit 0 when all checks pass, 77 when the driver is not built. About a minute per preset on
two cores (two BTKeyGen per preset).
"""
import base64
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "src")]  # the orchestrator's circuits need numpy only
from smoke_test import PY, Driver, check, regions, FAILS, PASSES  # noqa: E402
from fhemark.model.circuits import Netlist  # noqa: E402

L = 8
ADDER = {"n_inputs": 4,
         "gates": [["xor", 4, 0, 2], ["and", 5, 0, 2], ["xor", 6, 1, 3], ["xor", 7, 6, 5],
                   ["and", 8, 1, 3], ["and", 9, 6, 5], ["or", 10, 8, 9]],
         "outputs": [4, 7, 10]}
# consts, the same wire twice, not, mux, nand/nor/xnor, an input as output (repeated)
MIXED = {"n_inputs": 3,
         "gates": [["const", 10, 1], ["const", 11, 0], ["and", 12, 0, 0], ["xor", 13, 1, 10],
                   ["not", 14, 2], ["mux", 15, 0, 1, 2], ["nand", 16, 12, 13], ["nor", 17, 14, 11],
                   ["xnor", 18, 15, 16], ["mux", 19, 18, 18, 11]],
         "outputs": [12, 13, 14, 15, 16, 17, 18, 19, 1, 1]}

PLAIN = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
         "nand": lambda a, b: 1 - (a & b), "nor": lambda a, b: 1 - (a | b),
         "xnor": lambda a, b: 1 - (a ^ b)}


def u64(a):
    return {"dtype": "u64", "b64": base64.b64encode(np.asarray(a).astype("<u8").tobytes()).decode()}


def un(o):
    assert o["dtype"] == "u64", o
    return np.frombuffer(base64.b64decode(o["b64"]), dtype="<u8").astype(np.int64)


def plain_netlist(nl, bits):
    return Netlist.from_wire(nl).evaluate(np.asarray(bits)).tolist()


def step(out, op, *args, **attrs):
    d = {"out": out, "op": op, "args": list(args)}
    if attrs:
        d["attrs"] = attrs
    return d


def run(d, sid, steps, timed, outputs, inputs, sizes=None, scalars=None):
    prog = {"steps": steps, "timed": regions(timed), "outputs": outputs}
    if sizes:
        prog["sizes"] = sizes
    return d.req(type="run", setup_id=sid, program=prog,
                 samples=[{"inputs": {k: u64(v) for k, v in inputs.items()}, "scalars": scalars or {}}])


def one_preset(d, preset, rng):
    sid = "b-" + preset
    r = d.req(type="setup", setup_id=sid, scheme="tfhe_bool", params={"preset": preset})
    check(preset + " setup", r["ok"], r.get("error", ""))
    if not r["ok"]:
        return
    eff, sz = r["result"]["effective"], r["result"]["sizes_bytes"]
    print("   effective:", {k: eff[k] for k in ("preset", "method", "n", "ring_dim", "q", "Q_bits", "base_g",
                                                 "base_ks", "q_ks", "p_fail")})
    print("   sizes:", sz)
    check(preset + " sizes", sz.get("server_key", 0) > 10**6 and sz.get("ciphertext", 0) > 100)

    x = rng.integers(0, 2, L)
    y = rng.integers(0, 2, L)
    w = rng.integers(0, 2, L)
    enc = [step("cx", "encrypt_sk", "x"), step("cy", "encrypt_sk", "y")]
    for g, f in PLAIN.items():
        r = run(d, sid, enc + [step("cz", g, "cx", "cy"), step("z", "decrypt", "cz")], ["cz"], ["z"],
                {"x": x, "y": y}, sizes=["cz"] if g == "and" else None)
        ok = r["ok"] and np.array_equal(un(r["result"]["samples"][0]["outputs"]["z"]), f(x, y))
        extra = ""
        if r["ok"] and g == "and":
            ns = r["result"]["samples"][0]["ns"]["cz"]
            extra = "AND: %.1f ms per gate (%d gates)" % (ns / L / 1e6, L)
            check(preset + " and size", r["result"]["sizes_bytes"]["cz"] == L * sz["ciphertext"])
        check("%s %s" % (preset, g), ok, extra or r.get("error", ""))
    r = run(d, sid, [step("cx", "encrypt_sk", "x"), step("cz", "not", "cx"), step("z", "decrypt", "cz")],
            ["cz"], ["z"], {"x": x})
    check(preset + " not", r["ok"] and np.array_equal(un(r["result"]["samples"][0]["outputs"]["z"]), 1 - x),
          r.get("error", ""))
    r = run(d, sid, enc + [step("cw", "encrypt_sk", "w"), step("cz", "mux", "cw", "cx", "cy"),
                           step("z", "decrypt", "cz")], ["cz"], ["z"], {"x": x, "y": y, "w": w})
    check(preset + " mux", r["ok"] and np.array_equal(un(r["result"]["samples"][0]["outputs"]["z"]),
                                                      np.where(w == 1, x, y)), r.get("error", ""))
    # gate with the same array twice
    r = run(d, sid, [step("cx", "encrypt_sk", "x"), step("cz", "xor", "cx", "cx"), step("z", "decrypt", "cz")],
            ["cz"], ["z"], {"x": x})
    check(preset + " xor(x, x)", r["ok"] and not un(r["result"]["samples"][0]["outputs"]["z"]).any(),
          r.get("error", ""))
    # k = 3 copies of a one-bit gate in one timed region, every copy checked
    k = 3
    cs = sum([[step("cx.%d" % i, "encrypt_sk", "x.%d" % i), step("cy.%d" % i, "encrypt_sk", "y.%d" % i)]
              for i in range(k)], [])
    cs += [step("cz.%d" % i, "nand", "cx.%d" % i, "cy.%d" % i) for i in range(k)]
    cs += [step("z.%d" % i, "decrypt", "cz.%d" % i) for i in range(k)]
    ins = {("x.%d" if j < k else "y.%d") % (j % k): rng.integers(0, 2, 1) for j in range(2 * k)}
    r = run(d, sid, cs, [{"name": "cz", "steps": ["cz.%d" % i for i in range(k)]}], ["z.%d" % i for i in range(k)],
            ins, sizes=["cz.2"])
    ok = r["ok"] and all(np.array_equal(un(r["result"]["samples"][0]["outputs"]["z.%d" % i]),
                                        PLAIN["nand"](ins["x.%d" % i], ins["y.%d" % i])) for i in range(k))
    check(preset + " nand x3 copies in one region", ok and list(r["result"]["samples"][0]["ns"]) == ["cz"]
          and "cz.2" in r["result"]["sizes_bytes"], r["result"]["samples"][0]["ns"] if r["ok"] else r.get("error"))
    r = run(d, sid, cs, [{"name": "cz", "steps": ["cz.0", "cz.1", "cz.2", "z.0"]}], [], ins)
    check(preset + " dependent step in a region -> internal", not r["ok"] and r["error"]["kind"] == "internal",
          r.get("error", "accepted"))

    # the 2-bit adder of PROTOCOL-bits.md on every input, literal netlist
    for v in range(16):
        bits = [(v >> i) & 1 for i in range(4)]
        r = run(d, sid, [step("cin", "encrypt_sk", "in"), step("s", "netlist", "cin", netlist=ADDER),
                         step("z", "decrypt", "s")], ["s"], ["z"], {"in": bits})
        got = un(r["result"]["samples"][0]["outputs"]["z"]) if r["ok"] else None
        a, b = bits[0] + 2 * bits[1], bits[2] + 2 * bits[3]
        want = [(a + b) & 1, ((a + b) >> 1) & 1, (a + b) >> 2]
        ok = r["ok"] and list(got) == want == plain_netlist(ADDER, bits)
        if not ok or v == 15:
            ns = r["result"]["samples"][0]["ns"]["s"] if r["ok"] else 0
            check("%s netlist adder %s" % (preset, bits), ok,
                  "%.1f ms for 7 gates" % (ns / 1e6) if r["ok"] else r.get("error", ""))
    bits = rng.integers(0, 2, 3)
    r = run(d, sid, [step("cin", "encrypt_sk", "in"), step("s", "netlist", "cin", netlist="$nl"),
                     step("z", "decrypt", "s")], ["s"], ["z"], {"in": bits}, scalars={"nl": MIXED})
    check(preset + " netlist const/mux/$scalar", r["ok"] and list(un(r["result"]["samples"][0]["outputs"]["z"]))
          == plain_netlist(MIXED, bits), r.get("error", ""))
    bad = {"n_inputs": 2, "gates": [["and", 2, 0, 5]], "outputs": [2]}
    r = run(d, sid, [step("cin", "encrypt_sk", "in"), step("s", "netlist", "cin", netlist=bad)], ["s"], [],
            {"in": [0, 1]})
    check(preset + " bad netlist -> internal", not r["ok"] and r["error"]["kind"] == "internal")
    r = run(d, sid, [step("cx", "encrypt_sk", "x")], ["cx"], [], {"x": [0, 2]})
    check(preset + " bit out of range -> internal", not r["ok"] and r["error"]["kind"] == "internal")

    # timed keygen; the new key is used afterwards (a gate bootstraps with its key); the same gate
    # bootstrapped with the setup's key on those ciphertexts gives wrong bits (16 xor bits)
    x16, y16 = rng.integers(0, 2, 16), rng.integers(0, 2, 16)
    r = run(d, sid, [step("k", "keygen"), step("cx", "encrypt_sk", "x", key="k"),
                     step("cy", "encrypt_sk", "y", key="k"), step("cz", "xor", "cx", "cy", key="k"),
                     step("z", "decrypt", "cz", key="k"), step("cw", "xor", "cx", "cy", key="sk"),
                     step("w", "decrypt", "cw", key="k")], ["k"], ["z", "w"], {"x": x16, "y": y16}, sizes=["k"])
    ok = r["ok"] and np.array_equal(un(r["result"]["samples"][0]["outputs"]["z"]), x16 ^ y16)
    check(preset + " keygen (BTKeyGen)", ok, "%.2f s" % (r["result"]["samples"][0]["ns"]["k"] / 1e9)
          if r["ok"] else r.get("error", ""))
    check(preset + " gate after keygen used the timed key (setup key gives garbage)",
          r["ok"] and not np.array_equal(un(r["result"]["samples"][0]["outputs"]["w"]), x16 ^ y16))
    # the setup's keys still work after a keygen
    r = run(d, sid, enc + [step("cz", "or", "cx", "cy"), step("z", "decrypt", "cz")], ["cz"], ["z"],
            {"x": x, "y": y})
    check(preset + " setup key after keygen", r["ok"] and np.array_equal(
        un(r["result"]["samples"][0]["outputs"]["z"]), x | y), r.get("error", ""))
    d.req(type="teardown", setup_id=sid)


def main():
    if not os.path.exists(PY):
        print("openfhe driver not built (%s missing): run drivers/openfhe/build.sh" % PY)
        return 77
    presets = sys.argv[1:] or ["STD128_GINX", "STD128_LMKCDEY"]
    rng = np.random.default_rng(7)
    d = Driver(PY, HERE)
    caps = d.req(type="capabilities")["result"]
    check("capabilities bits", "bits" in caps.get("extensions", []) and "tfhe_bool" in caps["schemes"])
    r = d.req(type="setup", setup_id="bad", scheme="tfhe_bool", params={"preset": "NOPE"})
    check("unknown preset -> invalid_params", not r["ok"] and r["error"]["kind"] == "invalid_params")
    for p in presets:
        one_preset(d, p, rng)
    d.close()
    print("%d passed, %d failed" % (len(PASSES), len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
