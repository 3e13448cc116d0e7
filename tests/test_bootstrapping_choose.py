"""Bootstrapping as a way to run a computation (issue 47, item 3): `bootstrap(ct)` in the Circuit, the
program bootstrapped where a bootstrapping set's levels run out, and `choose` searching the library's
own bootstrapping set beside its rings. The live test runs Lattigo's bootstrapping circuit on N = 4096:
INSECURE on purpose (the secure N = 2^16 set needs about 16 GB and 77 s of key generation), and marked
so in its records."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from made_workloads import every_row

from fhemark.advise import booting
from fhemark.advise import choose as chooser
from fhemark.advise.candidates import Candidate
from fhemark.drivers.limits import bootstrap_sets, bootstrapping
from fhemark.drivers.registry import available
from fhemark.model import ways
from fhemark.model.apps.builder import Circuit
from fhemark.model.requirements import derive
from fhemark.model.semantics import Plain
from fhemark.model.workload import Uniform, Workload
from fhemark.workload import load


def _chain(depth: int):
    def compute(c):
        x, y = c.encrypted("x"), c.encrypted("y")
        for _ in range(depth):
            x = c.rescaled(c.mul(x, y))
        return x
    return compute


def chain(depth: int, **kw) -> Workload:
    return Workload(f"chain{depth}_t", _chain(depth), {"x": Uniform(-1, 1, length=8), "y": Uniform(0.9, 1, length=8)},
                    schemes=("ckks",), **kw)


@pytest.mark.parametrize("depth, boots", [(9, 0), (10, 1), (18, 1), (19, 2), (30, 3)])
def test_a_chain_is_bootstrapped_only_where_the_sets_levels_run_out(depth, boots):
    """A chain of d levels on a set of 9 between bootstraps: ceil(d / 9) - 1 bootstraps, each just before
    the product that would need a tenth level, and no stretch between two longer than 9."""
    w = ways.bootstrapped(chain(depth), 9)
    req = derive(w, "ckks")
    assert req.counts.get("bootstrap", 0) == boots and req.levels == min(depth, 9)
    ops = [s["op"] for s in w.program("ckks").steps if s["op"] in ("rescale", "bootstrap")]
    stretches = "".join("r" if op == "rescale" else "|" for op in ops).split("|")
    assert [len(s) for s in stretches] == [9] * boots + [depth - 9 * boots]
    assert derive(chain(depth), "ckks").levels == depth  # the file's own way: no bootstrap


def test_a_plaintext_meets_the_bootstrapped_copy_encoded_again():
    """A weight encoded like a ciphertext whose levels are spent: the product bootstraps the ciphertext
    and encodes the weight again like its copy (untimed), and the program still computes the algorithm."""
    def compute(c):
        x = c.encrypted("x")
        for _ in range(3):
            x = c.rescaled(c.square(x))
        return c.rescaled(c.mul_plain(x, c.plaintext_like("w", x)))
    w = Workload("weighted_t", compute, {"x": Uniform(-1, 1, length=8), "w": Uniform(-1, 1, length=8)},
                 schemes=("ckks",), refresh=3)
    steps = w.program("ckks").steps
    (boot,) = [s for s in steps if s["op"] == "bootstrap"]
    again = [s for s in steps if s["op"] == "encode" and (s.get("attrs") or {}).get("like") == boot["out"]]
    assert len(again) == 1 and again[0]["args"] == ["w"]
    plain = Plain("ckks", 8)
    vecs = w.draw(plain, np.random.default_rng(1))
    assert np.allclose(w.reference(plain, vecs, {}), vecs["x"] ** 8 * vecs["w"])


@pytest.mark.parametrize("levels", [2, 3, 9])
def test_a_polynomial_bootstraps_inside_its_tree_and_still_computes_it(levels):
    """A degree-7 polynomial after a chain, on sets of 2, 3 and 9 levels between bootstraps: a bootstrap
    placed inside one operand's subtree leaves it shallower than the power it meets (OpenFHE's preset has
    2 levels; mlp_deep's activation stopped with 't51 is below level 1'), and the product still computes p."""
    coeffs = [0.1, 0.5, 0.0, -0.3, 0.2, 0.0, 0.05, 0.1]

    def compute(c):
        x = c.encrypted("x")
        for _ in range(3):
            x = c.rescaled(c.mul(x, c.encrypted("y")))
        return c.poly_eval(x, coeffs)
    w = Workload("poly_t", compute, {"x": Uniform(-1, 1, length=8), "y": Uniform(0.9, 1, length=8)},
                 schemes=("ckks",))
    booted = ways.bootstrapped(w, levels)
    assert derive(booted, "ckks").counts.get("bootstrap", 0) >= (1 if levels < 6 else 0)
    plain = Plain("ckks", 8)
    vecs = booted.draw(plain, np.random.default_rng(2))
    x = vecs["x"] * vecs["y"] ** 3
    assert np.allclose(booted.reference(plain, vecs, {}), np.polynomial.polynomial.polyval(x, coeffs))


