"""OpenFHE contexts for BFV, BGV and CKKS with their standard keys: library-neutral parameters
mapped to CCParams (HYBRID key switching with the driver's dnum, or BV where asked), the BFV depth walk, and what
the library really built (effective parameters, sizes). The CKKS bootstrapping preset
(ckksboot.py) makes its own context and finishes it here, as a Setup."""
import math
import re
import sys

import numpy as np
import openfhe as ofhe

import compat
import noise as noise_mod
from dnum import choose_dnum
from jsonl_driver import Failure
from streamed import binary, json_moduli

SCHEMES = ("bfv", "bgv", "ckks")
SPARSE_WEIGHT = 192  # the h of OpenFHE's SPARSE_TERNARY keys (build_params)
BGV_T_LIMIT = 2 ** 32  # BGV's plaintext modulus must stay below it (setup)
# FLEXIBLEAUTO, not FIXEDMANUAL: FIXEDMANUAL takes every rescale as a division by exactly
# 2^scale_bits (GetModReduceFactor returns 2^p), but the primes OpenFHE finds = 1 mod 2N lie up to
# ~2N ln q away from 2^p, so each rescale leaves a relative error of |q_i/2^p - 1| (2^-26 at N = 8192,
# 45 bits) that decoding never removes: 21.7 bits on examples/statistics.py at N = 8192, where
# FLEXIBLEAUTO, which divides by the real prime, gets 27.8 (drivers/openfhe/README.md). FLEXIBLEAUTO
# builds the same primes; its Rescale is a no-op (it rescales lazily), so the driver's `rescale` is
# Compress(ct, towers - 1), the same exact rescale, made when the program asks for it.
CKKS_SCALING = ofhe.FLEXIBLEAUTO
DECODE_NOISE = ("CKKS decryption adds OpenFHE's decode noise (IND-CPA^D countermeasure in CKKSPackedEncoding::Decode: "
                "Gaussian, sqrt(2) x the error estimated from the imaginary parts, at least sqrt(N)/8 per coefficient); "
                "kept, as OpenFHE's default: it costs bits only where the computation's own error is smaller "
                "(drivers/openfhe/README.md, CKKS precision)")

PK_NOISE = ("CKKS encrypt_pk: OpenFHE encrypts mod Q, its fresh noise v*e + e0 + e1*s at full size, where SEAL encrypts "
            "one level up and divides the noise by the special prime: a public-key ciphertext starts about 5 bits less "
            "precise than a secret-key one (18.9 against 24.0 bits at N = 8192 on the MLP example's set, 2026-11-28), "
            "and a computation on public-key inputs needs a few more scale bits than in SEAL")

# Process-wide, like OpenFHE's own static key maps: every secret key by tag (for noise budgets),
# and the relinearization key each tag has in OpenFHE's EvalMult key map now.
SECRET_KEYS = {}
RELIN_INSTALLED = {}


# OpenFHE's words (its LastPrime/PreviousPrime, by version) when it finds no prime of a size asked that is 1
# modulo what its scheme needs (BGV under FIXEDMANUAL: 2N times t, about 34 bits at N = 8192 with t of 20, so
# the chain's primes of that size or little more run out): refused as prime_unavailable, with the bits where
# OpenFHE says them, so that a search skips the ring's chains whose smallest prime is no larger.
PRIME_UNMADE = re.compile(r"LastPrime overflow|overflow shrinking candidate|Requested (\d+) bits, but returned", re.I)


def openfhe_error(e, default="invalid_params"):
    msg = one_line(e)
    low = msg.lower()
    if ("he standard" in low or "security requirement" in low
            or "does not comply" in low or "security level" in low):
        return Failure("insecure_params", "OpenFHE: " + msg)
    unmade = PRIME_UNMADE.search(msg)
    if unmade:
        bits = {"bits": int(unmade.group(1))} if unmade.group(1) else {}
        return Failure(default, "OpenFHE: " + msg, {"kind": "prime_unavailable", **bits})
    return Failure(default, "OpenFHE: " + msg)


