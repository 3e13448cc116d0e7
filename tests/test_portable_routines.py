"""fhemark's own inner_sum and linear_transform (model/apps/builder.py, model/apps/diagonals.py), run
where a library lacks the routine: by `choose` and by `run --workload` alike (advise/choose.py
preset_suite), every record saying whose routine ran. Real runs are at tiny rings, marked insecure;
nothing here asserts a time."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from made_workloads import every_row
import yaml
from typer.testing import CliRunner

from fhemark import cli as cli_mod
from fhemark.advise import measuring
from fhemark.advise.preset_suite import preset_suite
from fhemark.model import rotations, routines, ways
from fhemark.model.apps import diagonals
from fhemark.model.requirements import derive
from fhemark.model.semantics import Plain
from fhemark.store.sqlite import Store
from fhemark.workload import Uniform, Workload, load

# One level (the rescale after the transform), at a scale that leaves some 25 bits after the key switches;
# BFV reads t_bits, CKKS the scale, from the same set.
SMALL = "{N: 4096, q_bits: [60, 45], p_bits: [60], scale_bits: 45, t_bits: 20}"
KS = [0, 1, 2, 3, 5, 8, 9, 13]  # baby step 8: baby steps 1, 2, 3, 5 and one giant step, 8 (not 7 rotations)
SUM = 8


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    monkeypatch.setattr("fhemark.model.workload_file._LOADED", {})


def compute(c):
    """A transform, rescaled, then a windowed sum: the two routines in one program."""
    v = c.encrypted("v")
    return c.rotate_sum(c.rescaled(c.linear_transform(v, {k: f"d{k}" for k in KS})), SUM)


def inputs(lo, hi):
    return {"v": Uniform(lo, hi, length=64), **{f"d{k}": Uniform(lo, hi, length=64) for k in KS}}


def lt_workload(native: bool, scheme: str = "ckks") -> Workload:
    lo, hi = (-1, 1) if scheme == "ckks" else (0, 15)
    return Workload("lt_t", compute, schemes=(scheme,), inputs=inputs(lo, hi), native=native)


def write(tmp_path: Path, native: bool, name: str, schemes: tuple[str, ...] = ("ckks", "bfv")) -> Path:
    f = tmp_path / f"{name}.py"
    f.write_text(textwrap.dedent(f"""
        from fhemark.workload import Uniform, Workload
        KS = {KS!r}
        def compute(c):
            v = c.encrypted("v")
            return c.rotate_sum(c.rescaled(c.linear_transform(v, {{k: f"d{{k}}" for k in KS}})), {SUM})
        def inputs(lo, hi):
            return {{"v": Uniform(lo, hi, length=64), **{{f"d{{k}}": Uniform(lo, hi, length=64) for k in KS}}}}
        CKKS = Workload("{name}_c", compute, schemes=("ckks",), inputs=inputs(-1, 1), native={native})
        BFV = Workload("{name}_b", compute, schemes=("bfv",), inputs=inputs(0, 15), native={native})
        """) + "".join(f"del {s.upper()}\n" for s in ("ckks", "bfv") if s not in schemes))
    return f


def cli(*args):
    result = CliRunner().invoke(cli_mod.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def test_the_baby_step_is_the_one_with_fewest_rotations():
    assert diagonals.baby_step(range(16)) == 4 and diagonals.rotations(range(16)) == [1, 2, 3, 4, 8, 12]
    assert diagonals.baby_step(KS) == 8 and diagonals.rotations(KS) == [1, 2, 3, 5, 8]
    # few diagonals: the plain diagonal method, no giant step, nothing pre-rotated
    assert diagonals.rotations([0, 5]) == [5] and diagonals.baby_step([0, 5]) == 8
    with pytest.raises(ValueError, match="linear_transform diagonals"):
        diagonals.check([1, -2])


@pytest.mark.parametrize("scheme", ["ckks", "bfv"])
def test_the_portable_routines_compute_what_the_librarys_do_at_the_same_levels(scheme):
    """fhemark's way has no routine step, its rotations are its Galois keys, it consumes the levels
    and multiplications the library's does, and its cleartext replay is the routines' definition."""
    native = lt_workload(True, scheme)
    portable = ways.named(native, native=False)
    prog = portable.program(scheme)
    assert routines.uses(native.program(scheme)) == ["inner_sum", "linear_transform"] and not routines.uses(prog)
    assert portable.name == "lt_t__portable" and portable.fallback
    assert ways.routine(native, scheme) == "library" and ways.routine(portable, scheme) == "fhemark"
    assert ways.text(portable, scheme) == "fhemark's linear_transform and fhemark's inner_sum"
    req, own = derive(portable, scheme), derive(native, scheme)
    assert (req.depth, req.levels, req.multiplications) == (own.depth, own.levels, own.multiplications)
    # CKKS: the rescale after the transform spends its one level; BFV/BGV: one plaintext product in sequence
    assert req.depth == 1 and routines.levels(prog) == req.levels == (1 if scheme == "ckks" else 0)
    assert req.rotations == [1, 2, 3, 4, 5, 8]  # the transform's 1, 2, 3, 5, 8 and the sum's 1, 2, 4
    # what a key count says of the library's routine steps is the keys fhemark's program makes
    keyed = {k for st in native.program(scheme).steps for k in rotations.routine_steps(st)}
    assert sorted(keyed) == req.rotations
    rotates = "rotate" if scheme == "ckks" else "rotate_rows"
    assert req.counts[rotates] == 5 + 3 and req.counts["mul_plain"] == len(KS)
    plain = Plain(scheme, 64, None) if scheme == "ckks" else Plain(scheme, 128, 65537)
    rng = np.random.default_rng(3)
    x = portable.draw(plain, rng)
    assert {"d8_rotm8_", "d9_rotm8_", "d13_rotm8_"} <= set(x)  # the giant step's diagonals, pre-rotated
    assert np.array_equal(x["d13_rotm8_"], plain.rotate(x["d13"], -8))
    got, want = portable.reference(plain, x, {}), native.reference(plain, x, {})
    assert np.allclose(np.asarray(got, float), np.asarray(want, float))
    # and the definition itself: sum_k d_k * rot_k(v), then every slot the sum of the next 8
    t = sum(plain.mul(x[f"d{k}"], plain.rotate(x["v"], k)) for k in KS)
    t = t % plain.t if plain.exact else t
    direct = sum(plain.rotate(t, j) for j in range(SUM))
    assert np.allclose(np.asarray(got, float), direct % plain.t if plain.exact else direct)


def test_which_library_runs_whose_routine():
    """From the drivers' checked-in capabilities: SEAL has no routine but every primitive fhemark's
    need; TenSEAL no linear transform, and neither the rotation fhemark's stand in with nor a CKKS
    rescale of its own (its vectors rescale as they please)."""
    w = lt_workload(True)
    prog, portable = w.program("ckks"), ways.named(w, native=False).program("ckks")
    assert routines.lacking(prog, "seal", "ckks") == ["inner_sum", "linear_transform"]
    assert routines.lacking(portable, "seal", "ckks") == []
    assert routines.lacking(prog, "tenseal", "ckks") == ["linear_transform", "rescale"]
    assert routines.lacking(portable, "tenseal", "ckks") == ["rescale", "rotate"]
    assert routines.lacking(prog, "openfhe", "ckks") == [] and routines.lacking(prog, "lattigo", "ckks") == []


def test_run_workload_plans_the_portable_way_where_a_routine_is_missing(tmp_path, monkeypatch):
    from fhemark.advise import preset_suite as presets
    monkeypatch.setattr(presets, "available", lambda: ["concrete", "lattigo", "openfhe", "seal", "tenseal", "tfhe-rs"])
    ws = load(write(tmp_path, native=True, name="ltn"))
    suite = preset_suite(ws, [SMALL])
    planned = {(c.schemes[0], c.ops[0]): c.libraries for c in suite.cases}
    # TenSEAL keeps the computation's own way: fhemark's cannot run there either, and its refusal names
    # the routine it lacks; the integer-only libraries run no RLWE scheme and are not named
    assert planned == {("ckks", "ltn_c"): ["lattigo", "openfhe", "tenseal"], ("ckks", "ltn_c__portable"): ["seal"],
                       ("bfv", "ltn_b"): ["lattigo", "openfhe", "tenseal"], ("bfv", "ltn_b__portable"): ["seal"]}
    assert {r.name for r in suite.workloads} == {"ltn_c", "ltn_c__portable", "ltn_b", "ltn_b__portable"}
    # a portable computation (no routine asked for) is one case on every library, as before
    plain = load(write(tmp_path, native=False, name="ltp"))
    assert [c.libraries for c in preset_suite(plain, [SMALL]).cases] == ["all", "all"]


def test_choose_runs_fhemarks_routines_where_the_library_answers_unsupported(tmp_path, monkeypatch):
    """choose's search: SEAL refuses the native program and is searched again on the portable way,
    its row naming fhemark's routines; OpenFHE keeps its own."""
    from made_records import record

    from fhemark.advise import choose as chooser
    (w,) = load(write(tmp_path, native=True, name="ltn", schemes=("ckks",)))
    asked = []

    def fake_verify(v, need, lib, spec, repeats, db, samples=2):
        asked.append((lib, v.name, need.depth))
        if lib == "seal" and routines.uses(v.program("ckks")):
            return "unsupported: seal has no inner_sum, linear_transform for ckks", record(status="unsupported")
        return "", record(status="ok", precision_bits=30.0)
    monkeypatch.setattr(chooser, "verify", fake_verify)
    monkeypatch.setattr(chooser, "hardest", lambda *a: ("", None, None))
    say = lambda *a, **k: None  # noqa: E731
    (own,) = every_row(w, "openfhe", "ckks", chooser.asked(20.0, 128, "hestd2018"), say)
    (seal,) = every_row(w, "seal", "ckks", chooser.asked(20.0, 128, "hestd2018"), say)
    assert own.routine == "library" and own.workload.name == "ltn_c"
    assert asked[1:] == [("seal", "ltn_c", 1), ("seal", "ltn_c__portable", 1)]  # the same one level either way
    assert seal.verified and seal.routine == "fhemark" and seal.origin == "seal-fhemark"
    assert "fhemark's linear_transform and fhemark's inner_sum" in seal.label and "unsupported" in seal.tried[0]


