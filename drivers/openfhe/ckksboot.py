"""CKKS bootstrapping presets `openfhe_bootstrap_default` and `openfhe_bootstrap_sparse` for the OpenFHE driver.

OpenFHE's simple-ckks-bootstrapping example (UNIFORM_TERNARY secret, FLEXIBLEAUTO,
first prime 60 bits, scaling primes 59 bits, level budget [4, 4]) with the number of
levels left after bootstrapping and the key-switching digit count chosen so that
OpenFHE's own HEStd_128_classic check accepts it at N = 2^16: the example's 10 levels
after bootstrapping need N = 2^17 in OpenFHE 1.6.1 (its GetBootstrapDepth([4,4],
UNIFORM_TERNARY) is 22), so the preset keeps 2 levels, dnum 9 (both overridable).
A setup N < 65536 builds the same circuit on the smaller ring with HEStd_NotSet, only
with allow_insecure.

`openfhe_bootstrap_sparse` bootstraps a sparsely packed ciphertext of `sparse_slots` values (a power of
two, at most SPARSE_MAX_SLOTS; default 16), as OpenFHE's sparse-packing examples do: level
budget [1, 1] (one level each for CoeffsToSlots and SlotsToCoeffs, which few slots afford), so
the same 24 levels leave 8 after a bootstrap, and the few rotation keys of a short linear
transform keep the peak near 10 GB where the full-slot preset needs about 21 GB (measured, see
capabilities.json). The setup reports `slots` = that count: inputs, rotations and outputs are
over those slots (OpenFHE replicates them across the ring).

The driver's setup calls `setup` for a CKKS request with params {"preset": ...}.
"""
import openfhe as ofhe

import binfhe
import compat
from contexts import Key, Setup, openfhe_error, q_primes
from jsonl_driver import Failure

PRESET = "openfhe_bootstrap_default"
SPARSE = "openfhe_bootstrap_sparse"
PRESETS = (PRESET, SPARSE)
SECURE_N = 65536
LEVEL_BUDGET = [4, 4]
SPARSE_LEVEL_BUDGET = [1, 1]
SPARSE_SLOTS = 16
SPARSE_MAX_SLOTS = 64
# The depth HEStd_128_classic accepts at N = 2^16 with DNUM digits: 2 levels + GetBootstrapDepth([4, 4]).
DEPTH = 24
LEVELS_AFTER = 2
DNUM = 9
SCALE_BITS = 59
FIRST_BITS = 60


def setup(params, rotations, allow_insecure):
    preset = params.get("preset")
    if preset not in PRESETS:
        raise Failure("invalid_params", "unknown ckks preset %r (known: %s)" % (preset, ", ".join(PRESETS)))
    N = int(params.get("N") or SECURE_N)
    if N < 2 or N & (N - 1):
        raise Failure("invalid_params", "N must be a power of two")
    insecure = N < SECURE_N
    if insecure and not allow_insecure:
        raise Failure("insecure_params", "preset %s with N=%d < %d is insecure (set allow_insecure for tests)"
                      % (PRESET, N, SECURE_N))
    sparse = preset == SPARSE
    lb = [int(x) for x in params.get("level_budget") or (SPARSE_LEVEL_BUDGET if sparse else LEVEL_BUDGET)]
    dnum = int(params.get("dnum") or DNUM)
    dist = ofhe.UNIFORM_TERNARY
    boot_depth = int(ofhe.CryptoContext.GetBootstrapDepth(lb, dist))
    after = int(params.get("levels_after_bootstrap") or (DEPTH - boot_depth if sparse else LEVELS_AFTER))
    wanted = int(params.get("sparse_slots") or SPARSE_SLOTS) if sparse else None
    if sparse and (wanted < 1 or wanted & (wanted - 1) or wanted > SPARSE_MAX_SLOTS or wanted > N // 2):
        raise Failure("invalid_params", "preset %s bootstraps a power of two of at most %d slots, not %r"
                      % (SPARSE, min(SPARSE_MAX_SLOTS, N // 2), params.get("sparse_slots")))
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
    slots = wanted or cc.GetRingDimension() // 2
    try:
        cc.EvalBootstrapSetup(lb, [0, 0], slots)
        kp = cc.KeyGen()
        cc.EvalMultKeyGen(kp.secretKey)
        cc.EvalBootstrapKeyGen(kp.secretKey, slots)
    except Exception as e:
        raise openfhe_error(e, "internal")

    primes = q_primes(cc)
    # FLEXIBLEAUTO keeps one prime more than the usable levels: OpenFHE's lowest level a
    # ciphertext can be bootstrapped from is depth - 1 (two primes left), as in its example.
    s = Setup("ckks", cc, kp, primes, depth - 1)
    s.boot, s.slots = True, slots
    steps = sorted({int(k) % slots for k in rotations if int(k) % slots})  # rotations of the program itself
    if steps:
        try:
            cc.EvalRotateKeyGen(kp.secretKey, steps)  # beside the bootstrapping's keys, in the same map
        except Exception as e:
            raise openfhe_error(e, "internal")
    gmap = compat.all_automorphism_keys(cc, [s.sk.tag]).get(s.sk.tag)
    s.gk = Key("galois", gmap, s.sk.tag, indices=compat.existing_automorphism_indices(cc, s.sk.tag))
    s.standard_facts(cp, "ternary", not insecure, SCALE_BITS)
    s.eff.update({
        "multiplicative_depth": depth, "scaling": "FLEXIBLEAUTO",
        "preset": preset, "insecure": insecure,
        "bootstrap": {"level_budget": lb, "bootstrap_depth": boot_depth,
                      "levels_after_bootstrap": after, "input_level_openfhe": depth - 1,
                      "slots": slots, "secret": "UNIFORM_TERNARY",
                      "first_mod_bits": FIRST_BITS, "scaling_mod_bits": SCALE_BITS},
    })
    if gmap is not None:
        gsize = binfhe.serialized_size(gmap)
        if gsize is not None:
            s.size_table["galois_keys"] = gsize  # the bootstrapping rotation keys, and the program's
    s.setup_notes = ["preset %s: OpenFHE CKKS bootstrapping (EvalBootstrapSetup(%s, [0, 0], %d slots), "
                     "EvalBootstrapKeyGen), UNIFORM_TERNARY, FLEXIBLEAUTO, %d-bit scaling primes, %d levels after "
                     "bootstrapping" % (preset, lb, slots, SCALE_BITS, after),
                     "galois_keys: the bootstrapping automorphism keys and one per rotation step the program "
                     "takes (%s)" % (steps or "none")]
    if insecure:
        s.setup_notes.append("insecure reduced-ring variant (N=%d, HEStd_NotSet) of %s" % (s.N, preset))
    return s
