"""A user's computation is an object of its own: found by its file's content in any process (a Dask
worker, `compare --recheck`, a resumed run), an edited file is another computation, and the file
is loaded where it cannot take fhemark down. SEAL at N = 2048 (insecure, allowed and marked)."""

from __future__ import annotations

import json
import sqlite3
import textwrap
import time
from pathlib import Path

import pytest
from test_cli import fhemark, one_line_error
from test_compare import _copied
from typer.testing import CliRunner

from fhemark import cli as cli_mod
from fhemark.errors import UserError
from fhemark.measure import session
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.store.sqlite import Store

SMALL = "{N: 2048, q_bits: [36, 36], p_bits: [37], t: 12289}"
SQUARE = """
from fhemark.workload import Uniform, Workload

def compute(c):
    x = c.encrypted("x")
    return c.mul(x, x)

W = Workload("square_t", compute, schemes=("bfv",), inputs={"x": Uniform(0, LIMIT, length=16)})
"""


def write(folder: Path, body: str, name: str = "square.py", **subs) -> Path:
    text = textwrap.dedent(body)
    for k, v in subs.items():
        text = text.replace(k, str(v))
    (folder / name).write_text(text)
    return folder / name


def run_args(f: Path, db: Path, *extra: str) -> list[str]:
    return ["run", "--workload", str(f), "--library", "seal", "--params", SMALL, "--allow-insecure", "--db", str(db),
            "--report", str(db.parent / "report"), *extra]