def one_line(msg):
    msg = str(msg).strip().replace("\n", " ")
    # OpenFHE prefixes its messages with the source path and line.
    return re.sub(r"^\S+\.(?:h|cpp|hpp):l\.\d+:", "", msg)[:2000]


class Key:
    """A key value inside a program (or a setup's standard key)."""

    def __init__(self, kind, obj, tag=None, indices=None, pair=None):
        self.kind = kind          # secret | public | relin | galois | switch
        self.obj = obj            # PrivateKey | PublicKey | [EvalKey] | EvalKeyMap | EvalKey
        self.tag = tag            # secret key tag it belongs to
        self.indices = indices or set()  # galois: automorphism indices
        self.pair = pair          # secret: the KeyPair (OpenFHE makes both at once)


def q_primes(cc):
    """Ciphertext primes of a context, level 0 first, from its JSON."""
    return list(noise_mod.context_roots(cc))


P_HEAD_BYTES = 1 << 22  # where a key's serialization names its towers' moduli (its first polynomial's parameters)
_AUX_BITS = 60  # OpenFHE's special primes (HYBRID): its auxBits, the largest NTT primes below 2^60 not in Q


def p_primes(keys_binary, qset, n):
    """Special primes: the moduli of an evaluation key's towers that are not in Q, in tower order. The
    binding says them nowhere else. OpenFHE takes them downward from 2^60, the NTT primes (1 mod 2N) not
    in Q; each candidate is looked for as the 8 bytes its towers' parameters hold in the key's BINARY
    serialization (`keys_binary`: its first bytes, streamed as the sizes are). Where the first candidate is not there
    (OpenFHE changed its rule), the key's JSON is read instead: 13 times the key, and minutes at N = 2^16
    (a 1.7 GB key: 255 s of a setup, against about 20 s for the library's key generation)."""
    found, step = {}, 2 * n
    cand = ((1 << _AUX_BITS) - 1) // step * step + 1
    while cand > step:
        if cand not in qset and _probably_prime(cand):
            at = keys_binary.find(cand.to_bytes(8, "little"))
            if at < 0:
                break  # the special primes are consecutive candidates: the first missing one ends them
            found[cand] = at
        cand -= step
    return sorted(found, key=found.get) if found else None


def p_primes_json(evalkey, qset):
    """p_primes read from one key's JSON, streamed (made whole in memory the text was 13 times the key,
    and every OpenFHE record's peak memory held it)."""
    return [v for v in json_moduli(evalkey) if v not in qset]


def special_primes(keys, qset, n):
    """(P's primes, the key vector's BINARY size): one serialization serves both, streamed (its first
    DCRTPoly's parameters, every tower's modulus, lie in the first bytes)."""
    size, head = binary(keys, P_HEAD_BYTES)
    found = p_primes(head, qset, n)
    if found is None:
        print("[openfhe-driver] special primes not among OpenFHE's candidates below 2^60: read from the key's JSON",
              file=sys.stderr, flush=True)
        found = p_primes_json(keys[0], qset)
    return found, size


def _probably_prime(n):
    """Fermat to bases 2 and 3. A composite passing both (a pseudoprime to both bases: about one number in
    10^11 below 2^64) would be looked for in the key, not found, and end p_primes' list early: the
    reported P would be short."""
    return pow(2, n - 1, n) == 1 and pow(3, n - 1, n) == 1


