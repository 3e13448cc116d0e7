"""Concrete's integer ops beyond Study 4's (int_sub, int_mul, int_min, int_max, int_ge, int_eq),
composed the way a user's program composes them: every integer result feeds a later op under the
same keys (the module's wiring), on the extreme values of the width. The single-op cases are in
test_conformance.py (its snapshot lists them); no timings are checked."""

import numpy as np

from fhemark.model.bitops import INT_SEMANTICS
from fhemark.model.semantics import Plain
from test_conformance import CASES, setup_of
from test_conformance_drivers import decrypted, encrypted, inputs, out, program, refused, region, run, setup, step


def test_concrete_composes_every_int_op_exactly(driver_pool):
    # the setup of the 8-bit op cases (every function: they call them all), not the keygen case's
    driver, setup_id, result, plain = setup(driver_pool, "concrete", "tfhe_int", "int_mul")
    top = int(plain.t) - 1
    # each end against each, and a product that wraps (every value costs each function's lookups once)
    x = np.array([0, top, top, 200], dtype=np.uint64)
    y = np.array([top, top, 0, 100], dtype=np.uint64)
    steps = encrypted(plain, "x", "y") + [
        step("m", "int_max", "cx", "cy"), step("p", "int_mul", "cx", "cy"), step("s", "int_add", "m", "p"),
        step("n", "int_min", "p", "cx"), step("d", "int_sub", "m", "p"), step("q", "int_mul", "d", "n"),
        step("ge", "int_ge", "n", "cy"), step("eq", "int_eq", "m", "cx")]
    names = ("s", "n", "d", "q", "ge", "eq")
    steps += [st for name in names for st in decrypted(plain, name, f"z_{name}")]
    res = run(driver, setup_id, program(steps, [region("s")], [f"z_{n}" for n in names]), {"x": x, "y": y})

    def f(op, a, b):
        return INT_SEMANTICS[op](plain, a, b)
    m, p = f("int_max", x, y), f("int_mul", x, y)
    n, d = f("int_min", p, x), f("int_sub", m, p)
    want = {"s": f("int_add", m, p), "n": n, "d": d, "q": f("int_mul", d, n), "ge": f("int_ge", n, y),
            "eq": f("int_eq", m, x)}
    for name, values in want.items():
        got = out(res, f"z_{name}")
        assert np.array_equal(got, values.astype(np.uint64)), (name, got, values)
    assert result["effective"]["functions"]["int_mul"]["pbs"] > result["effective"]["functions"]["int_add"]["pbs"]


def test_concrete_compiles_only_the_setups_ops_and_refuses_another(driver_pool):
    """A setup's `ops` (the conformance 16-bit setup names int_add and int_gt, as the orchestrator names
    its jobs' ops) make a module of those functions only: its keys and facts are those of a
    computation using them, and an op outside it is one clear error, not a wrong answer."""
    driver = driver_pool("concrete")
    case = next(c for c in CASES["cases"] if c["scheme"] == "tfhe_int" and c["params"]["bits"] == 16)
    setup_id, result = setup_of(driver, case, False)
    assert result["effective"]["module_functions"] == ["add", "gt"]
    assert set(result["effective"]["functions"]) == {"int_add", "int_gt"}
    plain = Plain("tfhe_int", 4, 1 << 16)
    xy = inputs(plain, np.random.default_rng(36), "x", "y")
    err = refused("internal", run, driver, setup_id,
                  program(encrypted(plain, "x", "y") + [step("cz", "int_mul", "cx", "cy")]), xy)
    assert "int_mul" in str(err) and "add, gt" in str(err), err
