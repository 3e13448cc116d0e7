"""fhemark's own polynomial evaluation at logarithmic depth (model/apps/polynomial.py), the levels a
library's own evaluator needs (model/routines.py), and the ways `choose` runs a polynomial in
(model/ways.py): the library's evaluator, fhemark's in its place, Horner's rule. Real runs are at
tiny rings, marked insecure; nothing here asserts a time."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from made_workloads import every_row
from made_records import record
from typer.testing import CliRunner

from fhemark import cli as cli_mod
from fhemark.model import routines, ways
from fhemark.model.requirements import derive
from fhemark.model.semantics import Plain
from fhemark.model.workload import WorkloadRef
from fhemark.store.sqlite import Store
from fhemark.workload import Uniform, Workload, load

# Four levels of 40 bits below a 50-bit first prime: degree 15 at logarithmic depth, and 2^-26 or so
# of error at the scale 2^40, well within the 20 bits every output is checked to.
FOUR = "{N: 4096, q_bits: [50, 40, 40, 40, 40], p_bits: [50], scale_bits: 40}"
FIVE = "{N: 4096, q_bits: [50, 40, 40, 40, 40, 40], p_bits: [50], scale_bits: 40}"
COEFFS = [0.3, -0.5, 0.25, 0.7, -0.2, 0.1, 0.05, -0.3, 0.2, -0.1, 0.15, 0.05, -0.08, 0.04, 0.02, -0.03]


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    monkeypatch.setattr("fhemark.model.workload_file._LOADED", {})


def poly_workload(coeffs, native=False, name="p_t"):
    return Workload(name, lambda c: c.poly_eval(c.encrypted("x"), coeffs), schemes=("ckks",),
                    inputs={"x": Uniform(-1, 1, length=64)}, native=native)


def write(tmp_path: Path, native: bool, name: str = "p15_t") -> Path:
    f = tmp_path / f"{name}.py"
    f.write_text(textwrap.dedent(f"""
        from fhemark.workload import Uniform, Workload
        COEFFS = {COEFFS!r}
        def compute(c):
            return c.poly_eval(c.encrypted("x"), COEFFS)
        W = Workload("{name}", compute, schemes=("ckks",), inputs={{"x": Uniform(-1, 1, length=64)}}, native={native})
        """))
    return f


def cli(*args):
    result = CliRunner().invoke(cli_mod.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


@pytest.mark.parametrize("degree", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32])
def test_the_portable_evaluation_is_logarithmic_and_replays_the_polynomial(degree):
    rng = np.random.default_rng(degree)
    coeffs = [float(c) for c in rng.uniform(-1, 1, degree + 1)]
    coeffs[degree // 2] = 0.0  # a known zero is left out, not multiplied
    w = poly_workload(coeffs)
    req = derive(w, "ckks")
    assert req.depth == (degree + 1 - 1).bit_length() == int(np.ceil(np.log2(degree + 1)))
    assert ways.routine(w, "ckks") == "fhemark" and "poly_eval" not in w.program("ckks").primitives()
    # ciphertext products: the squarings and one per split, about d / 2, against Horner's d - 1
    products = req.counts.get("mul_relin", 0) + req.counts.get("square_relin", 0)
    assert products <= degree // 2 + degree.bit_length()
    plain = Plain("ckks", 64)
    x = w.draw(plain, rng)
    assert np.allclose(w.reference(plain, x, {}), np.polynomial.polynomial.polyval(x["x"], coeffs), atol=1e-12)
    horner = ways.named(w, polynomial="horner")
    assert derive(horner, "ckks").depth == degree and ways.routine(horner, "ckks") == "horner"


def test_a_native_polynomial_is_the_librarys_step_and_its_levels_are_the_librarys():
    w = poly_workload(COEFFS, native=True)
    prog = w.program("ckks")
    assert "poly_eval" in prog.primitives() and ways.routine(w, "ckks") == "library"
    assert routines.levels(prog) == derive(w, "ckks").depth == 4
    assert routines.levels(prog, "lattigo") == 4
    assert routines.levels(prog, "openfhe") == 5 and routines.extra_levels(prog, "openfhe") == 1
    # the way without the library's routine is fhemark's, at the tree's depth on every library
    portable = ways.named(w, native=False)
    assert ways.routine(portable, "ckks") == "fhemark" and routines.levels(portable.program("ckks"), "openfhe") == 4


def test_a_routine_s_levels_are_its_driver_s_declared_table():
    """OpenFHE's EvalPoly levels by degree are one table, its capabilities' limits.routine_levels: the
    driver refuses a chain shorter than it says and fhemark gives OpenFHE those levels; a library that
    declares none (Lattigo) is counted as the program's tree."""
    assert [routines.step_levels("openfhe", {"op": "poly_eval", "attrs": {"coeffs": [1] * (d + 1)}})
            for d in (1, 2, 3, 4, 7, 15, 27, 28, 4095)] == [1, 2, 3, 3, 4, 5, 5, 6, 12]
    assert routines.level_tables("lattigo") == {} and routines.counting() == ["openfhe"]
    assert routines.step_levels("lattigo", {"op": "poly_eval", "attrs": {"coeffs": [1] * 16}}) == 4


