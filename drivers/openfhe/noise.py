"""Raw decryption of BFV/BGV ciphertexts for OpenFHE, which has no noise-budget call: the
orchestrator computes the budget from it (fhemark.model.noise, PROTOCOL.md "Raw decryptions").

OpenFHE's Python binding gives no access to polynomial coefficients, but its
JSON serialization of a ciphertext and of a secret key holds every RNS limb
(in evaluation/NTT form) together with the limb's modulus, and the crypto
context's JSON holds each modulus' primitive 2N-th root of unity.  From those
this module computes w = c0 + c1*s (+ c2*s^2 ...) in evaluation form and takes it
back to coefficients with an inverse negacyclic NTT, limb by limb.

Pure Python integers on numpy object arrays: slow (tenths of a second per
ciphertext at N = 2^14), used only outside timed regions, on the last sample.
"""
import base64
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
    """{prime: 2N-th root of unity} for every ciphertext prime of a context, level 0 first."""
    towers = _find(_find(json.loads(_ofhe.Serialize(cc, _ofhe.JSON)), "elp"), "p")
    return {int(v["cm"]["v"]): int(v["ru"]["v"]) for v in (_find(tw, "value0") for tw in towers)}


def _limbs(dcrt_json):
    """[(modulus, np.array(object) of values)] for one serialized DCRTPoly."""
    data = [tower["v"]["ptr_wrapper"]["data"] for tower in dcrt_json["v"]]
    return [(int(d["m"]["v"]), np.array(d["v"], dtype=object)) for d in data]


def _powers(w, n, q):
    out, cur = np.empty(n, dtype=object), 1
    for i in range(n):
        out[i], cur = cur, cur * w % q
    return out


def _to_coeffs(a, psi, q):
    """Negacyclic inverse NTT of OpenFHE's evaluation form, A[j] = a(psi^(2*brv(j)+1)): the
    bit-reversed order is the one an iterative inverse DFT (w = psi^2) takes as its input."""
    n, m, winv = len(a), 2, pow(psi * psi, -1, q)
    while m <= n:
        tw = _powers(pow(winv, n // m, q), m // 2, q)
        a = a.reshape(-1, m)
        u, v = a[:, :m // 2], a[:, m // 2:] * tw % q
        a = np.concatenate([(u + v) % q, (u - v) % q], axis=1).reshape(-1)
        m *= 2
    return a * pow(n, -1, q) % q * _powers(pow(psi, -1, q), n, q) % q


def _to_evals(a, psi, q):
    """The inverse of _to_coeffs (its stages in reverse): OpenFHE's evaluation form of coefficients."""
    n, m, w = len(a), len(a), psi * psi % q
    a = a * _powers(psi, n, q) % q
    while m >= 2:
        tw = _powers(pow(w, n // m, q), m // 2, q)
        a = a.reshape(-1, m)
        u, v = a[:, :m // 2], a[:, m // 2:]
        a = np.concatenate([(u + v) % q, (u - v) * tw % q], axis=1).reshape(-1)
        m //= 2
    return a


_SECRET_LIMBS: dict = {}  # key tag -> {prime: limb}: a key's JSON serialization costs 25 ms at N = 8192


def _secret_limbs(sk) -> dict:
    tag = sk.GetKeyTag()
    if tag not in _SECRET_LIMBS:
        if len(_SECRET_LIMBS) >= 8:  # keygen jobs make a key a sample: keep a few
            _SECRET_LIMBS.clear()
        _SECRET_LIMBS[tag] = dict(_limbs(_find(json.loads(_ofhe.Serialize(sk, _ofhe.JSON)), "s")))
    return _SECRET_LIMBS[tag]


def raw_decryption(ct, sk, roots, scheme, t):
    """[c0 + c1 s + ...]_Q in coefficient form, per prime, for the orchestrator's noise budget
    (PROTOCOL.md "Raw decryptions"): BFV holds Delta*m + v ("msb"), BGV m + t*e ("lsb")."""
    polys = json.loads(_ofhe.Serialize(ct, _ofhe.JSON))["value0"]["ptr_wrapper"]["data"]["v"]
    elems = [(p["f"] == 1, _limbs(p)) for p in polys]  # format 0: evaluation, 1: coefficients (BFV products)
    sk_l = _secret_limbs(sk)
    primes, residues = [m for m, _ in elems[0][1]], []
    for li, q in enumerate(primes):
        acc, spow = 0, 1
        for coeffs, e in elems:
            acc = (acc + (_to_evals(e[li][1], roots[q], q) if coeffs else e[li][1]) * spow) % q
            spow = spow * sk_l[q] % q
        residues.append(base64.b64encode(_to_coeffs(acc, roots[q], q).astype("<u8").tobytes()).decode())
    return {"form": "msb" if scheme == "bfv" else "lsb", "t": int(t), "primes": primes, "residues": residues}
