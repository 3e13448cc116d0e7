#!/usr/bin/env python3
"""Smoke test of the TFHE-rs driver: speaks the protocol to the built binary
and checks every decrypted result against plaintext.

Usage: python3 drivers/tfhe/smoke_test.py [path/to/fhemark-tfhe]
(default: $FHEMARK_CACHE/bin/fhemark-tfhe). Prints a few timings at the end.
Needs Python 3.9+ and numpy.
"""
import base64
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src"))
from fhemark.circuits import Builder, Netlist  # noqa: E402  (the orchestrator's circuits and their semantics)
from fhemark.circuits.arith import full_adder  # noqa: E402

RNG = np.random.default_rng(20240611)


def default_binary():
    cache = os.environ.get("FHEMARK_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fhemark")
    return os.path.join(cache, "bin", "fhemark-tfhe")


def enc(values):
    a = np.asarray(values, dtype="<u8")
    return {"dtype": "u64", "b64": base64.b64encode(a.tobytes()).decode()}


def dec(v):
    assert v["dtype"] == "u64", v
    return np.frombuffer(base64.b64decode(v["b64"]), dtype="<u8").astype(np.uint64)


class Driver:
    def __init__(self, binary, threads=1):
        env = dict(os.environ, FHEMARK_THREADS=str(threads), RAYON_NUM_THREADS=str(threads))
        self.p = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=env, bufsize=1)
        self.next_id = 0

    def request(self, type_, **fields):
        self.next_id += 1
        req = {"v": 1, "id": self.next_id, "type": type_, **fields}
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"driver died (exit {self.p.wait()}) on {type_}")
        rep = json.loads(line)
        assert rep["v"] == 1 and rep["id"] == self.next_id, rep
        return rep

    def ok(self, type_, **fields):
        rep = self.request(type_, **fields)
        if not rep["ok"]:
            raise AssertionError(f"{type_} failed: {rep['error']}")
        return rep["result"]

    def close(self):
        self.ok("shutdown")
        assert self.p.wait(timeout=30) == 0


def binop_program(op, timed=True):
    """encrypt x, y -> op -> decrypt; times the op."""
    return {"steps": [
        {"out": "cx", "op": "encrypt_sk", "args": ["x"]},
        {"out": "cy", "op": "encrypt_sk", "args": ["y"]},
        {"out": "cz", "op": op, "args": ["cx", "cy"]},
        {"out": "z", "op": "decrypt", "args": ["cz"]},
    ], "timed": ["cz"] if timed else [], "outputs": ["z"]}


def run_binop(d, sid, op, xs, ys, samples=1, iters=1):
    """Runs op on (xs, ys) `samples` times; returns (outputs of the last sample, ns list)."""
    res = d.ok("run", setup_id=sid, program=binop_program(op), iters=iters,
               samples=[{"inputs": {"x": enc(xs), "y": enc(ys)}} for _ in range(samples)])
    outs = [dec(s["outputs"]["z"]) for s in res["samples"]]
    for o in outs[1:]:
        assert np.array_equal(o, outs[0])
    return outs[-1], [s["ns"]["cz"] for s in res["samples"]], res


def check(name, got, want):
    want = np.asarray(want, dtype=np.uint64)
    if not np.array_equal(got, want):
        raise AssertionError(f"{name}: got {got.tolist()} want {want.tolist()}")
    print(f"  ok  {name}")


def ripple_adder(n):
    """n-bit ripple-carry adder from full adders, carry-in a const wire (the driver's const gate
    is exercised too): inputs a (n bits, LSB first), b; outputs n sum bits + carry."""
    b = Builder(2 * n)
    c, outs = b.const(0), []
    for i in range(n):
        s, c = full_adder(b, i, n + i, c)
        outs.append(s)
    return b.build(outs + [c]).wire()


