"""OpenFHE's own choice of parameters (PROTOCOL.md "auto_params"): given no ring dimension, its
CCParams pick the ring and the special primes themselves from a depth, a scale, a first prime
size and a security level, under the HE standard's 2018 table. Read back with the driver's own
readers of a context, as a setup reports them."""
import openfhe as ofhe

from contexts import CKKS_SCALING, make_context, q_primes, scale_bits, special_primes
from jsonl_driver import Failure

SCHEMES = ("ckks",)  # the schemes capabilities.json says it answers for
_LEVELS = {128: ofhe.HEStd_128_classic, 192: ofhe.HEStd_192_classic, 256: ofhe.HEStd_256_classic}


def _int(req, name, low):
    v = req.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise Failure("invalid_params", "auto_params: %s must be an integer >= %d, not %r" % (name, low, v))
    return v


def auto_params(req):
    """A CKKS set of OpenFHE's choosing, with the driver's own scaling and key switching
    (contexts.CKKS_SCALING, HYBRID), so a setup of it builds the same chain."""
    if req.get("scheme") not in SCHEMES:
        raise Failure("unsupported", "OpenFHE driver: auto_params for %s only, not %r" % (", ".join(SCHEMES),
                                                                                           req.get("scheme")))
    depth, scale = _int(req, "depth", 0), _int(req, "scale_bits", 1)
    security = req.get("security", 128)
    if security not in _LEVELS:
        raise Failure("invalid_params", "auto_params: security %r: OpenFHE's table has 128, 192 and 256 bits" % security)
    cp = ofhe.CCParamsCKKSRNS()
    cp.SetMultiplicativeDepth(depth)
    cp.SetScalingModSize(scale)
    if req.get("first_bits") is not None:
        cp.SetFirstModSize(_int(req, "first_bits", 1))
    cp.SetScalingTechnique(CKKS_SCALING)
    cp.SetKeySwitchTechnique(ofhe.HYBRID)
    cp.SetSecurityLevel(_LEVELS[security])
    cc = make_context(cp)
    kp = cc.KeyGen()
    cc.EvalMultKeyGen(kp.secretKey)  # the relinearization key holds the special primes
    q = q_primes(cc)
    p, _ = special_primes(list(cc.GetEvalMultKeyVector(kp.secretKey.GetKeyTag())), set(q), int(cc.GetRingDimension()))
    return {"N": int(cc.GetRingDimension()), "q_primes": q, "p_primes": p, "scale_bits": scale_bits(cc, scale),
            "notes": ["OpenFHE's choice under its HEStd_%d_classic table (the HE standard of 2018)" % security]}
