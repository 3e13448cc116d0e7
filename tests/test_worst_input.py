"""The worst input, not the average one (issue 35, item 3): verification draws include the edges of
every input's range (the aligned extremes first), a short search follows, and `choose` rejects a set
that uniform draws alone would accept; BFV/BGV's t comes from the worst case of the ranges; `--explain`
says the values per evaluation of a function's inputs and the integer width."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fhemark.model.requirements import derive
from fhemark.model.semantics import Plain
from fhemark.model.workload import Uniform, Workload
from fhemark.workload import load
from made_workloads import chain


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    monkeypatch.setattr("fhemark.model.workload_file._LOADED", {})


def write(tmp_path: Path, body: str, name: str = "mine.py") -> Path:
    path = tmp_path / name
    path.write_text("from fhemark.workload import Constant, Uniform, Workload\n" + textwrap.dedent(body))
    return path


def _dot(c):
    return c.rotate_sum(c.rescaled(c.mul(c.encrypted("x"), c.encrypted("y"))), 8)


def test_the_edges_start_with_every_combination_of_aligned_extremes():
    w = Workload("dot_t", _dot, {"x": Uniform(-3, 3, length=8), "y": Uniform(0, 2, length=8)}, schemes=("ckks",))
    plain = Plain("ckks", 16)
    edges = w.edges(plain, np.random.default_rng(0), 10)
    assert len(edges) == 10
    aligned = {(float(e["x"][-1]), float(e["y"][-1])) for e in edges[:4]}
    assert aligned == {(1.0, 1.0), (1.0, 0.0), (0.0, 1.0), (0.0, 0.0)}
    assert all(np.all(e["x"] == e["x"][0]) for e in edges[:4])
    # y's low end is 0: all of it at 0 would be a plaintext of zeros (SEAL refuses the product), so
    # one slot stays at the other end
    assert all(np.all(e["y"][1:] == e["y"][-1]) and (e["y"][0] == 1.0) for e in edges[:4])
    assert all(np.all(edges[4 + i]["x"][1:] != edges[4 + i]["x"][:-1]) for i in (0, 1))  # alternating ends
    assert all(set(np.unique(e[k])) <= {0.0, 1.0} for e in edges for k in e)           # every one a vertex
    vecs = w.at(plain, edges[1], np.random.default_rng(0))
    assert np.all(vecs["x"][:8] == 3) and np.all(vecs["y"][1:8] == 0) and not vecs["x"][8:].any()


def test_the_plaintext_modulus_holds_a_unanimous_block(tmp_path):
    """Blocks of 1024 votes of 0 or 1: a block's tally reaches 1024 when every vote is 1, where random
    draws see about half of it."""
    (w,) = load(write(tmp_path, """
    def compute(c):
        return c.rotate_sum(c.encrypted("votes"), 1024)
    W = Workload("tally_blocks_t", compute, schemes=("bfv",), inputs={"votes": Uniform(0, 1, length=4096)})
    """))
    req = derive(w, "bfv")
    assert req.largest_value == 1024 and req.plain_bits >= (2 * 1024).bit_length() + 1


def test_explain_says_the_values_a_function_draws_and_the_integer_width(tmp_path):
    (w,) = load(write(tmp_path, """
    import numpy as np
    def compute(c):
        return c.rescaled(c.square(c.encrypted("x")))
    def draw(plain, rng):
        return {"x": rng.uniform(-1, 1, size=100)}
    W = Workload("drawn_t", compute, draw, schemes=("ckks",))
    """))
    req = derive(w, "ckks")
    assert req.slots == 100 and any("100 values per evaluation" in n for n in req.notes)
    (z,) = load(write(tmp_path, """
    W = Workload("zmul_t", lambda c: c.mul(c.encrypted("x"), c.encrypted("y")),
                 {"x": Uniform(0, 2**16 - 1), "y": Uniform(0, 2**16 - 1)}, schemes=("tfhe_int",), bits=16)
    """, name="z.py"))
    assert any(n.startswith("16-bit integers") for n in derive(z, "tfhe_int").notes)


FOURTH_POWER_OF_SUM = """
def compute(c):
    s = c.rotate_sum(c.encrypted("x"), 2048)
    return c.rescaled(c.square(c.rescaled(c.square(s))))
