"""Two encrypted 64-bit integers multiplied modulo 2^64: the Zn multiplication workload of the
HomomorphicEncryption.org benchmarking suite, on the TFHE family's radix integers (BFV/BGV
cannot: their plaintext modulus is below 2^60 and is no power of two, so a 64-bit product wraps
modulo t, not 2^64).

Run it:  fhemark choose examples/zmul64.py
"""

from fhemark.workload import Uniform, Workload


def product(c):
    return c.mul(c.encrypted("x"), c.encrypted("y"))


WORKLOAD = Workload(
    "zmul64", product, title="multiply two encrypted 64-bit integers (mod 2^64)",
    inputs={"x": Uniform(0, 2**64 - 1), "y": Uniform(0, 2**64 - 1)},
    schemes=("tfhe_int",), bits=64,
)
