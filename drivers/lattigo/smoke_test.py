#!/usr/bin/env python3
"""Smoke test of the Lattigo driver: speaks protocol v1 to the built binary and
checks every primitive it lists against plain Python references.

Run:  python3 drivers/lattigo/smoke_test.py   (builds the driver if missing)
Binary: $FHEMARK_LATTIGO_BIN, else ${FHEMARK_CACHE:-${XDG_CACHE_HOME:-~/.cache}/fhemark}/bin/fhemark-lattigo
Parameters are small and insecure on purpose (N = 2048): this checks values,
not speed. Standard library only.
"""

import base64
import json
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
N = 2048
T = 12289  # prime, 1 mod 4096
ROW = N // 2
CK_SLOTS = N // 2
CK_TOL = 1e-3

BFV_PARAMS = {"N": N, "q_bits": [36, 36, 36], "p_bits": [37], "t": T, "scale_bits": None,
              "secret": "ternary", "sigma": 3.2}
CKKS_PARAMS = {"N": N, "q_bits": [45, 30, 30], "p_bits": [45], "t": None, "scale_bits": 30,
               "secret": "ternary", "sigma": 3.2}


def binary_path() -> Path:
    if os.environ.get("FHEMARK_LATTIGO_BIN"):
        return Path(os.environ["FHEMARK_LATTIGO_BIN"])
    cache = os.environ.get("FHEMARK_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fhemark")
    return Path(cache) / "bin" / "fhemark-lattigo"


def vec_i64(xs):
    return {"dtype": "i64", "b64": base64.b64encode(struct.pack(f"<{len(xs)}q", *xs)).decode()}


def vec_f64(xs):
    return {"dtype": "f64", "b64": base64.b64encode(struct.pack(f"<{len(xs)}d", *xs)).decode()}


def unvec(v):
    raw = base64.b64decode(v["b64"])
    fmt = "q" if v["dtype"] == "i64" else "d"
    return list(struct.unpack(f"<{len(raw) // 8}{fmt}", raw))


class Driver:
    def __init__(self, path):
        env = dict(os.environ, FHEMARK_THREADS=os.environ.get("FHEMARK_THREADS", "1"))
        self.p = subprocess.Popen([str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, cwd=HERE, env=env)
        self.next_id = 0

    def raw(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline()
        if not out:
            raise RuntimeError("driver died: " + self.p.stderr.read()[-2000:])
        return json.loads(out)

    def send(self, type_, **fields):
        self.next_id += 1
        rep = self.raw(json.dumps({"v": 1, "id": self.next_id, "type": type_, **fields}))
        assert rep["id"] == self.next_id, rep
        return rep

    def ok(self, type_, **fields):
        rep = self.send(type_, **fields)
        if not rep["ok"]:
            raise AssertionError(f"{type_} failed: {rep['error']}")
        return rep["result"]

    def close(self):
        rep = self.send("shutdown")
        assert rep["ok"] and rep["result"] == {}, rep
        self.p.stdin.close()
        assert self.p.wait(timeout=30) == 0


# ---- references (PROTOCOL.md semantics) ----

def pad(xs, n):
    return list(xs) + [0] * (n - len(xs))


def rot_rows(x, k):
    out = []
    for r in range(2):
        row = x[r * ROW:(r + 1) * ROW]
        out += [row[(c + k) % ROW] for c in range(ROW)]
    return out


def swap_rows(x):
    return x[ROW:] + x[:ROW]


def rot_ckks(x, k):
    return [x[(i + k) % CK_SLOTS] for i in range(CK_SLOTS)]


FAILS = []
PASSES = []


def check(name, got, want, tol):
    if tol == 0:
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        ok = len(got) == len(want) and not bad
        detail = f"{len(bad)} slots differ, first {bad[:3]}: got {[got[i] for i in bad[:3]]} want {[want[i] for i in bad[:3]]}" if bad else f"len {len(got)} != {len(want)}"
    else:
        err = max(abs(g - w) for g, w in zip(got, want)) if len(got) == len(want) else float("inf")
        ok = err <= tol
        detail = f"max error {err}"
    (PASSES if ok else FAILS).append(name)
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else "  " + detail))