SPARSE, FULL = "lattigo_bootstrap_sparse", "lattigo_bootstrap_default"


@pytest.mark.parametrize("bits, preset, packed", [(12.0, SPARSE, 16), (14.0, SPARSE, 16), (16.0, SPARSE, 64),
                                                  (17.0, FULL, None), (20.0, FULL, None)])
def test_the_cheapest_bootstrapping_set_expected_to_reach_the_requirement(bits, preset, packed):
    """Lattigo's sets measured 17.3 (16 slots), 19.1 (64) and 24.9 bits (full) after one bootstrap; a chain
    of 20 levels takes two bootstraps at 9 levels a set, a bit less expected (log2 2). A program of 16
    values asking `bits` (+ the search's 2) gets the cheapest expected to reach them, the more precise
    after it."""
    w = chain(20)
    need = chooser._need(derive(w, "ckks"), chooser.asked(bits, 128, "hestd2018"))
    boot = booting.way(w, "lattigo", need, False, chooser.CKKS_SEARCH_MARGIN)
    assert boot.spec == {"preset": preset, "N": 65536, **({"sparse_slots": packed} if packed else {})}
    assert boot.bootstraps == 2 and all(b.bootstraps == 2 for b in boot.then)
    more = {16: [(SPARSE, 64), (FULL, None)], 64: [(FULL, None)], None: []}[packed]  # each more precise set after it
    assert [(b.spec["preset"], b.spec.get("sparse_slots")) for b in boot.then] == more


def test_no_bootstrapping_set_expected_to_reach_the_precision_is_not_tried_and_says_the_figures():
    """30 bits: two bootstraps of Lattigo's most precise set (24.9 after one) are expected to keep about
    23.9; the way is not run, and says so with the figures."""
    w = chain(20)
    why = booting.way(w, "lattigo", chooser._need(derive(w, "ckks"), chooser.asked(30.0, 128, "hestd2018")), False,
                      chooser.CKKS_SEARCH_MARGIN)
    assert why == ("2 bootstraps of lattigo_bootstrap_default (N = 65536): about 23.9 bits expected (24.9 measured "
                   "after one, less log2 of 2), below the 30 asked"), why


def test_a_sparse_bootstrapping_set_packs_the_slots_it_was_measured_at_and_no_more(monkeypatch):
    """A set that packs few slots (OpenFHE's sparse preset) is run at the packing its peak and precision were
    measured at; a program of more values than it packs is told so."""
    from fhemark.drivers.limits import BootstrapSet
    sparse = BootstrapSet("openfhe", "openfhe_bootstrap_sparse", 65536, 8, 59, 10 << 30, max_slots=64)
    monkeypatch.setattr(booting, "bootstrap_sets", lambda lib, scheme: [sparse])
    ask = chooser.asked(12.0, 128, "hestd2018")
    for values in (8, 17, 64):
        w = Workload(f"wide{values}_t", _chain(20), {"x": Uniform(-1, 1, length=values),
                                                      "y": Uniform(0.9, 1, length=values)}, schemes=("ckks",))
        boot = booting.way(w, "openfhe", chooser._need(derive(w, "ckks"), ask), False)
        assert boot.spec == {"preset": "openfhe_bootstrap_sparse", "N": 65536, "sparse_slots": 64}
        assert boot.bootstraps == 2
    w = Workload("wide65_t", _chain(20), {"x": Uniform(-1, 1, length=65), "y": Uniform(0.9, 1, length=65)},
                 schemes=("ckks",))
    why = booting.way(w, "openfhe", chooser._need(derive(w, "ckks"), ask), False)
    assert why == "openfhe's bootstrapping sets pack at most 64 slots (openfhe_bootstrap_sparse), and the program needs 65"


