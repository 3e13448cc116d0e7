"""One inner product of two encrypted 8-vectors: what HEIR is given as a sum over 8 products
(it packs and rotates as it likes), and what hand-written Lattigo runs as multiply, rescale and
3 rotate-and-adds (slot 0 holds the product; the other slots' window sums are checked too)."""

from fhemark.workload import Uniform, Workload


def dot(c):
    return c.rotate_sum(c.rescaled(c.mul(c.encrypted("x"), c.encrypted("y"))), 8)


WORKLOAD = Workload("heir_dot_8", dot, inputs={"x": Uniform(-1, 1, length=8), "y": Uniform(-1, 1, length=8)},
                    schemes=("ckks",), title="inner product of two encrypted 8-vectors")
