"""`fhemark params`: proposals come from rules of thumb, acceptance only from measurement."""

import subprocess
import sys

import pytest

from fhemark.advise import advisor
from fhemark.advise.advisor import Need, candidates, check_possible
from fhemark.errors import UserError
from fhemark.model.security import estimate


def test_candidates_are_secure_fit_the_slots_and_come_smallest_first():
    for need in (Need("ckks", 5, 20.0, None, 4096), Need("bfv", 3, None, 20, 1), Need("bgv", 2, None, 30, 8192)):
        seen = list(candidates(need))
        assert seen
        for c in seen:
            log_qp = sum(c["q_bits"]) + sum(c["p_bits"])
            assert estimate(c["N"], log_qp, need.table).bits >= 128
            assert (c["N"] // 2 if need.scheme == "ckks" else c["N"]) >= need.slots
            assert all(17 <= b <= 60 for b in c["q_bits"] + c["p_bits"])
        keys = [(c["N"], sum(c["q_bits"])) for c in seen]
        assert keys == sorted(keys)  # smaller rings first, shorter chains first within a ring
        if need.scheme == "ckks":
            assert all(len(c["q_bits"]) == need.depth + 1 and c["scale_bits"] >= need.precision for c in seen)


def test_an_impossible_requirement_is_one_line_naming_what_and_why():
    with pytest.raises(UserError, match=r"impossible: CKKS depth 60 .* allows 881 bits at 128-bit security"):
        check_possible(Need("ckks", 60, 20.0, None, 1))
    proc = subprocess.run([sys.executable, "-m", "fhemark.cli", "params", "--scheme", "ckks", "--depth", "60",
                           "--precision", "20"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "impossible" in proc.stderr and "bootstrapping" in proc.stderr


def test_a_candidate_that_fails_measurement_is_rejected_and_a_larger_one_accepted(driver_pool, monkeypatch):
    """Rules of thumb made too optimistic on purpose: the first chain cannot hold the depth, the
    depth probe says so, and the proposal is the next larger chain that every repetition passes."""
    driver_pool("seal")
    monkeypatch.setattr(advisor, "INT_MUL_EXTRA", -25)  # ~10 bits per multiplication: far too few
    monkeypatch.setattr(advisor, "INT_STEP", 40)
    need = Need("bfv", 2, None, 17, 1)
    (prop,) = advisor.advise(need, ["seal"], repeats=2)
    assert prop.rejected and "depth" in prop.rejected[0]
    assert prop.spec is not None and len(prop.depth) == 2 and min(prop.depth) >= 2
    assert all(m > 0 for m in prop.margin) and len(prop.trajectory) >= 2
    assert {r.op for r in prop.records} == {"mul_relin", "rotate_1"}
    assert all(r.status == "ok" for r in prop.records)


def test_params_exits_0_when_something_is_proposed_and_names_who_could_not(monkeypatch):
    """TenSEAL without a proposal while the others have one: exit 0, and the line says who had none."""
    from typer.testing import CliRunner

    from fhemark.advise.advisor import Proposal
    from fhemark.cli import app
    spec = {"N": 8192, "q_bits": [50, 40, 40], "p_bits": [60], "scale_bits": 40}
    monkeypatch.setattr(advisor, "advise", lambda need, libs, *a, **k: [Proposal("seal", spec), Proposal("tenseal")])
    monkeypatch.setattr("fhemark.cli.advice.available", lambda: ["seal", "tenseal"])
    r = CliRunner().invoke(app, ["params", "--scheme", "ckks", "--depth", "2", "--precision", "20"])
    assert r.exit_code == 0, r.output
    assert "no proposal from tenseal" in r.output
    monkeypatch.setattr(advisor, "advise", lambda need, libs, *a, **k: [Proposal("tenseal")])
    assert CliRunner().invoke(app, ["params", "--scheme", "ckks", "--depth", "2", "--precision", "20"]).exit_code == 1


def test_a_ring_is_tried_with_every_chain_it_holds_before_a_larger_one():
    """A depth-1 BFV computation with a 20-bit t and 4096 values: N = 4096 holds its chain with a
    special prime as large as the chain's largest (SEAL's own 128-bit default there is q 36+36, P 37),
    not with a 60-bit one: that ring is tried first. Where 60 bits fit, P stays 60."""
    first = next(candidates(Need("bfv", 1, None, 20, 4096)))
    assert first["N"] == 4096 and first["p_bits"] == [max(first["q_bits"])]
    assert estimate(4096, sum(first["q_bits"]) + sum(first["p_bits"]), "hestd2018").bits >= 128
    assert next(candidates(Need("ckks", 2, 20.0, None, 1)))["p_bits"] == [60]


def test_only_openfhe_s_own_special_primes_send_a_ring_to_its_other_key_switching():
    """A refusal is attributed in one place: OpenFHE's HYBRID adds 60-bit special primes of its own, so a BFV/BGV
    ring is searched again under BV (no P, so chains up to the ring's bound); any other library's refusal is the
    ring's."""
    need = Need("bgv", 1, None, 20, 4096)
    spec = {"N": 4096, "q_bits": [33, 33], "p_bits": [33], "t_bits": 20}
    got = advisor.key_switching_instead("openfhe", spec, need)
    assert [s["q_bits"] for s in got] == [[33, 33], [43, 43], [53, 53]]  # 106 bits <= the 109 of N = 4096
    assert all(s["p_bits"] == [] and s["key_switching"] == "bv" and s["digit_size"] for s in got)
    assert advisor.key_switching_instead("seal", spec, need) == advisor.key_switching_instead("lattigo", spec, need) == []
    assert advisor.key_switching_instead("openfhe", got[0], need) == []  # switched once, then the ring is left
    ckks = {"N": 8192, "q_bits": [59, 46], "p_bits": [60], "scale_bits": 46}  # BV's noise costs CKKS its precision
    assert advisor.key_switching_instead("openfhe", ckks, Need("ckks", 1, 20.0, None, 2048)) == []
