"""Noise budget of BFV/BGV ciphertexts for OpenFHE, which has no such call.

OpenFHE's Python binding gives no access to polynomial coefficients, but its
JSON serialization of a ciphertext and of a secret key holds every RNS limb
(in evaluation/NTT form) together with the limb's modulus, and the crypto
context's JSON holds each modulus' primitive 2N-th root of unity.  From those
this module computes w = c0 + c1*s (+ c2*s^2 ...) in evaluation form, takes it
back to coefficients with an inverse negacyclic NTT (OpenFHE's bit-reversed
order), joins the limbs with the CRT and measures, as SEAL does:

  BFV: ||[t*w]_Q||_inf     (t*Delta*m cancels mod Q; what remains is the noise)
  BGV: ||[w]_Q||_inf       (w = m + t*e)
  budget = bitlen(Q) - bitlen(norm) - 1   (0 when decryption is about to fail)

Pure Python integers on numpy object arrays: slow (tenths of a second per
ciphertext at N = 2^14), used only outside timed regions, on the last sample.
"""
import json

import numpy as np

try:
    import openfhe as _ofhe
except ImportError:  # allows importing this file without the library
    _ofhe = None


def _find(obj, key):
    """First value under `key` in a nested JSON structure (depth-first)."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if key in x:
                return x[key]
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, list):
            stack.extend(reversed(x))
    return None


def context_roots(cc):
    """{prime: 2N-th root of unity} for every ciphertext prime of a context."""
    d = json.loads(_ofhe.Serialize(cc, _ofhe.JSON))
    elp = _find(d, "elp")
    towers = _find(elp, "p")
    roots = {}
    for tw in towers:
        v = _find(tw, "value0")
        roots[int(v["cm"]["v"])] = int(v["ru"]["v"])
    return roots


def _limbs(dcrt_json):
    """[(modulus, np.array(object) of values)] for one serialized DCRTPoly."""
    out = []
    for tower in dcrt_json["v"]:
        data = tower["v"]["ptr_wrapper"]["data"]
        out.append((int(data["m"]["v"]), np.array(data["v"], dtype=object)))
    return out


def _ct_elements(ct):
    d = json.loads(_ofhe.Serialize(ct, _ofhe.JSON))
    data = d["value0"]["ptr_wrapper"]["data"]
    polys = data["v"]
    return [_limbs(p) for p in polys]


def _sk_limbs(sk):
    d = json.loads(_ofhe.Serialize(sk, _ofhe.JSON))
    s = _find(d, "s")
    return dict(_limbs(s))


_BITREV = {}


def _bitrev(n):
    if n not in _BITREV:
        bits = n.bit_length() - 1
        r = np.zeros(n, dtype=np.int64)
        for i in range(n):
            r[i] = int(format(i, "0%db" % bits)[::-1], 2) if bits else 0
        _BITREV[n] = r
    return _BITREV[n]


def _inv_dft(vals, w, q):
    """Inverse of A[k] = sum_i b_i w^(i k) (length n, power of two), mod q."""
    n = len(vals)
    winv = pow(w, q - 2, q)
    a = vals[_bitrev(n)].copy()
    m = 2
    while m <= n:
        wm = pow(winv, n // m, q)
        half = m // 2
        tw = np.empty(half, dtype=object)
        cur = 1
        for j in range(half):
            tw[j] = cur
            cur = cur * wm % q
        a = a.reshape(-1, m)
        u = a[:, :half]
        v = (a[:, half:] * tw) % q
        a = np.concatenate([(u + v) % q, (u - v) % q], axis=1).reshape(-1)
        m *= 2
    ninv = pow(n, q - 2, q)
    return (a * ninv) % q


def _to_coeffs(evals, psi, q):
    """Negacyclic inverse NTT of OpenFHE's evaluation form (bit-reversed order)."""
    n = len(evals)
    # OpenFHE stores A[j] = a(psi^(2*brv(j)+1)); reorder to natural DFT order.
    b_nat = np.empty(n, dtype=object)
    b_nat[_bitrev(n)] = evals
    b = _inv_dft(b_nat, psi * psi % q, q)
    psi_inv = pow(psi, q - 2, q)
    pw = np.empty(n, dtype=object)
    cur = 1
    for i in range(n):
        pw[i] = cur
        cur = cur * psi_inv % q
    return (b * pw) % q


def decrypt_raw(ct, sk, roots):
    """Coefficients of [c0 + c1 s + ...]_Q centered, and Q."""
    elems = _ct_elements(ct)
    sk_l = _sk_limbs(sk)
    moduli = [m for m, _ in elems[0]]
    coeffs = []
    for li, q in enumerate(moduli):
        s = sk_l[q]
        acc = elems[0][li][1] % q
        spow = s
        for e in elems[1:]:
            acc = (acc + e[li][1] * spow) % q
            spow = (spow * s) % q
        coeffs.append(_to_coeffs(acc, roots[q], q))
    Q = 1
    for q in moduli:
        Q *= q
    w = np.zeros(len(coeffs[0]), dtype=object)
    for q, c in zip(moduli, coeffs):
        qhat = Q // q
        w = (w + c * (pow(qhat % q, q - 2, q) * qhat)) % Q
    half = Q // 2
    w = np.where(w > half, w - Q, w)
    return w, Q


def noise_budget_bits(ct, sk, roots, scheme, t):
    w, Q = decrypt_raw(ct, sk, roots)
    if scheme == "bfv":
        v = (w * t) % Q
        v = np.where(v > Q // 2, v - Q, v)
    else:
        v = w
    norm = max(abs(int(x)) for x in v)
    budget = Q.bit_length() - max(norm, 1).bit_length() - 1
    return max(budget, 0)
