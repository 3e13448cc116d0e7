"""A cubic, 0.5 - 0.25 x + 0.1667 x^2 - 0.125 x^3, on 8 encrypted values: Horner's rule by hand
(3 levels), HEIR's own evaluation of the same polynomial in the compiled row."""

from fhemark.workload import Uniform, Workload

COEFFS = [0.5, -0.25, 0.166667, -0.125]  # lowest degree first


def cubic(c):
    return c.horner(c.encrypted("x"), COEFFS)


WORKLOAD = Workload("heir_poly_3", cubic, inputs={"x": Uniform(-1, 1, length=8)}, schemes=("ckks",),
                    title="a cubic polynomial on 8 encrypted values")
