"""The FHERMA challenge kernels (examples/fherma/) and their expert rows (data/fherma.tsv): each
kernel's cleartext meaning against numpy at chosen points of its published domain, the data file's
rows sourced and runnable, `--at` refusing what it cannot run in one line, and one kernel through
`fhemark choose --at` on SEAL with the pinned set checked like every row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fhemark import cli as cli_mod
from fhemark.advise import expert
from fhemark.model.params import resolve
from fhemark.model.security import bound
from fhemark.model.semantics import Plain
from fhemark.workload import load

FHERMA = Path(__file__).parent.parent / "examples" / "fherma"
CKKS = Plain("ckks", 8192)


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    monkeypatch.setattr("fhemark.model.workload_file._LOADED", {})


def kernel(name: str):
    (w,) = load(FHERMA / f"{name}.py")
    return w


def at_points(w, xs: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's output at inputs xs (the rest of its slots at the range's low end)."""
    spec = w.inputs["x"]
    where = np.zeros(spec.length)
    where[:len(xs)] = (np.asarray(xs) - spec.lo) / (spec.hi - spec.lo)
    vecs = w.at(CKKS, {"x": where}, np.random.default_rng(0))
    return vecs["x"][:len(xs)], w.reference(CKKS, vecs, {})[:len(xs)]


@pytest.mark.parametrize("name, truth, xs, within", [
    # away from 0, where no polynomial can follow the jump
    ("sign", np.sign, [-1.0, -0.5, -0.1, -0.05, 0.05, 0.1, 0.5, 1.0], 0.013),
    ("relu", lambda x: np.maximum(x, 0), [-1.0, -0.5, -0.01, 0.0, 0.01, 0.5, 1.0], 0.021),
    ("logistic", lambda x: 1 / (1 + np.exp(-x)), [-25.0, -10.0, -2.5, 0.0, 2.5, 10.0, 25.0], 0.19),
])
def test_each_polynomial_kernel_follows_its_function_on_the_published_domain(name, truth, xs, within):
    x, y = at_points(kernel(name), xs)
    assert np.allclose(x, xs)
    assert np.max(np.abs(y - truth(x))) <= within


def test_the_logistic_kernel_is_one_half_at_zero_and_the_sign_kernel_odd():
    assert at_points(kernel("logistic"), [0.0])[1][0] == pytest.approx(0.5, abs=1e-9)
    _, y = at_points(kernel("sign"), [-0.3, 0.3])
    assert y[0] == pytest.approx(-y[1])


def test_the_matrix_kernel_is_a_times_b_row_wise():
    w = kernel("matmul")
    vecs = w.draw(CKKS, np.random.default_rng(3))
    d = int(np.sqrt(w.slots))
    a, b = vecs["a"][:d * d].reshape(d, d), vecs["b"][:d * d].reshape(d, d)
    out = w.reference(CKKS, vecs, {})
    assert np.allclose(out[:d * d], (a @ b).reshape(-1), atol=1e-12) and not np.any(out[d * d:])
    assert w.circuit("ckks")[0].levels == 2  # the challenge's depth


def test_the_max_kernel_is_the_largest_integer():
    w = kernel("max_element")
    words = Plain("tfhe_int", 1, 256)
    for seed in range(3):
        vecs = w.draw(words, np.random.default_rng(seed))
        assert int(w.reference(words, vecs, {})[0]) == max(int(v[0]) for v in vecs.values())


def test_every_row_names_its_source_and_runs_at_the_security_it_states():
    rows = expert.rows()
    assert {r.kernel for r in rows} >= {"sign", "relu", "logistic", "matmul", "max_element"}
    for r in rows:
        assert r.source.startswith("https://") and r.read and r.stated
        w = kernel(r.kernel)
        assert w.facts["fherma"] == r.kernel
        spec = r.spec()
        if spec is None:  # the source leaves the moduli unstated: said in the row
            assert "not stated" in r.stated.lower()
            continue
        ps = resolve(spec, r.scheme)
        assert sum(ps.q_bits) + sum(ps.p_bits) <= bound(ps.N, "hestd2018", 128)
        assert len(ps.q_bits) - 1 >= r.levels >= w.circuit(r.scheme)[0].levels  # the kernel fits the challenge's depth


def test_a_malformed_table_row_is_read_as_written():
    text = "kernel\tlibrary\tscheme\tN\tq_bits\tp_bits\tscale_bits\tt_bits\tlevels\tsecurity\tsource\tread\tstated\n" \
           "k\topenfhe\tckks\t8192\t60+40*2\t60\t40\t-\t2\t128\thttps://x\t2026-01-01\tstated\n"
    (r,) = expert.rows(text)
    assert r.spec() == {"N": 8192, "q_bits": [60, 40, 40], "p_bits": [60], "scale_bits": 40}


def cli(*args):
    result = CliRunner().invoke(cli_mod.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


@pytest.mark.parametrize("file, at, says", [
    ("relu.py", "nowhere.yaml", "neither fherma, an inline set nor a file"),
    ("relu.py", "{N: 1000}", "power of two"),
    ("max_element.py", "fherma", "cannot be run here"),
])
def test_at_refuses_what_it_cannot_run_in_one_line_before_any_run(file, at, says):
    r = cli("choose", FHERMA / file, "--at", at, "--explain")
    assert r.exit_code != 0 and says in r.output and "Traceback" not in r.output


def test_choose_checks_the_pinned_set_beside_its_own_and_says_why_it_fails(tmp_path):
    """The search on SEAL at 128 bits, and two pinned sets: a secure one measured and ranked beside
    it, an insecure one (N = 2048) refused with the reason in its row."""
    out = tmp_path / "answer.json"
    secure = "{N: 16384, q_bits: [60, 40, 40, 40, 40], p_bits: [60], scale_bits: 40}"
    small = "{N: 2048, q_bits: [50, 40, 40, 40, 40], p_bits: [50], scale_bits: 40}"
    r = cli("choose", FHERMA / "relu.py", "--library", "seal", "--repeats", "1", "--no-auto", "--at", secure,
            "--at", small, "--db", tmp_path / "c.db", "--json", out, "--out", tmp_path / "snippets")
    assert r.exit_code == 0, r.output
    cands = json.loads(out.read_text())["candidates"]
    searched = [c for c in cands if c["origin"] != "pinned"]  # SEAL: fhemark's polynomial, "seal-fhemark"
    pinned = [c for c in cands if c["origin"] == "pinned"]
    assert searched and searched[0]["verified"] and searched[0]["median_ns"] > 0
    ok = next(c for c in pinned if c["verified"])
    assert ok["median_ns"] > 0 and ok["margin"] >= 0  # every sample checked at the precision asked
    (bad,) = [c for c in json.loads(out.read_text())["excluded"] if c["origin"] == "pinned"]
    assert bad["params"]["N"] == 2048 and bad["median_ns"] is None and not bad["verified"]
    assert bad["reason"].startswith("the set given fails a check") and "below the required 128" in bad["reason"]
    assert "not chosen: seal CKKS (pinned)" in r.output