W = Workload("sum_fourth_t", compute, schemes=("ckks",), inputs={"x": Uniform(-1 / 512, 1 / 512, length=2048)})
"""


def test_choose_rejects_a_set_that_uniform_draws_alone_accept(tmp_path):
    """The fourth power of a sum of 2048 values: uniform draws keep the sum near 0, every slot at one end
    makes it 2048 times the end (4, so the output 2^8), and the error of the fourth power with it (4 s^3
    times the sum's: about 15 bits more on SEAL at N = 8192). At scale 2^40 the drawn inputs pass with the
    search's margin (26.1-26.8 bits over five runs, against 16 + 2), the worst input found misses the
    requirement itself (11.0-11.6 against 16); the search then moves the scale up by the bits it was
    short and passes above it. (A square of the sum had 5 bits between the two and a 2-bit margin inside
    them: runs flipped it.)"""
    from fhemark.advise import choose as chooser
    from fhemark.advise.advisor import Need
    from fhemark.advise.worst import EDGES
    (w,) = load(write(tmp_path, FOURTH_POWER_OF_SUM))
    need = Need("ckks", 2, 16.0, slots=2048, magnitude_bits=derive(w, "ckks").magnitude_bits)
    small = {"N": 8192, "q_bits": [60, 40, 40], "p_bits": [60], "scale_bits": 40}
    larger = [{"N": 8192, "q_bits": [60, s, s], "p_bits": [60], "scale_bits": s} for s in (44, 48)]
    why, rec = chooser.verify(w, need, "seal", small, 1, None)
    assert why == "" and rec.precision_bits >= need.precision + chooser.CKKS_SEARCH_MARGIN, why
    why, found, _ = chooser.hardest(w, need, "seal", small)
    assert "below the required" in why and "worst input found" in why, why
    # the edges already miss the requirement: no round of search after them (a longer search finds no pass)
    assert found.evaluations == EDGES and found.precision_bits < rec.precision_bits
    assert found.relative_bits > found.precision_bits  # the output is far above 1
    # at or beside an aligned extreme (the search may move some slots of it): a sum that drawn inputs,
    # a few units off zero, never reach
    x = np.asarray(found.inputs["x"])
    assert len(x) == 2048 and abs(x.sum()) > 0.5 * 2048 / 512, found.how
    c = chooser._search(w, need, "seal", [small, *larger], 1, None, lambda *a: None)
    assert c.verified and c.spec["scale_bits"] > 40 and c.worst.precision_bits >= need.precision + chooser.WORST_MARGIN, c.tried
    assert "scale 2^40" in c.tried[0] and "at the worst input found" in c.tried[0], c.tried
    saved = json.loads(c.worst.write(tmp_path / "w.json", {"library": "seal"}).read_text())
    assert saved["library"] == "seal" and saved["budget"] and len(saved["inputs"]["x"]) == 2048



def test_a_program_that_keeps_slots_apart_carries_many_inputs_an_evaluation(tmp_path):
    """A chain of products keeps every slot to itself: one evaluation at N = 8192 holds 32 inputs of 16
    values side by side, so the worst-input search sees 160 inputs in 5 evaluations where it saw 32 in 32
    (a depth-40 evaluation takes 45 s); a rotation, a routine or bootstrapping mixes slots and keeps one."""
    from fhemark.advise import budgets
    from fhemark.advise import choose as chooser
    from fhemark.advise.advisor import Need
    from fhemark.advise.worst import EDGES, PACK, SEARCH, packing, per_evaluation, runs
    w = chain(tmp_path, 2, 12.0)
    assert packing(w, w.program("ckks"), 4096) == (PACK, 16)
    assert packing(w, w.program("ckks"), 16) == (1, 0)                      # no room for a second
    dot = Workload("dot_t", _dot, {"x": Uniform(-3, 3, length=8), "y": Uniform(0, 2, length=8)}, schemes=("ckks",))
    assert packing(dot, dot.program("ckks"), 4096) == (1, 0)                # rotations
    booted = Workload("boot_t", lambda c: c.bootstrap(c.encrypted("x")), {"x": Uniform(-1, 1, length=8)}, schemes=("ckks",))
    assert packing(booted, booted.program("ckks"), 4096) == (1, 0)         # bootstrapping reads every slot
    assert runs(EDGES, SEARCH, 1) == EDGES + SEARCH and runs(EDGES, SEARCH, PACK) == 1 + SEARCH // 4
    (edges, search), cut = budgets.worst_budget(100.0, PACK)              # 3 evaluations fit 300 s
    assert runs(edges, search, PACK) == 3 and "3 evaluations of the default 5, 32 inputs each" in cut, cut

    need = Need("ckks", 2, 12.0, slots=16, magnitude_bits=derive(w, "ckks").magnitude_bits)
    spec = {"N": 8192, "q_bits": [60, 40, 40], "p_bits": [60], "scale_bits": 40}
    assert per_evaluation(w, "ckks", spec) == PACK
    why, found, _ = chooser.hardest(w, need, "lattigo", spec)
    assert why == "", why
    assert (found.evaluations, found.runs) == (PACK + SEARCH // 4 * PACK, 1 + SEARCH // 4)
    assert f"of {found.evaluations} in {found.runs} evaluations" in found.describe()
    # the input kept is one input's, not the evaluation's 512 slots
    assert len(found.inputs["x"]) <= 16 and 20 < found.precision_bits < 40, found.describe()
    # a set short of the requirement at its edges is failed there: no round of search after them
    why, found, refusal = chooser.hardest(w, replace(need, precision=60.0), "lattigo", spec)
    assert found.runs == 1 and refusal["kind"] == "precision_short" and "below the required 60" in why, why


def test_each_block_of_a_packed_output_is_checked_on_its_own():
    """A block off by 2^-10 beside blocks off by 2^-30: its error is its own, not its neighbours'."""
    from fhemark.drivers.protocol import Vector
    from fhemark.measure.checked import error_of
    plain = Plain("ckks", 64)
    want = {"z": np.linspace(-1, 1, 64)}
    got = want["z"] + 2.0 ** -30
    got[20] += 2.0 ** -10
    errs = [error_of(plain, want, {"z": Vector.of(got)}, slice(k * 16, (k + 1) * 16)) for k in range(4)]
    assert [round(-np.log2(e.abs_error)) for e in errs] == [30, 10, 30, 30]
    assert error_of(plain, want, {"z": Vector.of(got)}).abs_error == errs[1].abs_error


def test_a_request_of_several_chosen_inputs_gets_the_policys_limit_for_each():
    """The search sends a round of inputs in one request: at depth 60 with bootstraps one evaluation takes
    160 s, and four of them under the policy's 600 s (one evaluation's limit) ended the search as a timeout."""
    from types import SimpleNamespace

    from fhemark.errors import DriverError
    from fhemark.measure.checked import run_given

    asked = {}

    class Recorder:
        def request(self, kind, timeout_s, **_):
            asked[kind] = timeout_s
            raise DriverError("timeout", "recorded")

    job = SimpleNamespace(policy=SimpleNamespace(timeout_s=600.0, memory_limit_mb=None))
    given = [({"x": np.zeros(4)}, {}) for _ in range(4)]
    with pytest.raises(DriverError):
        run_given(Recorder(), job, None, Plain("ckks", 4), "s", SimpleNamespace(wire=lambda: {}), given)
    assert asked == {"run": 2400.0}