def pipeline(op, args, attrs=None, pre=None, post=None, dec_attrs=None, timed=None):
    """encode/encrypt x (and y), apply op, decrypt, decode."""
    steps = [{"out": "px", "op": "encode", "args": ["x"]},
             {"out": "cx", "op": "encrypt_pk", "args": ["px"]},
             {"out": "py", "op": "encode", "args": ["y"]},
             {"out": "cy", "op": "encrypt_pk", "args": ["py"]}]
    steps += pre or []
    steps.append({"out": "cz", "op": op, "args": args, "attrs": attrs or {}})
    steps += post or []
    last = steps[-1]["out"]
    steps += [{"out": "pz", "op": "decrypt", "args": [last], "attrs": dec_attrs or {}},
              {"out": "z", "op": "decode", "args": ["pz"]}]
    return {"steps": steps, "timed": timed or ["cz"], "outputs": ["z"],
            "noise": [], "sizes": ["cz"], "levels": ["cz"]}


def run_prog(d, sid, prog, inputs, scalars=None, iters=1):
    return d.ok("run", setup_id=sid, program=prog, iters=iters,
                samples=[{"inputs": inputs, "scalars": scalars or {}}])


def test_bgv_family(d, scheme, ops):
    sid = "s-" + scheme
    res = d.ok("setup", setup_id=sid, scheme=scheme, params=BFV_PARAMS, rotations=[1, 5],
               rotations_pow2=True, allow_insecure=True)
    eff = res["effective"]
    assert eff["q_bits"] == [36, 36, 36] and eff["p_bits"] == [37] and eff["t"] == T, eff
    assert eff["slots"] == N and eff["levels"] == 2, eff
    print(f"     {scheme} setup: {json.dumps(eff)}")
    rng = random.Random(7)
    x = [rng.randrange(T) for _ in range(N)]
    y = [rng.randrange(T) for _ in range(N - 100)]  # shorter: zero padded
    xp, yp = x, pad(y, N)
    inputs = {"x": vec_i64(x), "y": vec_i64(y)}
    k = 37
    cases = {
        "add": (["cx", "cy"], {}, [(a + b) % T for a, b in zip(xp, yp)]),
        "sub": (["cx", "cy"], {}, [(a - b) % T for a, b in zip(xp, yp)]),
        "add_plain": (["cx", "py"], {}, [(a + b) % T for a, b in zip(xp, yp)]),
        "mul": (["cx", "cy"], {}, [(a * b) % T for a, b in zip(xp, yp)]),
        "mul_relin": (["cx", "cy"], {}, [(a * b) % T for a, b in zip(xp, yp)]),
        "mul_plain": (["cx", "py"], {}, [(a * b) % T for a, b in zip(xp, yp)]),
        "mul_scalar": (["cx"], {"scalar": "$s"}, [(a * 12000) % T for a in xp]),
        "square": (["cx"], {}, [(a * a) % T for a in xp]),
        "mod_switch": (["cx"], {}, xp),
        "rotate_rows": (["cx"], {"steps": "$k"}, rot_rows(xp, k)),
        "rotate_columns": (["cx"], {}, swap_rows(xp)),
    }
    for op, (args, attrs, want) in cases.items():
        for variant in (op, op + "_into"):
            if variant not in ops:
                FAILS.append(f"{scheme}/{variant} not offered")
                continue
            prog = pipeline(variant, args, attrs)
            prog["noise"] = ["cz"]
            r = run_prog(d, sid, prog, inputs, {"k": k, "s": 12000})
            got = unvec(r["samples"][0]["outputs"]["z"])
            check(f"{scheme}/{variant}", got, want, 0)
            nb = r["noise_budget_bits"]["cz"]
            if variant == op:
                print(f"       ns={r['samples'][0]['ns']['cz']} noise={nb} size={r['sizes_bytes']['cz']} level={r['levels']['cz']} notes={r.get('notes', [])}")
            assert nb > 0, (variant, nb)
            if op == "mod_switch":
                assert r["levels"]["cz"] == 1, r["levels"]
    # relinearize after mul; rotations by several steps (direct and composed)
    prog = pipeline("relinearize", ["cm"], pre=[{"out": "cm", "op": "mul", "args": ["cx", "cy"]}])
    got = unvec(run_prog(d, sid, prog, inputs)["samples"][0]["outputs"]["z"])
    check(f"{scheme}/relinearize", got, [(a * b) % T for a, b in zip(xp, yp)], 0)
    for kk in (1, 5, -1, 3, 1000, ROW - 1, ROW, 0):
        r = run_prog(d, sid, pipeline("rotate_rows", ["cx"], {"steps": kk}), inputs)
        check(f"{scheme}/rotate_rows k={kk}", unvec(r["samples"][0]["outputs"]["z"]), rot_rows(xp, kk), 0)
    # noise budget: fresh > after mul; mod_switch keeps roughly the budget
    prog = {"steps": [{"out": "px", "op": "encode", "args": ["x"]},
                      {"out": "c0", "op": "encrypt_sk", "args": ["px"]},
                      {"out": "c1", "op": "mul_relin", "args": ["c0", "c0"]},
                      {"out": "c2", "op": "mod_switch", "args": ["c1"]},
                      {"out": "pz", "op": "decrypt", "args": ["c2"]},
                      {"out": "z", "op": "decode", "args": ["pz"]}],
            "timed": [], "outputs": ["z"], "noise": ["c0", "c1", "c2"], "sizes": ["c0", "px", "sk", "rlk", "gk"],
            "levels": ["c0", "c1", "c2"]}
    r = run_prog(d, sid, prog, inputs)
    nb = r["noise_budget_bits"]
    print(f"     {scheme} noise budgets fresh/mul/mod_switch: {nb}  levels {r['levels']}  sizes {r['sizes_bytes']}")
    check(f"{scheme}/noise ordering", [int(nb["c0"] > nb["c1"] > 0 and nb["c2"] > 0)], [1], 0)
    check(f"{scheme}/mul_relin+mod_switch", unvec(r["samples"][0]["outputs"]["z"]), [(a * a) % T for a in xp], 0)
    return sid, inputs, xp, yp


