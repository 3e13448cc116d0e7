"""FHERMA "Max Element" (https://fherma.io/challenges/6661824ecf10b677de4e0cf6).

What the winner's write-up states (fairmath/fherma-challenges, max-element/solution.md, read
2026-11-28): the largest of 2048 encrypted integers in [0, 256); the winner used BFV with the
array copied across the 16384 slots of half the ring (so N = 32768), a step polynomial per
threshold by Lagrange interpolation and a NAND over the slots. The answer is exact.

Not on BFV/BGV here: fhemark's vocabulary has no comparison on BFV/BGV, and the way BFV gets one
(a polynomial interpolated over Z_t, of degree up to t - 1 with t >= 2N + 1 for batching, so
tens of thousands of products) is no program one step per call can hold. On the TFHE family's
integers (tfhe_int) a comparison is one call, `c.compare("max", a, b)`: the kernel is a tree of
7 maxima over 8 encrypted 8-bit integers (2048 would be 2047 of them, each bootstrapped), every
output exact.

Run it:  fhemark choose examples/fherma/max_element.py
"""

from fhemark.workload import Uniform, Workload

COUNT = 8


def max_element(c):
    level = [c.encrypted(f"x{i}") for i in range(COUNT)]
    while len(level) > 1:
        level = [c.compare("max", level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


WORKLOAD = Workload(
    "fherma_max_element", max_element, title=f"the largest of {COUNT} encrypted integers in [0, 256) (FHERMA)",
    inputs={f"x{i}": Uniform(0, 255) for i in range(COUNT)}, schemes=("tfhe_int",), bits=8,
    facts={"fherma": "max_element"},
)
