#!/usr/bin/env python3
"""Smoke test of the OpenFHE driver: one program per primitive and scheme.

Run with the driver's venv (or any Python with numpy):
    ~/.cache/fhemark/venv-openfhe/bin/python drivers/openfhe/smoke_test.py
Exit status 0 when every check passes; 77 when the driver is not built.
Small, insecure parameters (allow_insecure) to stay fast. Protocol 2: timed regions, k copies
of a step in one region, `_into` forms, keys used after a timed keygen.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python_shared"))
from smoke_client import Driver, dec, enc, venv_python  # noqa: E402

PY = venv_python("openfhe")



FAILS = []
PASSES = []


def check(name, ok, detail=""):
    (PASSES if ok else FAILS).append(name)
    print("%-40s %s %s" % (name, "ok" if ok else "FAIL", detail), flush=True)


def rot_rows(v, k):
    h = len(v) // 2
    return np.concatenate([np.roll(v[:h], -k), np.roll(v[h:], -k)])


def swap_rows(v):
    h = len(v) // 2
    return np.concatenate([v[h:], v[:h]])


def regions(timed):
    """["a", "b"] -> one single-step region per name; a list of region objects is kept."""
    return [t if isinstance(t, dict) else {"name": t, "steps": [t]} for t in timed]


def step(out, op, *args, **attrs):
    d = {"out": out, "op": op, "args": list(args)}
    if attrs:
        d["attrs"] = attrs
    return d


def main():
    if not os.path.exists(PY):
        print("openfhe driver not built (%s missing): run drivers/openfhe/build.sh" % PY)
        return 77
    d = Driver(PY, HERE)
    cap = d.req(type="capabilities")
    res = cap["result"]
    check("capabilities", cap["ok"] and res["library"] == "openfhe" and res["protocol"] == 2,
          res.get("library_version"))
    ops_by = {k: set(v["ops"]) for k, v in res["schemes"].items()}
    for scheme in ("bfv", "bgv", "ckks"):
        dev = res["schemes"][scheme].get("deviations", {})
        check("%s deviations name listed ops" % scheme, set(dev) <= ops_by[scheme] and "decrypt" in dev
              and "mul_scalar" not in dev, sorted(dev))

    # error handling: the driver must keep going
    r = d.req(type="nonsense")
    check("unknown request -> error", not r["ok"] and r["error"]["kind"] == "unsupported")
    r = d.req(type="capabilities", v=1)
    check("protocol 1 -> internal", not r["ok"] and r["error"]["kind"] == "internal" and "2" in r["error"]["message"])
    d.p.stdin.write("this is not json\n")
    d.p.stdin.flush()
    r = json.loads(d.p.stdout.readline())
    check("bad json -> error", not r["ok"] and r["error"]["kind"] == "internal")
    r = d.req(type="setup", setup_id="x", scheme="bfv",
              params={"N": 8192, "q_bits": [60, 60, 60, 60], "p_bits": [60], "t": 65537}, allow_insecure=False)
    check("insecure set refused", not r["ok"] and r["error"]["kind"] == "insecure_params", r.get("error"))
    r = d.req(type="setup", setup_id="x", scheme="tfhe", params={"N": 1024, "q_bits": [30]})
    check("unknown scheme -> unsupported", not r["ok"] and r["error"]["kind"] == "unsupported")

    rng = np.random.default_rng(1)
    for scheme in ("bfv", "bgv", "ckks"):
        # BFV: N=4096, t=65537; BGV: N=2048, t=12289 (both 1 mod 2N); CKKS: N=4096
        N, t = (2048, 12289) if scheme == "bgv" else (4096, 65537)
        if scheme == "ckks":
            params = {"N": N, "q_bits": [50, 40, 40, 40], "p_bits": [60], "t": None, "scale_bits": 40}
        else:
            params = {"N": N, "q_bits": [50, 40, 40, 40] if scheme == "bgv" else [40, 40, 40, 40],
                      "p_bits": [60], "t": t, "scale_bits": None}
        r = d.req(type="setup", setup_id=scheme, scheme=scheme, params=params,
                  rotations=[1, 3], rotations_pow2=True, allow_insecure=True)
        check("%s setup" % scheme, r["ok"], json.dumps(r.get("result", r.get("error")).get("effective", r.get("error")))[:300])
        if not r["ok"]:
            continue
        eff = r["result"]["effective"]
        slots = eff["slots"]
        L = eff["levels"]
        if scheme == "ckks":
            x = rng.uniform(-1, 1, slots)
            y = rng.uniform(-1, 1, slots)
        else:
            x = rng.integers(0, t, slots)
            y = rng.integers(0, t, slots)

        def run(steps, timed, outputs, extra=None, scalars=None, inputs=None, **kw):
            prog = {"steps": steps, "timed": regions(timed), "outputs": outputs}
            prog.update(extra or {})
            smp = {"inputs": {k: enc(v) for k, v in (inputs or {"x": x, "y": y}).items()}}
            if scalars:
                smp["scalars"] = scalars
            return d.req(type="run", setup_id=scheme, program=prog, samples=[smp, smp], **kw)

        def verify(name, rep, expect, out="z"):
            if not rep["ok"]:
                check("%s %s" % (scheme, name), False, rep["error"])
                return
            ok = True
            err = 0
            outs = out if isinstance(out, list) else [out]
            exps = expect if isinstance(out, list) else [expect]
            for s in rep["result"]["samples"]:
                ok = ok and sorted(s["outputs"]) == sorted(outs)
                for o, e in zip(outs, exps):
                    z = dec(s["outputs"][o])
                    if len(z) != slots:
                        ok = False
                    if scheme == "ckks":
                        err = max(err, float(np.max(np.abs(z - e))))
                        ok = ok and err < 1e-3
                    else:
                        ok = ok and bool(np.array_equal(z, np.mod(e, t)))
            ns = rep["result"]["samples"][-1]["ns"]
            check("%s %s" % (scheme, name), ok, "ns=%s err=%.2g" % (ns, err))

        def refused(name, rep, kind="internal"):
            check("%s %s -> %s" % (scheme, name, kind), not rep["ok"] and rep["error"]["kind"] == kind,
                  rep.get("error", "accepted"))

        enc_x = [step("px", "encode", "x"), step("cx", "encrypt_pk", "px")]
        enc_y = [step("py", "encode", "y"), step("cy", "encrypt_pk", "py")]
        dec_z = [step("pz", "decrypt", "cz"), step("z", "decode", "pz")]
        mod = (lambda v: np.mod(v, t)) if scheme != "ckks" else (lambda v: v)
        xo, yo = (x.astype(object), y.astype(object)) if scheme != "ckks" else (x, y)
        rot = "rotate" if scheme == "ckks" else "rotate_rows"
        swap = "conjugate" if scheme == "ckks" else "rotate_columns"

        def ref_int(v):
            return np.array([int(a) % t for a in v], dtype=np.int64) if scheme != "ckks" else v

        def ref_rot(v, k):
            return np.roll(v, -k) if scheme == "ckks" else rot_rows(v, k)

        ref_swap = x if scheme == "ckks" else swap_rows(x)
        xy = ref_int(xo * yo)

        # encode/decode
        verify("encode/decode", run([step("px", "encode", "x"), step("z", "decode", "px")], ["px", "z"], ["z"]), x)
        # pipeline
        rep = run(enc_x + [step("cz", "add", "cx", "cx")] + dec_z, ["px", "cx", "cz", "pz", "z"], ["z"],
                  {"noise": ["cx", "cz"], "sizes": ["cx", "px", "pk"], "levels": ["cx"]}, iters=5)
        verify("pipeline add (iters ignored)", rep, mod(2 * x))
        if rep["ok"]:
            res = rep["result"]
            check("%s ns has one entry per region" % scheme,
                  all(sorted(s["ns"]) == ["cx", "cz", "px", "pz", "z"] for s in res["samples"]), res["samples"][0]["ns"])
            check("%s levels fresh == L" % scheme, res.get("levels", {}).get("cx") == L, res.get("levels"))
            check("%s sizes" % scheme, all(v > 0 for v in res.get("sizes_bytes", {}).values()), res.get("sizes_bytes"))
            if scheme != "ckks":
                nb = res.get("noise_budget_bits", {})
                check("%s noise budget" % scheme, nb.get("cx", 0) > 10 and nb.get("cz", 0) > 0, nb)
            check("%s overhead" % scheme, res.get("overhead_ns", -1) >= 0, res.get("overhead_ns"))
        # k independent copies in one region, every copy checked
        k = 3
        steps = []
        for i in range(k):
            steps += [step("px.%d" % i, "encode", "x.%d" % i), step("cx.%d" % i, "encrypt_pk", "px.%d" % i),
                      step("py.%d" % i, "encode", "y.%d" % i), step("cy.%d" % i, "encrypt_pk", "py.%d" % i)]
        steps += [step("cz.%d" % i, "mul_relin", "cx.%d" % i, "cy.%d" % i) for i in range(k)]
        for i in range(k):
            steps += [step("pz.%d" % i, "decrypt", "cz.%d" % i), step("z.%d" % i, "decode", "pz.%d" % i)]
        xs = [rng.uniform(-1, 1, slots) if scheme == "ckks" else rng.integers(0, t, slots) for _ in range(2 * k)]
        ins = {("x.%d" if j < k else "y.%d") % (j % k): v for j, v in enumerate(xs)}
        rep = run(steps, [{"name": "cz", "steps": ["cz.%d" % i for i in range(k)]}], ["z.%d" % i for i in range(k)],
                  {"noise": ["cz.2"], "sizes": ["cz.2"], "levels": ["cz.2"]}, inputs=ins)
        verify("mul_relin x3 copies in one region", rep,
               [ref_int(xs[i].astype(object) * xs[k + i].astype(object)) if scheme != "ckks" else xs[i] * xs[k + i]
                for i in range(k)], out=["z.%d" % i for i in range(k)])
        if rep["ok"]:
            res = rep["result"]
            check("%s copies: ns has only the region" % scheme,
                  all(list(s["ns"]) == ["cz"] for s in res["samples"]) and "cz.2" in res.get("sizes_bytes", {})
                  and "cz.2" in res.get("levels", {}), (res["samples"][0]["ns"], res.get("levels")))
        # region rules
        two = enc_x + enc_y + [step("a", "add", "cx", "cy"), step("b", "sub", "cx", "cy"), step("c", "add", "b", "cy")]
        refused("timed names", run(two, ["a"], [], extra={"timed": ["a"]}))
        refused("region naming no step", run(two, [{"name": "r", "steps": ["nope"]}], []))
        refused("region not consecutive", run(two, [{"name": "r", "steps": ["a", "c"]}], []))
        refused("region with a dependent step", run(two, [{"name": "r", "steps": ["b", "c"]}], []))
        refused("step in two regions", run(two, [{"name": "r", "steps": ["a", "b"]}, {"name": "s", "steps": ["b"]}], []))
        refused("region name twice", run(two, [{"name": "r", "steps": ["a"]}, {"name": "r", "steps": ["b"]}], []))
        refused("unknown op", run(two + [step("q", "frobnicate", "a")], [], []), "unsupported")

        verify("encrypt_sk", run([step("px", "encode", "x"), step("cz", "encrypt_sk", "px")] + dec_z, ["cz"], ["z"]), x)
        verify("sub", run(enc_x + enc_y + [step("cz", "sub", "cx", "cy")] + dec_z, ["cz"], ["z"]), mod(x - y))
        verify("add_plain", run(enc_x + [step("py", "encode", "y"), step("cz", "add_plain", "cx", "py")] + dec_z,
                                ["cz"], ["z"]), mod(x + y))
        verify("mul (no relin)", run(enc_x + enc_y + [step("cz", "mul", "cx", "cy")] + dec_z, ["cz"], ["z"]), xy)
        verify("mul_relin", run(enc_x + enc_y + [step("cz", "mul_relin", "cx", "cy")] + dec_z, ["cz"], ["z"]), xy)
        verify("mul+relinearize", run(enc_x + enc_y + [step("cm", "mul", "cx", "cy"), step("cz", "relinearize", "cm")]
                                      + dec_z, ["cz"], ["z"]), xy)
        verify("mul_plain", run(enc_x + [step("py", "encode", "y"), step("cz", "mul_plain", "cx", "py")] + dec_z,
                                ["cz"], ["z"]), xy)
        sc = -0.75 if scheme == "ckks" else 17
        ref_sc = ref_int(xo * sc) if scheme != "ckks" else x * sc
        verify("mul_scalar ($k)", run(enc_x + [step("cz", "mul_scalar", "cx", scalar="$k")] + dec_z,
                                      ["cz"], ["z"], scalars={"k": sc}), ref_sc)
        verify("square", run(enc_x + [step("cz", "square", "cx")] + dec_z, ["cz"], ["z"]), ref_int(xo * xo))
        verify("square_relin", run(enc_x + [step("cz", "square_relin", "cx")] + dec_z, ["cz"], ["z"]), ref_int(xo * xo))

        # `_into` forms: the result is right and the first operand is left as it was
        def into(op, pre, args, expect, extra_steps=(), **attrs):
            if op not in ops_by[scheme]:
                check("%s %s listed" % (scheme, op), False, "not in capabilities")
                return
            prog = pre + list(extra_steps) + [step("cz", op, *args, **attrs)] + dec_z + [
                step("pa", "decrypt", args[0]), step("za", "decode", "pa")]
            rep = run(prog, ["cz"], ["z", "za"], scalars={"k": sc})
            first = {"cx": x, "cm": xy}[args[0]]
            verify(op + " (first operand unchanged)", rep, [expect, first], out=["z", "za"])

        into("add_into", enc_x + enc_y, ["cx", "cy"], mod(x + y))
        into("sub_into", enc_x + enc_y, ["cx", "cy"], mod(x - y))
        into("add_plain_into", enc_x + [step("py", "encode", "y")], ["cx", "py"], mod(x + y))
        into("relinearize_into", enc_x + enc_y + [step("cm", "mul", "cx", "cy")], ["cm"], xy)
        if scheme == "ckks":
            into("mul_scalar_into", enc_x, ["cx"], ref_sc, scalar="$k")
            into("rescale_into", enc_x + enc_y + [step("cm", "mul_relin", "cx", "cy")], ["cm"], xy)
        for op in ("mul_relin_into", "square_relin_into", "mul_plain_into", rot + "_into"):
            check("%s %s not offered (no in-place binding)" % (scheme, op), op not in ops_by[scheme])

        if scheme == "ckks":
            rep = run(enc_x + enc_y + [step("cm", "mul_relin", "cx", "cy"), step("cz", "rescale", "cm")] + dec_z,
                      ["cz"], ["z"], {"levels": ["cm", "cz"]})
            verify("rescale", rep, x * y)
            if rep["ok"]:
                lv = rep["result"].get("levels", {})
                check("ckks rescale drops a level", lv.get("cm") == L and lv.get("cz") == L - 1, lv)
            rep = run([step("px", "encode", "x", level=1), step("cz", "encrypt_pk", "px")] + dec_z, ["px"], ["z"],
                      {"levels": ["cz"]})
            verify("encode at level 1", rep, x)
            if rep["ok"]:
                check("ckks encode level attr", rep["result"]["levels"].get("cz") == 1, rep["result"]["levels"])
        for op in ("mod_switch", "mod_switch_into"):
            if op not in ops_by[scheme]:
                continue
            rep = run(enc_x + [step("cz", op, "cx")] + dec_z + [step("pa", "decrypt", "cx"), step("za", "decode", "pa")],
                      ["cz"], ["z", "za"], {"levels": ["cx", "cz"], "noise": ["cz"], "sizes": ["cx", "cz"]})
            verify(op, rep, [x, x], out=["z", "za"])
            if rep["ok"]:
                lv = rep["result"].get("levels", {})
                check("%s %s drops a level" % (scheme, op), lv.get("cz") == L - 1 and lv.get("cx") == L, lv)
        if scheme != "ckks":
            verify("mod_switch then add", run(enc_x + enc_y + [
                step("a", "mod_switch", "cx"), step("b", "mod_switch", "cy"),
                step("cz", "add", "a", "b")] + dec_z, ["cz"], ["z"]), mod(x + y))

        # rotations with the setup's keys ([1, 3] and +/-2^i): keyed steps directly, others composed
        for kk in (1, 3, -4, 5, -7, 100):
            rep = run(enc_x + [step("cz", rot, "cx", steps="$k")] + dec_z, ["cz"], ["z"], scalars={"k": kk})
            verify("%s %d" % (rot, kk), rep, ref_rot(x, kk))
            if rep["ok"]:
                composed = any("composed" in n for n in rep["result"].get("notes", []))
                keyed = kk in (1, 3) or abs(kk) & (abs(kk) - 1) == 0
                check("%s %s %d %s" % (scheme, rot, kk, "keyed: direct" if keyed else "composed, noted"),
                      composed != keyed, rep["result"].get("notes"))
        verify(swap, run(enc_x + [step("cz", swap, "cx")] + dec_z, ["cz"], ["z"]), ref_swap)

        # key generation, every new key used afterwards
        rep = run(enc_x + enc_y + [step("rk", "keygen_relin"), step("cz", "mul_relin", "cx", "cy", key="rk")] + dec_z,
                  ["rk"], ["z"], {"sizes": ["rk"]})
        verify("keygen_relin + mul_relin", rep, xy)
        if rep["ok"]:
            ns = rep["result"]["samples"][-1]["ns"]["rk"]  # a cached key would come back in microseconds
            check("%s keygen_relin time is real" % scheme, ns > 200_000, ns)
        # a failing program must leave the standard keys usable
        r = run(enc_x + [step("rk", "keygen_relin"), step("cz", rot, "cx", steps=1, key="nokey")], ["rk"], [])
        check("%s failing program -> error" % scheme, not r["ok"], r.get("error"))
        r = run(enc_x + enc_y + [step("rk", "keygen_relin"), step("cz", "mul_relin", "cx", "cy")],
                [{"name": "r", "steps": ["rk", "cz"]}], [])
        refused("keygen_relin sharing a region", r)
        lst = list(range(1, 9))
        rep = run(enc_x + [step("gk2", "keygen_galois", steps=lst)] +
                  sum([[step("c%d" % s, rot, "cx", key="gk2", steps=s), step("p%d" % s, "decrypt", "c%d" % s),
                        step("z%d" % s, "decode", "p%d" % s)] for s in lst], []),
                  ["gk2"], ["z%d" % s for s in lst], {"sizes": ["gk2"]})
        verify("keygen_galois 1..8 + 8 rotations", rep, [ref_rot(x, s) for s in lst], out=["z%d" % s for s in lst])
        if rep["ok"]:
            check("%s keygen_galois list keys used directly" % scheme,
                  not any("composed" in n for n in rep["result"].get("notes", [])), rep["result"].get("notes"))
        half = slots if scheme == "ckks" else slots // 2
        p2 = [s for i in range(20) for s in (1 << i, -(1 << i)) if (1 << i) < half]
        rsteps = [step("gk2", "keygen_galois", steps="pow2")]
        for s in p2:
            rsteps += [step("c%d" % s, rot, "cx", key="gk2", steps=s), step("p%d" % s, "decrypt", "c%d" % s),
                       step("z%d" % s, "decode", "p%d" % s)]
        rsteps += [step("cz", swap, "cx", key="gk2")] + dec_z
        rep = run(enc_x + rsteps, ["gk2"], ["z%d" % s for s in p2] + ["z"])
        verify("keygen_galois pow2 + %d rotations + %s" % (len(p2), swap), rep,
               [ref_rot(x, s) for s in p2] + [ref_swap], out=["z%d" % s for s in p2] + ["z"])
        if rep["ok"]:
            check("%s pow2 keys used directly" % scheme,
                  not any("composed" in n for n in rep["result"].get("notes", [])), rep["result"].get("notes"))
        verify("keygen_secret + encrypt_sk/decrypt", run([
            step("sk2", "keygen_secret"), step("px", "encode", "x"), step("cz", "encrypt_sk", "px", key="sk2"),
            step("pz", "decrypt", "cz", key="sk2"), step("z", "decode", "pz")], ["sk2"], ["z"]), x)
        rep = run([step("pk2", "keygen_public"), step("px", "encode", "x"), step("cz", "encrypt_pk", "px", key="pk2"),
                   step("cm", "mul_relin", "cz", "cz")] + [step("pz", "decrypt", "cm"), step("z", "decode", "pz")],
                  ["pk2"], ["z"], {"sizes": ["pk2"], "noise": ["cz"]})
        verify("keygen_public + encrypt_pk + mul_relin", rep, ref_int(xo * xo))
        verify("keygen_switch + key_switch", run(enc_x + [
            step("sk2", "keygen_secret"), step("ks", "keygen_switch", **{"from": "sk", "to": "sk2"}),
            step("cz", "key_switch", "cx", key="ks"), step("pz", "decrypt", "cz", key="sk2"),
            step("z", "decode", "pz")], ["ks", "cz"], ["z"]), x)
        verify("key_switch_into", run(enc_x + [
            step("sk2", "keygen_secret"), step("ks", "keygen_switch", **{"from": "sk", "to": "sk2"}),
            step("cz", "key_switch_into", "cx", key="ks"), step("pz", "decrypt", "cz", key="sk2"),
            step("z", "decode", "pz"), step("pa", "decrypt", "cx"), step("za", "decode", "pa")], ["cz"], ["z", "za"]),
            [x, x], out=["z", "za"])
        # library routines (native variants): EvalSum, EvalInnerProduct, baby-step giant-step, EvalPoly
        def window(v, n):
            out = sum(ref_rot(v.astype(object) if scheme != "ckks" else v, j) for j in range(n))
            return ref_int(out) if scheme != "ckks" else out

        for n in (8, half):
            rep = run(enc_x + [step("cz", "inner_sum", "cx", n=n)] + dec_z, ["cz"], ["z"], {"levels": ["cz"]})
            verify("inner_sum n=%d" % n, rep, window(x, n))
        if rep["ok"]:
            check("%s inner_sum notes EvalSumKeyGen" % scheme,
                  any("EvalSumKeyGen" in s for s in rep["result"].get("notes", [])), rep["result"].get("notes"))
        rep = run(enc_x + enc_y + [step("cz", "inner_product", "cx", "cy", n=16)] + dec_z, ["cz"], ["z"],
                  {"levels": ["cz"]})
        verify("inner_product n=16", rep, window(xy if scheme != "ckks" else x * y, 16))
        if rep["ok"] and scheme == "ckks":
            check("ckks inner_product not rescaled", rep["result"]["levels"].get("cz") == L, rep["result"]["levels"])
        # b = 8: baby steps 1, 5, 6, 7 (hoisted), giant step 24; keys for 5, 6, 7, 24 are neither the setup's nor
        # EvalSum's (radix 4: 1, 2, 3, 4, 8, 12, 16, ...)
        ks = [0, 5, 6, 7, 25]
        ds = [rng.uniform(-1, 1, slots) if scheme == "ckks" else rng.integers(0, t, slots) for _ in ks]
        lin = sum((dv.astype(object) if scheme != "ckks" else dv) * (ref_rot(xo, k) if scheme != "ckks" else
                                                                      ref_rot(x, k)) for k, dv in zip(ks, ds))
        lin = ref_int(lin) if scheme != "ckks" else lin
        names = ["d%d" % k for k in ks]
        rep = run(enc_x + [step("cz", "linear_transform", "cx", *names, diagonals=[0, "$k", 6, 7, 25])] + dec_z,
                  ["cz"], ["z"], {"levels": ["cz"]}, scalars={"k": 5}, inputs=dict({"x": x}, **dict(zip(names, ds))))
        verify("linear_transform [0,$k=5,6,7,25]", rep, lin)
        if rep["ok"]:
            notes = rep["result"].get("notes", [])
            check("%s linear_transform notes b=8 and the keys made" % scheme,
                  any("b=8" in s for s in notes) and any("EvalRotateKeyGen(sk, [5, 6, 7, 24])" in s for s in notes),
                  notes)
            if scheme == "ckks":
                check("ckks linear_transform not rescaled", rep["result"]["levels"].get("cz") == L,
                      rep["result"]["levels"])
        cps = []
        lsteps = []
        for i in range(3):
            lsteps += [step("px.%d" % i, "encode", "x.%d" % i), step("cx.%d" % i, "encrypt_pk", "px.%d" % i)]
        lsteps += [step("cz.%d" % i, "linear_transform", "cx.%d" % i, "m0.%d" % i, "m1.%d" % i, diagonals=[1, 2])
                   for i in range(3)]
        for i in range(3):
            lsteps += [step("pz.%d" % i, "decrypt", "cz.%d" % i), step("z.%d" % i, "decode", "pz.%d" % i)]
        ins = {}
        for i in range(3):
            ins.update({"x.%d" % i: xs[i], "m0.%d" % i: xs[k + i], "m1.%d" % i: xs[(i + 1) % k]})
            a, m0, m1 = ((v.astype(object) if scheme != "ckks" else v) for v in (xs[i], xs[k + i], xs[(i + 1) % k]))
            e = m0 * ref_rot(a, 1) + m1 * ref_rot(a, 2)
            cps.append(ref_int(e) if scheme != "ckks" else e)
        rep = run(lsteps, [{"name": "lt", "steps": ["cz.%d" % i for i in range(3)]}], ["z.%d" % i for i in range(3)],
                  inputs=ins)
        verify("linear_transform x3 copies in one region", rep, cps, out=["z.%d" % i for i in range(3)])
        if scheme == "ckks":
            co = ["$a0", 0.25, "$a2", 0.5]
            rep = run(enc_x + [step("cz", "poly_eval", "cx", coeffs=co)] + dec_z, ["cz"], ["z"], {"levels": ["cz"]},
                      scalars={"a0": -0.5, "a2": 0.125})
            verify("poly_eval degree 3 ($name coeffs)", rep, np.polynomial.polynomial.polyval(x, [-0.5, 0.25, 0.125, 0.5]))
            if rep["ok"]:
                check("ckks poly_eval degree 3 consumes 3 levels", rep["result"]["levels"].get("cz") == L - 3,
                      (rep["result"]["levels"], rep["result"].get("notes")))
            refused("poly_eval degree 7 on 3 levels", run(enc_x + [step("cz", "poly_eval", "cx", coeffs=[0.5] * 8)]
                                                         + dec_z, ["cz"], ["z"]), "invalid_params")
        else:
            refused("poly_eval", run(enc_x + [step("cz", "poly_eval", "cx", coeffs=[1, 2])] + dec_z, ["cz"], ["z"]),
                    "unsupported")
        rep = run(enc_x + [step("cz", "inner_sum", "cx", n=4)] + dec_z, ["cz"], ["z"])
        verify("inner_sum after the routine keys were made", rep, window(x, 4))
        # the standard keys still work after the keygen programs
        verify("std keys after keygen", run(enc_x + enc_y + [
            step("cm", "mul_relin", "cx", "cy"), step("cz", rot, "cm", steps=1)] + dec_z, ["cz"], ["z"]),
            ref_rot(xy, 1))
    d.close()
    print("\n%d passed, %d failed%s" % (len(PASSES), len(FAILS), (": " + ", ".join(FAILS)) if FAILS else ""))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