def test_keys(d, sid, scheme, inputs, xp, yp, mul, rot, rot_name, tol):
    def out(r):
        return unvec(r["samples"][0]["outputs"]["z"])
    # keygen_secret + keygen_public with key, encrypt_pk with the new key, decrypt with the new sk
    prog = {"steps": [{"out": "k", "op": "keygen_secret", "args": []},
                      {"out": "kp", "op": "keygen_public", "args": [], "attrs": {"key": "k"}},
                      {"out": "px", "op": "encode", "args": ["x"]},
                      {"out": "cx", "op": "encrypt_pk", "args": ["px"], "attrs": {"key": "kp"}},
                      {"out": "pz", "op": "decrypt", "args": ["cx"], "attrs": {"key": "k"}},
                      {"out": "z", "op": "decode", "args": ["pz"]}],
            "timed": ["k", "kp"], "outputs": ["z"], "noise": [], "sizes": ["k", "kp"], "levels": []}
    r = run_prog(d, sid, prog, inputs)
    check(f"{scheme}/keygen_secret+public", out(r), xp, tol)
    # keygen_relin used by mul_relin
    r = run_prog(d, sid, pipeline("mul_relin", ["cx", "cy"], {"key": "rk"},
                                  pre=[{"out": "rk", "op": "keygen_relin", "args": []}], timed=["rk"]), inputs)
    check(f"{scheme}/keygen_relin", out(r), mul, tol)
    # keygen_galois with a step list, used by a rotation
    r = run_prog(d, sid, pipeline(rot_name, ["cx"], {"steps": 3, "key": "gk3"},
                                  pre=[{"out": "gk3", "op": "keygen_galois", "args": [], "attrs": {"steps": [3]}}],
                                  timed=["gk3"]), inputs)
    check(f"{scheme}/keygen_galois [3]", out(r), rot(xp, 3), tol)
    r = run_prog(d, sid, pipeline(rot_name, ["cx"], {"steps": 11, "key": "gkp"},
                                  pre=[{"out": "gkp", "op": "keygen_galois", "args": [], "attrs": {"steps": "pow2"}}],
                                  timed=["gkp"]), inputs)
    check(f"{scheme}/keygen_galois pow2 (+composed 11)", out(r), rot(xp, 11), tol)
    # keygen_switch + key_switch: sk -> k2, decrypt with k2
    for ks in ("key_switch", "key_switch_into"):
        r = run_prog(d, sid, pipeline(ks, ["cx"], {"key": "sw"},
                                      pre=[{"out": "k2", "op": "keygen_secret", "args": []},
                                           {"out": "sw", "op": "keygen_switch", "args": [], "attrs": {"from": "sk", "to": "k2"}}],
                                      dec_attrs={"key": "k2"}), inputs)
        check(f"{scheme}/keygen_switch+{ks}", out(r), xp, tol)
    # iters > 1: one timed step, several copies
    r = run_prog(d, sid, pipeline("mul_relin", ["cx", "cy"]), inputs, iters=4)
    check(f"{scheme}/iters=4 mul_relin", out(r), mul, tol)
    # encode/encrypt/decrypt/decode timed, and their _into variants
    for suffix in ("", "_into"):
        prog = {"steps": [{"out": "px", "op": "encode" + suffix, "args": ["x"]},
                          {"out": "c1", "op": "encrypt_pk" + suffix, "args": ["px"]},
                          {"out": "c2", "op": "encrypt_sk" + suffix, "args": ["px"]},
                          {"out": "c3", "op": "add", "args": ["c1", "c2"]},
                          {"out": "pz", "op": "decrypt" + suffix, "args": ["c3"]},
                          {"out": "z", "op": "decode" + suffix, "args": ["pz"]}],
                "timed": ["px", "c1", "c2", "pz", "z"], "outputs": ["z"], "noise": [], "sizes": [], "levels": []}
        r = run_prog(d, sid, prog, inputs)
        want = [(2 * a) % T for a in xp] if tol == 0 else [2 * a for a in xp]
        check(f"{scheme}/encode,encrypt_pk,encrypt_sk,decrypt,decode{suffix}", out(r), want, tol)
        assert set(r["samples"][0]["ns"]) == {"px", "c1", "c2", "pz", "z"}


