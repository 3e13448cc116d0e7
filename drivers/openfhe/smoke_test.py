#!/usr/bin/env python3
"""Smoke test of the OpenFHE driver: one program per primitive and scheme.

Run with the driver's venv (or any Python with numpy):
    ~/.cache/fhemark/venv-openfhe/bin/python drivers/openfhe/smoke_test.py
Exit status 0 when every check passes; 77 when the driver is not built.
Small, insecure parameters (allow_insecure) to stay fast.
"""
import base64
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("FHEMARK_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fhemark")
PY = os.path.join(CACHE, "venv-openfhe", "bin", "python")


class Driver:
    def __init__(self):
        env = dict(os.environ, FHEMARK_THREADS=os.environ.get("FHEMARK_THREADS", "1"))
        self.p = subprocess.Popen([PY, "driver.py"], cwd=HERE, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.i = 0

    def req(self, **kw):
        self.i += 1
        kw.update(v=1, id=self.i)
        self.p.stdin.write(json.dumps(kw) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("driver died")
        rep = json.loads(line)
        assert rep["id"] == self.i and rep["v"] == 1, rep
        return rep

    def close(self):
        r = self.req(type="shutdown")
        assert r["ok"], r
        assert self.p.wait(timeout=30) == 0


def enc(a):
    a = np.asarray(a)
    if a.dtype.kind in "iu":
        return {"dtype": "i64", "b64": base64.b64encode(a.astype("<i8").tobytes()).decode()}
    return {"dtype": "f64", "b64": base64.b64encode(a.astype("<f8").tobytes()).decode()}


def dec(o):
    return np.frombuffer(base64.b64decode(o["b64"]), dtype="<i8" if o["dtype"] == "i64" else "<f8")


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


def main():
    if not os.path.exists(PY):
        print("openfhe driver not built (%s missing): run drivers/openfhe/build.sh" % PY)
        return 77
    d = Driver()
    cap = d.req(type="capabilities")
    check("capabilities", cap["ok"] and cap["result"]["library"] == "openfhe", cap["result"].get("library_version"))
    ops_by = {k: set(v["ops"]) for k, v in cap["result"]["schemes"].items()}

    # error handling: the driver must keep going
    r = d.req(type="nonsense")
    check("unknown request -> error", not r["ok"] and r["error"]["kind"] == "unsupported")
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

        def run(steps, timed, outputs, extra=None, iters=1, scalars=None, inputs=None, tag=""):
            prog = {"steps": steps, "timed": timed, "outputs": outputs}
            prog.update(extra or {})
            smp = {"inputs": {k: enc(v) for k, v in (inputs or {"x": x, "y": y}).items()}}
            if scalars:
                smp["scalars"] = scalars
            return d.req(type="run", setup_id=scheme, program=prog, iters=iters, samples=[smp, smp])

        def verify(name, rep, expect, out="z"):
            if not rep["ok"]:
                check("%s %s" % (scheme, name), False, rep["error"])
                return
            ok = True
            err = 0
            for s in rep["result"]["samples"]:
                z = dec(s["outputs"][out])
                if len(z) != slots:
                    ok = False
                if scheme == "ckks":
                    err = max(err, float(np.max(np.abs(z - expect))))
                    ok = ok and err < 1e-3
                else:
                    ok = ok and bool(np.array_equal(z, np.mod(expect, t)))
            ns = rep["result"]["samples"][-1]["ns"]
            check("%s %s" % (scheme, name), ok, "ns=%s err=%.2g" % (ns, err))

        enc_x = [{"out": "px", "op": "encode", "args": ["x"]}, {"out": "cx", "op": "encrypt_pk", "args": ["px"]}]
        enc_y = [{"out": "py", "op": "encode", "args": ["y"]}, {"out": "cy", "op": "encrypt_pk", "args": ["py"]}]
        dec_z = [{"out": "pz", "op": "decrypt", "args": ["cz"]}, {"out": "z", "op": "decode", "args": ["pz"]}]
        mod = (lambda v: np.mod(v, t)) if scheme != "ckks" else (lambda v: v)
        xo, yo = (x.astype(object), y.astype(object)) if scheme != "ckks" else (x, y)

        def ref_int(v):
            return np.array([int(a) % t for a in v], dtype=np.int64) if scheme != "ckks" else v

        # encode/decode
        verify("encode/decode", run([{"out": "px", "op": "encode", "args": ["x"]},
                                     {"out": "z", "op": "decode", "args": ["px"]}], ["px", "z"], ["z"]), x)
        # pipeline
        rep = run(enc_x + [{"out": "cz", "op": "add", "args": ["cx", "cx"]}] + dec_z,
                  ["px", "cx", "cz", "pz", "z"], ["z"],
                  {"noise": ["cx", "cz"], "sizes": ["cx", "px", "pk"], "levels": ["cx"]})
        verify("pipeline add", rep, mod(2 * x))
        if rep["ok"]:
            res = rep["result"]
            check("%s levels fresh == L" % scheme, res.get("levels", {}).get("cx") == L, res.get("levels"))
            check("%s sizes" % scheme, all(v > 0 for v in res.get("sizes_bytes", {}).values()), res.get("sizes_bytes"))
            if scheme != "ckks":
                nb = res.get("noise_budget_bits", {})
                check("%s noise budget" % scheme, nb.get("cx", 0) > 10 and nb.get("cz", 0) > 0, nb)
            check("%s overhead" % scheme, res.get("overhead_ns", -1) >= 0, res.get("overhead_ns"))
        verify("encrypt_sk", run([{"out": "px", "op": "encode", "args": ["x"]},
                                  {"out": "cz", "op": "encrypt_sk", "args": ["px"]}] + dec_z, ["cz"], ["z"]), x)
        verify("sub", run(enc_x + enc_y + [{"out": "cz", "op": "sub", "args": ["cx", "cy"]}] + dec_z,
                          ["cz"], ["z"]), mod(x - y))
        verify("add_plain", run(enc_x + [{"out": "py", "op": "encode", "args": ["y"]},
                                         {"out": "cz", "op": "add_plain", "args": ["cx", "py"]}] + dec_z,
                                ["cz"], ["z"]), mod(x + y))
        xy = ref_int(xo * yo)
        verify("mul (no relin)", run(enc_x + enc_y + [{"out": "cz", "op": "mul", "args": ["cx", "cy"]}] + dec_z,
                                     ["cz"], ["z"]), xy)
        verify("mul_relin", run(enc_x + enc_y + [{"out": "cz", "op": "mul_relin", "args": ["cx", "cy"]}] + dec_z,
                                ["cz"], ["z"]), xy)
        verify("mul_relin iters=3", run(enc_x + enc_y + [{"out": "cz", "op": "mul_relin", "args": ["cx", "cy"]}] + dec_z,
                                        ["cz"], ["z"], iters=3), xy)
        verify("mul+relinearize", run(enc_x + enc_y + [{"out": "cm", "op": "mul", "args": ["cx", "cy"]},
                                                       {"out": "cz", "op": "relinearize", "args": ["cm"]}] + dec_z,
                                      ["cz"], ["z"]), xy)
        verify("mul_plain", run(enc_x + [{"out": "py", "op": "encode", "args": ["y"]},
                                         {"out": "cz", "op": "mul_plain", "args": ["cx", "py"]}] + dec_z,
                                ["cz"], ["z"]), xy)
        sc = 0.75 if scheme == "ckks" else 17
        verify("mul_scalar ($k)", run(enc_x + [{"out": "cz", "op": "mul_scalar", "args": ["cx"],
                                                "attrs": {"scalar": "$k"}}] + dec_z,
                                      ["cz"], ["z"], scalars={"k": sc}), ref_int(xo * sc) if scheme != "ckks" else x * sc)
        verify("square_relin", run(enc_x + [{"out": "cz", "op": "square_relin", "args": ["cx"]}] + dec_z,
                                   ["cz"], ["z"]), ref_int(xo * xo))
        if scheme == "ckks":
            rep = run(enc_x + enc_y + [{"out": "cm", "op": "mul_relin", "args": ["cx", "cy"]},
                                       {"out": "cz", "op": "rescale", "args": ["cm"]}] + dec_z,
                      ["cz"], ["z"], {"levels": ["cm", "cz"]})
            verify("rescale", rep, x * y)
            if rep["ok"]:
                lv = rep["result"].get("levels", {})
                check("ckks rescale drops a level", lv.get("cm") == L and lv.get("cz") == L - 1, lv)
            for k in (1, 3, 5, -7):
                verify("rotate %d" % k, run(enc_x + [{"out": "cz", "op": "rotate", "args": ["cx"],
                                                      "attrs": {"steps": "$k"}}] + dec_z,
                                            ["cz"], ["z"], scalars={"k": k}), np.roll(x, -k))
            verify("conjugate", run(enc_x + [{"out": "cz", "op": "conjugate", "args": ["cx"]}] + dec_z,
                                    ["cz"], ["z"]), x)
            rep = run([{"out": "px", "op": "encode", "args": ["x"], "attrs": {"level": 1}},
                       {"out": "cz", "op": "encrypt_pk", "args": ["px"]}] + dec_z, ["px"], ["z"],
                      {"levels": ["cz"]})
            verify("encode at level 1", rep, x)
            if rep["ok"]:
                check("ckks encode level attr", rep["result"]["levels"].get("cz") == 1, rep["result"]["levels"])
        else:
            rep = run(enc_x + [{"out": "cz", "op": "mod_switch", "args": ["cx"]}] + dec_z, ["cz"], ["z"],
                      {"levels": ["cx", "cz"], "noise": ["cz"], "sizes": ["cx", "cz"]})
            verify("mod_switch", rep, x)
            if rep["ok"]:
                lv = rep["result"].get("levels", {})
                check("%s mod_switch drops a level" % scheme, lv.get("cz") == L - 1, lv)
            verify("mod_switch then add", run(enc_x + enc_y + [
                {"out": "a", "op": "mod_switch", "args": ["cx"]}, {"out": "b", "op": "mod_switch", "args": ["cy"]},
                {"out": "cz", "op": "add", "args": ["a", "b"]}] + dec_z, ["cz"], ["z"]), mod(x + y))
            for k in (1, 3, 5, -7, 100):
                verify("rotate_rows %d" % k, run(enc_x + [{"out": "cz", "op": "rotate_rows", "args": ["cx"],
                                                           "attrs": {"steps": "$k"}}] + dec_z,
                                                 ["cz"], ["z"], scalars={"k": k}), rot_rows(x, k))
            verify("rotate_columns", run(enc_x + [{"out": "cz", "op": "rotate_columns", "args": ["cx"]}] + dec_z,
                                         ["cz"], ["z"]), swap_rows(x))
        # key generation, using the new keys afterwards
        verify("keygen_relin + mul_relin", run(enc_x + enc_y + [
            {"out": "rk", "op": "keygen_relin", "args": []},
            {"out": "cz", "op": "mul_relin", "args": ["cx", "cy"], "attrs": {"key": "rk"}}] + dec_z,
            ["rk"], ["z"], {"sizes": ["rk"]}), xy)
        rep = run(enc_x + enc_y + [
            {"out": "rk", "op": "keygen_relin", "args": []},
            {"out": "cz", "op": "mul_relin", "args": ["cx", "cy"], "attrs": {"key": "rk"}}] + dec_z,
            ["rk"], ["z"], iters=3)
        verify("keygen_relin iters=3", rep, xy)
        if rep["ok"]:
            # a cached key would come back in microseconds
            ns = rep["result"]["samples"][-1]["ns"]["rk"]
            check("%s keygen_relin time is real" % scheme, ns > 3 * 200_000, ns)
        # a failing program must leave the standard keys usable
        r = run(enc_x + [{"out": "rk", "op": "keygen_relin", "args": []},
                         {"out": "cz", "op": "rotate" if scheme == "ckks" else "rotate_rows", "args": ["cx"],
                          "attrs": {"steps": 1, "key": "nokey"}}],
                ["rk"], [])
        check("%s failing program -> error" % scheme, not r["ok"], r.get("error"))
        rot = "rotate" if scheme == "ckks" else "rotate_rows"
        verify("keygen_galois iters=2", run(enc_x + [
            {"out": "gk2", "op": "keygen_galois", "args": [], "attrs": {"steps": [1]}},
            {"out": "cz", "op": rot, "args": ["cx"], "attrs": {"steps": 1, "key": "gk2"}}] + dec_z,
            ["gk2"], ["z"], iters=2), np.roll(x, -1) if scheme == "ckks" else rot_rows(x, 1))
        ref3 = np.roll(x, -3) if scheme == "ckks" else rot_rows(x, 3)
        verify("keygen_galois [3] + rotate", run(enc_x + [
            {"out": "gk2", "op": "keygen_galois", "args": [], "attrs": {"steps": [3]}},
            {"out": "cz", "op": rot, "args": ["cx"], "attrs": {"steps": 3, "key": "gk2"}}] + dec_z,
            ["gk2"], ["z"], {"sizes": ["gk2"]}), ref3)
        verify("keygen_galois pow2 + rotate 6", run(enc_x + [
            {"out": "gk2", "op": "keygen_galois", "args": [], "attrs": {"steps": "pow2"}},
            {"out": "cz", "op": rot, "args": ["cx"], "attrs": {"steps": 6, "key": "gk2"}}] + dec_z,
            ["gk2"], ["z"]), np.roll(x, -6) if scheme == "ckks" else rot_rows(x, 6))
        verify("keygen_secret + encrypt_sk/decrypt", run([
            {"out": "sk2", "op": "keygen_secret", "args": []},
            {"out": "px", "op": "encode", "args": ["x"]},
            {"out": "cz", "op": "encrypt_sk", "args": ["px"], "attrs": {"key": "sk2"}},
            {"out": "pz", "op": "decrypt", "args": ["cz"], "attrs": {"key": "sk2"}},
            {"out": "z", "op": "decode", "args": ["pz"]}], ["sk2"], ["z"]), x)
        verify("keygen_switch + key_switch", run(enc_x + [
            {"out": "sk2", "op": "keygen_secret", "args": []},
            {"out": "ks", "op": "keygen_switch", "args": [], "attrs": {"from": "sk", "to": "sk2"}},
            {"out": "cz", "op": "key_switch", "args": ["cx"], "attrs": {"key": "ks"}},
            {"out": "pz", "op": "decrypt", "args": ["cz"], "attrs": {"key": "sk2"}},
            {"out": "z", "op": "decode", "args": ["pz"]}], ["ks", "cz"], ["z"]), x)
        # the standard keys still work after the keygen programs
        verify("std keys after keygen", run(enc_x + enc_y + [
            {"out": "cm", "op": "mul_relin", "args": ["cx", "cy"]},
            {"out": "cz", "op": rot, "args": ["cm"], "attrs": {"steps": 1}}] + dec_z, ["cz"], ["z"]),
            np.roll(xy, -1) if scheme == "ckks" else rot_rows(xy, 1))
        r = run(enc_x + [{"out": "cz", "op": "square", "args": ["cx"]}] + dec_z, ["cz"], ["z"])
        check("%s square -> unsupported" % scheme, (not r["ok"]) and r["error"]["kind"] == "unsupported"
              and "square" not in ops_by[scheme])
    d.close()
    print("\n%d passed, %d failed%s" % (len(PASSES), len(FAILS), (": " + ", ".join(FAILS)) if FAILS else ""))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
