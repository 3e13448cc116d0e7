"""fhemark spells a rotation whose step has no Galois key as keyed steps, once, for every library
(model/rotations.py): the spelling must rotate by the step, use only keyed steps, and leave a
keyed step alone."""

import numpy as np
import pytest

from fhemark.model.catalog import lookup
from fhemark.model.rotations import galois_steps, keyed_steps, naf, spell, spell_steps
from fhemark.model.semantics import Plain


@pytest.mark.parametrize("row", [8, 512, 4096])
def test_every_step_is_spelled_by_power_of_two_keys(row):
    keyed = keyed_steps(row, pow2=True)
    for k in list(range(-2 * row, 2 * row, max(1, row // 64))) + [row - 1, 3, -5, row // 2 + 7]:
        got = spell(k, row, keyed)
        parts = got if isinstance(got, list) else [got]
        assert sum(parts) % row == k % row, (k, got)
        assert all(p in keyed or p % row in keyed for p in parts) or k % row == 0, (k, got)
        assert len(parts) <= (row.bit_length() + 1) // 2 + 1, (k, got)


def test_a_keyed_step_is_left_alone_and_an_unspellable_one_is_left_for_the_driver():
    assert spell(3, 512, keyed_steps(512, [3])) == 3
    assert spell(-1, 512, keyed_steps(512, pow2=True)) == -1
    assert spell(3, 512, keyed_steps(512, [1])) == 3  # no keys for its digits: the driver refuses it
    assert spell(3, 512, keyed_steps(512, pow2=True)) == [-1, 4]
    assert naf(7) == [-1, 8] and naf(-7) == [1, -8]


def test_a_program_is_spelled_against_the_key_set_each_rotation_uses():
    steps = [{"out": "k", "op": "keygen_galois", "args": [], "attrs": {"steps": [3]}},
             {"out": "a", "op": "rotate_rows", "args": ["cx"], "attrs": {"steps": 3, "key": "k"}},
             {"out": "b", "op": "rotate_rows", "args": ["cx"], "attrs": {"steps": 3}}]
    out = spell_steps(steps, 512, keyed_steps(512, pow2=True))
    assert out[1]["attrs"]["steps"] == 3 and out[2]["attrs"]["steps"] == [-1, 4]
    assert steps[2]["attrs"]["steps"] == 3, "the op's own program is not changed in place"


def test_rotate_random_sends_keyed_steps_and_checks_their_sum():
    op, plain = lookup("rotate_random", "bfv"), Plain("bfv", 1024, 65537)
    rng = np.random.default_rng(3)
    x = np.arange(1024, dtype=np.int64)
    for _ in range(20):
        s = op.scalars(plain, rng)
        parts = s["k"] if isinstance(s["k"], list) else [s["k"]]
        assert all(p in keyed_steps(512, pow2=True) for p in parts)
        assert np.array_equal(op.expected(plain, {"x": x}, s)["z"], plain.rotate(x, sum(parts)))


def test_a_setup_is_sent_its_galois_steps_spelled_out():
    """PROTOCOL.md setup: `rotations` lists every key to make (0: the row swap / conjugation); the
    power-of-two set comes with a job that rotates by any step, once, for every library."""
    from fhemark.model.params import resolve
    from fhemark.plan.jobs import Group, Job
    from fhemark.plan.suites import Policy

    params = resolve("n8192", "bfv")

    def group(*ops):
        return Group("seal", "bfv", params, None, [Job("seal", "bfv", params, op, None, Policy(), 1, False) for op in ops])
    assert group("add").rotations == []
    assert group("rotate_1").rotations == [1]
    steps = group("rotate_1", "rotate_random").rotations
    assert steps == galois_steps(4096, [1], True) and 0 in steps and {2048, -2048} <= set(steps) and 4096 not in steps