def test_ckks(d, ops):
    sid = "s-ckks"
    res = d.ok("setup", setup_id=sid, scheme="ckks", params=CKKS_PARAMS, rotations=[1],
               rotations_pow2=True, allow_insecure=True)
    eff = res["effective"]
    assert eff["q_bits"] == [45, 30, 30] and eff["slots"] == CK_SLOTS and eff["scale_bits"] == 30, eff
    print(f"     ckks setup: {json.dumps(eff)}")
    rng = random.Random(11)
    x = [rng.uniform(-1, 1) for _ in range(CK_SLOTS)]
    y = [rng.uniform(-1, 1) for _ in range(CK_SLOTS - 10)]
    xp, yp = x, pad(y, CK_SLOTS)
    inputs = {"x": vec_f64(x), "y": vec_f64(y)}
    k = 77
    cases = {
        "add": (["cx", "cy"], {}, [a + b for a, b in zip(xp, yp)]),
        "sub": (["cx", "cy"], {}, [a - b for a, b in zip(xp, yp)]),
        "add_plain": (["cx", "py"], {}, [a + b for a, b in zip(xp, yp)]),
        "mul": (["cx", "cy"], {}, [a * b for a, b in zip(xp, yp)]),
        "mul_relin": (["cx", "cy"], {}, [a * b for a, b in zip(xp, yp)]),
        "mul_plain": (["cx", "py"], {}, [a * b for a, b in zip(xp, yp)]),
        "mul_scalar": (["cx"], {"scalar": "$s"}, [a * 1.75 for a in xp]),
        "square": (["cx"], {}, [a * a for a in xp]),
        "rescale": (["cm"], {}, [a * b for a, b in zip(xp, yp)]),
        "rotate": (["cx"], {"steps": "$k"}, rot_ckks(xp, k)),
        "conjugate": (["cx"], {}, xp),
    }
    for op, (args, attrs, want) in cases.items():
        for variant in (op, op + "_into"):
            if variant not in ops:
                FAILS.append(f"ckks/{variant} not offered")
                continue
            pre = [{"out": "cm", "op": "mul_relin", "args": ["cx", "cy"]}] if op == "rescale" else None
            r = run_prog(d, sid, pipeline(variant, args, attrs, pre=pre), inputs, {"k": k, "s": 1.75})
            check(f"ckks/{variant}", unvec(r["samples"][0]["outputs"]["z"]), want, CK_TOL)
            if variant == op:
                print(f"       ns={r['samples'][0]['ns']['cz']} size={r['sizes_bytes']['cz']} level={r['levels']['cz']} notes={r.get('notes', [])}")
            assert "noise_budget_bits" not in r
    # mul_relin then rescale; relinearize; integer scalar
    r = run_prog(d, sid, pipeline("rescale", ["cm"], pre=[{"out": "cm", "op": "mul_relin", "args": ["cx", "cy"]}]), inputs)
    check("ckks/mul_relin+rescale", unvec(r["samples"][0]["outputs"]["z"]), [a * b for a, b in zip(xp, yp)], CK_TOL)
    assert r["levels"]["cz"] == 1, r["levels"]
    r = run_prog(d, sid, pipeline("relinearize", ["cm"], pre=[{"out": "cm", "op": "mul", "args": ["cx", "cy"]}]), inputs)
    check("ckks/relinearize", unvec(r["samples"][0]["outputs"]["z"]), [a * b for a, b in zip(xp, yp)], CK_TOL)
    r = run_prog(d, sid, pipeline("mul_scalar", ["cx"], {"scalar": 3}), inputs)
    check("ckks/mul_scalar int", unvec(r["samples"][0]["outputs"]["z"]), [3 * a for a in xp], CK_TOL)
    for kk in (1, -1, 3, 500, CK_SLOTS - 1):
        r = run_prog(d, sid, pipeline("rotate", ["cx"], {"steps": kk}), inputs)
        check(f"ckks/rotate k={kk}", unvec(r["samples"][0]["outputs"]["z"]), rot_ckks(xp, kk), CK_TOL)
    # encode at a lower level
    prog = pipeline("add", ["cx", "cx"])
    prog["steps"][0]["attrs"] = {"level": 1}
    r = run_prog(d, sid, prog, inputs)
    check("ckks/encode level=1", unvec(r["samples"][0]["outputs"]["z"]), [2 * a for a in xp], CK_TOL)
    assert r["levels"]["cz"] == 1
    return sid, inputs, xp, yp