def test_bootstrap_is_ckks_only_and_a_way_is_found_by_its_name():
    with pytest.raises(ValueError, match="bootstrap is CKKS's"):
        Circuit("bfv").bootstrap("cx")
    w = chain(12)
    found = ways.find(w, "chain12_t__boot9")
    assert found is not None and found.refresh == 9 and derive(found, "ckks").counts["bootstrap"] == 1
    horner = ways.named(w, polynomial="horner")
    assert ways.find(w, horner.name + "__boot4").refresh == 4 and ways.find(w, "chain12_t__bootx") is None


def test_each_library_declares_its_bootstrapping_sets_the_cheapest_first_or_none():
    """A program of few values is bootstrapped sparsely packed (Lattigo: 6.4 GB at 16 slots, 11.5 GB at 64;
    OpenFHE: 15.9 GB at 16); a wider one at the full-slot set (Lattigo 16.3 GB, OpenFHE about 21 GB)."""
    lattigo, openfhe = bootstrapping("lattigo", "ckks"), bootstrapping("openfhe", "ckks")
    assert (lattigo.preset, lattigo.max_slots, lattigo.N, lattigo.levels) == ("lattigo_bootstrap_sparse", 16, 65536, 9)
    assert (openfhe.preset, openfhe.max_slots, openfhe.levels) == ("openfhe_bootstrap_sparse", 16, 8)
    assert bootstrapping("lattigo", "ckks", 17).max_slots == 64
    assert [(b.preset, b.max_slots) for b in (bootstrapping("lattigo", "ckks", 65), bootstrapping("openfhe", "ckks", 17))] \
        == [("lattigo_bootstrap_default", 0), ("openfhe_bootstrap_default", 0)]
    assert [b.peak_bytes < 17 << 30 for b in bootstrap_sets("lattigo", "ckks")] == [True, True, True]
    assert bootstrapping("seal", "ckks") is None and bootstrapping("lattigo", "bfv") is None


def _searched(monkeypatch, ring_n: int | None = None, short: tuple = ()) -> list[tuple[str, list[dict], str]]:
    """choose's search, recorded instead of run: (the way's name, the sets, the origin) per call. A ring
    search passes at its first set (at `ring_n`, where given); a bootstrapping set in `short` (its sparse
    slots, else its preset) falls short of precision, as its verification would say."""
    calls: list[tuple[str, list[dict], str]] = []

    def search(w, need, lib, space, repeats, db, say, origin="search", deadline=None, eval_s=None):
        calls.append((w.name, space, origin))
        spec = {**space[0], "N": ring_n} if ring_n and "preset" not in space[0] else space[0]
        if spec.get("preset") and (spec.get("sparse_slots") or spec["preset"]) in short:
            return Candidate(lib, need.scheme, None, origin, tried=[f"{spec['preset']}: precision short"],
                             last_status="wrong_result", last_refusal="precision_short")
        return Candidate(lib, need.scheme, spec, origin, verified=True)
    monkeypatch.setattr(chooser, "_search", search)
    return calls