def med_ms(ns, per=1):
    return float(np.median(ns)) / per / 1e6


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else default_binary()
    if not os.path.exists(binary):
        sys.exit(f"no driver binary at {binary}: run drivers/tfhe/build.sh first")
    t_start = time.time()
    d = Driver(binary, threads=int(os.environ.get("FHEMARK_THREADS", "1")))
    timings = {}

    caps = d.ok("capabilities")
    assert caps["library"] == "tfhe-rs" and caps["protocol"] == 1, caps
    print(f"tfhe-rs {caps['library_version']}, threads={caps['threads']}")
    for s in ("tfhe_bool", "tfhe_shortint", "tfhe_int"):
        assert s in caps["schemes"], s

    # ---- errors never kill the driver
    for type_, fields, kind in [
        ("setup", {"setup_id": "bad", "scheme": "bfv", "params": {}}, "unsupported"),
        ("setup", {"setup_id": "bad", "scheme": "tfhe_bool", "params": {"preset": "NOPE"}}, "invalid_params"),
        ("setup", {"setup_id": "bad", "scheme": "tfhe_int", "params": {"bits": 7}}, "invalid_params"),
        ("run", {"setup_id": "missing", "program": {"steps": []}, "samples": []}, "internal"),
        ("frobnicate", {}, "unsupported"),
    ]:
        rep = d.request(type_, **fields)
        assert not rep["ok"] and rep["error"]["kind"] == kind, (type_, rep)
    print("  ok  error replies")

    # ---- tfhe_bool
    t0 = time.time()
    r = d.ok("setup", setup_id="b", scheme="tfhe_bool", params={"preset": "default"})
    eff = r["effective"]
    print(f"tfhe_bool setup {time.time() - t0:.1f}s: {eff['preset']} n={eff['lwe_dimension']} "
          f"N={eff['polynomial_size']} k={eff['glwe_dimension']} p_fail=2^{eff['p_fail']} sizes={r['sizes_bytes']}")

    bad = d.request("run", setup_id="b", program={"steps": [
        {"out": "c", "op": "encrypt_sk", "args": ["x"]},
        {"out": "n", "op": "netlist", "args": ["c"],
         "attrs": {"netlist": {"n_inputs": 1, "gates": [["and", 1, 0, 9]], "outputs": [1]}}}]},
        samples=[{"inputs": {"x": enc([1])}}])
    assert not bad["ok"], bad
    bad = d.request("run", setup_id="b", program={"steps": [
        {"out": "c", "op": "encrypt_sk", "args": ["x"]}]}, samples=[{"inputs": {"x": enc([2])}}])
    assert not bad["ok"], bad
    print("  ok  bad netlist / bad bit refused")

    # keygen timed, then used: proves the new keys work
    res = d.ok("run", setup_id="b", program={"steps": [
        {"out": "k", "op": "keygen", "args": []},
        {"out": "cx", "op": "encrypt_sk", "args": ["x"], "attrs": {"key": "k"}},
        {"out": "cy", "op": "encrypt_sk", "args": ["y"], "attrs": {"key": "k"}},
        {"out": "cz", "op": "xor", "args": ["cx", "cy"], "attrs": {"key": "k"}},
        {"out": "z", "op": "decrypt", "args": ["cz"], "attrs": {"key": "k"}},
    ], "timed": ["k"], "outputs": ["z"], "sizes": ["k", "cz"]},
        samples=[{"inputs": {"x": enc([0, 1, 0, 1]), "y": enc([0, 0, 1, 1])}}])
    check("bool keygen + xor", dec(res["samples"][0]["outputs"]["z"]), [0, 1, 1, 0])
    timings["bool keygen (ms)"] = res["samples"][0]["ns"]["k"] / 1e6

    L = 16
    x = RNG.integers(0, 2, L)
    y = RNG.integers(0, 2, L)
    s = RNG.integers(0, 2, L)
    ref = {"and": x & y, "or": x | y, "xor": x ^ y, "nand": 1 - (x & y), "nor": 1 - (x | y),
           "xnor": 1 - (x ^ y)}
    for g, want in ref.items():
        got, ns, _ = run_binop(d, "b", g, x, y)
        check(f"bool {g} x{L}", got, want)
    res = d.ok("run", setup_id="b", program={"steps": [
        {"out": "cx", "op": "encrypt_sk", "args": ["x"]},
        {"out": "cy", "op": "encrypt_sk", "args": ["y"]},
        {"out": "cs", "op": "encrypt_sk", "args": ["s"]},
        {"out": "n", "op": "not", "args": ["cx"]},
        {"out": "m", "op": "mux", "args": ["cs", "cx", "cy"]},
        {"out": "zn", "op": "decrypt", "args": ["n"]},
        {"out": "zm", "op": "decrypt", "args": ["m"]},
    ], "timed": ["n", "m"], "outputs": ["zn", "zm"]},
        samples=[{"inputs": {"x": enc(x), "y": enc(y), "s": enc(s)}}])
    check(f"bool not x{L}", dec(res["samples"][0]["outputs"]["zn"]), 1 - x)
    check(f"bool mux x{L}", dec(res["samples"][0]["outputs"]["zm"]), np.where(s == 1, x, y))

    # one gate, timed alone: L=1, iters=1, several samples
    _, ns, res = run_binop(d, "b", "and", [1], [1], samples=7)
    timings["bool and, 1 gate (ms)"] = med_ms(ns)
    timings["overhead_ns"] = res["overhead_ns"]
    _, ns, _ = run_binop(d, "b", "nand", [1], [0], samples=3, iters=5)
    timings["bool nand, 1 gate, iters=5 (ms per gate)"] = med_ms(ns, 5)

    # 4-bit ripple-carry adder netlist
    net = ripple_adder(4)
    samples, wants = [], []
    for _ in range(4):
        a, b = (int(v) for v in RNG.integers(0, 16, 2))
        bits = [(a >> i) & 1 for i in range(4)] + [(b >> i) & 1 for i in range(4)]
        want = Netlist.from_wire(net).evaluate(np.asarray(bits)).tolist()
        assert sum(bit << i for i, bit in enumerate(want)) == a + b
        samples.append({"inputs": {"x": enc(bits)}})
        wants.append(want)
    res = d.ok("run", setup_id="b", program={"steps": [
        {"out": "c", "op": "encrypt_sk", "args": ["x"]},
        {"out": "s", "op": "netlist", "args": ["c"], "attrs": {"netlist": "$net"}},
        {"out": "z", "op": "decrypt", "args": ["s"]}], "timed": ["s"], "outputs": ["z"]},
        samples=[{**sm, "scalars": {"net": net}} for sm in samples])
    for i, (sm, want) in enumerate(zip(res["samples"], wants)):
        check(f"netlist 4-bit adder #{i}", dec(sm["outputs"]["z"]), want)
    timings["netlist 4-bit ripple adder, 21 gates (ms)"] = med_ms([sm["ns"]["s"] for sm in res["samples"]])

    # ---- tfhe_shortint
    t0 = time.time()
    r = d.ok("setup", setup_id="s", scheme="tfhe_shortint", params={"preset": "default"})
    eff = r["effective"]
    m = eff["message_modulus"]
    print(f"tfhe_shortint setup {time.time() - t0:.1f}s: {eff['preset']} msg={m} carry={eff['carry_modulus']} "
          f"p_fail=2^{eff['p_fail']}")
    x = RNG.integers(0, m, 8)
    y = RNG.integers(0, m, 8)
    got, ns, _ = run_binop(d, "s", "short_add", x, y)
    check("short_add x8", got, (x + y) % m)
    got, ns, _ = run_binop(d, "s", "short_mul", x, y)
    check("short_mul x8", got, (x * y) % m)
    lut = [int(v) for v in RNG.integers(0, m, m)]
    res = d.ok("run", setup_id="s", program={"steps": [
        {"out": "cx", "op": "encrypt_sk", "args": ["x"]},
        {"out": "cz", "op": "pbs", "args": ["cx"], "attrs": {"lut": lut}},
        {"out": "z", "op": "decrypt", "args": ["cz"]}], "timed": ["cz"], "outputs": ["z"]},
        samples=[{"inputs": {"x": enc(np.arange(m))}}])
    check("pbs (all inputs)", dec(res["samples"][0]["outputs"]["z"]), lut)
    timings["shortint pbs (ms per ct)"] = res["samples"][0]["ns"]["cz"] / m / 1e6

    # ---- tfhe_int
    for bits, L in ((8, 3), (32, 2)):
        t0 = time.time()
        r = d.ok("setup", setup_id=f"i{bits}", scheme="tfhe_int", params={"preset": "default", "bits": bits})
        eff = r["effective"]
        print(f"tfhe_int{bits} setup {time.time() - t0:.1f}s: {eff['preset']} blocks={eff['num_blocks']} "
              f"sizes={r['sizes_bytes']}")
        mod = 1 << bits
        x = RNG.integers(0, mod, L, dtype=np.uint64)
        y = RNG.integers(0, mod, L, dtype=np.uint64)
        y[0] = x[0]  # exercise equality
        xo, yo = x.astype(object), y.astype(object)
        ref = {
            "int_add": (xo + yo) % mod, "int_sub": (xo - yo) % mod, "int_mul": (xo * yo) % mod,
            "int_gt": xo > yo, "int_ge": xo >= yo, "int_lt": xo < yo, "int_eq": xo == yo,
            "int_min": np.minimum(x, y), "int_max": np.maximum(x, y),
        }
        for op, want in ref.items():
            want = np.asarray(want, dtype=object).astype(np.uint64)
            n = 1 if (bits == 32 and op == "int_mul") else L  # FheUint32 mul: ~20 s per op on 1 thread
            got, ns, _ = run_binop(d, f"i{bits}", op, x[:n], y[:n])
            check(f"FheUint{bits} {op} x{n}", got, want[:n])
            if bits == 32 and op in ("int_add", "int_gt"):
                _, ns, _ = run_binop(d, "i32", op, x[1:2], y[1:2], samples=3)
                timings[f"FheUint32 {op} (ms)"] = med_ms(ns)
            if bits == 32 and op == "int_mul":
                timings["FheUint32 int_mul (ms)"] = med_ms(ns)
    # integer ops under a fresh keygen result (switches the installed server key)
    res = d.ok("run", setup_id="i8", program={"steps": [
        {"out": "k", "op": "keygen", "args": []},
        {"out": "cx", "op": "encrypt_sk", "args": ["x"], "attrs": {"key": "k"}},
        {"out": "cy", "op": "encrypt_sk", "args": ["y"], "attrs": {"key": "k"}},
        {"out": "cz", "op": "int_add", "args": ["cx", "cy"], "attrs": {"key": "k"}},
        {"out": "z", "op": "decrypt", "args": ["cz"], "attrs": {"key": "k"}}],
        "timed": ["k"], "outputs": ["z"]},
        samples=[{"inputs": {"x": enc([200]), "y": enc([100])}}])
    check("FheUint8 keygen + add", dec(res["samples"][0]["outputs"]["z"]), [44])
    timings["int keygen (ms)"] = res["samples"][0]["ns"]["k"] / 1e6
    got, _, _ = run_binop(d, "i8", "int_add", [250], [10])  # back on the setup's keys
    check("FheUint8 add after key switch back", got, [4])

    d.close()
    print(f"\nall checks passed in {time.time() - t_start:.0f}s")
    print("timings (median, 1 thread unless FHEMARK_THREADS says otherwise):")
    for k, v in timings.items():
        print(f"  {k}: {v:.3f}" if isinstance(v, float) else f"  {k}: {v}")


if __name__ == "__main__":
    main()
