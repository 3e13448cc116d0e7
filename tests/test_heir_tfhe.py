"""HEIR's TFHE-rs backend as the `heir->tfhe-rs` row (src/fhemark/compile/tfhe_rs.py): the integer
program as HEIR's input needs nothing installed; the end-to-end tests compile, build (reusing the
TFHE-rs driver's compiled tfhe) and check an 8-bit addition where drivers/heir/build.sh installed
heir-py and drivers/tfhe/build.sh built TFHE-rs, and are skipped with the reason elsewhere. The
harness makes keys at the 128-bit set HEIR's own tests use, so each end-to-end test costs a few
seconds of key generation and about a second a sample (the build itself is cached)."""

from __future__ import annotations

import pytest

from fhemark.compile import heir, tfhe_rs
from fhemark.compile.builtins import builtin
from fhemark.compile.mlir import Unsupported
from fhemark.compile.records import Context, as_record
from fhemark.store.sqlite import Store
from fhemark.workload import Uniform, Workload


def test_an_integer_program_is_one_function_over_secret_words():
    text, args = tfhe_rs.emit(builtin("add_i8"))
    assert args == ["x", "y"]
    assert "func.func @kernel(%x: i8 {secret.secret}, %y: i8 {secret.secret}) -> i8" in text
    assert "arith.addi %x, %y : i8" in text and "return %v2 : i8" in text
    assert "arith.muli %x, %y : i16" in tfhe_rs.emit(builtin("mul_i16"))[0]
    assert tfhe_rs.handles(builtin("add_i8")) and not tfhe_rs.handles(builtin("dot_8"))


def test_what_has_no_integer_meaning_or_no_width_is_one_line():
    cmp = Workload("gt8", lambda c: c.compare("gt", c.encrypted("x"), c.encrypted("y")),
                   {"x": Uniform(0, 255), "y": Uniform(0, 255)}, ("tfhe_int",), bits=8)
    with pytest.raises(Unsupported, match="^gt8: int_gt has no integer meaning here for heir->tfhe-rs"):
        tfhe_rs.emit(cmp)
    unsized = Workload("add", lambda c: c.add(c.encrypted("x"), c.encrypted("y")),
                       {"x": Uniform(0, 255), "y": Uniform(0, 255)}, ("tfhe_int",))
    with pytest.raises(Unsupported, match="give the Workload bits=8"):
        tfhe_rs.emit(unsized)


def test_without_heir_the_integer_row_beside_choose_is_one_line(tmp_path, monkeypatch):
    from fhemark.compile.choose import beside_choose
    monkeypatch.setenv("FHEMARK_CACHE", str(tmp_path))
    out = beside_choose(builtin("add_i8"), "heir", [], say=lambda line: None)
    assert out.startswith("heir->tfhe-rs skipped: heir-py") and "\n" not in out


def _here() -> str | None:
    try:
        tfhe_rs.tools()
        tfhe_rs.cargo()
    except heir.Unavailable as exc:
        return str(exc)
    return None


needs_heir_and_tfhe = pytest.mark.skipif(_here() is not None, reason=_here() or "")


def _ctx() -> Context:
    return Context("run-1", "test", {})


@needs_heir_and_tfhe
def test_an_8_bit_addition_beside_choose_every_sample_checked(tmp_path):
    from fhemark.compile.choose import beside_choose
    store = Store(tmp_path / "x.db")
    text = beside_choose(builtin("add_i8"), "heir", [], samples=2, say=lambda line: None, store=store)
    assert "add_i8" in text and "3, 0 wrong" in text  # the warm-up checked too
    (rec,) = store.records()
    assert rec.library == "heir->tfhe-rs" and rec.scheme == "tfhe_int" and rec.op == "add_i8"
    assert rec.status == "ok" and rec.check_passed and len(rec.samples_ns) == 2 and rec.median_ns
    assert rec.params["preset"] == tfhe_rs.PARAMS and rec.params["bits"] == 8
    assert rec.effective_params["message_modulus"] == 8 and rec.effective_params["lwe_dimension"] > 0
    # the library's stated target and the estimate of its LWE problems, as a hand TFHE-rs row's
    assert rec.security["library"]["bits"] == 128 and rec.security_bits >= 128 and not rec.insecure
    # HEIR's gates are 3-input LUTs: a ripple-carry adder, about two bootstraps a bit
    assert rec.library_build["backend"] == "tfhe-rs" and 8 <= rec.library_build["pbs_per_call"] <= 32
    assert any("3 samples decrypted and checked" in n for n in rec.notes)


@needs_heir_and_tfhe
def test_a_wrong_output_makes_the_record_wrong_result(monkeypatch):
    monkeypatch.setattr(tfhe_rs, "_outputs", lambda reply: int(reply["out"][0][0]) ^ 1)  # one bit flipped
    (row,) = tfhe_rs.measure_rows(builtin("add_i8"), samples=1, warmup=0, say=lambda line: None)
    assert row.status == "wrong_result" and row.wrong == row.checked == 1
    rec = as_record(row, builtin("add_i8"), _ctx())
    assert rec.status == "wrong_result" and rec.check_passed is False
    assert rec.error == "1 of 1 samples decrypted to another 8-bit value than the replay's"
