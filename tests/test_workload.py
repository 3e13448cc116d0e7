"""The public workload API (fhemark.workload): a user's own file, loaded by path, run on a real
library (SEAL, from PyPI: always here) and checked against its own cleartext replay; requirements
read from the program; bad files get one line with the file and line; `fhemark choose` proves,
measures and ranks. Small rings where a run is needed (N = 2048: insecure, allowed and marked)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from made_records import record
from typer.testing import CliRunner

from fhemark import cli as cli_mod
from fhemark.model.catalog import known
from fhemark.model.workload_file import bench_op
from fhemark.model.requirements import derive
from fhemark.model.semantics import Plain
from fhemark.store.sqlite import Store
from fhemark.workload import load

EXAMPLES = Path(__file__).parent.parent / "examples"
SMALL = "{N: 2048, q_bits: [50, 40], p_bits: [50], t: 12289, scale_bits: 40}"


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    """Each test loads its files afresh (one CLI call is one process: its names must not collide)."""
    monkeypatch.setattr("fhemark.model.workload_file._LOADED", {})


def cli(*args):
    result = CliRunner().invoke(cli_mod.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def write(tmp_path: Path, body: str, name: str = "mine.py") -> Path:
    path = tmp_path / name
    path.write_text("from fhemark.workload import Constant, Uniform, Workload\n" + textwrap.dedent(body))
    return path


SUM_SQUARE = """
def compute(c):
    x = c.encrypted("x")
    s = c.rotate_sum(x, 8)
    return c.rescaled(c.mul(s, s))

