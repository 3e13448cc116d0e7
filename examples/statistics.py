"""Encrypted statistics: the mean and the variance of n encrypted values, one workload for every
RLWE scheme. A client encrypts n values (say, hours worked per week, 0..15 in whole hours) into
one ciphertext; the server sums them and their squares by rotations and returns:

- CKKS: the mean and the variance, E[x^2] - mean^2, as real numbers;
- BFV/BGV (exact integers, no division): the sum S and n^2 times the variance, n * sum(x^2) - S^2,
  from which the client divides by n and n^2 in the clear.

Run it:  fhemark choose examples/statistics.py     (or: fhemark run --workload examples/statistics.py)
"""

from fhemark.workload import Constant, Uniform, Workload

N_VALUES = 4096  # a power of two: the sum by rotations doubles its window each step


def mean_and_variance(c):
    x = c.encrypted("x")
    total = c.rotate_sum(x, N_VALUES)                           # slot 0: sum of x
    squares = c.rotate_sum(c.rescaled(c.square(x)), N_VALUES)   # slot 0: sum of x^2
    if c.ckks:
        # Each term is scaled like the value it meets (plaintext_like), so that the two terms of the
        # subtraction end with the same scale at the same level.
        mean = c.rescaled(c.mul_plain(total, c.plaintext_like("inv_n", total)))
        mean_sq = c.rescaled(c.square(mean))
        second = c.rescaled(c.mul_plain(squares, c.plaintext_like("inv_n", squares)))
        return mean, c.sub(second, mean_sq)
    return total, c.sub(c.mul_scalar(squares, N_VALUES), c.square(total))


WORKLOAD = Workload(
    "statistics_4096", mean_and_variance,
    title=f"mean and variance of {N_VALUES} encrypted values",
    inputs={"x": Uniform(0, 15, length=N_VALUES), "inv_n": Constant(1 / N_VALUES)},
    schemes=("bfv", "bgv", "ckks"),
    precision_bits=20,
)