def test_choose_ranks_the_bootstrapping_set_beside_the_smallest_ring_that_holds_the_depth(monkeypatch):
    """Depth 12 at 20 bits whose rings pass only at N = 2^17: Lattigo is searched in its rings (the whole
    depth) and at its bootstrapping set (one bootstrap, N = 2^16); SEAL, which declares none, in its rings
    alone."""
    calls = _searched(monkeypatch, ring_n=131072)
    ask = chooser.asked(20.0, 128, "hestd2018")
    rows = every_row(chain(12), "lattigo", "ckks", ask)
    assert [c.origin for c in rows] == ["search", "lattigo-bootstrap"]
    name, space, _ = calls[1]
    # 20 bits + the search's 2: only the full-slot set's measured 24.9 bits reach them (the sparse ones 17.3, 19.1)
    assert name == "chain12_t__boot9" and space == [{"preset": "lattigo_bootstrap_default", "N": 65536}]
    assert rows[1].bootstraps == 1 and rows[1].levels_needed == 9 and rows[0].levels_needed == 12
    calls.clear()
    assert [c.origin for c in every_row(chain(12), "seal", "ckks", ask)] == ["search"]
    # shallower than a bootstrap's levels: the rings alone
    assert [c.origin for c in every_row(chain(5), "lattigo", "ckks", ask)] == ["search"]


def test_a_ring_no_larger_than_the_bootstrapping_set_s_leaves_bootstrapping_untried_and_says_why(monkeypatch):
    """Depth 12 held at a ring no larger than the bootstrapping set's N = 2^16: the bootstrapped program
    would run that ring's operations plus its bootstraps, so it is not run, and its row says so."""
    calls = _searched(monkeypatch)
    rows = every_row(chain(12), "lattigo", "ckks", chooser.asked(20.0, 128, "hestd2018"))
    assert [c.origin for c in rows] == ["search", "lattigo-bootstrap"] and len(calls) == 1
    assert rows[0].verified and rows[0].spec["N"] <= 65536 and not rows[1].verified
    assert f"not tried, lattigo's ring of N = {rows[0].spec['N']} holds the whole depth" in rows[1].tried[0]


def test_a_bootstrapping_set_short_of_precision_leaves_the_next_more_precise_one_to_be_tried(monkeypatch):
    """Depth 20 at 14 bits: Lattigo's 16-slot set (17.3 bits after one bootstrap, two bootstraps here) is
    the cheapest expected to reach 14 + 2; where the program falls short of precision there (as the 16-slot
    set did on the depth-60 chain: 12.9 bits after six), its 64-slot set is tried next, the row keeping why
    the first failed."""
    calls = _searched(monkeypatch, ring_n=131072, short=(16,))
    rows = every_row(chain(20), "lattigo", "ckks", chooser.asked(14.0, 128, "hestd2018"))
    booted = [c[1][0] for c in calls if c[2] == "lattigo-bootstrap"]
    assert booted == [{"preset": SPARSE, "N": 65536, "sparse_slots": 16},
                      {"preset": SPARSE, "N": 65536, "sparse_slots": 64}], booted
    assert rows[-1].verified and rows[-1].spec["sparse_slots"] == 64
    assert rows[-1].tried == ["lattigo_bootstrap_sparse: precision short"]


def test_a_depth_no_ring_holds_is_answered_by_bootstrapping_not_called_impossible(monkeypatch):
    """Depth 200 at 20 bits: no ring to 2^17 holds it; Lattigo's row says so with the figures, and its
    bootstrapping set runs it with 22 bootstraps. Asked of SEAL alone, it is impossible."""
    _searched(monkeypatch)
    monkeypatch.setattr(chooser, "_measure", lambda ans, store, say: None)
    ans = chooser.choose(chain(200), {"lattigo": ("ckks",)}, 20.0, 128, "hestd2018", 1)
    ring, boot = ans.chosen
    assert not ring.verified and "no ring lattigo builds holds it" in ring.tried[0]
    assert boot.origin == "lattigo-bootstrap" and boot.bootstraps == 22 and boot.verified
    with pytest.raises(Exception, match="impossible"):
        chooser.choose(chain(200), {"seal": ("ckks",)}, 20.0, 128, "hestd2018", 1)


