#!/usr/bin/env python3
"""Smoke test of the Lattigo driver: speaks protocol v2 to the built binary and
checks every primitive it lists against plain Python references, timed regions
of k copies (every copy checked) and keys verified by use.

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
        rep = self.raw(json.dumps({"v": 2, "id": self.next_id, "type": type_, **fields}))
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
        detail = (f"{len(bad)} slots differ, first {bad[:3]}: got {[got[i] for i in bad[:3]]} "
                  f"want {[want[i] for i in bad[:3]]}") if bad else f"len {len(got)} != {len(want)}"
    else:
        err = max(abs(g - w) for g, w in zip(got, want)) if len(got) == len(want) else float("inf")
        ok = err <= tol
        detail = f"max error {err}"
    (PASSES if ok else FAILS).append(name)
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else "  " + detail))


def regions(*names):
    """One timed region per name, each of that one step."""
    return [{"name": n, "steps": [n]} for n in names]


def pipeline(op, args, attrs=None, pre=None, post=None, dec_attrs=None, timed=None):
    """encode/encrypt x (and y), apply op, decrypt, decode; timed: step names, one region each."""
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
    return {"steps": steps, "timed": regions(*(timed or ["cz"])), "outputs": ["z"],
            "noise": [], "sizes": ["cz"], "levels": ["cz"]}


def run_prog(d, sid, prog, inputs, scalars=None):
    r = d.ok("run", setup_id=sid, program=prog, samples=[{"inputs": inputs, "scalars": scalars or {}}])
    for smp in r["samples"]:
        assert set(smp["ns"]) == {g["name"] for g in prog["timed"]}, (smp["ns"], prog["timed"])
        assert set(smp["outputs"]) == set(prog["outputs"]), smp["outputs"].keys()
    return r


def copies(op, nargs, k, attrs=None):
    """k independent copies of op (cz.i on cx.i, cy.i) in one region "cz"; outputs z.0 .. z.k-1."""
    steps = []
    for i in range(k):
        steps += [{"out": f"px.{i}", "op": "encode", "args": [f"x.{i}"]},
                  {"out": f"cx.{i}", "op": "encrypt_pk", "args": [f"px.{i}"]},
                  {"out": f"py.{i}", "op": "encode", "args": [f"y.{i}"]},
                  {"out": f"cy.{i}", "op": "encrypt_sk", "args": [f"py.{i}"]}]
    steps += [{"out": f"cz.{i}", "op": op, "args": [f"cx.{i}", f"cy.{i}"][:nargs], "attrs": attrs or {}}
              for i in range(k)]
    for i in range(k):
        steps += [{"out": f"pz.{i}", "op": "decrypt", "args": [f"cz.{i}"]},
                  {"out": f"z.{i}", "op": "decode", "args": [f"pz.{i}"]}]
    return {"steps": steps, "timed": [{"name": "cz", "steps": [f"cz.{i}" for i in range(k)]}],
            "outputs": [f"z.{i}" for i in range(k)], "noise": [], "sizes": [f"cz.{k - 1}"],
            "levels": [f"cz.{k - 1}"]}


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
                print(f"       ns={r['samples'][0]['ns']['cz']} noise={nb} size={r['sizes_bytes']['cz']} "
                      f"level={r['levels']['cz']} notes={r.get('notes', [])}")
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


def test_keys(d, sid, scheme, inputs, xp, yp, mul, rot, rot_name, swap, swap_name, row, tol, gen):
    def out(r, name="z"):
        return unvec(r["samples"][0]["outputs"][name])
    # keygen_secret + keygen_public with key, encrypt_pk with the new key, decrypt with the new sk
    prog = {"steps": [{"out": "k", "op": "keygen_secret", "args": []},
                      {"out": "kp", "op": "keygen_public", "args": [], "attrs": {"key": "k"}},
                      {"out": "px", "op": "encode", "args": ["x"]},
                      {"out": "cx", "op": "encrypt_pk", "args": ["px"], "attrs": {"key": "kp"}},
                      {"out": "pz", "op": "decrypt", "args": ["cx"], "attrs": {"key": "k"}},
                      {"out": "z", "op": "decode", "args": ["pz"]}],
            "timed": regions("k", "kp"), "outputs": ["z"], "noise": [], "sizes": ["k", "kp"], "levels": []}
    r = run_prog(d, sid, prog, inputs)
    check(f"{scheme}/keygen_secret+public", out(r), xp, tol)
    # keygen_relin used by mul_relin
    r = run_prog(d, sid, pipeline("mul_relin", ["cx", "cy"], {"key": "rk"},
                                  pre=[{"out": "rk", "op": "keygen_relin", "args": []}], timed=["rk"]), inputs)
    check(f"{scheme}/keygen_relin", out(r), mul, tol)
    # keygen_galois with a step list, every key used by a rotation of its own step (no composition)
    steps = [1, 3, -3, 8]
    prog = {"steps": [{"out": "k", "op": "keygen_galois", "args": [], "attrs": {"steps": steps}},
                      {"out": "px", "op": "encode", "args": ["x"]},
                      {"out": "cx", "op": "encrypt_pk", "args": ["px"]}],
            "timed": regions("k"), "outputs": [], "noise": [], "sizes": ["k"], "levels": []}
    wants = {}
    for i, st in enumerate(steps):
        prog["steps"] += [{"out": f"cr.{i}", "op": rot_name, "args": ["cx"], "attrs": {"steps": st, "key": "k"}},
                          {"out": f"pr.{i}", "op": "decrypt", "args": [f"cr.{i}"]},
                          {"out": f"z.{i}", "op": "decode", "args": [f"pr.{i}"]}]
        prog["outputs"].append(f"z.{i}")
        wants[f"z.{i}"] = (st, rot(xp, st))
    r = run_prog(d, sid, prog, inputs)
    for name, (st, want) in wants.items():
        check(f"{scheme}/keygen_galois {steps} used by {rot_name} {st}", out(r, name), want, tol)
    assert not r.get("notes"), r.get("notes")  # every step has its own key: no composition
    # keygen_galois pow2: rotations by +2^i and -2^i and the row swap / conjugation, all with the new key
    prog = {"steps": [{"out": "k", "op": "keygen_galois", "args": [], "attrs": {"steps": "pow2"}},
                      {"out": "px", "op": "encode", "args": ["x"]},
                      {"out": "cx", "op": "encrypt_pk", "args": ["px"]}],
            "timed": regions("k"), "outputs": [], "noise": [], "sizes": ["k"], "levels": []}
    wants = {}
    uses = [(rot_name, s * (1 << i)) for i in range(row.bit_length() - 1) for s in (1, -1)] + [(swap_name, None)]
    for i, (op, st) in enumerate(uses):
        attrs = {"key": "k"} if st is None else {"steps": st, "key": "k"}
        prog["steps"] += [{"out": f"cr.{i}", "op": op, "args": ["cx"], "attrs": attrs},
                          {"out": f"pr.{i}", "op": "decrypt", "args": [f"cr.{i}"]},
                          {"out": f"z.{i}", "op": "decode", "args": [f"pr.{i}"]}]
        prog["outputs"].append(f"z.{i}")
        wants[f"z.{i}"] = (op, st, swap(xp) if st is None else rot(xp, st))
    r = run_prog(d, sid, prog, inputs)
    bad = [(op, st) for name, (op, st, want) in wants.items()
           if not (max(abs(g - w) for g, w in zip(out(r, name), want)) <= tol)]
    check(f"{scheme}/keygen_galois pow2 used by {len(uses)} rotations (+/-2^i, {swap_name})", [len(bad)], [0], 0)
    assert not r.get("notes"), r.get("notes")
    r = run_prog(d, sid, pipeline(rot_name, ["cx"], {"steps": 11, "key": "gkp"},
                                  pre=[{"out": "gkp", "op": "keygen_galois", "args": [], "attrs": {"steps": "pow2"}}],
                                  timed=["gkp"]), inputs)
    check(f"{scheme}/keygen_galois pow2 (+composed 11)", out(r), rot(xp, 11), tol)
    assert any("composed" in n for n in r.get("notes", [])), r.get("notes")
    # keygen_switch + key_switch: sk -> k2, decrypt with k2
    for ks in ("key_switch", "key_switch_into"):
        r = run_prog(d, sid, pipeline(ks, ["cx"], {"key": "sw"},
                                      pre=[{"out": "k2", "op": "keygen_secret", "args": []},
                                           {"out": "sw", "op": "keygen_switch", "args": [], "attrs": {"from": "sk", "to": "k2"}}],
                                      dec_attrs={"key": "k2"}, timed=["sw", "cz"]), inputs)
        check(f"{scheme}/keygen_switch+{ks}", out(r), xp, tol)
    # k copies of one op in one region, every copy checked
    k = 4
    rng = random.Random(5)
    xs = [gen(rng) for _ in range(k)]
    ys = [gen(rng) for _ in range(k)]
    vec = vec_f64 if tol else vec_i64
    cin = {f"{n}.{i}": vec(v) for n, vs in (("x", xs), ("y", ys)) for i, v in enumerate(vs)}
    for op in ("mul_relin", "mul_relin_into", "add", "rotate_into" if tol else "rotate_rows_into"):
        nargs = 1 if op.startswith("rotate") else 2
        attrs = {"steps": -2} if nargs == 1 else {}
        r = run_prog(d, sid, copies(op, nargs, k, attrs), cin)
        assert len(r["samples"][0]["ns"]) == 1 and r["samples"][0]["ns"]["cz"] > 0, r["samples"][0]["ns"]
        for i in range(k):
            if op.startswith("mul_relin"):
                want = [(a * b) % T if not tol else a * b for a, b in zip(xs[i], ys[i])]
            elif op == "add":
                want = [(a + b) % T if not tol else a + b for a, b in zip(xs[i], ys[i])]
            else:
                want = rot(xs[i], -2)
            check(f"{scheme}/{k} copies of {op}: copy {i}", out(r, f"z.{i}"), want, tol)
    # encode/encrypt/decrypt/decode timed, and their _into variants (encrypt_pk and encrypt_sk in one region)
    for suffix in ("", "_into"):
        prog = {"steps": [{"out": "px", "op": "encode" + suffix, "args": ["x"]},
                          {"out": "c1", "op": "encrypt_pk" + suffix, "args": ["px"]},
                          {"out": "c2", "op": "encrypt_sk" + suffix, "args": ["px"]},
                          {"out": "c3", "op": "add", "args": ["c1", "c2"]},
                          {"out": "pz", "op": "decrypt" + suffix, "args": ["c3"]},
                          {"out": "z", "op": "decode" + suffix, "args": ["pz"]}],
                "timed": regions("px") + [{"name": "enc", "steps": ["c1", "c2"]}] + regions("pz", "z"),
                "outputs": ["z"], "noise": [], "sizes": [], "levels": []}
        r = run_prog(d, sid, prog, inputs)
        want = [(2 * a) % T for a in xp] if tol == 0 else [2 * a for a in xp]
        check(f"{scheme}/encode,encrypt_pk,encrypt_sk,decrypt,decode{suffix}", out(r), want, tol)
        assert set(r["samples"][0]["ns"]) == {"px", "enc", "pz", "z"}


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
                print(f"       ns={r['samples'][0]['ns']['cz']} size={r['sizes_bytes']['cz']} "
                      f"level={r['levels']['cz']} notes={r.get('notes', [])}")
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
            "timed": regions("cz"), "outputs": ["z"], "noise": [], "sizes": ["cz"], "levels": ["cx", "cz", "cv"]}
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
    # protocol version other than 2
    rep = d.raw(json.dumps({"v": 1, "id": 99, "type": "capabilities"}))
    assert rep["v"] == 2 and rep["id"] == 99 and rep["error"]["kind"] == "internal", rep
    assert "this driver speaks 2" in rep["error"]["message"], rep
    # region rule violations, answered before anything runs
    smp = [{"inputs": {"x.0": vec_i64([1]), "y.0": vec_i64([2]), "x.1": vec_i64([1]), "y.1": vec_i64([2])}, "scalars": {}}]
    bad = {"not consecutive": [{"name": "cz", "steps": ["cz.0", "pz.0"]}],
           "unknown name": [{"name": "cz", "steps": ["cz.0", "cz.9"]}],
           "two regions": [{"name": "a", "steps": ["cz.0", "cz.1"]}, {"name": "b", "steps": ["cz.1"]}],
           "same name": [{"name": "a", "steps": ["cz.0"]}, {"name": "a", "steps": ["cz.1"]}]}
    for why, timed in bad.items():
        prog = copies("add", 2, 2)
        prog["timed"] = timed
        rep = d.send("run", setup_id="s-bfv", program=prog, samples=smp)
        assert rep["ok"] is False and rep["error"]["kind"] == "internal", (why, rep)
    prog = copies("add", 2, 2)
    prog["steps"][9]["args"] = ["cz.0", "cy.1"]  # cz.1 reads cz.0: dependent steps in one region
    assert prog["steps"][9]["out"] == "cz.1"
    rep = d.send("run", setup_id="s-bfv", program=prog, samples=smp)
    assert rep["ok"] is False and "same region" in rep["error"]["message"], rep
    PASSES.append("errors")
    print("ok   error replies (bad json, unknown scheme, bad t, big prime, unsupported op, level 0, unknown setup, "
          "v=1, region rules)")


def main():
    path = binary_path()
    if not path.exists():
        subprocess.run(["bash", str(HERE / "build.sh")], check=True)
    if not path.exists():
        print(f"SKIP: {path} not built (no Go toolchain?)")
        return 0
    d = Driver(path)
    caps = d.ok("capabilities")
    assert caps["protocol"] == 2 and caps["library"] == "lattigo", caps
    for scheme in ("bfv", "bgv"):
        dev = caps["schemes"][scheme]["deviations"]
        assert {"encode", "encrypt_pk", "encrypt_sk", "decrypt", "decode"} <= set(dev), dev
        assert set(dev) <= set(caps["schemes"][scheme]["ops"]), dev
        for op, line in sorted(dev.items()):
            print(f"     deviation {scheme}/{op}: {line}")
    assert not caps["schemes"]["ckks"].get("deviations"), caps["schemes"]["ckks"]
    print(f"     capabilities: {caps['library']} {caps['library_version']} driver {caps['driver_version']} "
          f"threads {caps['threads']} build {json.dumps(caps['build'])}")
    for scheme in ("bfv", "bgv"):
        ops = set(caps["schemes"][scheme]["ops"])
        sid, inputs, xp, yp = test_bgv_family(d, scheme, ops)
        test_keys(d, sid, scheme, inputs, xp, yp, [(a * b) % T for a, b in zip(xp, yp)], rot_rows, "rotate_rows",
                  swap_rows, "rotate_columns", ROW, 0, lambda rng: [rng.randrange(T) for _ in range(N)])
    ops = set(caps["schemes"]["ckks"]["ops"])
    sid, inputs, xp, yp = test_ckks(d, ops)
    test_keys(d, sid, "ckks", inputs, xp, yp, [a * b for a, b in zip(xp, yp)], rot_ckks, "rotate",
              lambda x: list(x), "conjugate", CK_SLOTS, CK_TOL, lambda rng: [rng.uniform(-1, 1) for _ in range(CK_SLOTS)])
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