def test_the_search_gives_openfhe_its_fifth_level_and_seal_fhemarks_routine(tmp_path, monkeypatch):
    """One program, per library: OpenFHE's EvalPoly of degree 15 is searched on chains of 5 levels
    (the program's tree counts 4); SEAL, which has no evaluator, answers `unsupported` and runs
    fhemark's evaluation in its place, at 4 levels, its row saying so."""
    from fhemark.advise import choose as chooser
    (w,) = load(write(tmp_path, native=True))
    asked = []

    def fake_verify(v, need, lib, spec, repeats, db, samples=2):
        asked.append((lib, v.name, len(spec["q_bits"]) - 1))
        if lib == "seal" and v.native:
            return "unsupported: SEAL driver has no 'poly_eval'", record(status="unsupported")
        return "", record(status="ok", precision_bits=30.0)
    monkeypatch.setattr(chooser, "verify", fake_verify)
    monkeypatch.setattr(chooser, "hardest", lambda *a: ("", None, None))
    ask, none = chooser.asked(20.0, 128, "hestd2018"), lambda *a, **k: None
    ofhe = every_row(w, "openfhe", "ckks", ask, none)
    seal = every_row(w, "seal", "ckks", ask, none)
    assert asked[0] == ("openfhe", "p15_t", 5) and ofhe[0].levels_needed == 5 and ofhe[0].routine == "library"
    assert asked[1] == ("seal", "p15_t", 4) and asked[2] == ("seal", "p15_t__portable", 4)
    (c,) = seal
    assert c.verified and c.routine == "fhemark" and c.origin == "seal-fhemark" and c.workload.name == "p15_t__portable"
    assert "fhemark's log-depth" in c.label and "unsupported" in c.tried[0]


def test_a_way_is_found_again_from_its_ref(tmp_path):
    """A worker finds `<name>__horner` from the file and digest as it finds the file's own workload."""
    from fhemark.model.workload_file import resolve
    (w,) = load(write(tmp_path, native=True))
    ref = WorkloadRef("p15_t__horner", w.source, w.sha256)
    got = resolve(ref)
    assert got.polynomial == "horner" and derive(got, "ckks").depth == 15 and got.ref == ref
    # a fresh process (nothing but the file loaded) finds a way of a way, as choose's fallback names it
    from fhemark.model import workload_file
    workload_file._LOADED.clear()
    deeper = resolve(WorkloadRef("p15_t__log__portable", w.source, w.sha256))
    assert deeper.polynomial == "log" and not deeper.native


def test_fhemarks_evaluation_is_right_on_seal_lattigo_openfhe_at_four_levels(tmp_path):
    """Degree 15 in 4 levels, every output decrypted and checked against the cleartext polynomial,
    on SEAL (which has no evaluator of its own) and on the libraries that have one."""
    from fhemark.drivers.registry import available
    libs = [lib for lib in ("seal", "lattigo", "openfhe") if lib in available()]
    assert "seal" in libs
    f = write(tmp_path, native=False)
    db = tmp_path / "p.db"
    r = cli("run", "--workload", f, *[x for lib in libs for x in ("--library", lib)], "--params", FOUR,
            "--allow-insecure", "--db", db, "--report", tmp_path / "rep")
    recs = list(Store(db).records())
    assert r.exit_code == 0 and {x.library for x in recs} == set(libs), r.output
    assert all(x.status == "ok" and x.check_passed and x.precision_bits >= 20 for x in recs), r.output


def test_openfhes_evalpoly_runs_with_the_fifth_level(tmp_path):
    from fhemark.drivers.registry import available
    if "openfhe" not in available():
        pytest.skip("OpenFHE's driver is not built here")
    f = write(tmp_path, native=True, name="p15n_t")
    db = tmp_path / "o.db"
    r = cli("run", "--workload", f, "--library", "openfhe", "--params", FOUR, "--params", FIVE, "--allow-insecure",
            "--db", db, "--report", tmp_path / "rep")
    by_levels = {len(x.params["q_bits"]) - 1: x for x in Store(db).records()}
    assert by_levels[4].status == "invalid_params" and "consumes 5 levels" in by_levels[4].error, r.output
    assert by_levels[5].status == "ok" and by_levels[5].check_passed, r.output


def test_horner_and_log_depth_are_two_ways_of_one_workload():
    w = poly_workload([0.5, 0.25, 0.0, -0.125])
    assert [v.name for v in ways.variants(w)] == ["p_t", "p_t__log", "p_t__horner"]
    native = replace(w, native=True)
    assert {v.name for v in ways.variants(native)} >= {"p_t", "p_t__portable", "p_t__horner", "p_t__log_portable"}
