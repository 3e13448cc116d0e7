"""The noise budget of a BFV/BGV ciphertext, one definition for every library: SEAL's invariant
noise budget (`Decryptor::invariant_noise_budget`, SEAL 4.x), computed from a raw decryption.

A raw decryption is x = [c0 + c1*s (+ c2*s^2 ...)]_Q in coefficient form, Q the product of the
primes of the ciphertext's level, before any rounding or scaling. Where the message sits in x
decides what is noise:

- "msb" (BFV's x = Delta*m + v; Lattigo's BFV and BGV keep x = t^-1*m + e): the noise is [t*x]_Q,
  which cancels Delta*m up to r_t(Q)*m (SEAL's BFV definition);
- "lsb" (BGV's x = m + t*e): the noise is x itself (SEAL's BGV definition).

budget = bitlen(Q) - bitlen(||noise||_inf) - 1, at least 0, with every coefficient centred in
(-Q/2, Q/2]; the -1 is SEAL's "scaling the invariant noise by 2": decryption is correct while
the budget is positive.
"""

from __future__ import annotations

from math import prod

import numpy as np

FORMS = ("msb", "lsb")


def crt(primes: list[int], residues: list[np.ndarray]) -> np.ndarray:
    """The coefficients in [0, Q) (Python ints in an object array) from their residues per prime."""
    q = prod(primes)
    x = np.zeros(len(residues[0]), dtype=object)
    for p, r in zip(primes, residues):
        qhat = q // p
        x = (x + (np.asarray(r, dtype=np.uint64).astype(object) * pow(qhat, -1, p) % p) * qhat) % q
    return x


def noise_budget_bits(primes: list[int], residues: list[np.ndarray], t: int, form: str) -> int:
    """SEAL's invariant noise budget of a raw decryption given as residues per prime (coefficient
    form, each in [0, prime)); `form` says where the message sits (module docstring)."""
    if form not in FORMS:
        raise ValueError(f"raw decryption form {form!r}: one of {FORMS}")
    if len(primes) != len(residues) or not primes or len({len(r) for r in residues}) != 1:
        raise ValueError(f"raw decryption: {len(primes)} primes, {len(residues)} residue vectors of "
                         f"lengths {sorted({len(r) for r in residues})}")
    if any(int(np.max(r, initial=0)) >= p for p, r in zip(primes, residues)):
        raise ValueError("raw decryption: a residue not below its prime")
    q = prod(primes)
    x = crt(primes, residues)
    if form == "msb":
        x = x * t % q
    x = np.where(x >= (q + 1) // 2, q - x, x)  # |centred coefficient|, as SEAL's poly_infty_norm_coeffmod
    norm = int(x.max(initial=0))
    return max(0, q.bit_length() - norm.bit_length() - 1)