class Setup:
    """A context with its standard keys (the key pair's, and the relinearization key that
    EvalMultKeyGen made), kept for later run requests; `gk` is the caller's."""

    boot = False  # a CKKS bootstrapping preset (ckksboot.py)

    def __init__(self, scheme, cc, kp, primes, levels, t=None):
        self.scheme, self.cc, self.q_primes, self.L, self.t = scheme, cc, primes, levels, t
        self.N = cc.GetRingDimension()
        self.slots = self.N if scheme in ("bfv", "bgv") else self.N // 2
        self.M = 2 * self.N
        self.roots = None  # for raw decryptions, read once
        self.auto_cache = {}
        tag = kp.secretKey.GetKeyTag()
        self.sk = Key("secret", kp.secretKey, tag, pair=kp)
        self.pk = Key("public", kp.publicKey, tag)
        self.rlk = Key("relin", list(cc.GetEvalMultKeyVector(tag)), tag)
        self.gk = None
        SECRET_KEYS[tag] = kp.secretKey
        RELIN_INSTALLED[tag] = self.rlk
        self.eff, self.size_table, self.setup_notes = {}, {}, []

    def effective(self, params):
        return self.eff

    def sizes(self):
        return self.size_table

    def standard_facts(self, cp, secret, secure, scale_bits):
        """The effective parameters and sizes every RLWE setup reports (the caller adds its own)."""
        bv = cp.GetKeySwitchTechnique() == ofhe.BV
        if bv:  # no special primes
            pp, relin_size = [], binary(self.rlk.obj)[0]
        else:
            pp, relin_size = special_primes(self.rlk.obj, set(self.q_primes), self.N)
        self.eff = {
            "N": self.N, "q_primes": self.q_primes, "p_primes": pp, "t": self.t, "scale_bits": scale_bits, "slots": self.slots,
            "levels": self.L, "secret": secret,
            **({"hamming_weight": SPARSE_WEIGHT} if secret == "sparse_ternary" else {}),
            "sigma": round(float(cp.GetStandardDeviation()), 4),
            "security": "HEStd_128_classic" if secure else "none (HEStd_NotSet)",
        }
        if bv:
            self.eff.update(key_switching="BV", digit_size=int(cp.GetDigitSize()))
        else:
            self.eff.update(key_switching="HYBRID", dnum=int(cp.GetNumLargeDigits()))
        pt = self.encode(np.zeros(self.slots, dtype=np.float64 if self.scheme == "ckks" else np.int64))
        kp = self.sk.pair
        self.size_table = {
            "public_key": binary(kp.publicKey)[0],
            "secret_key": binary(kp.secretKey)[0],
            "relin_keys": relin_size,
            "ciphertext": binary(self.cc.Encrypt(kp.publicKey, pt))[0],
        }
        if self.plaintext_size(pt) is not None:  # None before openfhe-python 1.6 (compat.py)
            self.size_table["plaintext"] = self.plaintext_size(pt)

    def towers(self, ct):
        """The RNS primes a CKKS/BGV value still has (a bootstrapping preset keeps one below its levels)."""
        return len(self.q_primes) - int(ct.GetLevel())

    def galois_indices(self, steps):
        """The automorphism index of each rotation step (modulo the row); step 0: 2N-1, the row
        swap (BFV/BGV) / conjugation (CKKS), as PROTOCOL.md spells it."""
        half = self.N // 2
        return {self.auto_index(int(k) % half) if int(k) % half else self.M - 1 for k in steps}

    def auto_index(self, k):
        k = int(k)
        if k not in self.auto_cache:
            self.auto_cache[k] = int(self.cc.FindAutomorphismIndex(k))
        return self.auto_cache[k]

    def encode(self, vec, level=None):
        """A full-length input (PROTOCOL.md: the slot count, BFV/BGV values in [0, t)) -> a plaintext."""
        if self.scheme == "ckks":
            return self.cc.MakeCKKSPackedPlaintext(vec, 1, 0 if level is None else self.L - int(level), None, self.slots)
        if level is not None and self.scheme == "bgv":
            return self.cc.MakePackedPlaintext(vec, 1, self.L - int(level))
        return self.cc.MakePackedPlaintext(vec)

    def plaintext_size(self, pt):
        mod = compat.element_modulus(pt)
        if mod is None:
            return None
        prod, limbs = 1, 0
        for p in self.q_primes:
            if prod == mod:
                break
            prod *= p
            limbs += 1
        if prod != mod:
            limbs = 1
        return self.N * max(limbs, 1) * 8


