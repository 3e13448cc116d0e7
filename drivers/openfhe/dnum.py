"""How many digits OpenFHE's hybrid key switching splits the chain into: the driver's rule, in a
module with no imports, so that fhemark's snippets (snippet.py beside it) read
the same rule from this file instead of keeping a copy."""

AUX_BITS = 60  # OpenFHE's special primes are 60-bit (AUXMODSIZE), whatever P the request names


def choose_dnum(q_bits, p_bits):
    """The fewest digits whose special modulus OpenFHE keeps within the requested P.

    OpenFHE splits the chain into dnum digits of ceil(len(q)/dnum) primes (it refuses a dnum that
    leaves a digit empty), then makes P of ceil(largest digit's bits / 60) primes of 60 bits. Fewer
    digits switch keys faster, but a digit larger than P makes OpenFHE add special primes of its
    own, which can push log QP past the security bound at a ring the request fits (q 44+34+34,
    P 60: two digits of 78 and 34 bits get P = 120, three digits keep P = 60). So: the fewest
    digits whose P has no more 60-bit primes than the request's P needs; where none does (a P
    under 60 bits), the digits that give the smallest P."""
    n = len(q_bits)
    valid = [d for d in range(1, n + 1) if -(-n // (-(-n // d))) == d]
    if not p_bits:
        return n

    def special_primes(d):
        k = -(-n // d)
        largest = max(sum(q_bits[i:i + k]) for i in range(0, n, k))
        return -(-largest // AUX_BITS)

    allowed = max(1, -(-sum(p_bits) // AUX_BITS))
    fits = [d for d in valid if special_primes(d) <= allowed]
    return min(fits) if fits else min(valid, key=lambda d: (special_primes(d), d))
