"""OpenFHE's library routines for the native variants of application workloads (PROTOCOL.md,
"Library routines"): inner_sum, inner_product, linear_transform, poly_eval.

Each routine is prepared like a primitive (driver.Program.prepare): everything that is not the
routine's own work happens here, before the timed region: checking attrs (the shared step walk
has read their `$name` strings, list items included), making keys the setup lacks (kept for the
setup, said in notes), pre-rotating and encoding the diagonals of a linear transformation. What
comes back is the call that the timed region brackets.

- inner_sum: CryptoContext::EvalSum(ct, n). OpenFHE 1.6.1 folds with a radix (PARTIAL_SUM_RADIX,
  fixed when the library is built; 4 in the PyPI wheel): level s adds the rotations by s, 2s, ...,
  (radix-1)s of the running sum, sharing one hoisted digit decomposition, so slot i ends with
  sum_{j<n} in[(i+j) mod row], rotations within each row of N/2 (BFV/BGV) or over the N/2 slots
  (CKKS). Its keys are the automorphisms 5^(i s) of that fold: where the setup's Galois keys miss
  one, EvalSumKeyGen(sk) makes the whole set once for the setup.
- inner_product: CryptoContext::EvalInnerProduct(ct1, ct2, n): EvalMult with the relinearization
  key, then the same EvalSum. CKKS (the driver's FLEXIBLEAUTO scaling): the product is not
  rescaled (noise-scale degree 2, level unchanged), as the protocol asks.
- linear_transform: OpenFHE's Python binding has no general linear-transformation call, so the
  driver composes one from library calls: baby-step giant-step with hoisted baby steps
  (EvalFastRotationPrecompute once, EvalFastRotation per baby step), EvalMult by the pre-rotated
  plaintext diagonals, EvalAdd, and one EvalRotate per giant step. b = the power of two at or
  above sqrt(max k + 1); diagonal k = g b + j is pre-rotated by -g b and encoded (at the input's
  level) untimed, every sample.
- poly_eval (CKKS): CryptoContext::EvalPoly(ct, coeffs): EvalPolyLinear below degree 5,
  Paterson-Stockmeyer (EvalPolyPS) from degree 5; FLEXIBLEAUTO leaves its last product
  unrescaled, so the driver rescales it (Compress, in the region); it consumes ceil(log2 d) + 1
  levels linear (degree 3: 3 levels) and one more than ceil(log2(d + 1)) with Paterson-Stockmeyer
  (degree 7: 4 levels). BFV/BGV: unsupported, OpenFHE's polynomial evaluator is CKKS only.
"""
import json
from functools import partial
from pathlib import Path

import numpy as np
import openfhe as ofhe

import compat
from jsonl_driver import Failure

NAMES = ("inner_sum", "inner_product", "linear_transform", "poly_eval")
OPS = {
    "bfv": ["inner_sum", "inner_product", "linear_transform"],
    "bgv": ["inner_sum", "inner_product", "linear_transform"],
    "ckks": list(NAMES),
}
# Why a routine is not offered (the `unsupported` message).
WHY_NOT = {
    "poly_eval": "OpenFHE's polynomial evaluator (EvalPoly, EvalPolyLinear, EvalPolyPS, EvalChebyshevSeries) "
                 "is CKKS only",
}


def list_attr(attrs, op, key):
    """A list attr of numbers (its `$name` items already read from the sample's scalars)."""
    a = attrs.get(key)
    if not isinstance(a, list):
        raise Failure("internal", "%s needs attr %s, a list" % (op, key))
    for x in a:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise Failure("internal", "%s: attr %s holds %r, not a number" % (op, key, x))
    return a


# --------------------------------------------------------------------------
# EvalSum's keys

_RADIX = None


def sum_indices(g0, size, m, radix):
    """Automorphism indices of OpenFHE's EvalSum fold over `size` slots at a radix (the library's
    AdvancedSHEBase::GenerateEvalSumIndices): {g^i : 0 < i < radix, i s < size}, g <- g^radix per level."""
    out = set()
    g, s = g0, 1
    while s < size:
        gi = g
        i = 1
        while i < radix and i * s < size:
            out.add(gi)
            gi = gi * g % m
            i += 1
        g = pow(g, radix, m)
        s *= radix
    return out