W = Workload("sum_square_t", compute, inputs={"x": Uniform(0, 3, length=8)})
"""


def test_a_file_becomes_an_op_with_its_requirements(tmp_path):
    (w,) = load(write(tmp_path, SUM_SQUARE))
    assert not known("sum_square_t") and bench_op(w.ref, "ckks").rotations == (1, 2, 4)
    ckks, bfv = derive(w, "ckks"), derive(w, "bfv")
    assert (ckks.depth, ckks.levels, bfv.depth) == (1, 1, 1)
    assert ckks.rotations == [1, 2, 4] and ckks.slots == 8
    assert ckks.counts == {"rotate": 3, "add": 3, "mul_relin": 1, "rescale": 1}
    assert bfv.largest_value <= (8 * 3) ** 2 and bfv.plain_bits >= 20
    # the replay is the computation: slot 0 holds (sum of the 8 values)^2
    plain = Plain("bfv", 4096, 65537)
    vecs = w.draw(plain, np.random.default_rng(1))
    assert int(w.reference(plain, vecs, {})[0]) == int(vecs["x"][:8].sum()) ** 2


def test_plain_bits_follow_the_largest_intermediate_value(tmp_path):
    (w,) = load(write(tmp_path, """
    def compute(c):
        x = c.encrypted("x")
        return c.mul(c.mul(x, x), x)
    W = Workload("cube_t", compute, inputs={"x": Uniform(0, 1000, length=4)}, schemes=("bfv",))
    """))
    r = derive(w, "bfv")
    assert r.depth == 2 and 10**8 < r.largest_value <= 10**9 and r.plain_bits == (2 * r.largest_value).bit_length() + 1


def test_run_workload_checks_every_output_on_seal(tmp_path):
    f = write(tmp_path, SUM_SQUARE)
    db = tmp_path / "w.db"
    r = cli("run", "--workload", f, "--library", "seal", "--params", SMALL, "--allow-insecure", "--db", db,
            "--report", tmp_path / "rep")
    assert r.exit_code == 0, r.output
    recs = list(Store(db).records())
    assert {x.scheme for x in recs} == {"bfv", "bgv", "ckks"}
    assert all(x.status == "ok" and x.check_passed and x.workload["file"] == str(f.resolve()) for x in recs)


def test_a_suite_lists_workload_files_beside_builtin_ops(tmp_path):
    write(tmp_path, SUM_SQUARE)
    suite = tmp_path / "s.yaml"
    suite.write_text(f"name: s\npolicy: {{min_samples: 2, max_samples: 2}}\ncases:\n  - libraries: [seal]\n"
                     f"    schemes: [bfv]\n    params: [{SMALL}]\n    ops: [add, mine.py]\n")
    db = tmp_path / "s.db"
    r = cli("run", "--suite", suite, "--allow-insecure", "--db", db, "--report", tmp_path / "rep")
    assert r.exit_code == 0, r.output
    assert {x.op for x in Store(db).records()} == {"add", "sum_square_t"}


@pytest.mark.parametrize("body, needles", [
    ("raise RuntimeError('no data here')\n", ["mine.py:2", "RuntimeError", "no data here"]),
    ("def compute(c):\n    return c.frobnicate(c.encrypted('x'))\nW = Workload('bad_t', compute, inputs={})\n",
     ["mine.py:3", "unknown operation", "frobnicate"]),
    ("def compute(c):\n    c.encrypted('x')\nW = Workload('none_t', compute, inputs={})\n", ["mine.py", "returned ()"]),
    ("X = 1\n", ["mine.py", "defines no Workload"]),
    ("def compute(c):\n    while True:\n        pass\nW = Workload('loop_t', compute, inputs={})\n",
     ["mine.py:3", "did not finish"]),
    ("def compute(c):\n    return c.encrypted('x')\nW = Workload('mul_relin', compute, inputs={})\n",
     ["mine.py", "built-in operation"]),
])
def test_a_bad_file_is_one_line_naming_file_and_line(tmp_path, monkeypatch, body, needles):
    monkeypatch.setattr("fhemark.model.workload_file.LOAD_TIMEOUT_S", 1)
    f = write(tmp_path, body)
    db = tmp_path / "kept.db"
    Store(db).close()
    before = db.read_bytes()
    for args in (("choose", f, "--explain"), ("run", "--workload", f, "--db", db)):
        r = cli(*args)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.exit_code == 2 and len(lines) == 1, r.output
        assert all(n in lines[0] for n in needles), lines[0]
        assert "Traceback" not in r.output
    assert db.read_bytes() == before  # nothing stored was touched


def test_explain_reads_the_examples_without_running(tmp_path):
    r = cli("choose", EXAMPLES / "statistics.py", "--explain")
    assert r.exit_code == 0 and "statistics_4096" in r.stdout and "CKKS" in r.stdout


def test_choose_proves_measures_and_ranks_on_seal(tmp_path):
    f = write(tmp_path, SUM_SQUARE)
    out = tmp_path / "answer.json"
    r = cli("choose", f, "--library", "seal", "--scheme", "bfv", "--scheme", "ckks", "--repeats", "2",
            "--db", tmp_path / "c.db", "--json", out, "--out", tmp_path / "snippets")
    assert r.exit_code == 0, r.output
    ans = json.loads(out.read_text())
    assert ans["workload"] == "sum_square_t" and set(ans["requirements"]) == {"bfv", "ckks"}
    assert ans["requirements"]["ckks"]["depth"] == 1 and ans["requirements"]["bfv"]["plain_bits"] >= 20
    cands = ans["candidates"]
    assert {c["scheme"] for c in cands} == {"bfv", "ckks"}
    for c in cands:
        assert c["verified"] and c["levels_available"] >= c["levels_needed"] and c["security_bits"] >= 128
        assert c["median_ns"] > 0 and c["ci95_ns"][0] <= c["median_ns"] <= c["ci95_ns"][1]
        assert c["run_id"] and c["eval_key_bytes"] > 0 and c["client_bytes"] > 0 and c["peak_rss_bytes"] > 0
        assert Path(c["snippet"]).is_file()
    ckks = next(c for c in cands if c["scheme"] == "ckks")
    assert ckks["margin"] >= 0  # every measured sample at the required precision or above
    worst = ckks["worst_input"]  # the worst input found, checked too, and kept beside the snippet
    from fhemark.advise.choose import WORST_MARGIN  # the requirement itself: the margin was the search's
    assert worst["precision_bits"] >= ans["requirements"]["ckks"]["precision_bits"] + WORST_MARGIN
    kept = Path(worst["file"])
    assert json.loads(kept.read_text())["inputs"]["x"] and kept.parent == Path(ckks["snippet"]).parent
    recs = {x.job_key: x for x in Store(tmp_path / "c.db").records()}
    assert all(recs[c["job_key"]].check_passed for c in cands)


def test_choose_for_throughput_measures_k_at_once_and_ranks_by_the_rate(tmp_path):
    f = write(tmp_path, SUM_SQUARE)
    out = tmp_path / "answer.json"
    r = cli("choose", f, "--library", "seal", "--scheme", "bfv", "--scheme", "ckks", "--repeats", "1",
            "--objective", "throughput", "--db", tmp_path / "c.db", "--json", out, "--out", tmp_path / "snippets")
    assert r.exit_code == 0, r.output
    assert "ranked by throughput" in r.stdout
    ans = json.loads(out.read_text())
    assert ans["objective"] == "throughput" and "throughput" in ans["cost_model"]
    rates = [c["throughput_per_s"] for c in ans["candidates"]]
    assert len(rates) == 2 and all(x > 0 for x in rates) and rates == sorted(rates, reverse=True)
    recs = {x.job_key: x for x in Store(tmp_path / "c.db").records()}
    assert all(recs[c["job_key"]].mode == "throughput" and recs[c["job_key"]].check_passed
               for c in ans["candidates"])
    assert cli("choose", f, "--objective", "fast", "--explain").exit_code == 2


def test_choose_says_what_cannot_be_done(tmp_path):
    f = write(tmp_path, """
    def compute(c):
        x = c.encrypted("x")
        for _ in range(40):
            x = c.rescaled(c.mul(x, x))
        return x
    W = Workload("deep_t", compute, inputs={"x": Uniform(-1, 1, length=4)}, schemes=("ckks",))
    """)
    r = cli("choose", f, "--library", "seal")
    assert r.exit_code == 2 and "impossible" in r.stderr and "deep_t" in r.stderr


def test_a_ckks_plaintext_at_the_wrong_level_is_refused_when_built(tmp_path):
    f = write(tmp_path, """
    def compute(c):
        x = c.rescaled(c.mul(c.encrypted("x"), c.encrypted("x")))
        return c.mul_plain(x, c.plaintext("w"))
    W = Workload("late_plain_t", compute, inputs={"x": Uniform(-1, 1), "w": Constant(2)}, schemes=("ckks",))
    """)
    r = cli("choose", f, "--explain")
    assert r.exit_code == 2 and "mine.py:5" in r.stderr and "plaintext_like('w', ct)" in r.stderr, r.output


def test_numbers_in_a_polynomial_are_constants_and_ckks_magnitude_is_read(tmp_path):
    (w,) = load(write(tmp_path, """
    def compute(c):
        return c.horner(c.encrypted("x"), [0.5, 0.25, 0.0, -0.125])
    W = Workload("p3_t", compute, inputs={"x": Uniform(-1, 1, length=16)}, schemes=("ckks",))
    """))
    plain = Plain("ckks", 4096)
    vecs = w.draw(plain, np.random.default_rng(3))
    x = vecs["x"]
    assert np.allclose(w.reference(plain, vecs, {}), 0.5 + 0.25 * x - 0.125 * x**3)
    assert derive(w, "ckks").depth == 3 and derive(w, "ckks").magnitude_bits == 0
    (big,) = load(write(tmp_path, """
    def compute(c):
        return c.rotate_sum(c.rescaled(c.mul_plain(c.encrypted("x"), c.plaintext("w"))), 1024)
    W = Workload("wsum_t", compute, inputs={"x": Uniform(0, 100, length=1024), "w": Uniform(0, 9, length=1024)},
                 schemes=("ckks",))
    """, name="big.py"))
    r = derive(big, "ckks")
    assert 2**17 < r.largest_value < 2**20 and r.magnitude_bits in (18, 19, 20)
    from fhemark.advise.advisor import candidates
    from fhemark.advise.choose import _need, asked
    first = next(candidates(_need(r, asked(20.0, 128, "hestd2018"))))
    assert first["q_bits"][0] - first["scale_bits"] >= r.magnitude_bits + 2  # the last prime holds the sum


def test_a_scalar_after_a_product_decrypts_right_on_every_library(tmp_path):
    """Cross-driver contract beyond fresh operands: Lattigo's scalar multiply dropped the Scale a
    BFV/BGV product leaves (every nonzero slot wrong); every RLWE library built here must agree."""
    from fhemark.drivers.registry import available, manifests
    libs = [lib for lib in available() if {"bfv", "bgv"} & set(manifests()[lib].schemes)]
    f = write(tmp_path, """
    def compute(c):
        x = c.encrypted("x")
        return c.mul_scalar(c.square(x), 4096)
    W = Workload("scalar_after_product_t", compute, inputs={"x": Uniform(0, 15, length=64)}, schemes=("bfv", "bgv"))
    """)
    db, suite = tmp_path / "s.db", tmp_path / "s.yaml"
    # two samples a job: whether the slots decrypt right does not need more (run --workload's default
    # policy measured about 15 each, 18 s)
    suite.write_text(f"name: s\npolicy: {{min_samples: 2, max_samples: 2}}\ncases:\n  - libraries: [{', '.join(libs)}]\n"
                     f"    schemes: [bfv, bgv]\n    params: [c8192]\n    ops: [{Path(f).name}]\n")
    r = cli("run", "--suite", suite, "--db", db, "--report", tmp_path / "rep")
    recs = [x for x in Store(db).records() if x.status != "unsupported"]
    assert recs and all(x.status == "ok" and x.check_passed for x in recs), r.output
    assert {"seal"} <= {x.library for x in recs}


def test_the_search_is_steered_by_what_failures_measured(tmp_path, monkeypatch):
    """A ring the library refuses as insecure is left; a CKKS set short of precision by d bits
    moves the scale up by d (its refusal's numbers): the sets in between are not run."""
    from fhemark.advise import choose as chooser
    from fhemark.advise.advisor import Need
    space = [{"N": n, "q_bits": [s + 10, s], "p_bits": [60], "scale_bits": s} for n in (8192, 16384) for s in (30, 34, 38, 42)]
    tried = []

    def fake_verify(w, need, lib, spec, repeats, db, samples=2):
        tried.append((spec["N"], spec["scale_bits"]))
        if spec["N"] == 8192 and spec["scale_bits"] == 30:
            return "wrong_result: precision 13.0 bits, below the required 22 (max error 1e-4)", \
                record(status="wrong_result", refusal={"kind": "precision_short", "got": 13.0, "need": 22.0})
        if spec["N"] == 8192:
            return "insecure_params: the ring is too small for this library", record(status="insecure_params")
        return "", record(status="ok", precision_bits=23.0)
    monkeypatch.setattr(chooser, "verify", fake_verify)
    monkeypatch.setattr(chooser, "hardest", lambda *a: ("", None, None))  # the worst input passes: what verify says decides
    c = chooser._search(None, Need("ckks", 1, 20.0), "lib", space, 1, tmp_path / "v.db", lambda *a: None)
    # 30 is 9 bits short: the floor becomes 39, which the space's 4-bit steps skip over, so 39 itself is
    # tried next in the same ring (34 and 38 are not run); refused as insecure, then with its first prime cut
    # (advisor.first_trimmed), refused again, the ring is left (42 there is not run either); at 16384 the
    # first set at or above the floor passes.
    assert tried == [(8192, 30), (8192, 39), (8192, 39), (16384, 42)]
    assert c.verified and c.spec["N"] == 16384 and c.spec["scale_bits"] == 42


def test_choose_interrupted_is_one_line_and_exit_130(tmp_path):
    """Ctrl-C in the search: no traceback, the drivers stopped, what was stored stays."""
    import signal
    import subprocess
    import sys
    import time
    # the statistics example: three schemes to search and measure, far more than 4 s of work
    p = subprocess.Popen([sys.executable, "-m", "fhemark.cli", "choose", str(EXAMPLES / "statistics.py"), "--library",
                          "seal", "--db", str(tmp_path / "c.db"), "--out", str(tmp_path / "s")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    # Interrupt once the search has begun (the requirements are printed just before it), not at a
    # fixed time: on a loaded host the imports alone can take seconds.
    assert p.stdout.readline(), "choose printed nothing before it ended"
    time.sleep(1)
    assert p.poll() is None, "choose ended before the test could interrupt it"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "interrupted" in err and "Traceback" not in err, err


def test_choose_answers_a_depth_one_tally_at_the_smallest_ring(tmp_path):
    """4096 votes times a plaintext mask, t of 20 bits: SEAL runs it at N = 4096 (BFV/BGV hold N values
    per ciphertext), where the search tries a special prime as large as the chain's largest."""
    f = write(tmp_path, """
    def compute(c):
        return c.mul_plain(c.encrypted("votes"), c.plaintext("mask"))
    W = Workload("tally_mask_t", compute, schemes=("bfv",),
                 inputs={"votes": Uniform(0, 1, length=4096), "mask": Uniform(0, 1, length=4096)})
    """)
    out = tmp_path / "a.json"
    r = cli("choose", f, "--library", "seal", "--repeats", "2", "--db", tmp_path / "c.db", "--json", out,
            "--out", tmp_path / "s")
    assert r.exit_code == 0, r.output
    (cand,) = json.loads(out.read_text())["candidates"]
    assert cand["params"]["N"] == 4096 and cand["verified"] and cand["margin"] >= 1, cand


@pytest.mark.parametrize("scheme", ["bgv", "bfv"])
def test_choose_switches_openfhe_to_bv_before_leaving_the_smallest_ring(tmp_path, scheme):
    """The tally with rotations on OpenFHE: at N = 4096 HYBRID's own 60-bit special prime puts log QP past the
    bound, so the search tries the ring's chains under BV (no special primes) before N = 8192, and keeps the
    HYBRID refusal as the smaller set's reason. Measured: BGV passes at q 43+43 with 21-22 bits of noise budget left
    (OpenFHE's BGV cannot make 33-bit primes = 1 mod 2Nt at N = 4096); BFV at q 33+33 is at the threshold, 2 bits
    in the search and 0-2 in the measurement's samples, or at 43+43 (20 bits) where a search draw falls below the
    margin: the ring is 4096 either way, the margin is asserted for BGV only."""
    f = write(tmp_path, f"""
    def compute(c):
        return c.rotate_sum(c.mul_plain(c.encrypted("votes"), c.plaintext("mask")), 1024)
    W = Workload("tally_bv", compute, schemes=("{scheme}",),
                 inputs={{"votes": Uniform(0, 1, length=4096), "mask": Uniform(0, 1, length=4096)}})
    """)
    out = tmp_path / "a.json"
    r = cli("choose", f, "--library", "openfhe", "--repeats", "2", "--db", tmp_path / "c.db", "--json", out,
            "--out", tmp_path / "s")
    assert r.exit_code == 0, r.output
    (cand,) = [c for c in json.loads(out.read_text())["candidates"] if c["verified"] and c["params"]["N"] == 4096]
    assert cand["params"]["key_switching"] == "bv" and cand["params"]["p_bits"] == [], cand
    assert cand["margin"] >= (1 if scheme == "bgv" else 0), cand
    assert any("HYBRID special modulus" in why for why in cand["rejected_smaller"]), cand["rejected_smaller"]
