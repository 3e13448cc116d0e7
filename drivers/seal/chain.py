"""The CKKS scaling primes that keep a value's scale at 2^scale_bits on every level.

fhemark's programs keep every value at its level's canonical scale, a product of two such values
rescaled: S' = S^2 / q. SEAL's CoeffModulus.Create gives primes just below 2^b, and the offset
doubles at every squaring: a deep program's scale leaves the chain ('scale out of bounds'), or,
read back, its precision is gone. Each prime chosen from the top of the chain down as the one
nearest to S_l^2 / 2^b keeps S_l within about 2N / 2^b of 2^b (OpenFHE's FLEXIBLEAUTO does the
same with its chain; the Lattigo driver's scale.go is this rule in Go). Such a prime may lie just
above 2^b, by less than 2^(b-10): fhemark counts it as b bits (protocol.py prime_bits), and where
none lies that near the chain is left as asked."""
from __future__ import annotations

import math

import seal

SPAN = 4096  # candidates k * 2N + 1 tried each side of the target before giving the chain up


def stable(n: int, scale_bits: int, q_bits: list[int], primes: list[int]) -> list[int]:
    """`primes` (Q's then P's, as SEAL orders them) with Q's scaling primes replaced; as given where
    Q's primes after the first are not all of the scale's bit length."""
    q = len(q_bits)
    if q < 2 or scale_bits < 12 or any(b != scale_bits for b in q_bits[1:]):
        return primes
    m, target = 2 * n, 2.0 ** scale_bits
    used = {primes[0], *primes[q:]}
    out, ratio = list(primes), 1.0  # ratio: the current top level's scale over 2^scale_bits
    for i in range(q - 1, 0, -1):
        prime = _nearest(target * ratio * ratio, m, used, 1 << (scale_bits - 1), (1 << scale_bits) + (1 << (scale_bits - 10)))
        if prime is None:
            return primes
        used.add(prime)
        out[i] = prime
        ratio = ratio * ratio * target / prime
    return _keep_modulus_size(out, q_bits, m, used)


def _keep_modulus_size(primes: list[int], q_bits: list[int], m: int, used: set[int]) -> list[int]:
    """The first prime (no value is rescaled by it) lowered so that Q stays below 2^(sum of q_bits), as
    primes made downward keep it: some scaling primes lie above 2^b, and a set asked at exactly a security
    bound would otherwise read as above it. As chosen where no such first prime of its size exists."""
    excess = sum(math.log2(x) - b for x, b in zip(primes[1:len(q_bits)], q_bits[1:]))
    if excess <= 0:
        return primes
    k = (int(2.0 ** (q_bits[0] - excess - 1e-9)) - 1) // m
    for j in range(k, max(k - (1 << 16), 0), -1):
        c = j * m + 1
        if c >= 1 << (q_bits[0] - 1) and c not in used and seal.Modulus(c).is_prime():
            return [c, *primes[1:]]
    return primes


def _nearest(x: float, m: int, used: set[int], lo: int, hi: int) -> int | None:
    k = round((x - 1) / m)
    for d in range(SPAN):
        for j in (k - d, k + d):
            c = j * m + 1
            if lo <= c < hi and c not in used and seal.Modulus(c).is_prime():
                return c
    return None
