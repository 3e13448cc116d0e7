"""CKKS bootstrapping preset `openfhe_bootstrap_default` for the OpenFHE driver.

OpenFHE's simple-ckks-bootstrapping example (UNIFORM_TERNARY secret, FLEXIBLEAUTO,
first prime 60 bits, scaling primes 59 bits, level budget [4, 4]) with the number of
levels left after bootstrapping and the key-switching digit count chosen so that
OpenFHE's own HEStd_128_classic check accepts it at N = 2^16: the example's 10 levels
after bootstrapping need N = 2^17 in OpenFHE 1.6.1 (its GetBootstrapDepth([4,4],
UNIFORM_TERNARY) is 22), so the preset keeps 2 levels, dnum 9 (both overridable).
A setup N < 65536 builds the same circuit on the smaller ring with HEStd_NotSet, only
with allow_insecure.

driver.py calls `bind(...)`, then `setup(req, registry)`.
"""
import math

import numpy as np

PRESET = "openfhe_bootstrap_default"
SECURE_N = 65536
LEVEL_BUDGET = [4, 4]
LEVELS_AFTER = 2
DNUM = 9
SCALE_BITS = 59
FIRST_BITS = 60

ofhe = None
DriverError = None
Setup = None
Key = None
openfhe_error = None
q_primes = None
p_primes = None
serialized_size = None


def bind(**kw):
    globals().update(kw)


def setup(req, registry):
    params = req.get("params") or {}
    if params.get("preset") != PRESET:
        raise DriverError("invalid_params", "unknown ckks preset %r (known: %s)" % (params.get("preset"), PRESET))
    allow_insecure = bool(req.get("allow_insecure", False))
    N = int(params.get("N") or SECURE_N)
    if N < 2 or N & (N - 1):
        raise DriverError("invalid_params", "N must be a power of two")
    insecure = N < SECURE_N
    if insecure and not allow_insecure:
        raise DriverError("insecure_params", "preset %s with N=%d < %d is insecure (set allow_insecure for tests)"
                          % (PRESET, N, SECURE_N))
    lb = [int(x) for x in params.get("level_budget") or LEVEL_BUDGET]
    after = int(params.get("levels_after_bootstrap") or LEVELS_AFTER)
    dnum = int(params.get("dnum") or DNUM)
    dist = ofhe.UNIFORM_TERNARY
    boot_depth = int(ofhe.CryptoContext.GetBootstrapDepth(lb, dist))
    depth = after + boot_depth
    cp = ofhe.CCParamsCKKSRNS()
    cp.SetSecretKeyDist(dist)
    cp.SetSecurityLevel(ofhe.HEStd_NotSet if insecure else ofhe.HEStd_128_classic)
    cp.SetRingDim(N)
    cp.SetScalingModSize(SCALE_BITS)
    cp.SetFirstModSize(FIRST_BITS)
    cp.SetScalingTechnique(ofhe.FLEXIBLEAUTO)
    cp.SetKeySwitchTechnique(ofhe.HYBRID)
    cp.SetNumLargeDigits(dnum)
    cp.SetMultiplicativeDepth(depth)
    try:
        cc = ofhe.GenCryptoContext(cp)
    except Exception as e:
        raise openfhe_error(e)
    for feat in (ofhe.PKE, ofhe.KEYSWITCH, ofhe.LEVELEDSHE, ofhe.ADVANCEDSHE, ofhe.FHE, ofhe.MULTIPARTY):
        cc.Enable(feat)
    slots = cc.GetRingDimension() // 2
    try:
        cc.EvalBootstrapSetup(lb)
        kp = cc.KeyGen()
        cc.EvalMultKeyGen(kp.secretKey)
        cc.EvalBootstrapKeyGen(kp.secretKey, slots)
    except Exception as e:
        raise openfhe_error(e, "internal")

    s = Setup()
    s.scheme = "ckks"
    s.cc = cc
    s.N = cc.GetRingDimension()
    s.slots = slots
    s.t = None
    primes = q_primes(cc)
    s.q_primes = primes
    # FLEXIBLEAUTO keeps one prime more than the usable levels: OpenFHE's lowest level a
    # ciphertext can be bootstrapped from is depth - 1 (two primes left), as in its example.
    s.L = depth - 1
    s.notes = []
    s.roots = None
    s.M = 2 * s.N
    s.auto_cache = {}
    s.pow2 = False
    s.boot = True
    tag = kp.secretKey.GetKeyTag()
    s.sk = Key("secret", kp.secretKey, tag, pair=kp)
    s.pk = Key("public", kp.publicKey, tag)
    registry.secret_keys[tag] = kp.secretKey
    s.rlk = Key("relin", list(cc.GetEvalMultKeyVector(tag)), tag)
    registry.relin_installed[tag] = s.rlk
    gmap = dict(cc.GetAllEvalAutomorphismKeys()).get(tag)
    s.gk = Key("galois", gmap, tag, indices=set())

    qset = set(primes)
    pp = p_primes(s.rlk.obj[0], qset)
    log_q = sum(math.log2(p) for p in primes)
    log_qp = log_q + sum(math.log2(p) for p in pp)
    effective = {
        "N": s.N, "q_bits": [p.bit_length() for p in primes], "p_bits": [p.bit_length() for p in pp],
        "log_q": round(log_q, 3), "log_qp": round(log_qp, 3),
        "t": None, "scale_bits": SCALE_BITS, "slots": slots,
        "levels": s.L, "dnum": int(cp.GetNumLargeDigits()), "secret": "ternary",
        "sigma": round(float(cp.GetStandardDeviation()), 4),
        "security": "none (HEStd_NotSet)" if insecure else "HEStd_128_classic",
        "multiplicative_depth": depth, "scaling": "FLEXIBLEAUTO",
        "preset": PRESET, "insecure": insecure,
        "bootstrap": {"level_budget": lb, "bootstrap_depth": boot_depth,
                      "levels_after_bootstrap": after, "input_level_openfhe": depth - 1,
                      "slots": slots, "secret": "UNIFORM_TERNARY",
                      "first_mod_bits": FIRST_BITS, "scaling_mod_bits": SCALE_BITS},
    }
    s.effective = effective
    x = np.zeros(slots)
    pt = cc.MakeCKKSPackedPlaintext(x, 1, 0, None, slots)
    ct = cc.Encrypt(kp.publicKey, pt)
    sizes = {
        "public_key": len(ofhe.Serialize(kp.publicKey, ofhe.BINARY)),
        "secret_key": len(ofhe.Serialize(kp.secretKey, ofhe.BINARY)),
        "relin_keys": len(ofhe.Serialize(s.rlk.obj, ofhe.BINARY)),
        "plaintext": s.plaintext_size(pt),
        "ciphertext": len(ofhe.Serialize(ct, ofhe.BINARY)),
    }
    if gmap is not None:
        gsize = serialized_size(gmap)
        if gsize is not None:
            sizes["galois_keys"] = gsize  # the bootstrapping rotation keys
    notes = ["preset %s: OpenFHE CKKS bootstrapping (EvalBootstrapSetup(%s), EvalBootstrapKeyGen), "
             "UNIFORM_TERNARY, FLEXIBLEAUTO, %d-bit scaling primes, %d levels after bootstrapping"
             % (PRESET, lb, SCALE_BITS, after),
             "galois_keys: the bootstrapping automorphism keys (no other rotation keys are made)"]
    if insecure:
        notes.append("insecure reduced-ring variant (N=%d, HEStd_NotSet) of %s" % (s.N, PRESET))
    return s, {"effective": effective, "sizes_bytes": sizes, "notes": notes}