def sum_radix():
    """PARTIAL_SUM_RADIX of the loaded library (a build-time constant the binding does not expose):
    the radix whose fold matches the keys EvalSumKeyGen makes on a tiny throwaway context
    (ring 64, 32 slots). 0: not found (then EvalSumKeyGen is always run once per setup)."""
    global _RADIX
    if _RADIX is None:
        _RADIX = 0
        try:
            cp = ofhe.CCParamsCKKSRNS()
            cp.SetSecurityLevel(ofhe.HEStd_NotSet)
            cp.SetRingDim(64)
            cp.SetMultiplicativeDepth(1)
            cp.SetScalingModSize(30)
            cp.SetFirstModSize(40)
            cp.SetBatchSize(32)
            cp.SetScalingTechnique(ofhe.FIXEDMANUAL)
            cc = ofhe.GenCryptoContext(cp)
            for feat in (ofhe.PKE, ofhe.KEYSWITCH, ofhe.LEVELEDSHE, ofhe.ADVANCEDSHE):
                cc.Enable(feat)
            kp = cc.KeyGen()
            cc.EvalSumKeyGen(kp.secretKey)
            got = compat.existing_automorphism_indices(cc, kp.secretKey.GetKeyTag())
            for r in (2, 4, 8, 16, 32):
                if sum_indices(5, 32, 128, r) == got:
                    _RADIX = r
                    break
        except Exception:  # pragma: no cover - then the conservative path
            _RADIX = 0
    return _RADIX


def _key_state(s):
    if not hasattr(s, "routine_notes"):
        s.routine_notes = {}       # op -> notes about keys made for it (said whenever the op runs)
        s.sum_keys_made = False
    return s.routine_notes


def ensure_sum_keys(prog, op, n):
    """The keys EvalSum(ct, n) uses, made before the region (EvalSumKeyGen) where the setup's
    Galois keys lack one; kept for the setup."""
    s, cc = prog.s, prog.cc
    notes = _key_state(s)
    tag = s.sk.tag
    radix = sum_radix()
    need = sum_indices(5, n, s.M, radix) if radix else None
    missing = sorted(compat.automorphism_indices_without_key(cc, tag, need)) if need else ([] if n <= 1 else None)
    if missing != [] and not s.sum_keys_made:
        before = compat.existing_automorphism_indices(cc, tag)
        cc.EvalSumKeyGen(s.sk.obj)
        made = sorted(compat.existing_automorphism_indices(cc, tag) - before)
        s.sum_keys_made = True
        text = ("EvalSumKeyGen(sk) made OpenFHE's EvalSum keys for this setup (%d automorphism keys %s the setup's "
                "Galois keys lacked%s), untimed, before the first region using them; kept for the setup"
                % (len(made), made, ", EvalSum(n=%d) needing %s" % (n, missing) if missing else ""))
        for o in ("inner_sum", "inner_product"):
            notes.setdefault(o, []).append(text)
    for text in notes.get(op, []):
        prog.note(text)
    if radix:
        prog.note("%s: EvalSum folds at radix %d (OpenFHE's PARTIAL_SUM_RADIX): %d automorphisms with %d hoisted "
                  "digit decompositions for n=%d" % (op, radix, len(need), _levels(n, radix), n))


def _levels(n, radix):
    k, s = 0, 1
    while s < n:
        s *= radix
        k += 1
    return k


def ensure_rotation_keys(prog, op, steps):
    """Rotation keys (EvalRotateKeyGen) for the steps the setup's Galois keys lack, made before the
    region and kept for the setup."""
    s, cc = prog.s, prog.cc
    notes = _key_state(s)
    idx = {st: s.auto_index(st) for st in steps}
    missing_idx = compat.automorphism_indices_without_key(cc, s.sk.tag, set(idx.values())) if idx else set()
    missing = sorted(st for st, i in idx.items() if i in missing_idx)
    if missing:
        cc.EvalRotateKeyGen(s.sk.obj, missing)
        notes.setdefault(op, []).append(
            "%s: EvalRotateKeyGen(sk, %s) made the rotation keys the setup's Galois keys lacked, untimed, before "
            "the first region using them; kept for the setup" % (op, missing))
    for text in notes.get(op, []):
        prog.note(text)


# --------------------------------------------------------------------------
# preparation

def _ct(args, names, i, op):
    if not isinstance(args[i], ofhe.Ciphertext):
        raise Failure("internal", "%s: %r is not a ciphertext" % (op, names[i]))
    return args[i]


def _same_key(prog, op, *cts):
    for c in cts:
        if c.GetKeyTag() != prog.s.sk.tag:
            raise Failure("internal", "%s uses the setup's keys: its ciphertexts must be under the setup's "
                                      "secret key" % op)