def test_bootstrap(d, ops):
    """Lattigo's default bootstrapping circuit on an insecure N=4096 ring."""
    if "bootstrap" not in ops:
        FAILS.append("ckks/bootstrap not offered")
        return
    n = 4096
    rep = d.send("setup", setup_id="btp", scheme="ckks", params={"preset": "lattigo_bootstrap_default", "N": n},
                 allow_insecure=False)
    assert rep["error"]["kind"] == "insecure_params", rep
    res = d.ok("setup", setup_id="btp", scheme="ckks", params={"preset": "lattigo_bootstrap_default", "N": n},
               allow_insecure=True)
    print(f"     bootstrap setup: {json.dumps(res['effective'])}")
    rng = random.Random(3)
    x = [rng.uniform(-1, 1) for _ in range(n // 2)]
    prog = {"steps": [{"out": "px", "op": "encode", "args": ["x"], "attrs": {"level": 0}},
                      {"out": "cx", "op": "encrypt_pk", "args": ["px"]},
                      {"out": "cz", "op": "bootstrap", "args": ["cx"]},
                      {"out": "cw", "op": "mul_relin", "args": ["cz", "cz"]},
                      {"out": "cv", "op": "rescale", "args": ["cw"]},
                      {"out": "pz", "op": "decrypt", "args": ["cv"]},
                      {"out": "z", "op": "decode", "args": ["pz"]}],
            "timed": ["cz"], "outputs": ["z"], "noise": [], "sizes": ["cz"], "levels": ["cx", "cz", "cv"]}
    r = run_prog(d, "btp", prog, {"x": vec_f64(x)})
    print(f"       ns={r['samples'][0]['ns']['cz']} levels={r['levels']} notes={r.get('notes')}")
    check("ckks/bootstrap (N=4096, insecure) then square", unvec(r["samples"][0]["outputs"]["z"]), [a * a for a in x], 1e-4)
    assert r["levels"]["cx"] == 0 and r["levels"]["cz"] > 0, r["levels"]


def test_errors(d):
    rep = d.raw("this is not json")
    assert rep["ok"] is False and rep["error"]["kind"] == "internal", rep
    rep = d.send("setup", setup_id="bad", scheme="tfhe", params={"N": 1024, "q_bits": [30]})
    assert rep["error"]["kind"] == "unsupported", rep
    rep = d.send("setup", setup_id="bad", scheme="bfv", params=dict(BFV_PARAMS, t=7681))
    assert rep["error"]["kind"] == "invalid_params", rep
    rep = d.send("setup", setup_id="bad", scheme="bfv", params=dict(BFV_PARAMS, q_bits=[70]))
    assert rep["error"]["kind"] == "invalid_params", rep
    rep = d.send("run", setup_id="s-bfv", program=pipeline("rotate", ["cx"], {"steps": 1}), samples=[])
    assert rep["error"]["kind"] == "unsupported", rep
    rep = d.send("run", setup_id="s-bfv", program=pipeline("mod_switch", ["cz1"],
                                                           pre=[{"out": "cz0", "op": "mod_switch", "args": ["cx"]},
                                                                {"out": "cz1", "op": "mod_switch", "args": ["cz0"]}]),
                 samples=[{"inputs": {"x": vec_i64([1]), "y": vec_i64([2])}, "scalars": {}}])
    assert rep["ok"] is False and rep["error"]["kind"] == "internal", str(rep)[:300]  # third mod_switch from level 0
    rep = d.send("run", setup_id="nope", program=pipeline("add", ["cx", "cy"]), samples=[])
    assert rep["error"]["kind"] == "internal", rep
    PASSES.append("errors")
    print("ok   error replies (bad json, unknown scheme, bad t, big prime, unsupported op, level 0, unknown setup)")


def main():
    path = binary_path()
    if not path.exists():
        subprocess.run(["bash", str(HERE / "build.sh")], check=True)
    if not path.exists():
        print(f"SKIP: {path} not built (no Go toolchain?)")
        return 0
    d = Driver(path)
    caps = d.ok("capabilities")
    assert caps["protocol"] == 1 and caps["library"] == "lattigo", caps
    print(f"     capabilities: {caps['library']} {caps['library_version']} driver {caps['driver_version']} threads {caps['threads']} build {json.dumps(caps['build'])}")
    for scheme in ("bfv", "bgv"):
        ops = set(caps["schemes"][scheme]["ops"])
        sid, inputs, xp, yp = test_bgv_family(d, scheme, ops)
        test_keys(d, sid, scheme, inputs, xp, yp, [(a * b) % T for a, b in zip(xp, yp)], rot_rows, "rotate_rows", 0)
    ops = set(caps["schemes"]["ckks"]["ops"])
    sid, inputs, xp, yp = test_ckks(d, ops)
    test_keys(d, sid, "ckks", inputs, xp, yp, [a * b for a, b in zip(xp, yp)], rot_ckks, "rotate", CK_TOL)
    if os.environ.get("FHEMARK_SKIP_BOOTSTRAP") != "1":
        test_bootstrap(d, ops)
    test_errors(d)
    d.close()
    print(f"\n{len(PASSES)} passed, {len(FAILS)} failed")
    for f in FAILS:
        print("FAILED:", f)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