def test_a_workload_runs_on_dask_workers_that_never_loaded_it(tmp_path):
    f = write(tmp_path, SQUARE, LIMIT=10)
    db = tmp_path / "w.db"
    r = fhemark(*run_args(f, db, "--cluster", "local:2"), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    (rec,) = Store(db).records()
    assert rec.status == "ok" and rec.check_passed and rec.op == "square_t"
    assert rec.workload["file"] == str(f.resolve()) and len(rec.workload["file_sha256"]) == 16
    assert rec.env["worker_pid"]  # measured by a worker process, which found the computation by its file


def test_recheck_plans_a_workload_run_again_from_its_file_and_refuses_an_edited_one(tmp_path):
    f = write(tmp_path, SQUARE, LIMIT=10)
    db = tmp_path / "w.db"
    assert fhemark(*run_args(f, db), cwd=tmp_path).returncode == 0
    _copied(db, tmp_path / "fast.db", 0.25)  # a baseline that read four times as fast
    args = ["compare", "latest", "latest", "--base-db", str(tmp_path / "fast.db"), "--db", str(db), "--recheck",
            "--threshold", "0.3"]
    r = fhemark(*args, cwd=tmp_path)
    assert "Traceback" not in r.stderr and "recheck: measuring 1 flagged case(s)" in r.stdout, r.stdout + r.stderr
    assert r.returncode in (0, 1) and "recheck (run " in r.stdout  # measured again (its verdict is the host's)
    write(tmp_path, SQUARE, LIMIT=11)
    one_line_error(fhemark(*args, cwd=tmp_path), str(f.resolve()), "changed since", "restore the file")


def test_an_edited_workload_is_another_case_for_resume_and_compare(tmp_path):
    f = write(tmp_path, SQUARE, LIMIT=10)
    db = tmp_path / "w.db"
    assert fhemark(*run_args(f, db), cwd=tmp_path).returncode == 0
    first = {r.job_key for r in Store(db).records()}
    write(tmp_path, SQUARE, LIMIT=11)
    one_line_error(fhemark(*run_args(f, db, "--resume"), cwd=tmp_path), "workload file", "changed since run",
                   "without --resume")
    assert fhemark(*run_args(f, db), cwd=tmp_path).returncode == 0
    assert {r.job_key for r in Store(db).records()} - first  # the edited file's case has a key of its own
    one_line_error(fhemark("compare", "previous", "latest", "--db", str(db), cwd=tmp_path),
                   "different versions of the same computation", str(f.resolve()))


# -- loading under guard ------------------------------------------------------------------------

def cli(*args):
    result = CliRunner().invoke(cli_mod.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


LOOP_CATCHING = """
while True:
    try:
        x = 1
    except Exception:
        pass
"""
LOOP_BARE = """
while True:
    try:
        x = 1
    except:  # noqa: E722
        pass
"""


@pytest.mark.parametrize("body, needles", [
    (LOOP_CATCHING, ["bad.py:", "did not finish within 1 s"]),
    (LOOP_BARE, ["bad.py", "did not finish within 1 s"]),
    ("import sys\nsys.exit(0)\n", ["bad.py:2", "sys.exit(0)"]),
    ("import os\nos._exit(0)\n", ["bad.py", "ended without an answer"]),
    ("raise KeyboardInterrupt\n", ["bad.py:1", "KeyboardInterrupt"]),
    ("raise SystemExit('bye')\n", ["bad.py:1", "sys.exit('bye')"]),
])
def test_a_file_that_exits_or_loops_is_one_line_within_the_limit(tmp_path, monkeypatch, body, needles):
    monkeypatch.setattr("fhemark.model.workload_file.LOAD_TIMEOUT_S", 1)
    f = tmp_path / "bad.py"
    f.write_text(body)
    for args in (("choose", f, "--explain"), ("run", "--workload", f, "--db", tmp_path / "d.db")):
        started = time.monotonic()
        r = cli(*args)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.exit_code == 2 and len(lines) == 1, r.output
        assert all(n in lines[0] for n in needles), lines[0]
        assert time.monotonic() - started < 10
    assert not (tmp_path / "d.db").exists()


@pytest.mark.parametrize("name", ["folder", "x.py"])
def test_a_folder_given_as_the_file_is_said_to_be_a_folder(tmp_path, name):
    (tmp_path / name).mkdir()
    for args in (("choose", tmp_path / name, "--explain"), ("run", "--workload", tmp_path / name)):
        r = cli(*args)
        assert r.exit_code == 2 and "is a folder, not a file" in r.stderr, r.output


def test_an_empty_params_flag_is_one_line(tmp_path):
    f = write(tmp_path, SQUARE, LIMIT=10)
    r = cli("run", "--workload", f, "--params", "", "--db", tmp_path / "d.db")
    assert r.exit_code == 2 and "--params ''" in r.stderr and "internal error" not in r.stderr, r.output


AT_2048 = """
from fhemark.workload import Uniform, Workload

def compute(c):
    x = c.encrypted("x")
    if c.slots == 2048:  # the load's rings are larger: only the run's set meets this
        FAULT
    return c.mul(x, x)

W = Workload("late_t", compute, schemes=("bfv",), inputs={"x": Uniform(0, 10, length=16)})
"""


@pytest.mark.parametrize("fault, needles", [
    ("raise ValueError('too small a ring')", ["ValueError", "too small a ring", "late.py:7"]),
    ("while True: pass", ["did not finish within 1 s", "late.py"]),
])
def test_a_fault_at_the_runs_ring_only_fails_that_job_with_its_reason(tmp_path, monkeypatch, fault, needles):
    monkeypatch.setattr("fhemark.model.workload_file.BUILD_TIMEOUT_S", 1)
    f = write(tmp_path, AT_2048, name="late.py", FAULT=fault)
    db = tmp_path / "w.db"
    r = cli(*run_args(f, db))
    assert r.exit_code == 1 and "internal error" not in r.output, r.output
    (rec,) = Store(db).records()
    assert rec.status == "workload_error" and all(n in rec.error for n in needles), rec.error
    assert "failed:" in r.stderr and "workload_error" in r.stderr


# -- cheap checks first ---------------------------------------------------------------------------

def test_choose_refuses_bad_output_paths_and_stores_before_the_search(tmp_path):
    f = write(tmp_path, SQUARE, LIMIT=10)
    (tmp_path / "a_file").write_text("x")
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE t (x)")
    for extra, needle in ((["--out", tmp_path / "a_file"], "is a file, not a folder"),
                          (["--db", foreign], "foreign.db"),
                          (["--verify-db", tmp_path], "is a directory"),
                          (["--json", tmp_path / "nowhere" / "a.json"], "does not exist")):
        started = time.monotonic()
        r = cli("choose", f, "--library", "seal", "--db", tmp_path / "c.db", *extra)
        assert r.exit_code == 2 and needle in r.stderr, (extra, r.output)
        assert "searching" not in r.output and time.monotonic() - started < 10
    assert not (tmp_path / "c.db").exists() or not list(Store(tmp_path / "c.db").runs())


def test_a_run_is_locked_through_every_name_of_its_store(tmp_path):
    """Two --resume of one run, one through a link to the store: the second is refused."""
    suite = Suite(name="lock", cases=[{"libraries": ["seal"], "schemes": ["bfv"], "params": ["c8192"], "ops": ["add"]}])
    plan = build(suite, ["seal"])
    real = tmp_path / "real.db"
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "link.db"
    first = session.start(Store(real), plan, {}, resume=False, yes=True)
    link.symlink_to(real)
    with pytest.raises(UserError, match="being measured by another fhemark process"):
        session.start(Store(link), plan, {}, resume=True, yes=True)
    session.finish(first)
    again = session.start(Store(link), plan, {}, resume=True, yes=True)  # released: the resume goes on
    assert again.run_id == first.run_id
    session.finish(again)


def test_the_stored_plan_names_the_computation_by_its_file(tmp_path):
    f = write(tmp_path, SQUARE, LIMIT=10)
    db = tmp_path / "w.db"
    assert fhemark(*run_args(f, db), cwd=tmp_path).returncode == 0
    store = Store(db)
    plan = store.run_plan(store.resolve_run("latest"))
    (w,) = plan["suite"]["workloads"]
    assert w["name"] == "square_t" and w["file"] == str(f.resolve()) and w["sha256"]
    assert plan["jobs"][0]["workload"] == w
    json.dumps(plan)