def test_a_program_that_places_bootstrap_runs_only_at_a_bootstrapping_set(monkeypatch):
    calls = _searched(monkeypatch)
    w = Workload("placed_t", lambda c: c.rescaled(c.square(c.bootstrap(c.rescaled(c.square(c.encrypted("x")))))),
                 {"x": Uniform(-1, 1, length=8)}, schemes=("ckks",))
    ask = chooser.asked(20.0, 128, "hestd2018")
    (row,) = every_row(w, "lattigo", "ckks", ask)
    assert row.origin == "lattigo-bootstrap" and calls[0][1][0]["preset"] == "lattigo_bootstrap_default"
    (seal,) = every_row(w, "seal", "ckks", ask)
    assert not seal.verified and seal.tried == ["seal declares no bootstrapping set for CKKS"]


PLACED = """
def compute(c):
    x = c.encrypted("x")
    for _ in range(3):
        x = c.rescaled(c.square(x))
    x = c.bootstrap(x)
    return c.rescaled(c.mul(x, c.encrypted("y")))
W = Workload("placed_live_t", compute, schemes=("ckks",), precision_bits=12.0,
             inputs={"x": Uniform(-1, 1, length=8), "y": Uniform(-1, 1, length=8)})
"""


@pytest.mark.skipif("lattigo" not in available(), reason="lattigo driver not built here")
def test_choose_runs_a_bootstrapped_program_checked_with_its_bootstraps_figures(tmp_path: Path):
    """The user's own bootstrap, on Lattigo's bootstrapping circuit at N = 4096 (INSECURE, marked so):
    verified on drawn inputs, then on the worst input found, measured with one bootstrap alone beside it;
    the row carries key generation, the keys' bytes, the time of a bootstrap, and security judged where
    the bootstrapping keys live."""
    path = tmp_path / "placed.py"
    path.write_text("from fhemark.workload import Uniform, Workload\n" + textwrap.dedent(PLACED))
    (w,) = load(path)
    ans = chooser.choose(w, {"lattigo": ("ckks",)}, None, 128, "hestd2018", 1, insecure=True)
    (row,) = ans.ranked()
    r, b = row.record, row.boot_record
    assert row.origin == "lattigo-bootstrap" and row.spec == {"preset": "lattigo_bootstrap_sparse", "N": 4096, "sparse_slots": 16}
    assert r.status == "ok" and r.insecure and r.precision_bits >= 12 and row.worst.precision_bits >= 12
    assert row.bootstraps == 1 and b.op == "bootstrap" and b.status == "ok" and b.median_ns > 0
    boot = r.effective_params["bootstrap"]
    assert boot["output_level"] == bootstrapping("lattigo", "ckks").levels  # what the search plans with
    assert r.setup_s > 0 and r.sizes_bytes["bootstrapping_key"] > r.sizes_bytes["relin_keys"]
    assert "the largest modulus a key of the set uses" in r.security["hestd2018"]["note"]
    from fhemark.advise.answer import to_json
    (cand,) = to_json(ans)["candidates"]
    assert cand["bootstrapping"]["bootstraps"] == 1 and cand["bootstrapping"]["bootstrap_ns"] == b.median_ns
    assert cand["levels_available"] == 9 and booting.calls(w, "ckks")


def test_a_bootstrapping_sets_memory_is_its_measured_peak_and_the_programs_values():
    """Predicted before it is built, from the peak the library's set was measured at (scaled with the
    ring) and the program's values over the chain a bootstrap gives back; over the memory available its
    row says so, with a larger machine as the way out (fewer levels are not: it is the bootstrapping set)."""
    from fhemark.advise import memory
    b = bootstrapping("lattigo", "ckks")
    way = ways.bootstrapped(chain(40), b.levels)
    rotations, live = memory.shape(way, "ckks")
    at = memory.predict("lattigo", b.spec(), rotations, live)
    assert at.bytes == b.peak_bytes + live * 2 * b.N * (b.levels + 1) * 8 and at.keys == b.keys_bytes
    small = memory.predict("lattigo", b.spec(4096), rotations, live)
    assert small.bytes * 16 == pytest.approx(at.bytes, rel=1e-6)
    why = memory.too_large(at, int(at.bytes / 0.9))
    assert why.startswith("not built: predicted peak") and "(a larger machine)" in why
    assert memory.too_large(at, at.bytes * 2) == ""
