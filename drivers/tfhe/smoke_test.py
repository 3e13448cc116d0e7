#!/usr/bin/env python3
"""Smoke test of the TFHE-rs driver: speaks protocol v2 to the built binary
and checks every decrypted result (every copy of a timed region) against plaintext.

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
from fhemark.model.circuits import Builder, Netlist  # noqa: E402  (the orchestrator's circuits and their semantics)
from fhemark.model.circuits.arith import full_adder  # noqa: E402

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
        return self.raw({"v": 2, "id": self.next_id, "type": type_, **fields})

    def raw(self, req):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"driver died (exit {self.p.wait()}) on {req.get('type')}")
        rep = json.loads(line)
        assert rep["v"] == 2 and rep["id"] == req["id"], rep
        return rep

    def ok(self, type_, **fields):
        rep = self.request(type_, **fields)
        if not rep["ok"]:
            raise AssertionError(f"{type_} failed: {rep['error']}")
        return rep["result"]

    def close(self):
        self.ok("shutdown")
        assert self.p.wait(timeout=30) == 0


def region(name, steps):
    return [{"name": name, "steps": list(steps)}]


def binop_program(op, k=1):
    """k copies of: encrypt x.i, y.i -> op -> decrypt z.i; the k ops are one timed region "cz"."""
    steps = []
    for i in range(k):
        steps += [{"out": f"cx.{i}", "op": "encrypt_sk", "args": [f"x.{i}"]},
                  {"out": f"cy.{i}", "op": "encrypt_sk", "args": [f"y.{i}"]}]
    steps += [{"out": f"cz.{i}", "op": op, "args": [f"cx.{i}", f"cy.{i}"]} for i in range(k)]
    steps += [{"out": f"z.{i}", "op": "decrypt", "args": [f"cz.{i}"]} for i in range(k)]
    return {"steps": steps, "timed": region("cz", (f"cz.{i}" for i in range(k))),
            "outputs": [f"z.{i}" for i in range(k)]}


def run_binop(d, sid, op, xs, ys, want, samples=1, copies=1):
    """Runs `copies` copies of op in one region, `samples` times; copy i works on the inputs
    rolled by i, and every copy of every sample is checked. Returns (ns list, result)."""
    xs, ys, want = (np.asarray(v, dtype=np.uint64) for v in (xs, ys, want))
    inputs = {}
    for i in range(copies):
        inputs[f"x.{i}"], inputs[f"y.{i}"] = enc(np.roll(xs, i)), enc(np.roll(ys, i))
    res = d.ok("run", setup_id=sid, program=binop_program(op, copies),
               samples=[{"inputs": inputs} for _ in range(samples)])
    for si, s in enumerate(res["samples"]):
        assert list(s["ns"]) == ["cz"], s["ns"]
        for i in range(copies):
            got = dec(s["outputs"][f"z.{i}"])
            assert np.array_equal(got, np.roll(want, i)), (op, si, i, got.tolist(), np.roll(want, i).tolist())
    return [s["ns"]["cz"] for s in res["samples"]], res


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
    assert caps["library"] == "tfhe-rs" and caps["protocol"] == 2, caps
    print(f"tfhe-rs {caps['library_version']}, threads={caps['threads']}")
    for s in ("tfhe_bool", "tfhe_shortint", "tfhe_int"):
        assert s in caps["schemes"], s
        assert caps["schemes"][s].get("deviations", {}) == {}, caps["schemes"][s]

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
    d.next_id += 1
    rep = d.raw({"v": 1, "id": d.next_id, "type": "capabilities"})
    assert not rep["ok"] and rep["error"]["kind"] == "internal" and "speaks 2" in rep["error"]["message"], rep
    print("  ok  error replies (protocol 1 refused)")

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

    # timed regions are validated before anything runs
    prog = binop_program("and", 3)
    for timed, needle in [
        (region("cz", ["cz.0", "cz.2"]), "not consecutive"),
        (region("cz", ["cz.0", "nope"]), "not a step's out"),
        (region("a", ["cz.0"]) + region("a", ["cz.1"]), "used twice"),
        (region("a", ["cz.0"]) + region("b", ["cz.0"]), "two regions"),
        (["cz.0"], "must be a region"),
    ]:
        rep = d.request("run", setup_id="b", program={**prog, "timed": timed}, samples=[])
        assert not rep["ok"] and rep["error"]["kind"] == "internal" and needle in rep["error"]["message"], rep
    dep = {"steps": [{"out": "cx", "op": "encrypt_sk", "args": ["x"]},
                     {"out": "a", "op": "not", "args": ["cx"]},
                     {"out": "b", "op": "not", "args": ["a"]}],
           "timed": region("r", ["a", "b"]), "outputs": []}
    rep = d.request("run", setup_id="b", program=dep, samples=[{"inputs": {"x": enc([1])}}])
    assert not rep["ok"] and "reads 'a'" in rep["error"]["message"], rep
    print("  ok  bad regions refused (non-consecutive, unknown, duplicate, shared, v1 form, dependent)")

    # keygen timed, then used: proves the new keys work
    res = d.ok("run", setup_id="b", program={"steps": [
        {"out": "k", "op": "keygen", "args": []},
        {"out": "cx", "op": "encrypt_sk", "args": ["x"], "attrs": {"key": "k"}},
        {"out": "cy", "op": "encrypt_sk", "args": ["y"], "attrs": {"key": "k"}},
        {"out": "cz", "op": "xor", "args": ["cx", "cy"], "attrs": {"key": "k"}},
        {"out": "z", "op": "decrypt", "args": ["cz"], "attrs": {"key": "k"}},
    ], "timed": region("k", ["k"]), "outputs": ["z"], "sizes": ["k", "cz"]},
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
        run_binop(d, "b", g, x, y, want)
        print(f"  ok  bool {g} x{L}")
    res = d.ok("run", setup_id="b", program={"steps": [
        {"out": "cx", "op": "encrypt_sk", "args": ["x"]},
        {"out": "cy", "op": "encrypt_sk", "args": ["y"]},
        {"out": "cs", "op": "encrypt_sk", "args": ["s"]},
        {"out": "n", "op": "not", "args": ["cx"]},
        {"out": "m", "op": "mux", "args": ["cs", "cx", "cy"]},
        {"out": "zn", "op": "decrypt", "args": ["n"]},
        {"out": "zm", "op": "decrypt", "args": ["m"]},
    ], "timed": region("n", ["n"]) + region("m", ["m"]), "outputs": ["zn", "zm"]},
        samples=[{"inputs": {"x": enc(x), "y": enc(y), "s": enc(s)}}])
    check(f"bool not x{L}", dec(res["samples"][0]["outputs"]["zn"]), 1 - x)
    check(f"bool mux x{L}", dec(res["samples"][0]["outputs"]["zm"]), np.where(s == 1, x, y))

    # one gate, timed alone: L=1, one copy, several samples
    ns, res = run_binop(d, "b", "and", [1], [1], [1], samples=7)
    timings["bool and, 1 gate (ms)"] = med_ms(ns)
    timings["overhead_ns"] = res["overhead_ns"]
    # 5 independent copies of one gate in one region (every copy checked)
    ns, _ = run_binop(d, "b", "nand", [1, 0, 1, 1, 0], [0, 0, 1, 1, 1], [1, 1, 0, 0, 1], samples=3, copies=5)
    print("  ok  bool nand, 5 copies in one region")
    timings["bool nand, 5 copies of a 5-gate array (ms per gate)"] = med_ms(ns, 25)

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
        {"out": "z", "op": "decrypt", "args": ["s"]}], "timed": region("s", ["s"]), "outputs": ["z"]},
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
    run_binop(d, "s", "short_add", x, y, (x + y) % m, copies=2)
    print("  ok  short_add x8, 2 copies")
    run_binop(d, "s", "short_mul", x, y, (x * y) % m, copies=2)
    print("  ok  short_mul x8, 2 copies")
    lut = [int(v) for v in RNG.integers(0, m, m)]
    lut2 = [int(v) for v in RNG.integers(0, m, m)]
    res = d.ok("run", setup_id="s", program={"steps": [
        {"out": "cx.0", "op": "encrypt_sk", "args": ["x.0"]},
        {"out": "cx.1", "op": "encrypt_sk", "args": ["x.1"]},
        {"out": "cz.0", "op": "pbs", "args": ["cx.0"], "attrs": {"lut": lut}},
        {"out": "cz.1", "op": "pbs", "args": ["cx.1"], "attrs": {"lut": "$lut"}},
        {"out": "z.0", "op": "decrypt", "args": ["cz.0"]},
        {"out": "z.1", "op": "decrypt", "args": ["cz.1"]}],
        "timed": region("cz", ["cz.0", "cz.1"]), "outputs": ["z.0", "z.1"]},
        samples=[{"inputs": {"x.0": enc(np.arange(m)), "x.1": enc(np.arange(m)[::-1])},
                  "scalars": {"lut": lut2}}])
    check("pbs (all inputs)", dec(res["samples"][0]["outputs"]["z.0"]), lut)
    check("pbs ($lut, all inputs reversed)", dec(res["samples"][0]["outputs"]["z.1"]), lut2[::-1])
    timings["shortint pbs (ms per ct)"] = res["samples"][0]["ns"]["cz"] / (2 * m) / 1e6

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
            ns, _ = run_binop(d, f"i{bits}", op, x[:n], y[:n], want[:n])
            print(f"  ok  FheUint{bits} {op} x{n}")
            if bits == 32 and op in ("int_add", "int_gt"):
                ns, _ = run_binop(d, "i32", op, x[1:2], y[1:2], want[1:2], samples=3, copies=2)
                timings[f"FheUint32 {op} (ms, 2 copies per region)"] = med_ms(ns, 2)
            if bits == 32 and op == "int_mul":
                timings["FheUint32 int_mul (ms)"] = med_ms(ns)
    # integer ops under a fresh keygen result (switches the installed server key)
    res = d.ok("run", setup_id="i8", program={"steps": [
        {"out": "k", "op": "keygen", "args": []},
        {"out": "cx", "op": "encrypt_sk", "args": ["x"], "attrs": {"key": "k"}},
        {"out": "cy", "op": "encrypt_sk", "args": ["y"], "attrs": {"key": "k"}},
        {"out": "cz", "op": "int_add", "args": ["cx", "cy"], "attrs": {"key": "k"}},
        {"out": "z", "op": "decrypt", "args": ["cz"], "attrs": {"key": "k"}}],
        "timed": region("k", ["k"]), "outputs": ["z"], "sizes": ["k"]},
        samples=[{"inputs": {"x": enc([200]), "y": enc([100])}}])
    check("FheUint8 keygen + add", dec(res["samples"][0]["outputs"]["z"]), [44])
    timings["int keygen (ms)"] = res["samples"][0]["ns"]["k"] / 1e6
    timings["int keygen server key (bytes)"] = res["sizes_bytes"]["k"]
    run_binop(d, "i8", "int_add", [250], [10], [4])  # back on the setup's keys
    print("  ok  FheUint8 add after key switch back")
    # integer ops of one region must share the one thread-local server key
    two = {"steps": [
        {"out": "k", "op": "keygen", "args": []},
        {"out": "cx", "op": "encrypt_sk", "args": ["x"]},
        {"out": "kx", "op": "encrypt_sk", "args": ["x"], "attrs": {"key": "k"}},
        {"out": "a", "op": "int_add", "args": ["cx", "cx"]},
        {"out": "b", "op": "int_add", "args": ["kx", "kx"], "attrs": {"key": "k"}}],
        "timed": region("r", ["a", "b"]), "outputs": []}
    rep = d.request("run", setup_id="i8", program=two, samples=[{"inputs": {"x": enc([1])}}])
    assert not rep["ok"] and "two server keys" in rep["error"]["message"], rep
    print("  ok  region with two integer server keys refused")

    d.close()
    print(f"\nall checks passed in {time.time() - t_start:.0f}s")
    print("timings (median, 1 thread unless FHEMARK_THREADS says otherwise):")
    for k, v in timings.items():
        print(f"  {k}: {v:.3f}" if isinstance(v, float) else f"  {k}: {v}")


if __name__ == "__main__":
    main()
