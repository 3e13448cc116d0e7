"""FHERMA "Sign Evaluation" (https://fherma.io/challenges/652bf668485c878710fd020a), CKKS.

What the public description and the winner's write-up state (fairmath/fherma-challenges,
sign-function/solution.md, read 2026-11-28): inputs in [-1, 1], multiplicative depth at most 10,
scored by the share of slots close enough to sign(x) (winner: 99.97%, a degree-1023 Chebyshev
series on OpenFHE). The ring and moduli are the platform's, in src/fhemark/data/fherma.tsv.

Written here from the description, not from any solution: sign(x) as a composite of odd degree-7
polynomials, 3 levels each, 9 of the 10 allowed (Cheon, Kim, Kim, "Efficient homomorphic comparison
methods with optimal complexity", eprint 2019/1234): twice g(x) = (4589x - 16577x^3 + 25614x^5 -
12860x^7) / 2^10, whose slope at 0 (~4.5) pulls small values out, then once f(x) = (35x - 35x^3 +
21x^5 - 5x^7) / 16 (f(1) = 1, f'(1) = 0), which flattens them at +-1. It is within 0.013 of sign(x)
for |x| >= 0.05 and wrong near 0, where every polynomial is. fhemark checks every decrypted output
against this composite replayed on the cleartext (precision_bits); tests/test_fherma.py holds it
against numpy's sign.

Run it:  fhemark choose examples/fherma/sign.py --at fherma
"""

from fhemark.workload import Uniform, Workload

VALUES = 4096
STEEP = [0.0, 4589 / 1024, 0.0, -16577 / 1024, 0.0, 25614 / 1024, 0.0, -12860 / 1024]  # g, lowest degree first
FLAT = [0.0, 35 / 16, 0.0, -35 / 16, 0.0, 21 / 16, 0.0, -5 / 16]                        # f
PASSES = (STEEP, STEEP, FLAT)


def sign(c):
    x = c.encrypted("x")
    for coeffs in PASSES:
        x = c.poly_eval(x, coeffs)
    return x


WORKLOAD = Workload(
    "fherma_sign", sign, title="sign(x) on [-1, 1]: three odd degree-7 polynomials composed, depth 9 (FHERMA)",
    inputs={"x": Uniform(-1, 1, length=VALUES)}, schemes=("ckks",),
    precision_bits=10,  # 2^-10 ~ 1e-3, the tolerance FHERMA's ReLU challenge states for the same family
    facts={"fherma": "sign"},
)
