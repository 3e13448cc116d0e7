"""CKKS bootstrapping preset `openfhe_bootstrap_default` for the OpenFHE driver.

OpenFHE's simple-ckks-bootstrapping example (UNIFORM_TERNARY secret, FLEXIBLEAUTO,
first prime 60 bits, scaling primes 59 bits, level budget [4, 4]) with the number of
levels left after bootstrapping and the key-switching digit count chosen so that
OpenFHE's own HEStd_128_classic check accepts it at N = 2^16: the example's 10 levels
after bootstrapping need N = 2^17 in OpenFHE 1.6.1 (its GetBootstrapDepth([4,4],
UNIFORM_TERNARY) is 22), so the preset keeps 2 levels, dnum 9 (both overridable).
A setup N < 65536 builds the same circuit on the smaller ring with HEStd_NotSet, only
with allow_insecure.

The driver's setup calls `setup` for a CKKS request with params {"preset": ...}.
"""
import openfhe as ofhe

import binfhe
import compat
from contexts import Key, Setup, openfhe_error, q_primes
from jsonl_driver import Failure

PRESET = "openfhe_bootstrap_default"
SECURE_N = 65536
LEVEL_BUDGET = [4, 4]
LEVELS_AFTER = 2
DNUM = 9
SCALE_BITS = 59
FIRST_BITS = 60


def setup(params, allow_insecure):
    if params.get("preset") != PRESET:
        raise Failure("invalid_params", "unknown ckks preset %r (known: %s)" % (params.get("preset"), PRESET))
    N = int(params.get("N") or SECURE_N)
    if N < 2 or N & (N - 1):
        raise Failure("invalid_params", "N must be a power of two")
    insecure = N < SECURE_N
    if insecure and not allow_insecure:
        raise Failure("insecure_params", "preset %s with N=%d < %d is insecure (set allow_insecure for tests)"
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

    primes = q_primes(cc)
    # FLEXIBLEAUTO keeps one prime more than the usable levels: OpenFHE's lowest level a
    # ciphertext can be bootstrapped from is depth - 1 (two primes left), as in its example.
    s = Setup("ckks", cc, kp, primes, depth - 1)
    s.boot = True
    gmap = compat.all_automorphism_keys(cc, [s.sk.tag]).get(s.sk.tag)
    s.gk = Key("galois", gmap, s.sk.tag, indices=set())
    s.standard_facts(cp, "ternary", not insecure, SCALE_BITS)
    s.eff.update({
        "multiplicative_depth": depth, "scaling": "FLEXIBLEAUTO",
        "preset": PRESET, "insecure": insecure,
        "bootstrap": {"level_budget": lb, "bootstrap_depth": boot_depth,
                      "levels_after_bootstrap": after, "input_level_openfhe": depth - 1,
                      "slots": slots, "secret": "UNIFORM_TERNARY",
                      "first_mod_bits": FIRST_BITS, "scaling_mod_bits": SCALE_BITS},
    })
    if gmap is not None:
        gsize = binfhe.serialized_size(gmap)
        if gsize is not None:
            s.size_table["galois_keys"] = gsize  # the bootstrapping rotation keys
    s.setup_notes = ["preset %s: OpenFHE CKKS bootstrapping (EvalBootstrapSetup(%s), EvalBootstrapKeyGen), "
                     "UNIFORM_TERNARY, FLEXIBLEAUTO, %d-bit scaling primes, %d levels after bootstrapping"
                     % (PRESET, lb, SCALE_BITS, after),
                     "galois_keys: the bootstrapping automorphism keys (no other rotation keys are made)"]
    if insecure:
        s.setup_notes.append("insecure reduced-ring variant (N=%d, HEStd_NotSet) of %s" % (s.N, PRESET))
    return s