def scale_bits(cc, asked):
    """A CKKS context's scale at the top level, log2 rounded; what was asked where the binding cannot say."""
    return int(round(math.log2(cc.GetScalingFactorReal(0)))) if hasattr(cc, "GetScalingFactorReal") else asked


def build_params(scheme, params, allow_insecure, depth_override=None):
    """Library-neutral parameters -> CCParams*; returns (ccparams, notes, dnum)."""
    N = int(params["N"])
    q_bits = [int(b) for b in params["q_bits"]]
    p_bits = [int(b) for b in params.get("p_bits") or []]
    if not q_bits:
        raise Failure("invalid_params", "q_bits is empty")
    notes = []
    if scheme == "bfv":
        cp = ofhe.CCParamsBFVRNS()
    elif scheme == "bgv":
        cp = ofhe.CCParamsBGVRNS()
    else:
        cp = ofhe.CCParamsCKKSRNS()
    cp.SetRingDim(N)
    depth = len(q_bits) - 1 if depth_override is None else depth_override
    cp.SetMultiplicativeDepth(depth)
    upper = q_bits[1:] if len(q_bits) > 1 else q_bits
    if scheme == "bfv":
        size = max(q_bits)
        cp.SetScalingModSize(size)
        if len(set(q_bits)) > 1:
            notes.append("OpenFHE BFV uses one prime size for the whole chain: %d bits" % size)
        cp.SetPlaintextModulus(int(params["t"]))
    elif scheme == "bgv":
        cp.SetScalingTechnique(ofhe.FIXEDMANUAL)
        cp.SetPlaintextModulus(int(params["t"]))
        if len(q_bits) > 1:
            cp.SetFirstModSize(q_bits[0])
            size = max(upper)
            cp.SetScalingModSize(size)
            if len(set(upper)) > 1:
                notes.append("OpenFHE BGV uses one size for all primes above level 0: %d bits" % size)
        else:
            cp.SetFirstModSize(q_bits[0])
            cp.SetScalingModSize(q_bits[0])
    else:
        cp.SetScalingTechnique(CKKS_SCALING)
        sb = params.get("scale_bits")
        sb = int(sb) if sb is not None else (upper[0])
        cp.SetScalingModSize(sb)
        cp.SetFirstModSize(q_bits[0])
        if len(q_bits) > 1 and any(b != sb for b in upper):
            notes.append("OpenFHE CKKS uses primes of scale_bits=%d bits above level 0" % sb)
        cp.SetBatchSize(N // 2)
    dnum = key_switching(cp, params, q_bits, p_bits)
    secret = params.get("secret") or "ternary"
    if secret == "ternary":
        cp.SetSecretKeyDist(ofhe.UNIFORM_TERNARY)
    elif secret == "gaussian":
        cp.SetSecretKeyDist(ofhe.GAUSSIAN)
    elif secret == "sparse_ternary":
        # OpenFHE fixes the weight: KeyGen draws SPARSE_TERNARY keys with h = 192 (64 before 1.1;
        # openfhe-development#311), so a set asking for another weight would be built and judged wrongly.
        if params.get("hamming_weight") != SPARSE_WEIGHT:
            raise Failure("invalid_params", "OpenFHE's SPARSE_TERNARY secret has hamming_weight %d, not %r"
                          % (SPARSE_WEIGHT, params.get("hamming_weight")))
        cp.SetSecretKeyDist(ofhe.SPARSE_TERNARY)
    else:
        raise Failure("invalid_params", "secret distribution %r not offered by OpenFHE" % secret)
    if params.get("sigma") is not None:
        cp.SetStandardDeviation(float(params["sigma"]))
    cp.SetSecurityLevel(ofhe.HEStd_NotSet if allow_insecure else ofhe.HEStd_128_classic)
    return cp, notes, dnum


def key_switching(cp, params, q_bits, p_bits):
    """The request's key switching (PROTOCOL.md, setup): HYBRID by default, with the driver's dnum
    (OpenFHE sizes P to cover one digit of ceil(len(q)/dnum) primes, with 60-bit special primes);
    BV has no special primes, so a ring too small for HYBRID's P may hold the chain alone, at the
    price of key-switching noise of a digit (digit_size bits; OpenFHE's 0: one RNS prime) times N."""
    ks = params.get("key_switching") or "hybrid"
    if ks == "hybrid":
        if params.get("digit_size") is not None:
            raise Failure("invalid_params", "digit_size is BV's: HYBRID's digits are the driver's dnum")
        cp.SetKeySwitchTechnique(ofhe.HYBRID)
        dnum = choose_dnum(q_bits, p_bits)
        cp.SetNumLargeDigits(dnum)
        return dnum
    if ks != "bv":
        raise Failure("invalid_params", "key_switching %r: OpenFHE offers hybrid or bv" % (ks,))
    if p_bits:
        raise Failure("invalid_params", "BV key switching has no special primes: p_bits must be empty")
    cp.SetKeySwitchTechnique(ofhe.BV)
    cp.SetDigitSize(int(params.get("digit_size") or 0))
    return None


def make_context(cp):
    try:
        cc = ofhe.GenCryptoContext(cp)
    except Exception as e:
        raise openfhe_error(e)
    if cc is None:
        raise Failure("invalid_params", "OpenFHE: GenCryptoContext returned no context")
    # MULTIPARTY: for MultipartyKeyGen([sk]), the only way to a public key of an existing secret key;
    # ADVANCEDSHE: EvalSum, EvalInnerProduct and EvalPoly (the library routines, routines.py)
    for feat in (ofhe.PKE, ofhe.KEYSWITCH, ofhe.LEVELEDSHE, ofhe.ADVANCEDSHE, ofhe.MULTIPARTY):
        cc.Enable(feat)
    return cc


def bfv_context(params, allow_insecure):
    """OpenFHE BFV derives the number of primes from a noise estimate for the
    multiplicative depth (all primes of one size); walk the depth until the
    chain has as many primes as requested."""
    target = len(params["q_bits"])
    tried = {}
    first_error = None
    insecure_error = None
    d = target - 1
    direction = 0
    for _ in range(64):
        if d < 0 or d in tried:
            break
        cp, notes, dnum = build_params("bfv", params, allow_insecure, depth_override=d)
        try:
            cc = make_context(cp)
            n = len(q_primes(cc))
            tried[d] = (n, cp, cc, notes, dnum)
        except Failure as e:
            tried[d] = (None, e)
            first_error = first_error or e
            n = None
            if e.kind == "insecure_params":
                insecure_error = insecure_error or e
                step = -1                      # chain too long for the security table
            elif "distribute" in str(e):
                step = +1                      # fewer primes than digits
            else:
                raise
        if n == target:
            break
        if n is not None:
            step = +1 if n < target else -1
        if direction and step != direction:
            break                              # crossed the target
        direction = step
        d += step
    exact = [(d, v) for d, v in tried.items() if v[0] == target]
    if exact:
        d, (n, cp, cc, notes, dnum) = exact[0]
    else:
        if insecure_error is not None:
            raise Failure(insecure_error.kind, str(insecure_error) +
                          " (OpenFHE BFV: no multiplicative depth gives %d primes within its security table)" % target)
        built = [(abs(v[0] - target), d, v) for d, v in tried.items() if v[0] is not None]
        if not built:
            raise first_error or Failure("invalid_params", "OpenFHE BFV: no context for these parameters")
        _, d, (n, cp, cc, notes, dnum) = min(built, key=lambda x: (x[0], -x[2][0]))
    notes = list(notes)
    if d != target - 1 or n != target:
        notes.append("OpenFHE BFV sizes its chain from a noise estimate; multiplicative depth %d "
                     "gives %d primes" % (d, n))
    return cp, cc, q_primes(cc), d, notes


def setup(scheme, params, rotations, allow_insecure):
    """A BFV, BGV or CKKS context of the request's parameters (PROTOCOL.md, setup), with its
    standard keys: the Galois keys for the requested steps (0: the row swap / conjugation)."""
    for key in ("N", "q_bits"):
        if key not in params:
            raise Failure("invalid_params", "params.%s is missing" % key)
    N = int(params["N"])
    if N < 2 or N & (N - 1):
        raise Failure("invalid_params", "N must be a power of two")
    if scheme in ("bfv", "bgv") and not params.get("t"):
        raise Failure("invalid_params", "t is required for %s" % scheme)
    if scheme in ("bfv", "bgv") and (params.get("batching") is False or (int(params["t"]) - 1) % (2 * N)):
        # OpenFHE aborts the process (not an exception) on a t without 2N-th roots of unity.
        raise Failure("invalid_params", "OpenFHE driver: t must be a prime = 1 mod 2N (batching); "
                                        "coefficient encoding (batching: false) is not offered")
    if scheme == "bgv" and int(params["t"]) >= BGV_T_LIMIT and len(params["q_bits"]) > 1:
        # ParamsGenBGVRNSInternal (FIXEDMANUAL) keeps t in a uint32_t when it asks for primes = 1 mod
        # 2N t, so above 32 bits they are 1 mod 2N (t mod 2^32) only, and every ModReduce (Decrypt's
        # too, down to q0) multiplies the message by q^-1 mod t: wrong slots even for a fresh ciphertext.
        # A one-prime chain never mod-reduces, and decrypts right.
        raise Failure("invalid_params", "OpenFHE BGV with more than one prime needs t < 2^32 (its FIXEDMANUAL "
                                        "prime search truncates t to 32 bits, so a %d-bit t decrypts wrongly): "
                                        "use a t below 2^32, or BFV" % int(params["t"]).bit_length(),
                      {"kind": "t_too_wide", "t_bits": int(params["t"]).bit_length(), "largest_t_bits": 32,
                       "chain_primes_from": 2})
    if scheme == "bfv":
        cp, cc, primes, depth_used, notes = bfv_context(params, allow_insecure)
    else:
        cp, notes, _ = build_params(scheme, params, allow_insecure)
        cc = make_context(cp)
        primes = q_primes(cc)
        depth_used = len(params["q_bits"]) - 1
    kp = cc.KeyGen()
    if not kp.good():
        raise Failure("internal", "OpenFHE KeyGen failed")
    cc.EvalMultKeyGen(kp.secretKey)
    s = Setup(scheme, cc, kp, primes, len(primes) - 1, int(params["t"]) if scheme in ("bfv", "bgv") else None)
    indices = s.galois_indices(rotations)
    gmap = cc.EvalAutomorphismKeyGen(kp.secretKey, sorted(indices)) if indices else None  # OpenFHE refuses []
    s.gk = Key("galois", gmap, s.sk.tag, indices=indices)

    sb = scale_bits(cc, params.get("scale_bits")) if scheme == "ckks" else None
    s.standard_facts(cp, params.get("secret") or "ternary", not allow_insecure, sb)
    s.eff["multiplicative_depth"] = depth_used
    if scheme == "bfv":
        s.eff["multiplication"] = str(cp.GetMultiplicationTechnique()).split(".")[-1]
    else:
        s.eff["scaling"] = str(CKKS_SCALING if scheme == "ckks" else ofhe.FIXEDMANUAL).split(".")[-1]
    if gmap is not None:
        s.size_table.update(galois_keys=binary(gmap)[0], galois_key_count=len(indices))
    s.setup_notes = notes + [
        "plaintext size is the in-memory size N x limbs x 8 bytes: OpenFHE cannot serialize plaintexts",
        "galois keys: the requested steps (step 0: the row-swap/conjugation automorphism 2N-1)"]
    if scheme == "ckks":
        s.setup_notes += [DECODE_NOISE, PK_NOISE]
    return s
