"""x*x + 1 on 8 encrypted values: one product, one rescale, one plaintext addition."""

from fhemark.workload import Uniform, Workload


def square_plus_one(c):
    sq = c.rescaled(c.square(c.encrypted("x")))
    return c.add_plain(sq, c.constant(1.0, like=sq))


WORKLOAD = Workload("heir_sqplus1_8", square_plus_one, inputs={"x": Uniform(-1, 1, length=8)}, schemes=("ckks",),
                    title="x*x + 1 on 8 encrypted values")
