"""HEIR as a compiler row (src/fhemark/compile): emitting HEIR's input from a workload's cleartext
meaning needs no HEIR; the end-to-end test compiles, builds and checks a tiny workload where
drivers/heir/build.sh installed heir-py (and Go is here), and is skipped with the reason elsewhere."""

from __future__ import annotations

import shutil

import pytest

from fhemark.compile import heir
from fhemark.compile.__main__ import main
from fhemark.compile.builtins import builtin
from fhemark.compile.measure import run_row
from fhemark.compile.mlir import Unsupported, emit
from fhemark.model.params import is_prime, resolve
from fhemark.store.sqlite import Store
from fhemark.workload import Constant, Uniform, Workload


def test_dot_product_is_a_sum_of_products_over_secret_tensors():
    e = emit(builtin("dot_8"))
    assert "func.func @dot_8(%x: tensor<8xf32> {secret.secret}, %y: tensor<8xf32> {secret.secret}) -> (f32)" in e.text
    assert "arith.mulf %x, %y : tensor<8xf32>" in e.text
    assert "affine.for" in e.text and "rotate" not in e.text and "rescale" not in e.text  # meaning, not method
    assert [a.name for a in e.args] == ["x", "y"] and e.reads == (None,)  # a scalar: slot 0 of the reference


def test_constants_and_plaintext_inputs():
    sq = emit(builtin("sqplus1_8")).text
    assert "arith.mulf %x, %x" in sq and "dense<1.00000000000000000e+00> : tensor<8xf32>" in sq
    e = emit(builtin("affine_8"))
    assert [(a.name, a.secret) for a in e.args] == [("x", True), ("w", False), ("b", False)]
    assert "%w: tensor<8xf32>," in e.text and e.reads == (8,)


def test_a_scalar_meets_a_constant_as_a_scalar():
    def mean(c):
        s = c.rotate_sum(c.encrypted("x"), 4)
        return c.rescaled(c.mul_plain(s, c.plaintext_like("inv", s)))
    text = emit(Workload("mean_4", mean, {"x": Uniform(0, 1, length=4), "inv": Constant(0.25)}, ("ckks",))).text
    assert "arith.constant 2.50000000000000000e-01 : f32" in text and "-> (f32)" in text


def test_what_has_no_meaning_here_is_one_line():
    rot = Workload("rot_4", lambda c: c.rotate(c.encrypted("x"), 1), {"x": Uniform(0, 1, length=4)}, ("ckks",))
    with pytest.raises(Unsupported, match="^rotate: no cleartext meaning for HEIR"):
        emit(rot)
    unsized = Workload("unsized", lambda c: c.square(c.encrypted("x")), {"x": Uniform(0, 1)}, ("ckks",))
    with pytest.raises(Unsupported, match="no declared length"):
        emit(unsized)
    with pytest.raises(Unsupported, match="no CKKS form"):
        emit(Workload("b", lambda c: c.encrypted("x"), {"x": Uniform(0, 1, length=4)}, ("bfv",)))


def test_fhemarks_parameter_set_as_heirs():
    sp = heir.scheme_param(resolve("n8192", "ckks"))
    assert sp.log_n == 13 and sp.log_scale == 40
    assert [m.bit_length() for m in sp.q] == [50, 40, 40, 40] and [m.bit_length() for m in sp.p] == [48]
    assert all(is_prime(m) and m % (2 * 8192) == 1 for m in (*sp.q, *sp.p)) and len({*sp.q, *sp.p}) == 5
    assert sp.attribute().startswith("ckks.schemeParam = #ckks.scheme_param<logN = 13, Q = [")