def _built(*libs: str) -> list[str]:
    from fhemark.drivers.registry import available
    return [lib for lib in libs if lib in available()]


# Whether a set is right, not how fast: one process, two samples, every output checked (choose's search).
QUICK = {**measuring.search_policy(1, 2), "min_precision_bits": 20.0}


def test_fhemarks_routines_decrypt_right_on_seal_and_on_libraries_with_their_own(tmp_path):
    """A portable computation: fhemark's transform and sum on SEAL and on Lattigo and OpenFHE (which
    have both routines), CKKS and BFV, every output checked against the cleartext definition."""
    from fhemark.measure import measure
    from fhemark.plan.jobs import build
    libs = _built("seal", "lattigo", "openfhe")
    assert "seal" in libs
    ws = load(write(tmp_path, native=False, name="ltp"))
    spec = yaml.safe_load(SMALL)
    cases = [measuring.case(lib, w.schemes[0], spec, [w.name]) for lib in libs for w in ws]
    suite = measuring.suite("portable-routines", cases, QUICK, 128, "hestd2018", workloads=ws)
    recs = measure(build(suite, libs, allow_insecure=True)).records
    assert {(x.library, x.scheme) for x in recs} == {(lib, s) for lib in libs for s in ("ckks", "bfv")}
    assert all(x.status == "ok" and x.check_passed for x in recs), [(x.library, x.scheme, x.error) for x in recs]
    assert all(x.precision_bits >= 20 for x in recs if x.scheme == "ckks")
    # rotate_sum in a computation that asks for no routine is the vocabulary's own, not a stand-in
    assert all(x.workload["routines"][x.scheme] == {"linear_transform": "fhemark"} for x in recs)