def _window(prog, attrs, op):
    n = attrs.get("n")
    if isinstance(n, bool) or not isinstance(n, int):
        raise Failure("internal", "%s needs attr n, an int" % op)
    row = prog.s.N // 2 if prog.s.scheme in ("bfv", "bgv") else prog.s.slots
    if n < 1 or n & (n - 1) or n > row:
        raise Failure("internal", "%s: n=%d must be a power of two at most the row length %d" % (op, n, row))
    return n


def baby_giant(span):
    """b = the power of two at or above sqrt(span); giant steps g in [0, ceil(span / b))."""
    b = 1
    while b * b < span:
        b *= 2
    return b, -(-span // b)


# The levels EvalPoly consumes by degree, its last rescale included: capabilities.json's
# limits.routine_levels.poly_eval, [highest degree, levels] pairs: EvalPolyLinear below degree 5 (the
# powers by a binary tree, ceil(log2 d) levels, then one for the coefficient products), then
# Paterson-Stockmeyer (OpenFHE's src/pke/examples/FUNCTION_EVALUATION.md table; measured on this build
# at degrees 5 to 128). fhemark's search reads the same pairs from the capabilities reply.
_LEVELS = json.loads((Path(__file__).parent / "capabilities.json").read_text())["schemes"]["ckks"]["limits"][
    "routine_levels"]["poly_eval"]


def poly_levels(deg):
    """Levels EvalPoly consumes for degree `deg`: the first pair whose degree is at least it; past the
    table, one more a doubling (PROTOCOL.md, limits.routine_levels)."""
    for top, levels in _LEVELS:
        if deg <= top:
            return levels
    top, levels = _LEVELS[-1]
    return levels + deg.bit_length() - top.bit_length()


def prepare(prog, op, attrs, args, names, towers):
    """One routine step -> (call, wrap, towers), like Program.prepare."""
    s, cc = prog.s, prog.cc
    if op == "inner_sum":
        if len(args) != 1:
            raise Failure("internal", "inner_sum takes 1 arg")
        ct = _ct(args, names, 0, op)
        _same_key(prog, op, ct)
        n = _window(prog, attrs, op)
        ensure_sum_keys(prog, op, n)
        prog.note("inner_sum: EvalSum(ct, n)")
        return partial(cc.EvalSum, ct, n), None, towers
    if op == "inner_product":
        if len(args) != 2:
            raise Failure("internal", "inner_product takes 2 args")
        a, b = _ct(args, names, 0, op), _ct(args, names, 1, op)
        _same_key(prog, op, a, b)
        n = _window(prog, attrs, op)
        prog.install_relin(s.rlk)  # EvalInnerProduct relinearizes with the installed key of the tag
        ensure_sum_keys(prog, op, n)
        prog.note("inner_product: EvalInnerProduct(ct1, ct2, n): EvalMult (relinearized%s), then EvalSum"
                  % (", not rescaled" if s.scheme == "ckks" and not getattr(s, "boot", False)
                     else ""))
        return partial(cc.EvalInnerProduct, a, b, n), None, towers
    if op == "linear_transform":
        return prepare_linear(prog, attrs, args, names, towers)
    if op == "poly_eval":
        if len(args) != 1:
            raise Failure("internal", "poly_eval takes 1 arg")
        ct = _ct(args, names, 0, op)
        coeffs = [float(c) for c in list_attr(attrs, op, "coeffs")]
        if len(coeffs) < 2 or coeffs[-1] == 0.0:
            raise Failure("internal", "poly_eval: coeffs needs degree >= 1 and a nonzero highest coefficient")
        deg = len(coeffs) - 1
        lvl_in = int(ct.GetLevel())

        def wrap(out):
            used = int(out.GetLevel()) - lvl_in
            prog.note("poly_eval: EvalPoly(ct, coeffs), degree %d by %s: consumed %d levels (OpenFHE level %d -> %d), "
                      "result rescaled (noise-scale degree %d)"
                      % (deg, "EvalPolyLinear" if deg < 5 else "EvalPolyPS (Paterson-Stockmeyer)", used, lvl_in,
                         int(out.GetLevel()), int(out.GetNoiseScaleDeg())))
            return out
        need = poly_levels(deg)
        left = s.L - lvl_in
        if not getattr(s, "boot", False) and need > left:  # checked, not left to fail in the region
            raise Failure("invalid_params", "poly_eval: OpenFHE's EvalPoly of degree %d consumes %d levels (%s), "
                                            "the input has %d left: the chain is too short for it"
                          % (deg, need, "EvalPolyLinear: ceil(log2 d) + 1" if deg < 5 else
                                        "Paterson-Stockmeyer, OpenFHE's depth table", left))
        # FLEXIBLEAUTO leaves EvalPoly's last product unrescaled (noise-scale degree 2): rescale it in the
        # region (EvalPoly under FIXEDMANUAL made that rescale itself), so the levels reported are left to use
        def evaluated():
            out = cc.EvalPoly(ct, coeffs)
            if out.GetNoiseScaleDeg() < 2:
                return out
            return cc.Compress(out, s.towers(out) - 1, 1)
        return evaluated, wrap, None
    raise Failure("unsupported", "op %r" % op)


def prepare_linear(prog, attrs, args, names, towers):
    """sum_i vec_i * rot_{k_i}(ct) by baby-step giant-step: the baby-step rotations hoisted (one
    EvalFastRotationPrecompute, an EvalFastRotation per baby step), one EvalRotate per giant step.
    Untimed here: the diagonals pre-rotated by -g b and encoded at the input's level, keys."""
    s, cc = prog.s, prog.cc
    op = "linear_transform"
    if len(args) < 2:
        raise Failure("internal", "linear_transform takes a ciphertext and one vector per diagonal")
    ct = _ct(args, names, 0, op)
    _same_key(prog, op, ct)
    ks = list_attr(attrs, op, "diagonals")
    vecs = args[1:]
    if len(ks) != len(vecs):
        raise Failure("internal", "linear_transform: %d diagonals for %d vectors" % (len(ks), len(vecs)))
    row = s.N // 2 if s.scheme in ("bfv", "bgv") else s.slots
    if any(isinstance(k, bool) or not isinstance(k, int) or k < 0 or k >= row for k in ks) or len(set(ks)) != len(ks):
        raise Failure("internal", "linear_transform: diagonals must be distinct ints in [0, %d)" % row)
    b, g_count = baby_giant(max(ks) + 1)
    n = s.slots
    level = int(ct.GetLevel())
    groups = {}
    for k, name, v in zip(ks, names[1:], vecs):
        v = np.asarray(v)
        if v.dtype == object or v.shape != (n,):
            raise Failure("internal", "linear_transform: %r is not a vector of %d values" % (name, n))
        g, j = divmod(k, b)
        if s.scheme == "ckks":
            x = np.roll(v, g * b)  # rot_{-g b}: x'[i] = x[i - g b]
            pt = cc.MakeCKKSPackedPlaintext(x, 1, level, None, n)
        else:
            x = np.roll(v.reshape(2, row), g * b, axis=1).reshape(n)  # within each row
            pt = cc.MakePackedPlaintext(x, 1, level) if s.scheme == "bgv" else cc.MakePackedPlaintext(x)
        groups.setdefault(g, []).append((j, pt))
    babies = sorted({j for terms in groups.values() for j, _ in terms} - {0})
    giants = sorted(g for g in groups if g)
    ensure_rotation_keys(prog, op, babies + [g * b for g in giants])
    plan = [(g * b, groups[g]) for g in sorted(groups)]
    M = cc.GetCyclotomicOrder()
    prog.note("linear_transform: baby-step giant-step by the driver (OpenFHE has no general linear-transform call): "
              "b=%d, %d hoisted baby-step rotations (EvalFastRotationPrecompute once, EvalFastRotation), %d giant-step "
              "rotations (EvalRotate), %d plaintext products (EvalMult), EvalAddInPlace; diagonals pre-rotated and "
              "encoded untimed%s" % (b, len(babies), len(giants), len(ks),
                                      ", not rescaled" if s.scheme == "ckks" else ""))
    fast, pre, mult, add, rot = (cc.EvalFastRotation, cc.EvalFastRotationPrecompute, cc.EvalMult,
                                 cc.EvalAddInPlace, cc.EvalRotate)

    def call():
        rots = {0: ct}
        if babies:
            digits = pre(ct)
            for j in babies:
                rots[j] = fast(ct, j, M, digits)
        out = None
        for shift, terms in plan:
            acc = None
            for j, pt in terms:
                t = mult(rots[j], pt)
                if acc is None:
                    acc = t
                else:
                    add(acc, t)
            if shift:
                acc = rot(acc, shift)
            if out is None:
                out = acc
            else:
                add(out, acc)
        return out
    return call, None, towers
