#!/usr/bin/env python3
"""Smoke test of the TenSEAL driver: one program per primitive and scheme, checked with numpy.

Run with the driver's venv (or any Python with numpy):
    ~/.cache/fhemark/venv-tenseal/bin/python drivers/tenseal/smoke_test.py
Exit status 0 when every check passes; 77 when the driver is not built.
TenSEAL cannot build insecure sets (it always applies SEAL's 128-bit check), so this runs at
fhemark's c8192 sets (N = 8192, one 60-bit special prime): about half a minute on 2 cores.
Protocol 2: timed regions, k copies of a step in one region, `_into` forms, keys used after a
timed keygen, relinearization on and off (a product without it keeps 3 components).
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python_shared"))
from smoke_client import FAILS, PASSES, Driver, check, dec, enc, step, venv_python  # noqa: E402

PY = venv_python("tenseal")
T = 786433  # a 20-bit prime = 1 mod 2N at N = 8192
PARAMS = {"bfv": {"N": 8192, "q_bits": [45, 45, 45], "p_bits": [60], "t": T, "scale_bits": None},
          "ckks": {"N": 8192, "q_bits": [50, 40, 40], "p_bits": [60], "t": None, "scale_bits": 40}}



def regions(timed):
    return [t if isinstance(t, dict) else {"name": t, "steps": [t]} for t in timed]


def main():
    if not os.path.exists(PY):
        print("tenseal driver not built (%s missing): run drivers/tenseal/build.sh" % PY)
        return 77
    d = Driver(PY, HERE)
    cap = d.req(type="capabilities")
    res = cap["result"]
    check("capabilities", cap["ok"] and res["library"] == "tenseal" and res["protocol"] == 2 and res["threads"] == 1,
          (res.get("library_version"), res["build"].get("seal")))
    check("schemes: bfv and ckks only", sorted(res["schemes"]) == ["bfv", "ckks"], sorted(res["schemes"]))
    for scheme, sc in res["schemes"].items():
        ops, dev = set(sc["ops"]), sc.get("deviations", {})
        check("%s deviations name listed ops" % scheme, set(dev) <= ops, sorted(set(dev) - ops))
        absent = {"rotate", "rotate_rows", "rotate_columns", "conjugate", "relinearize", "rescale", "mod_switch",
                  "key_switch", "keygen_switch", "keygen_public", "encode_coeffs", "decode_coeffs"}
        check("%s: no rotation, rescale, mod_switch, key switch" % scheme, not (ops & absent), sorted(ops & absent))
        check("%s: bundled ops declared" % scheme, {"encode", "decode", "encrypt_pk", "encrypt_sk", "decrypt",
                                                    "add_plain", "mul_plain", "mul_scalar", "keygen_secret"} <= set(dev))
        check("%s: canonical products undeclared" % scheme, not ({"mul", "mul_relin", "add", "sub"} & set(dev)))

    # error handling: the driver must keep going
    r = d.req(type="nonsense")
    check("unknown request -> error", not r["ok"] and r["error"]["kind"] == "internal")
    r = d.req(type="capabilities", v=1)
    check("protocol 1 -> internal", not r["ok"] and r["error"]["kind"] == "internal")
    d.p.stdin.write("this is not json\n")
    d.p.stdin.flush()
    r = json.loads(d.p.stdout.readline())
    check("bad json -> error", not r["ok"] and r["error"]["kind"] == "internal")
    small = {"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": 12289, "scale_bits": None}
    for insecure in (False, True):
        r = d.req(type="setup", setup_id="x", scheme="bfv", params=small, allow_insecure=insecure)
        check("insecure set refused (allow_insecure=%s)" % insecure,
              not r["ok"] and r["error"]["kind"] == "insecure_params"
              and (("cannot" in r["error"]["message"]) == insecure), r.get("error"))
    r = d.req(type="setup", setup_id="x", scheme="ckks", params=dict(PARAMS["ckks"], q_bits=[61, 40, 40]))
    check("61-bit prime -> invalid_params", not r["ok"] and r["error"]["kind"] == "invalid_params", r.get("error"))
    r = d.req(type="setup", setup_id="x", scheme="bfv", params=dict(PARAMS["bfv"], t=65539))
    check("t without batching -> invalid_params", not r["ok"] and r["error"]["kind"] == "invalid_params", r.get("error"))
    r = d.req(type="setup", setup_id="x", scheme="bgv", params=PARAMS["bfv"])
    check("bgv -> unsupported", not r["ok"] and r["error"]["kind"] == "unsupported", r.get("error"))
    r = d.req(type="setup", setup_id="x", scheme="ckks", params=dict(PARAMS["ckks"], p_bits=[60, 60]))
    check("two special primes -> invalid_params", not r["ok"] and r["error"]["kind"] == "invalid_params")

    rng = np.random.default_rng(7)
    for scheme, params in PARAMS.items():
        r = d.req(type="setup", setup_id=scheme, scheme=scheme, params=params, rotations=[1], rotations_pow2=True)
        if not r["ok"]:
            check("%s setup" % scheme, False, r["error"])
            continue
        eff, sizes = r["result"]["effective"], r["result"]["sizes_bytes"]
        same = all(eff[k] == params[k] for k in ("N", "q_bits", "p_bits", "t")) and \
            (params["scale_bits"] is None or abs(eff["scale_bits"] - params["scale_bits"]) < 1e-9)
        check("%s setup: effective = asked" % scheme, same, {k: eff[k] for k in ("N", "q_bits", "p_bits", "t", "scale_bits")})
        check("%s setup: sizes" % scheme, all(sizes.get(k, 0) > 0 for k in ("public_key", "secret_key", "relin_keys",
                                                                           "galois_keys", "ciphertext")), sizes)
        slots = eff["slots"]
        ckks = scheme == "ckks"
        if ckks:
            x, y = rng.uniform(-1, 1, slots), rng.uniform(-1, 1, slots)
            s_val = 0.731
        else:
            x, y = rng.integers(0, T, slots), rng.integers(0, T, slots)
            s_val = int(rng.integers(1, T))

        def ref(v):
            return v if ckks else np.array([int(a) % T for a in v], dtype=np.int64)

        xo, yo = (x, y) if ckks else (x.astype(object), y.astype(object))

        def run(steps, timed, outputs, inputs=None, scalars=None, extra=None, n=2):
            prog = {"steps": steps, "timed": regions(timed), "outputs": outputs}
            prog.update(extra or {})
            smp = {"inputs": {k: enc(v) for k, v in (inputs or {"x": x, "y": y}).items()}}
            if scalars:
                smp["scalars"] = scalars
            return d.req(type="run", setup_id=scheme, program=prog, samples=[smp] * n)

        def verify(name, rep, expect, out="z"):
            if not rep["ok"]:
                check("%s %s" % (scheme, name), False, rep["error"])
                return None
            outs = out if isinstance(out, list) else [out]
            exps = expect if isinstance(out, list) else [expect]
            ok, err = True, 0.0
            for smp in rep["result"]["samples"]:
                for o, e in zip(outs, exps):
                    z = dec(smp["outputs"][o])
                    if len(z) != slots:
                        ok = False
                        continue
                    if ckks:
                        err = max(err, float(np.max(np.abs(z - e))))
                        ok = ok and err < 1e-3
                    else:
                        ok = ok and bool(np.array_equal(z, ref(e)))
            check("%s %s" % (scheme, name), ok, "ns=%s err=%.2g" % (rep["result"]["samples"][-1]["ns"], err))
            return rep["result"]

        def refused(name, rep, kind="unsupported"):
            check("%s %s -> %s" % (scheme, name, kind), not rep["ok"] and rep["error"]["kind"] == kind,
                  rep.get("error", "accepted"))

        enc_x = [step("px", "encode", "x"), step("cx", "encrypt_pk", "px")]
        enc_y = [step("py", "encode", "y"), step("cy", "encrypt_pk", "py")]
        dec_z = [step("pz", "decrypt", "cz"), step("z", "decode", "pz")]
        facts = {"sizes": ["cz"], "levels": ["cz"], "noise": ["cz"]}

        verify("encode timed", run([step("px", "encode", "x"), step("z", "decode", "px")], ["px"], ["z"]), x)
        verify("decode timed", run([step("px", "encode", "x"), step("z", "decode", "px")], ["z"], ["z"]), x)
        verify("encrypt_pk", run(enc_x + [step("pz", "decrypt", "cx"), step("z", "decode", "pz")], ["cx"], ["z"]), x)
        verify("encrypt_sk", run([step("px", "encode", "x"), step("cx", "encrypt_sk", "px"),
                                  step("pz", "decrypt", "cx"), step("z", "decode", "pz")], ["cx"], ["z"]), x)
        verify("decrypt", run(enc_x + [step("pz", "decrypt", "cx"), step("z", "decode", "pz")], ["pz"], ["z"]), x)
        verify("pipeline, every stage timed", run(enc_x + enc_y + [step("cz", "add", "cx", "cy")] + dec_z,
                                                  ["px", "cx", "py", "cy", "cz", "pz", "z"], ["z"]), ref(xo + yo))
        # secret-key encryption mixes with public-key ones (one secret key)
        verify("encrypt_sk + encrypt_pk", run([step("px", "encode", "x"), step("cx", "encrypt_sk", "px")] + enc_y
                                              + [step("cz", "mul_relin", "cx", "cy")] + dec_z, ["cz"], ["z"]),
               ref(xo * yo))

        binary = {"add": xo + yo, "sub": xo - yo, "mul": xo * yo, "mul_relin": xo * yo}
        results = {}
        for op, want in binary.items():
            for suffix in ("", "_into"):
                rep = run(enc_x + enc_y + [step("cz", op + suffix, "cx", "cy")] + dec_z, ["cz"], ["z"], extra=facts)
                results[op + suffix] = verify(op + suffix, rep, ref(want))
        for op, want in {"add_plain": xo + yo, "mul_plain": xo * yo}.items():
            for suffix in ("", "_into"):
                rep = run(enc_x + [step("py", "encode", "y"), step("cz", op + suffix, "cx", "py")] + dec_z, ["cz"],
                          ["z"], extra=facts)
                verify(op + suffix, rep, ref(want))
        for suffix in ("", "_into"):
            rep = run(enc_x + [step("cz", "mul_scalar" + suffix, "cx", scalar="$s")] + dec_z, ["cz"], ["z"],
                      scalars={"s": s_val}, extra=facts)
            verify("mul_scalar" + suffix, rep, ref(xo * s_val))
        for op in ("square", "square_relin"):
            for suffix in ("", "_into"):
                rep = run(enc_x + [step("cz", op + suffix, "cx")] + dec_z, ["cz"], ["z"], extra=facts)
                results[op + suffix] = verify(op + suffix, rep, ref(xo * xo))

        # relinearization on and off: a product without it has 3 components, so it serializes larger
        size = {op: (r["sizes_bytes"].get("cz") if r else None) for op, r in results.items()}
        fresh = results["add"]["sizes_bytes"]["cz"] if results.get("add") else None
        check("%s mul keeps 3 components, mul_relin 2" % scheme,
              None not in (size.get("mul"), size.get("mul_relin"), fresh) and size["mul"] > 1.3 * size["mul_relin"]
              and size["mul_into"] > 1.3 * size["mul_relin_into"] and size["square"] > 1.3 * size["square_relin"],
              {k: size.get(k) for k in ("add", "mul", "mul_relin", "mul_into", "mul_relin_into", "square", "square_relin")})
        r = results.get("mul_relin")
        check("%s levels: top, not rescaled" % scheme, r is not None and r["levels"] == {"cz": len(params["q_bits"]) - 1},
              r and r["levels"])
        if not ckks:
            check("bfv noise budget reported", r is not None and r["noise_budget_bits"].get("cz", 0) > 0,
                  r and r["noise_budget_bits"])

        # three copies in one region, each checked
        steps = []
        for i in range(3):
            steps += [step("px.%d" % i, "encode", "x.%d" % i), step("cx.%d" % i, "encrypt_pk", "px.%d" % i),
                      step("py.%d" % i, "encode", "y.%d" % i), step("cy.%d" % i, "encrypt_pk", "py.%d" % i)]
        steps += [step("cz.%d" % i, "mul_relin", "cx.%d" % i, "cy.%d" % i) for i in range(3)]
        for i in range(3):
            steps += [step("pz.%d" % i, "decrypt", "cz.%d" % i), step("z.%d" % i, "decode", "pz.%d" % i)]
        ins, wants = {}, []
        for i in range(3):
            a = rng.uniform(-1, 1, slots) if ckks else rng.integers(0, T, slots)
            b = rng.uniform(-1, 1, slots) if ckks else rng.integers(0, T, slots)
            ins.update({"x.%d" % i: a, "y.%d" % i: b})
            wants.append(ref(a * b if ckks else a.astype(object) * b.astype(object)))
        verify("mul_relin#3", run(steps, [{"name": "cz", "steps": ["cz.0", "cz.1", "cz.2"]}],
                                  ["z.0", "z.1", "z.2"], inputs=ins), wants, out=["z.0", "z.1", "z.2"])
        mixed = enc_x + enc_y + [step("c1", "mul", "cx", "cy"), step("c2", "mul_relin", "cx", "cy")]
        refused("mul and mul_relin in one region",
                run(mixed + [step("pz", "decrypt", "c2"), step("z", "decode", "pz")],
                    [{"name": "r", "steps": ["c1", "c2"]}], ["z"]))

        # key generation, then the new key is used
        verify("keygen_secret", run([step("k", "keygen_secret"), step("px", "encode", "x"),
                                     step("cx", "encrypt_sk", "px", key="k"), step("pz", "decrypt", "cx", key="k"),
                                     step("z", "decode", "pz")], ["k"], ["z"]), x)
        # a ciphertext under the new secret key does not decrypt under the setup's
        rep = run([step("k", "keygen_secret"), step("px", "encode", "x"), step("cx", "encrypt_sk", "px", key="k"),
                   step("pz", "decrypt", "cx"), step("z", "decode", "pz")], ["k"], ["z"], n=1)
        wrong = rep["ok"] and not np.allclose(dec(rep["result"]["samples"][0]["outputs"]["z"]), ref(x), atol=1e-3)
        check("%s keygen_secret makes another key" % scheme, wrong)
        verify("keygen_relin", run([step("k", "keygen_relin")] + enc_x + enc_y
                                   + [step("cz", "mul_relin", "cx", "cy", key="k")] + dec_z, ["k"], ["z"]), ref(xo * yo))
        verify("mul_relin_into with a new key", run([step("k", "keygen_relin")] + enc_x + enc_y
                                                    + [step("cz", "mul_relin_into", "cx", "cy", key="k")] + dec_z,
                                                    ["cz"], ["z"]), ref(xo * yo))
        verify("keygen_galois pow2", run([step("k", "keygen_galois", steps="pow2")] + enc_x
                                         + [step("pz", "decrypt", "cx"), step("z", "decode", "pz")], ["k"], ["z"], n=1), x)
        refused("keygen_galois [1, 2]", run([step("k", "keygen_galois", steps=[1, 2])] + enc_x
                                            + [step("pz", "decrypt", "cx"), step("z", "decode", "pz")], ["k"], ["z"]))
        refused("rotate", run(enc_x + [step("cz", "rotate" if ckks else "rotate_rows", "cx", steps=1)] + dec_z,
                              ["cz"], ["z"]))
        refused("relinearize", run(enc_x + enc_y + [step("cm", "mul", "cx", "cy"), step("cz", "relinearize", "cm")]
                                   + dec_z, ["cz"], ["z"]))
        refused("encode below the top level", run([step("px", "encode", "x", level=0), step("z", "decode", "px")],
                                                  ["px"], ["z"]))
        refused("region reading its own step", run(enc_x + [step("c1", "add", "cx", "cx"), step("c2", "add", "c1", "cx")]
                                                   + [step("pz", "decrypt", "c2"), step("z", "decode", "pz")],
                                                   [{"name": "r", "steps": ["c1", "c2"]}], ["z"]), "internal")
        # the setup still has its own keys after the keygen programs
        verify("setup keys unchanged after keygen", run(enc_x + enc_y + [step("cz", "mul_relin", "cx", "cy")] + dec_z,
                                                        ["cz"], ["z"]), ref(xo * yo))
    d.close()
    print("%d passed, %d failed" % (len(PASSES), len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