def test_run_workload_on_seal_runs_fhemarks_routines_where_the_library_has_none(tmp_path):
    """A native computation: SEAL, which has neither routine, runs fhemark's (`__portable`, its records
    saying so) instead of answering `unsupported`; OpenFHE runs its own; both checked."""
    libs = _built("seal", "openfhe")
    assert "seal" in libs
    db = tmp_path / "n.db"
    r = cli("run", "--workload", write(tmp_path, native=True, name="ltn", schemes=("ckks",)),
            *[x for lib in libs for x in ("--library", lib)], "--params", SMALL, "--allow-insecure", "--db", db,
            "--report", tmp_path / "rep")
    recs = {x.library: x for x in Store(db).records()}
    assert r.exit_code == 0 and set(recs) == set(libs), r.output
    assert all(x.status == "ok" and x.check_passed and x.precision_bits >= 20 for x in recs.values()), r.output
    seal = recs["seal"]
    assert seal.op == "ltn_c__portable" and seal.workload["variant"] == "portable"
    assert seal.workload["routines"]["ckks"] == {"linear_transform": "fhemark", "inner_sum": "fhemark"}
    if "openfhe" in libs:
        own = recs["openfhe"]
        assert own.op == "ltn_c" and own.workload["routines"]["ckks"] == {"linear_transform": "library",
                                                                          "inner_sum": "library"}
