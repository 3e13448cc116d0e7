"""How many digits OpenFHE's hybrid key switching splits the chain into: the driver's rule, in a
module with no imports, so that fhemark's snippets (src/fhemark/advise/snippets/python.py) read
the same rule from this file instead of keeping a copy."""


def choose_dnum(q_bits, p_bits):
    """Digits so that one digit's modulus is about the size of P.

    OpenFHE splits the chain into dnum digits of ceil(len(q)/dnum) primes
    and refuses a dnum that leaves a digit empty; it then picks P (60-bit
    primes) to cover the largest digit."""
    n = len(q_bits)
    valid = [d for d in range(1, n + 1) if -(-n // (-(-n // d))) == d]
    if not p_bits:
        return n
    target = -(-sum(q_bits) // max(1, sum(p_bits)))
    above = [d for d in valid if d >= target]
    return min(above) if above else max(valid)