def test_without_heir_the_row_is_one_line_and_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FHEMARK_CACHE", str(tmp_path))
    with pytest.raises(heir.Unavailable, match="run: bash drivers/heir/build.sh"):
        heir.tools()
    assert main(["heir", "dot_8"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("heir->lattigo skipped: heir-py")


def _heir_here() -> str | None:
    try:
        heir.tools()
    except heir.Unavailable as exc:
        return str(exc)
    return None if shutil.which("go") else "Go toolchain not found"


needs_heir = pytest.mark.skipif(_heir_here() is not None, reason=_heir_here() or "")


@needs_heir
def test_a_compiled_workload_decrypts_to_its_cleartext_replay():
    row = run_row(builtin("sqplus1_8"), samples=2, warmup=0)
    assert not row.error, row.error
    assert row.wrong == 0 and row.checked == len(row.samples_ns) == 2 and row.precision_bits > 20
    assert row.scheme["N"] >= 4096 and row.scheme["levels"] >= 1 and row.scheme["scale_bits"] > 0


@needs_heir
def test_at_fhemarks_parameters_and_bounded_when_it_hangs():
    row = run_row(builtin("dot_8"), resolve("n8192", "ckks"), samples=1, warmup=0)
    assert not row.error and row.wrong == 0, row.error
    assert row.scheme["N"] == 8192 and row.scheme["log_q"] == [50.0, 40.0, 40.0, 40.0]
    slow = run_row(builtin("dot_8"), compile_timeout=0.001, samples=1)
    assert slow.error.endswith("did not finish in 0 s (bounded; raise the limit with "
                              "python -m fhemark.compile heir --compile-timeout)")


def test_heirs_own_message_is_the_line():
    stderr = ("x.mlir:1:1: error: Unable to find backend attribute on module\n"
              "x.mlir:3:5: error: unexpected unrealized conversion cast op found\n  %1 = ...\n")
    assert heir._first_error(stderr) == "unexpected unrealized conversion cast op found"


_CT, _ENC = "[]*rlwe.Ciphertext", "evaluator *ckks.Evaluator, param ckks.Parameters, encoder *ckks.Encoder"
_GO = "\n".join([  # what heir-translate --emit-lattigo writes for affine_8, its bodies cut
    "func Affine_8__preprocessing(param ckks.Parameters, encoder *ckks.Encoder, v0 []float32, v1 []float32) "
    "([]*rlwe.Plaintext) {",
    f"func Affine_8({_ENC}, v0 {_CT}, v1 []float32, v2 []float32) ({_CT}) {{",
    "  v3 := Affine_8__preprocessing(param, encoder, v2, v1)",
    "  v4 := Affine_8__preprocessed(evaluator, param, encoder, v0, v1, v2, v3)",
    "  return v4",
    "}",
    "func Affine_8__decrypt__result0(_ *ckks.Evaluator, _ ckks.Parameters, encoder *ckks.Encoder, "
    f"decryptor *rlwe.Decryptor, v0 {_CT}) ([]float32) {{", ""])


def test_the_harness_times_only_the_compiled_call_with_heirs_argument_order():
    sp = heir.SchemeParam(13, (1,), (2,), 40)
    body = heir.harness_body(heir.Compiled("Affine_8", _GO, sp, False), emit(builtin("affine_8")))
    lines = [ln.strip() for ln in body.splitlines()]
    assert lines[:4] == ["a0 := Affine_8__encrypt__arg0(evaluator, param, encoder, encryptor, s.Args[0])",
                         "a1 := s.Args[1]", "a2 := s.Args[2]",
                         "pre := Affine_8__preprocessing(param, encoder, a2, a1)"]  # HEIR's order, not ours
    # encrypted and preprocessed now, timed later: after every sample of the batch is made (cold inputs)
    assert lines[4:8] == ["timed[k] = func() reply {", "t0 := time.Now()",
                          "r0 := Affine_8__preprocessed(evaluator, param, encoder, a0, a1, a2, pre)",
                          "ns := time.Since(t0).Nanoseconds()"]
    assert lines[-3].startswith("r.Out[0] = widen(Affine_8__decrypt__result0(") and lines[-2:] == ["return r", "}"]


def _ctx():
    from fhemark.compile.records import Context
    return Context("run-1", "choose dot_8", {"threads": 1})


def test_a_compiled_row_is_a_record_summarised_as_a_hand_rows_are():
    from fhemark.compile.measure import Row
    from fhemark.compile.records import as_record
    from fhemark.measure.records import rlwe
    given = resolve(ONE_LEVEL, "ckks")
    row = Row("dot_8", "fhemark:" + given.label(), given=given, scheme={"N": 8192, "log_qp": 143.9, "slots": 4096},
              security=rlwe(8192, 143.9, {}), samples_ns=[3_000_000, 3_100_000, 2_900_000], warmup_ns=[4_000_000],
              precision_bits=22.0, max_abs_error=2e-7, checked=4, key_bytes={"relin_keys": 1000})
    rec = as_record(row, builtin("dot_8"), _ctx())
    assert rec.status == "ok" and rec.check_passed and rec.input_state == "cold" and rec.run_id == "run-1"
    assert rec.median_ns == 3_000_000 and rec.ci_method and rec.min_ns == 2_900_000  # the hand rows' summary
    assert rec.params["q_bits"] == (47, 37) and rec.library_build["params_from"] == "fhemark:N=8192,logQP=144"
    assert rec.security_table == "hestd2018" and rec.security_bits >= 128 and not rec.insecure


def test_a_wrong_sample_or_a_refused_compile_is_the_record_status():
    from fhemark.compile.measure import Row
    from fhemark.compile.records import as_record
    wrong = Row("dot_8", "heir", scheme={"N": 8192, "log_q": [40.99], "log_p": [], "scale_bits": 40, "log_qp": 41.0},
                samples_ns=[1, 2], checked=2, wrong=1, status="wrong_result", error="1 of 2 samples missed")
    rec = as_record(wrong, builtin("dot_8"), _ctx())
    assert rec.status == "wrong_result" and rec.check_passed is False and rec.params["q_bits"] == [41]
    assert rec.params["name"] == "heir's N=8192,logQP=41"  # HEIR's set per workload: named by its size
    refused = as_record(Row("dot_8", "heir", status="unsupported", error="HEIR's own line"), builtin("dot_8"), _ctx())
    assert refused.status == "unsupported" and refused.error == "HEIR's own line" and refused.samples_ns == []


# -- choose --compilers heir: the compiled rows beside the set choose verified for hand-written Lattigo

def test_choose_refuses_an_unknown_compiler_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from fhemark.cli import app
    r = CliRunner().invoke(app, ["choose", "drivers/heir/workloads/dot_8.py", "--compilers", "clang",
                                 "--db", str(tmp_path / "x.db")])
    assert r.exit_code == 2 and (r.exception is None or isinstance(r.exception, SystemExit))
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--compilers clang: unknown compiler; use heir" in lines[0]
    assert not (tmp_path / "x.db").exists()  # refused before any search


def test_the_sets_a_compiler_meets_are_the_verified_ones_of_its_library_smallest_first():
    from types import SimpleNamespace

    from fhemark.advise.candidates import Answer, Candidate, verified_specs
    ok = SimpleNamespace(status="ok", median_ns=1.0)
    big, small = {"N": 16384, "q_bits": [50, 40], "p_bits": [60], "scale_bits": 40}, \
        {"N": 8192, "q_bits": [47, 37], "p_bits": [60], "scale_bits": 37}
    chosen = [Candidate("lattigo", "ckks", big, verified=True, record=ok),
              Candidate("lattigo", "ckks", small, verified=True, record=ok),
              Candidate("lattigo", "ckks", small, origin="shared", verified=True, record=ok),
              Candidate("lattigo", "ckks", {"N": 4096, "q_bits": [30], "p_bits": [], "scale_bits": 25}, verified=False),
              Candidate("seal", "ckks", small, verified=True, record=ok)]
    ans = Answer(builtin("dot_8"), {}, 20.0, 128, "hestd2018", chosen)
    assert verified_specs(ans, "lattigo") == [small, big]
    assert verified_specs(ans, "lattigo", "bfv") == []


def test_without_heir_the_compiled_rows_beside_choose_are_one_line(tmp_path, monkeypatch):
    from fhemark.compile.choose import beside_choose
    monkeypatch.setenv("FHEMARK_CACHE", str(tmp_path))
    said = []
    out = beside_choose(builtin("dot_8"), "heir", [], say=said.append)
    assert out.startswith("heir->lattigo skipped: heir-py") and out.endswith("run: bash drivers/heir/build.sh")
    assert "\n" not in out and said == []


# A one-level set, as choose verifies for hand-written Lattigo's dot product (insecure rings are not
# needed: N = 8192 holds it at 128 bits).
ONE_LEVEL = {"N": 8192, "q_bits": [47, 37], "p_bits": [60], "scale_bits": 37}


@needs_heir
def test_dot_product_beside_choose_at_heirs_set_and_at_fhemarks_every_sample_checked(monkeypatch, tmp_path):
    from fhemark.compile import choose
    rows = []
    monkeypatch.setattr(choose, "table", lambda rs: rows.extend(rs) or "")
    store = Store(tmp_path / "x.db")
    choose.beside_choose(builtin("dot_8"), "heir", [ONE_LEVEL], samples=2, say=lambda line: None, store=store)
    own, given, longer = rows
    assert own.params_from == "heir" and not own.error and own.wrong == 0 and len(own.samples_ns) == 2
    # HEIR's layout spends more levels than the hand-written sum: its own message, then fhemark's ring,
    # primes and scale with HEIR's levels added, measured and checked.
    assert given.error.endswith("The level in the scheme param is smaller than the max level.")
    assert longer.params_from == "fhemark:N=8192,logQP=144+2 levels" and not longer.error and longer.wrong == 0
    assert longer.scheme["N"] == 8192 and longer.scheme["scale_bits"] == 37
    assert len(longer.scheme["q"]) == own.scheme["levels"] + 1 and len(longer.samples_ns) == 2
    # each row a record of the store, in one run: what ran, where its set came from, every sample checked
    recs = {r.library_build["params_from"]: r for r in store.records()}
    assert set(recs) == {own.params_from, given.params_from, longer.params_from}
    assert len({r.run_id for r in recs.values()}) == 1
    mine, short = recs["heir"], recs[given.params_from]
    assert mine.library == "heir->lattigo" and mine.op == "dot_8" and mine.status == "ok" and mine.check_passed
    assert mine.input_state == "cold" and len(mine.samples_ns) == 2 and mine.median_ns and mine.security_bits
    assert mine.params["N"] == own.scheme["N"] and mine.sizes_bytes["relin_keys"] > 0
    assert short.status == "invalid_params" and short.error == given.error and short.samples_ns == []
    assert recs[longer.params_from].params["N"] == 8192 and recs[longer.params_from].params["scale_bits"] == 37


@needs_heir
def test_a_polynomial_beside_choose_at_both_sets(monkeypatch):
    from fhemark.compile import choose
    rows = []
    monkeypatch.setattr(choose, "table", lambda rs: rows.extend(rs) or "")
    spec = {"N": 8192, "q_bits": [50, 40, 40, 40], "p_bits": [48], "scale_bits": 40}
    choose.beside_choose(builtin("poly_2"), "heir", [spec], samples=2, say=lambda line: None)
    assert [r.params_from for r in rows] == ["heir", "fhemark:N=8192,logQP=218"]
    for r in rows:
        assert not r.error and r.wrong == 0 and len(r.samples_ns) == 2 and r.precision_bits >= 20, r.error
