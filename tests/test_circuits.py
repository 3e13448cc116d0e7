"""The circuits are written once; their plaintext evaluation is what every
driver's netlist result is checked against, so it must be right."""

import numpy as np
import pytest

from fhemark.model.bitops import circuit
from fhemark.model.circuits import carry_save_sum, compare_lt, kogge_stone_add, ripple_carry_add

RNG = np.random.default_rng(7)


def bits(values, nbits):
    return np.stack([(np.asarray(values, dtype=np.uint64) >> np.uint64(i)) & np.uint64(1) for i in range(nbits)]).astype(np.uint8)


def number(rows):
    return sum(rows[i].astype(object) << i for i in range(rows.shape[0]))


@pytest.mark.parametrize("nbits", [1, 2, 3, 5, 8, 16, 33])
def test_adders_add(nbits):
    x, y = RNG.integers(0, 2**nbits, 64), RNG.integers(0, 2**nbits, 64)
    inp = np.concatenate([bits(x, nbits), bits(y, nbits)])
    for net in (ripple_carry_add(nbits), kogge_stone_add(nbits)):
        assert list(number(net.evaluate(inp))) == list(x.astype(object) + y.astype(object))


@pytest.mark.parametrize("nbits", [1, 2, 4, 7, 16, 64])
def test_comparison_is_x_less_than_y(nbits):
    x = RNG.integers(0, 2**min(nbits, 62), 64, dtype=np.uint64)
    y = np.concatenate([x[:8], RNG.integers(0, 2**min(nbits, 62), 56, dtype=np.uint64)])  # equal pairs too
    out = compare_lt(nbits).evaluate(np.concatenate([bits(x, nbits), bits(y, nbits)]))
    assert list(out[0]) == list((x < y).astype(np.uint8))


@pytest.mark.parametrize("n", [2, 3, 4, 8, 17])
def test_carry_save_sum_is_the_sum_modulo_2_to_the_bits(n):
    nums = RNG.integers(0, 2**12, (n, 32))
    net = carry_save_sum(n, 12)
    out = number(net.evaluate(np.concatenate([bits(nums[i], 12) for i in range(n)])))
    assert list(out) == list(nums.sum(axis=0) % 2**12)


@pytest.mark.parametrize("nbits", [2, 4, 8, 16, 32, 64, 128])
def test_comparison_depth_follows_the_study_cost_model(nbits):
    d = compare_lt(nbits).depths()
    assert d["multiplicative"] == 1 + 2 * int(np.log2(nbits))


def test_carry_save_grows_by_one_full_adder_layer_per_number():
    g = {n: carry_save_sum(n, 16).stats()["gates"] for n in (3, 4, 5)}
    assert g[4] - g[3] == g[5] - g[4] > 0


def test_workload_names():
    assert {o.schemes for o in circuit("multiadd_8x32")} == {("tfhe_bool",), ("tfhe_int",), ("bfv", "bgv")}
    assert circuit("multiadd_1x32") is None and circuit("nonsense") is None
    facts = circuit("compare_16")[0].facts
    assert facts["cost_model"]["multiplicative_levels"] == 9 and facts["circuit"]["multiplicative"] == 9


def _run_gate_program(program, inputs):
    """The gate program in plaintext, step by step as a driver runs it (gather picks bits, gates
    act elementwise), with the region rule checked: no step of a region reads another's value."""
    from fhemark.model.bitops import _GATE
    env = dict(inputs)
    for st in program.steps:
        a = [env[x] for x in st["args"]]
        if st["op"] in ("encrypt_sk", "decrypt"):
            env[st["out"]] = a[0]
        elif st["op"] == "trivial":
            env[st["out"]] = np.array(st["attrs"]["bits"], dtype=np.uint64)
        elif st["op"] == "gather":
            env[st["out"]] = np.array([a[i][p] for i, p in st["attrs"]["bits"]], dtype=np.uint64)
        elif st["op"] == "not":
            env[st["out"]] = 1 - a[0]
        elif st["op"] == "mux":
            env[st["out"]] = np.where(a[0] == 1, a[1], a[2])
        else:
            env[st["out"]] = _GATE[st["op"]](*a)
    for name in program.timed:
        made = set(program.region(name))
        assert not any(set(s["args"]) & made for s in program.steps if s["out"] in made), name
    return env["z"]


@pytest.mark.parametrize("net", [ripple_carry_add(3), kogge_stone_add(5), compare_lt(4), carry_save_sum(3, 4)],
                         ids=["ripple3", "kogge5", "compare4", "csa3x4"])
def test_gate_program_computes_the_netlist(net):
    """The orchestrator turns a netlist into gate steps (a region per depth, gathers between): run
    in plaintext, the program gives what the netlist gives, and no region reads its own values."""
    from fhemark.model.circuits.gates import gate_program
    program = gate_program(net)
    for _ in range(8):
        x = RNG.integers(0, 2, net.n_inputs).astype(np.uint64)
        got = _run_gate_program(program, {"x": x})
        assert got.tolist() == net.evaluate(x.astype(np.uint8)[:, None])[:, 0].tolist()
