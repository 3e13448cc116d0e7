"""The bad-input and fault corpus (issue 10): a hostile but fair user's inputs, and drivers that fail.

Bad input gets exit status 2 and exactly one line on stderr that names the file or field and the fix,
never a traceback, and leaves the store exactly as it was. A driver fault is recorded with its kind
(exit status 1), the run goes on, and what was measured before it stays in the store.

Most cases run the CLI in-process (fast); a few run `python -m fhemark.cli` to check what a user
really sees. Driver faults use tests/fault_driver.py, registered through FHEMARK_HOME.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fhemark import cli as cli_mod
from fhemark.cli import application as cli_app
from fhemark.cli import run as cli_run
from fhemark.advise.recommend import load_workload
from fhemark.plan.jobs import build, check_size
from fhemark.plan.suites import Suite
from fhemark.report import safe_name
from fhemark.report import write as write_report
from fhemark.store.export import to_csv, to_json
from fhemark.store.record import checked
from fhemark.store.sqlite import APPLICATION_ID, Store

HERE = Path(__file__).parent
FAULT = HERE / "fault_driver.py"
T = 12289  # a batching prime for N = 2048 (small, insecure: tests only)
SET = "{N: 2048, q_bits: [36, 36], p_bits: [37], t: 12289}"


# -- helpers -------------------------------------------------------------------------------------

def cli(*args):
    """The CLI in-process: exit status, stdout and stderr as a user would see them."""
    result = CliRunner().invoke(cli_mod.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def sh(*args, cwd=None, env=None):
    """The CLI as a user runs it: a new Python process."""
    return subprocess.run([sys.executable, "-m", "fhemark.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120, env={**os.environ, "COLUMNS": "200", **(env or {})})


def _code(r) -> int:
    return r.exit_code if hasattr(r, "exit_code") else r.returncode


def one_line(r, *needles, code=2) -> str:
    """Exit status `code`, exactly one non-empty line on stderr holding every needle, no traceback."""
    out, err = r.stdout, r.stderr
    assert "Traceback" not in out + err, out + err
    assert _code(r) == code, (_code(r), out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


def rec(op="add", status="ok", run_id="r", **extra) -> dict:
    r = {"library": "seal", "scheme": "bfv", "op": op, "status": status, "params": {"N": 2048, "name": "p", "log_qp": 109.0},
         "timestamp": 1.0, "run_id": run_id, "suite": "seeded", "job_key": f"k-{op}", "median_ns": 1000.0,
         "ci95_ns": [900.0, 1100.0], "slots": 2048, "vector_length": None, "error": None, "env": {}}
    r.update(extra)
    return r


@pytest.fixture
def db(tmp_path) -> Path:
    """A store holding one run of three results: every refused command must leave it byte for byte."""
    path = tmp_path / "seeded.db"
    store = Store(path)
    run_id = store.start_run("seeded", "h", False, {"threads": 1}, {"jobs": []})
    for op in ("add", "sub", "mul"):
        store.add(run_id, f"k-{op}", checked(rec(op, run_id=run_id)))
    store.close()
    return path


@pytest.fixture
def suite(tmp_path):
    """Write a suite file: `suite(text)` or `suite(text, name=...)`; returns its path."""
    def make(text: str, name: str = "s.yaml") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p
    return make


def case(body: str, policy: str = "", head: str = "") -> str:
    """A one-case suite on the SEAL driver around `body` (YAML flow mapping fields)."""
    return (f"name: bad\n{head}" + (f"policy: {policy}\n" if policy else "")
            + f"cases:\n  - {{libraries: [seal], {body}}}\n")


def refused(db: Path, suite_path, *needles, extra=()):
    """`fhemark run` on a bad suite: one line, status 2, the store untouched."""
    before = digest(db)
    line = one_line(cli("run", "--suite", suite_path, "--db", db, *extra), *needles)
    assert digest(db) == before, "a refused run wrote to the store"
    return line


# -- suite files: YAML and file-level problems ------------------------------------------------------

FILE_CASES = {
    "malformed_yaml": ("name: x\ncases: [\n  - {schemes: [bfv]", ("malformed YAML", "line")),
    "duplicate_top_level_key": ("name: a\nname: b\ncases: []\n", ("duplicate key 'name'", "line 2", "remove")),
    "duplicate_nested_key": ("name: a\npolicy: {warmup: 1, warmup: 2}\ncases: []\n", ("duplicate key 'warmup'",)),
    "empty_file": ("", ("a mapping", "empty")),
    "top_level_list": ("- name: a\n", ("a mapping", "list")),
    "top_level_scalar": ("just words\n", ("a mapping", "str")),
    "integer_top_level_key": ("1: x\nname: a\ncases: []\n", ("key 1", "top level", "quote it")),
    "boolean_nested_key": ("name: a\npolicy: {yes: 1}\ncases: []\n", ("key True", "policy", "quote it")),
    "null_key": ("name: a\n~: 1\ncases: []\n", ("key None", "quote it")),
    "two_documents": ("name: a\n---\nname: b\n", ("malformed YAML", "single document")),
    "python_tag": ("name: !!python/object/apply:os.system ['true']\ncases: []\n", ("malformed YAML", "constructor")),
    "alias_bomb": ("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                   "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                   "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
                   ("aliases are expanded",)),
    "tab_indentation": ("name: a\ncases:\n\t- {schemes: [bfv]}\n", ("malformed YAML",)),
}


@pytest.mark.parametrize("name", FILE_CASES)
def test_suite_file_problems(name, db, suite):
    text, needles = FILE_CASES[name]
    path = suite(text)
    refused(db, path, str(path), *needles)


def test_binary_suite_file(db, tmp_path):
    path = tmp_path / "b.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    refused(db, path, str(path), "not a text file")


def test_suite_with_nul_bytes(db, tmp_path):
    path = tmp_path / "n.yaml"
    path.write_text("name: a\x00\ncases: []\n")
    refused(db, path, str(path), "NUL")


def test_directory_as_suite(db, tmp_path):
    (tmp_path / "d.yaml").mkdir()
    refused(db, tmp_path / "d.yaml", "d.yaml", "is a directory")


def test_missing_suite_file(db, tmp_path):
    refused(db, tmp_path / "nope.yaml", "nope.yaml", "does not exist")


def test_unknown_builtin_suite(db):
    refused(db, "nosuchsuite", "nosuchsuite", "not found", "quick")


# -- suite fields: ranges and cross-field rules ---------------------------------------------------

FIELD_CASES = {
    "unknown_top_level_field": ("name: a\nthread: 2\ncases: [{schemes: [bfv], params: [c8192]}]\n",
                                ("'thread'", "unknown field")),
    "unknown_field_reported_before_others": ("name: a\nthread: 2\ncases: []\n", ("'thread'", "unknown field")),
    "source_field": ("name: a\nsource: x\ncases: [{schemes: [bfv], params: [c8192]}]\n", ("'source'",)),
    "no_cases": ("name: a\n", ("'cases'", "required")),
    "empty_cases": ("name: a\ncases: []\n", ("'cases'", "at least 1")),
    "empty_name": ("name: ''\n" + case(f"schemes: [bfv], params: [{SET}], ops: [add]").split("\n", 1)[1],
                   ("'name'", "at least 1")),
    "name_with_newline": ('name: "a\\nb"\n' + case(f"schemes: [bfv], params: [{SET}], ops: [add]").split("\n", 1)[1],
                          ("'name'", "one line")),
    "name_too_long": (f"name: {'x' * 101}\n" + case(f"schemes: [bfv], params: [{SET}], ops: [add]").split("\n", 1)[1],
                      ("'name'", "at most 100")),
    "threads_zero": (case(f"schemes: [bfv], params: [{SET}], ops: [add]", head="threads: 0\n"), ("'threads'",)),
    "threads_boolean": (case(f"schemes: [bfv], params: [{SET}], ops: [add]", head="threads: true\n"),
                        ("'threads'", "integer")),
    "min_above_max_samples": (case("schemes: [bfv], params: [c8192], ops: [add]", "{min_samples: 50, max_samples: 10}"),
                              ("policy.max_samples", "below min_samples 50")),
    "case_min_above_suite_max": (case("schemes: [bfv], params: [c8192], ops: [add], policy: {min_samples: 300}"),
                                 ("cases[0].policy.max_samples", "below min_samples 300")),
    "target_rel_ci_above_one": (case("schemes: [bfv], params: [c8192], ops: [add]", "{target_rel_ci: 1.5}"),
                                ("policy.target_rel_ci", "less than 1")),
    "target_rel_ci_zero": (case("schemes: [bfv], params: [c8192], ops: [add]", "{target_rel_ci: 0}"),
                           ("policy.target_rel_ci", "greater than 0")),
    "budget_infinite": (case("schemes: [bfv], params: [c8192], ops: [add]", "{budget_s: .inf}"),
                        ("policy.budget_s", "finite")),
    "budget_nan": (case("schemes: [bfv], params: [c8192], ops: [add]", "{budget_s: .nan}"), ("policy.budget_s",)),
    "timeout_negative": (case("schemes: [bfv], params: [c8192], ops: [add]", "{timeout_s: -1}"), ("policy.timeout_s",)),
    "seed_negative": (case("schemes: [bfv], params: [c8192], ops: [add]", "{seed: -1}"), ("policy.seed",)),
    "warmup_fraction": (case("schemes: [bfv], params: [c8192], ops: [add]", "{warmup: 1.5}"),
                        ("policy.warmup", "integer")),
    "processes_too_many": (case("schemes: [bfv], params: [c8192], ops: [add]", "{processes: 100}"),
                           ("policy.processes",)),
    "memory_limit_zero": (case("schemes: [bfv], params: [c8192], ops: [add]", "{memory_limit_mb: 0}"),
                          ("policy.memory_limit_mb",)),
    "unknown_policy_field": (case("schemes: [bfv], params: [c8192], ops: [add]", "{samples: 3}"),
                             ("policy.samples", "unknown field")),
    "unknown_case_policy_field": (case("schemes: [bfv], params: [c8192], ops: [add], policy: {budget: 3}"),
                                  ("cases[0].policy.budget", "unknown field")),
    "negative_security_level": (case("schemes: [bfv], params: [c8192], ops: [add]",
                                     head="security: {min_bits: -5}\n"), ("security.min_bits", "greater than or equal to 80")),
    "absurd_security_level": (case("schemes: [bfv], params: [c8192], ops: [add]",
                                   head="security: {min_bits: 1000}\n"), ("security.min_bits", "256")),
    "unknown_security_table": (case("schemes: [bfv], params: [c8192], ops: [add]",
                                    head="security: {table: nist}\n"), ("security.table", "hestd2018")),
    "libraries_empty": ("name: a\ncases:\n  - {libraries: [], schemes: [bfv], params: [c8192]}\n",
                        ("cases[0].libraries", "at least 1")),
    "libraries_a_number": ("name: a\ncases:\n  - {libraries: 5, schemes: [bfv], params: [c8192]}\n",
                           ("cases[0].libraries",)),
    "ops_empty": (case("schemes: [bfv], params: [c8192], ops: []"), ("cases[0].ops", "at least 1")),
    "params_empty": (case("schemes: [bfv], params: [], ops: [add]"), ("cases[0].params", "at least 1")),
    "schemes_missing": (case("params: [c8192], ops: [add]"), ("cases[0].schemes", "required")),
    "unknown_case_field": (case("schemes: [bfv], params: [c8192], opz: [add]"), ("cases[0].opz", "unknown field")),
    "slots_zero": (case("schemes: [bfv], params: [c8192], ops: [add], slots: [0]"), ("cases[0].slots[0]",)),
    "slots_negative": (case("schemes: [bfv], params: [c8192], ops: [add], slots: [-3]"), ("cases[0].slots[0]",)),
    "slots_empty": (case("schemes: [bfv], params: [c8192], ops: [add], slots: []"), ("cases[0].slots", "at least 1")),
    "slots_not_integer": (case("schemes: [bfv], params: [c8192], ops: [add], slots: [12.5]"), ("cases[0].slots[0]",)),
}


@pytest.mark.parametrize("name", FIELD_CASES)
def test_suite_field_rules(name, db, suite):
    text, needles = FIELD_CASES[name]
    path = suite(text)
    refused(db, path, str(path), *needles)


# -- parameters, schemes, operations, vector lengths: refused while planning ------------------------

PLAN_CASES = {
    "sigma_zero": ("schemes: [bfv], params: [{N: 8192, q_bits: [45, 45, 45], p_bits: [60], t_bits: 20, sigma: 0}]",
                   ("params[0].sigma", "3.2", "remove sigma")),
    "sigma_other": ("schemes: [bfv], params: [{N: 8192, q_bits: [45, 45, 45], p_bits: [60], t_bits: 20, sigma: 5}]",
                    ("params[0].sigma",)),
    "sigma_infinite": ("schemes: [bfv], params: [{N: 8192, q_bits: [45], p_bits: [60], t_bits: 20, sigma: .inf}]",
                       ("params[0].sigma",)),
    "ckks_scale_above_rescale_prime": ("schemes: [ckks], params: [{N: 8192, q_bits: [60, 40, 40], p_bits: [60], "
                                       "scale_bits: 50}]", ("params[0].scale_bits", "40-bit prime", "scale_bits <= 40")),
    "ckks_product_scale_does_not_fit": ("schemes: [ckks], params: [{N: 4096, q_bits: [40], p_bits: [40], "
                                        "scale_bits: 30}]", ("params[0].scale_bits", "2 x 30", "out of bounds")),
    "ckks_scale_above_first_prime": ("schemes: [ckks], params: [{N: 8192, q_bits: [40], p_bits: [60], scale_bits: 40}]",
                                     ("params[0].scale_bits", "first prime")),
    "ckks_scale_missing": ("schemes: [ckks], params: [{N: 8192, q_bits: [60, 40], p_bits: [60]}]",
                           ("params[0].scale_bits", "missing")),
    "n_not_power_of_two": ("schemes: [bfv], params: [{N: 1000, q_bits: [40], p_bits: [40], t_bits: 20}]",
                           ("params[0].N", "power of two")),
    "n_too_large": ("schemes: [bfv], params: [{N: 1048576, q_bits: [40], p_bits: [40], t_bits: 20}]",
                    ("params[0].N", "131072")),
    "prime_too_wide": ("schemes: [bfv], params: [{N: 8192, q_bits: [80], p_bits: [40], t_bits: 20}]",
                       ("params[0].q_bits", "60")),
    "q_bits_not_a_list": ("schemes: [bfv], params: [{N: 8192, q_bits: '60', p_bits: [40], t_bits: 20}]",
                          ("params[0].q_bits", "list")),
    "q_bits_empty": ("schemes: [bfv], params: [{N: 8192, q_bits: [], p_bits: [40], t_bits: 20}]",
                     ("params[0].q_bits", "empty")),
    "t_not_batching": ("schemes: [bfv], params: [{N: 8192, q_bits: [40], p_bits: [40], t: 40961}]",
                       ("params[0].t", "batching")),
    "t_bits_too_small": ("schemes: [bfv], params: [{N: 8192, q_bits: [40], p_bits: [40], t_bits: 5}]",
                         ("params[0].t_bits",)),
    "t_missing": ("schemes: [bfv], params: [{N: 8192, q_bits: [40], p_bits: [40]}]", ("params[0].t", "missing")),
    "unknown_param_field": ("schemes: [bfv], params: [{N: 8192, qbits: [40], p_bits: [40], t_bits: 20}]",
                            ("params[0].qbits", "unknown field")),
    "unknown_preset": ("schemes: [bfv], params: [n9999]", ("params[0]", "unknown parameter preset", "c8192")),
    "insecure_without_flag": (f"schemes: [bfv], params: [{SET}]", ("params[0]", "below the required 128",
                                                                   "--allow-insecure")),
    "unknown_scheme": ("schemes: [rsa], params: [c8192]", ("cases[0].schemes", "rsa")),
    "unknown_library": ("schemes: [bfv], params: [c8192]", ("cases[0].libraries", "nolib")),
    "unknown_operation": ("schemes: [bfv], params: [c8192], ops: [frobnicate]", ("cases[0].ops", "frobnicate",
                                                                                  "list ops")),
    "sized_workload_without_its_size": ("schemes: [ckks], params: [c8192], ops: [dot]",
                                        ("cases[0].ops", "'dot'", "dot_<n>", "dot_16")),
    "sized_workload_with_a_size_it_does_not_take": ("schemes: [ckks], params: [c8192], ops: [poly_x]",
                                                    ("cases[0].ops", "'poly_x'", "poly_<deg>", "poly_7")),
    "operation_not_offered_for_the_scheme": ("schemes: [bfv], params: [c8192], ops: [rescale]",
                                             ("cases[0].ops", "'rescale'", "not offered for bfv", "ckks")),
    "operation_not_applying_to_any_set": ("schemes: [bfv], params: [c8192], ops: [compare_8]",
                                          ("cases[0].ops", "compare_8", "does not apply")),
    "workload_too_large_to_plan": ("schemes: [bfv], params: [c8192], ops: [multiadd_100000x32]",
                                   ("cases[0].ops", "multiadd_100000x32", "4096")),
    "vector_length_above_bfv_slots": ("schemes: [bfv], params: [n4096], ops: [add], slots: [100000]",
                                      ("cases[0].slots", "100000", "4096 slots", "from 1 to 4096")),
    "vector_length_above_ckks_slots": ("schemes: [ckks], params: [n4096], ops: [add], slots: [128, 4096]",
                                       ("cases[0].slots", "4096", "2048 slots")),
    "vector_length_for_a_bit_scheme": ("schemes: [tfhe_int], params: [default], ops: [int_add], slots: [8]",
                                       ("cases[0].slots", "tfhe_int", "one value", "remove slots")),
    "integer_width_unknown": ("schemes: [tfhe_int], params: [{preset: default, bits: 12}], ops: [int_add]",
                              ("params[0].bits", "12")),
    "bit_preset_not_a_name": ("schemes: [tfhe_bool], params: [{preset: 5}], ops: [gate_and]", ("params[0]",)),
}


@pytest.mark.parametrize("name", PLAN_CASES)
def test_planning_refuses(name, db, suite):
    body, needles = PLAN_CASES[name]
    text = case(body if "ops:" in body else body + ", ops: [add]")
    if name == "unknown_library":
        text = text.replace("libraries: [seal]", "libraries: [seal, nolib]")
    if "tfhe" in body:
        text = text.replace("libraries: [seal]", "libraries: all")
    path = suite(text)
    refused(db, path, *needles)


def test_unknown_library_flag(db, suite):
    path = suite(case("schemes: [bfv], params: [c8192], ops: [add]"))
    refused(db, path, "--library nolib", "unknown library", extra=("--library", "nolib"))


def test_a_case_whose_ops_exist_for_some_of_its_schemes_is_planned():
    """rescale is CKKS only: listed in a BFV + CKKS case it is planned for CKKS, not refused."""
    plan = build(Suite(name="m", cases=[{"libraries": ["seal"], "schemes": ["bfv", "ckks"], "params": ["c8192"],
                                         "ops": ["add", "rescale"]}]), ["seal"])
    assert sorted((j.scheme, j.op) for j in plan.jobs) == [("bfv", "add"), ("ckks", "add"), ("ckks", "rescale")]


# -- command-line arguments ---------------------------------------------------------------------

def test_unknown_option(db):
    one_line(cli("run", "--frobnicate", "--db", db), "--frobnicate", "--help")


def test_unknown_command():
    one_line(cli("frobnicate"), "frobnicate", "--help")


def test_option_value_of_the_wrong_type(db):
    one_line(cli("compare", "latest", "--db", db, "--threshold", "abc"), "--threshold", "valid number")


def test_option_value_out_of_range(db):
    one_line(cli("compare", "latest", "--db", db, "--alpha", "2"), "--alpha")


def test_unknown_run_reference(db):
    before = digest(db)
    one_line(cli("export", "--db", db, "--run", "zzz"), "zzz", "fhemark runs")
    assert digest(db) == before


# -- the store --------------------------------------------------------------------------------------

def test_one_byte_file_is_not_turned_into_a_store(tmp_path, suite):
    bad = tmp_path / "x.db"
    bad.write_bytes(b"x")
    path = suite(case("schemes: [bfv], params: [c8192], ops: [add]"))
    one_line(cli("run", "--suite", path, "--db", bad), str(bad), "not an fhemark store", "--db")
    assert bad.read_bytes() == b"x"


@pytest.mark.parametrize("command", [("export",), ("runs",), ("report", "--out", "rep"), ("baseline", "list"),
                                     ("recommend", "--op", "add"), ("compare", "latest")])
def test_read_commands_refuse_a_file_that_is_not_a_store(tmp_path, command):
    bad = tmp_path / "notes.txt.db"
    bad.write_text("my notes, not a database\n" * 10)
    before = digest(bad)
    one_line(cli(*command, "--db", bad), str(bad), "not an fhemark store")
    assert digest(bad) == before


def _foreign(path: Path, app_id: int = 0) -> Path:
    con = sqlite3.connect(path)
    if app_id:
        con.execute(f"PRAGMA application_id = {app_id}")
    con.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
    con.execute("INSERT INTO contacts VALUES ('ada', '123')")
    con.commit()
    con.close()
    return path


def test_another_applications_database_is_refused_before_writing(tmp_path, suite):
    other = _foreign(tmp_path / "app.sqlite", app_id=0x12345678)
    before = digest(other)
    path = suite(case("schemes: [bfv], params: [c8192], ops: [add]"))
    one_line(cli("run", "--suite", path, "--db", other), "another application", "0x12345678")
    one_line(cli("runs", "--db", other), "another application")
    assert digest(other) == before


def test_an_sqlite_database_without_an_id_that_is_not_a_store_is_refused(tmp_path):
    other = _foreign(tmp_path / "contacts.db")
    before = digest(other)
    one_line(cli("export", "--db", other), "not an fhemark store", "contacts")
    one_line(cli("baseline", "save", "v1", "--db", other), "not an fhemark store")
    assert digest(other) == before


def test_a_foreign_database_that_looks_like_an_old_store_is_refused(tmp_path, suite):
    """Another application's `meta` table holding schema_version = 1 (but none of fhemark's tables),
    or an empty database its application marked with a user_version: refused, untouched."""
    lookalike = _foreign(tmp_path / "other.db")
    con = sqlite3.connect(lookalike)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.commit()
    con.close()
    empty_marked = tmp_path / "marked.db"
    con = sqlite3.connect(empty_marked)
    con.execute("PRAGMA user_version = 7")
    con.close()
    path = suite(case("schemes: [bfv], params: [c8192], ops: [add]"))
    for other, says in ((lookalike, "not an fhemark store"), (empty_marked, "user_version 7")):
        before = digest(other)
        one_line(cli("run", "--suite", path, "--db", other), says)
        one_line(cli("runs", "--db", other), says)
        assert digest(other) == before


def test_a_directory_as_store(tmp_path):
    one_line(cli("runs", "--db", tmp_path), "is a directory", "--db")


def test_a_store_in_a_missing_folder(tmp_path, suite):
    path = suite(case("schemes: [bfv], params: [c8192], ops: [add]"))
    one_line(cli("run", "--suite", path, "--db", tmp_path / "no" / "such" / "x.db"), "does not exist", "create it")
    assert not (tmp_path / "no").exists()


def test_an_empty_file_is_not_a_store_to_read(tmp_path):
    empty = tmp_path / "e.db"
    empty.touch()
    one_line(cli("export", "--db", empty), "is empty")
    assert empty.read_bytes() == b""


def test_a_store_from_a_newer_fhemark(db):
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.commit()
    con.close()
    one_line(cli("runs", "--db", db), "schema 99", "fhemark version")


def test_a_damaged_store(db):
    data = bytearray(db.read_bytes())
    data[100:] = b"\xff" * (len(data) - 100)  # the header stays: the pages are garbage
    db.write_bytes(bytes(data))
    one_line(cli("export", "--db", db), str(db))


def test_read_commands_write_nothing(db, tmp_path):
    before = digest(db)
    for args in (("export",), ("runs",), ("baseline", "list"), ("export", "--format", "csv")):
        assert cli(*args, "--db", db).exit_code == 0
    assert digest(db) == before
    assert int.from_bytes(db.read_bytes()[68:72], "big") == APPLICATION_ID


def test_a_store_from_before_the_application_id_still_opens(tmp_path):
    old = tmp_path / "old.db"
    store = Store(old)
    run_id = store.start_run("old", "h", False, {}, {})
    store.add(run_id, "k", checked(rec(run_id=run_id)))
    store.close()
    data = bytearray(old.read_bytes())
    data[68:72] = b"\0\0\0\0"  # as written before the id existed
    old.write_bytes(bytes(data))
    assert len(json.loads(cli("export", "--db", old).stdout)) == 1  # read-only: left as it was
    assert old.read_bytes()[68:72] == b"\0\0\0\0"
    assert cli("baseline", "save", "v1", "--db", old).exit_code == 0  # written: now marked as a store
    assert int.from_bytes(old.read_bytes()[68:72], "big") == APPLICATION_ID


# -- outputs: paths, names, concurrent writers, strict JSON -------------------------------------------

def test_export_to_a_missing_folder(db, tmp_path):
    one_line(cli("export", "--db", db, "--out", tmp_path / "missing" / "x.json"), "--out", "does not exist")


def test_export_to_a_folder(db, tmp_path):
    one_line(cli("export", "--db", db, "--out", tmp_path), "--out", "is a folder")


def test_compare_json_to_a_missing_folder(db, tmp_path):
    one_line(cli("compare", "latest", "--db", db, "--json", tmp_path / "no" / "c.json"), "--json", "does not exist")


def test_recommend_json_to_a_missing_folder(db, tmp_path):
    one_line(cli("recommend", "--op", "add", "--db", db, "--json", tmp_path / "no" / "r.json"), "--json")


def test_report_folder_blocked_by_a_file(db, tmp_path):
    blocker = tmp_path / "rep"
    blocker.write_text("x")
    one_line(cli("report", "--db", db, "--out", blocker / "sub"), "is a file")


def test_run_checks_its_report_folder_before_measuring(db, tmp_path, suite):
    (tmp_path / "blocker").write_text("x")
    path = suite(case(f"schemes: [bfv], params: [{SET}], ops: [add]"))
    refused(db, path, "report folder", "is a file", extra=("--allow-insecure", "--report", tmp_path / "blocker" / "r"))


def test_names_become_safe_path_components():
    assert safe_name("../../x") == "x"
    assert safe_name("a/b\\c d") == "a-b-c-d"
    assert safe_name("..") == "suite" and safe_name("") == "suite"
    assert len(safe_name("y" * 500)) == 60
    assert "/" not in safe_name("/etc/passwd") and not safe_name(".hidden").startswith(".")


def test_export_is_strict_json():
    recs = [rec(precision_bits=float("inf"), max_abs_error=float("nan"), samples_ns=[1.0, float("-inf")])]

    def refuse(const):
        raise ValueError(f"not JSON: {const}")
    (out,) = json.loads(to_json(recs), parse_constant=refuse)
    assert out["precision_bits"] is None and out["max_abs_error"] is None and out["samples_ns"] == [1.0, None]
    assert "inf" not in to_csv(recs).lower() and "nan" not in to_csv(recs).lower()


def test_concurrent_reports_of_one_suite_leave_whole_files(tmp_path):
    """Two writers of one report folder at once (two runs of a suite): each file is renamed into place
    whole, and no temporary folder is left behind."""
    recs = [checked(rec(op="encode", vector_length=128, slots=128))]
    errors: list[BaseException] = []

    def writer():
        try:
            for _ in range(5):
                write_report(recs, tmp_path / "rep", "t", {"cpu": {"model": "X"}})
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)
    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert (tmp_path / "rep" / "report.md").read_text().startswith("# t")
    assert (tmp_path / "rep" / "report.html").read_text().rstrip().endswith("</html>")
    assert not [p for p in (tmp_path / "rep").iterdir() if p.name.startswith(".")]


# -- workloads (recommend) ------------------------------------------------------------------------

WORKLOAD_CASES = {
    "duplicate_key": ("ops: {add: 1}\nops: {mul: 2}\n", (), ("duplicate key 'ops'",)),
    "unknown_op": ("ops: {frobnicate: 1}\n", (), ("ops", "frobnicate", "list ops")),
    "ops_as_list": ("ops: [add, mul]\n", (), ("ops",)),
    "count_zero": ("ops: {add: 0}\n", (), ("ops.add", "greater than or equal to 1")),
    "negative_security": ("ops: {add: 1}\nmin_security_bits: -5\n", (), ("min_security_bits",)),
    "precision_infinite": ("ops: {add: 1}\nmin_precision_bits: .inf\n", (), ("min_precision_bits",)),
    "unknown_field": ("ops: {add: 1}\nprecison: 20\n", (), ("precison",)),
    "bad_table_flag": ("ops: {add: 1}\n", ("--table", "nist"), ("security_table", "nist")),
    "negative_security_flag": ("ops: {add: 1}\n", ("--min-security", "-5"), ("min_security_bits",)),
}


@pytest.mark.parametrize("name", WORKLOAD_CASES)
def test_workload_refused(name, db, tmp_path):
    text, flags, needles = WORKLOAD_CASES[name]
    w = tmp_path / "w.yaml"
    w.write_text(text)
    before = digest(db)
    one_line(cli("recommend", w, "--db", db, *flags), *needles)
    assert digest(db) == before


def test_binary_workload(db, tmp_path):
    w = tmp_path / "w.yaml"
    w.write_bytes(b"\xff\xfe\x00ops")
    one_line(cli("recommend", w, "--db", db), "w.yaml", "not a text file")


def test_op_flag_with_zero_count(db):
    one_line(cli("recommend", "--op", "add=0", "--db", db), "ops.add")


def test_op_flag_alone_counts_one_and_the_help_shows_the_form(db):
    """`--op mul_relin` without a count is one per evaluation, as the option's placeholder says
    (OP[=COUNT], no longer a bare <list[str]>); an `=` with no count after it is refused."""
    assert load_workload(None, ["mul_relin", "add=3"], {}).ops == {"mul_relin": 1, "add": 3}
    r = CliRunner().invoke(cli_mod.app, ["recommend", "--help"], env={"COLUMNS": "200"})
    (line,) = [x for x in r.output.splitlines() if "--op " in x]
    assert "OP[=COUNT]" in line and "OP alone counting 1" in line
    one_line(cli("recommend", "--op", "mul_relin=", "--db", db), "'mul_relin='", "OP=COUNT", "--op mul_relin=10")


@pytest.mark.parametrize("op, needles", [("dot", ("'dot'", "dot_<n>", "dot_16")),
                                         ("poly_", ("'poly_'", "poly_<deg>", "poly_7")),
                                         ("similarity_8", ("similarity_<records>x<dim>", "similarity_4x8"))])
def test_op_flag_naming_a_sized_workload_without_its_size_is_told_the_form(db, op, needles):
    one_line(cli("recommend", "--op", op, "--db", db), "ops", *needles)


# -- driver manifests ---------------------------------------------------------------------------------

def _home(tmp_path: Path, monkeypatch, manifests: dict[str, str]) -> Path:
    home = tmp_path / "home"
    (home / "suites").mkdir(parents=True)
    for folder, text in manifests.items():
        (home / "drivers" / folder).mkdir(parents=True)
        (home / "drivers" / folder / "driver.json").write_text(text)
    monkeypatch.setenv("FHEMARK_HOME", str(home))
    return home


def test_malformed_driver_manifest_is_named(tmp_path, monkeypatch):
    _home(tmp_path, monkeypatch, {"broken": '{"library": "broken", "command": ['})
    one_line(cli("list", "libraries"), "drivers/broken/driver.json", "not valid JSON", "fix the file")


def test_driver_manifest_without_a_command(tmp_path, monkeypatch):
    _home(tmp_path, monkeypatch, {"x": '{"library": "x"}'})
    one_line(cli("list", "ops"), "drivers/x/driver.json", "'command'")


def test_two_drivers_claiming_one_library(tmp_path, monkeypatch):
    m = json.dumps({"library": "same", "command": [sys.executable, "x.py"]})
    _home(tmp_path, monkeypatch, {"a": m, "b": m})
    one_line(cli("list", "libraries"), "'same'", "also declared")


# -- plan size -------------------------------------------------------------------------------------

def test_a_plan_larger_than_expected_asks_for_yes(db, suite):
    slots = ", ".join(str(i) for i in range(1, 701))
    path = suite(case(f"schemes: [bfv], params: [c8192], ops: micro, slots: [{slots}]"))
    refused(db, path, "jobs", "estimated", "--yes")


def test_a_plan_longer_than_expected_asks_for_yes(db, suite):
    path = suite(case("schemes: [bfv], params: [c8192], ops: [add, sub, mul]", "{budget_s: 604800}"))
    refused(db, path, "3 jobs", "days", "--yes")


def test_size_check_uses_earlier_runs_and_yes_lets_it_through():
    plan = build(Suite(name="m", cases=[{"libraries": ["seal"], "schemes": ["bfv"], "params": ["c8192"],
                                         "ops": ["add", "sub"]}]), ["seal"])
    jobs = plan.jobs
    line, large = check_size(jobs, {jobs[0].key: 3.0}, yes=False)
    assert "2 jobs" in line and "earlier runs for 1" in line and not large
    line, large = check_size(jobs, {}, yes=True, max_jobs=1)
    assert large


def test_planning_is_linear_and_removes_duplicates():
    """12,000 candidate jobs (a case repeated three times): a quadratic duplicate scan took minutes here."""
    c = {"libraries": ["seal"], "schemes": ["bfv"], "params": ["c8192"], "ops": ["add", "sub", "mul", "mul_relin"],
         "slots": list(range(1, 1001))}
    plan = build(Suite(name="m", cases=[c, c, c]), ["seal"])
    assert len(plan.jobs) == 4000 == len({j.key for j in plan.jobs})


# -- driver faults: recorded with their kind, the run goes on, nothing measured is lost -------------

FAULT_SUITE = """name: faults
policy: {{warmup: 0, min_samples: 1, max_samples: 1, budget_s: 0.01, min_sample_us: 0, timeout_s: {timeout},
          memory_limit_mb: 400}}
cases:
  - libraries: [fault]
    schemes: [bfv]
    params: [{{N: 2048, q_bits: [36, 36], p_bits: [37], t: 12289}}]
    ops: [{ops}]
"""


@pytest.fixture
def fault_run(tmp_path, monkeypatch):
    """Run a suite of `ops` on the fault driver with `faults`; returns (result, records by op, db)."""
    def go(faults: list[str], ops: str = "add, mul_relin, sub", timeout: float = 20, extra=()):
        manifest = {"library": "fault", "command": ["${PYTHON}", str(FAULT), *faults], "schemes": ["bfv"]}
        _home(tmp_path, monkeypatch, {"fault": json.dumps(manifest)})
        path = tmp_path / "faults.yaml"
        path.write_text(FAULT_SUITE.format(ops=ops, timeout=timeout))
        db = tmp_path / "f.db"
        r = cli("run", "--suite", path, "--db", db, "--allow-insecure", "--report", tmp_path / "rep", *extra)
        assert "Traceback" not in r.stdout + r.stderr
        recs = {x.op: x for x in Store(db, readonly=True).records()} if db.exists() else {}
        return r, recs, db
    return go


FAULTS = {
    "crash": ("mul_relin=crash", "crashed", "crashed (imitation)"),
    "exit_without_answer": ("mul_relin=exit0", "crashed", "status 0"),
    "hang": ("mul_relin=hang", "timeout", "within 1 s"),
    "out_of_memory": ("mul_relin=oom", "out_of_memory", "400 MB"),
    "stray_line_on_stdout": ("mul_relin=stray", "internal", "not protocol v2"),
    "garbage_reply": ("mul_relin=garbage", "internal", "not protocol v2"),
    "reply_to_another_request": ("mul_relin=wrong_id", "internal", "does not match"),
    "half_a_reply_then_exit": ("mul_relin=partial", "internal", "not protocol v2"),
    "wrong_result": ("mul_relin=wrong", "wrong_result", "wrong"),
    "missing_time": ("mul_relin=notime", "internal", "timed region"),
    "negative_time": ("mul_relin=negative", "internal", "impossible time"),
    "zero_time": ("mul_relin=zero", "internal", "impossible time"),
}


@pytest.mark.parametrize("name", FAULTS)
def test_driver_fault_loses_only_its_job(name, fault_run):
    fault, kind, says = FAULTS[name]
    r, recs, _ = fault_run([fault], timeout=1 if name == "hang" else 20)
    assert r.exit_code == 1, r.stdout + r.stderr
    assert recs["add"].status == "ok" and recs["add"].check_passed is True  # measured before: kept
    assert recs["mul_relin"].status == kind and says in recs["mul_relin"].error, recs["mul_relin"].error
    assert recs["sub"].status == "ok"  # after it: the driver was restarted, the run went on
    failed = [line for line in r.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and "mul_relin" in failed[0] and kind in failed[0]


def test_a_depth_probe_that_never_decrypts_is_a_failure(fault_run):
    r, recs, _ = fault_run(["mul_relin=wrong"], ops="add, depth_mul")
    assert r.exit_code == 1
    assert recs["add"].status == "ok"
    assert recs["depth_mul"].status == "wrong_result" and recs["depth_mul"].check_passed is False


def test_a_driver_that_cannot_start(fault_run):
    r, recs, _ = fault_run(["start=crash"])
    assert r.exit_code == 1
    assert {x.status for x in recs.values()} == {"crashed"} and "cannot start" in recs["add"].error


def test_a_driver_speaking_another_protocol_version(fault_run):
    r, recs, _ = fault_run(["caps=v1"])
    assert r.exit_code == 1 and recs and all(x.status == "internal" for x in recs.values())


def test_a_refused_parameter_set_is_not_a_failure(fault_run):
    r, recs, _ = fault_run(["setup=refuse"])
    assert r.exit_code == 0 and {x.status for x in recs.values()} == {"invalid_params"}
    assert any(line.startswith("not run:") for line in r.stderr.splitlines())


# -- the store failing during a run: one line, everything before it kept, resume continues ---------

class _FailingConnection(sqlite3.Connection):
    """Before its second stored result the store turns read-only or full: real SQLite errors."""
    mode = "full"
    results = 0

    def execute(self, sql, *args):
        if sql.startswith("INSERT INTO results"):
            type(self).results += 1
            if type(self).results == 2:
                if self.mode == "full":
                    pages = super().execute("PRAGMA page_count").fetchone()[0]
                    super().execute(f"PRAGMA max_page_count = {pages}")
                else:
                    super().execute("PRAGMA query_only = 1")
        return super().execute(sql, *args)


@pytest.mark.parametrize("mode, says", [("full", "disk is full"), ("readonly", "read-only")])
def test_the_store_failing_mid_run(mode, says, fault_run, monkeypatch):
    real = sqlite3.connect

    def connect(path, *a, **kw):
        return real(path, *a, **kw) if kw.get("uri") else real(path, *a, factory=_FailingConnection, **kw)
    monkeypatch.setattr(_FailingConnection, "mode", mode)
    monkeypatch.setattr(_FailingConnection, "results", 0)
    monkeypatch.setattr(sqlite3, "connect", connect)
    big = "0" * 20000  # a result larger than any free space in the store's pages
    monkeypatch.setattr(cli_run, "environment", lambda threads, root: {"threads": threads, "padding": big})
    r, recs, db = fault_run([], ops="add, sub, mul_relin")
    line = one_line(r, says, "kept" if mode == "full" else "writable", "--resume", "--db", str(db))
    assert list(recs) == ["add"] and recs["add"].status == "ok"  # stored before the failure: kept
    monkeypatch.setattr(sqlite3, "connect", real)
    again = cli(*line.split("continue with: ")[1].split(" ")[1:])  # the suggested command, as given
    assert again.exit_code == 0, again.stdout + again.stderr
    assert "1 of 3 jobs already done" in again.stdout
    assert sorted(x.op for x in Store(db, readonly=True).records()) == ["add", "mul_relin", "sub"]


# -- resume -----------------------------------------------------------------------------------------

def test_resume_with_a_changed_suite_says_so(fault_run, tmp_path):
    r, _, db = fault_run([], ops="add")
    assert r.exit_code == 0
    before = digest(db)
    path = tmp_path / "faults.yaml"
    path.write_text(path.read_text().replace("ops: [add]", "ops: [add, sub]"))
    one_line(cli("run", "--suite", path, "--db", db, "--allow-insecure", "--resume"),
             "--resume", "changed since", "1 job new or changed", "without --resume")
    assert digest(db) == before


def test_resume_after_an_edit_that_changes_no_job(fault_run, tmp_path):
    r, _, db = fault_run([], ops="add")
    path = tmp_path / "faults.yaml"
    path.write_text(path.read_text().replace("name: faults", "name: faults\ndescription: edited"))
    again = cli("run", "--suite", path, "--db", db, "--allow-insecure", "--resume", "--report", tmp_path / "rep")
    assert again.exit_code == 0 and "every job is the same" in again.stdout and "1 of 1 jobs already done" in again.stdout


def test_resume_without_an_earlier_run_says_it_starts_anew(fault_run):
    r, recs, db = fault_run([], ops="add", extra=("--resume",))
    assert r.exit_code == 0 and "nothing to resume" in r.stdout and recs["add"].status == "ok"


def test_the_suggested_resume_command_names_the_store_and_the_flags():
    again = cli_run.RunOptions("my suite.yaml", Path("/tmp/x y.db"), full=True, allow_insecure=True, library=["seal"]).again()
    assert again == "fhemark run --suite 'my suite.yaml' --full --allow-insecure --library seal --db '/tmp/x y.db' --resume"


def test_a_suite_name_that_is_a_path_stays_inside_report(fault_run, tmp_path, monkeypatch):
    manifest = {"library": "fault", "command": ["${PYTHON}", str(FAULT)], "schemes": ["bfv"]}
    _home(tmp_path, monkeypatch, {"fault": json.dumps(manifest)})
    path = tmp_path / "evil.yaml"
    path.write_text(FAULT_SUITE.format(ops="add", timeout=20).replace("name: faults", "name: ../../escaped"))
    work = tmp_path / "work" / "a"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    r = cli("run", "--suite", path, "--db", work / "e.db", "--allow-insecure")  # the report goes beside the store
    assert r.exit_code == 0, r.stdout + r.stderr
    assert (work / "report" / "escaped" / "report.md").exists()
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "work" / "escaped").exists()


# -- what a user sees: a new process, its exit status and its one line --------------------------------

def test_user_sees_one_line_for_a_binary_suite(tmp_path):
    bad = tmp_path / "b.yaml"
    bad.write_bytes(b"\x00\xff\xfe\x01")
    one_line(sh("run", "--suite", bad, "--db", tmp_path / "d.db"), "b.yaml", "not a text file")
    assert not (tmp_path / "d.db").exists()


def test_user_sees_one_line_for_a_file_that_is_not_a_store(tmp_path):
    bad = tmp_path / "x.db"
    bad.write_bytes(b"x")
    one_line(sh("runs", "--db", bad), "not an fhemark store")
    assert bad.read_bytes() == b"x"


def test_user_sees_one_line_for_a_bad_flag(tmp_path):
    one_line(sh("export", "--format", "xml", "--db", tmp_path / "d.db"), "--format", "xml")


def test_user_sees_one_line_for_a_broken_manifest(tmp_path):
    home = tmp_path / "home"
    (home / "drivers" / "x").mkdir(parents=True)
    (home / "drivers" / "x" / "driver.json").write_text("{nope")
    one_line(sh("list", "libraries", env={"FHEMARK_HOME": str(home)}), "driver.json", "not valid JSON")


def test_user_sees_a_fault_recorded_and_the_run_going_on(tmp_path):
    home = tmp_path / "home"
    (home / "drivers" / "fault").mkdir(parents=True)
    (home / "drivers" / "fault" / "driver.json").write_text(
        json.dumps({"library": "fault", "command": ["${PYTHON}", str(FAULT), "mul_relin=stray"]}))
    (tmp_path / "s.yaml").write_text(FAULT_SUITE.format(ops="add, mul_relin, sub", timeout=20))
    r = sh("run", "--suite", tmp_path / "s.yaml", "--db", tmp_path / "d.db", "--allow-insecure", cwd=tmp_path,
           env={"FHEMARK_HOME": str(home)})
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr
    recs = {x["op"]: x["status"] for x in json.loads(sh("export", "--db", tmp_path / "d.db").stdout)}
    assert recs == {"add": "ok", "mul_relin": "internal", "sub": "ok"}  # one stray line loses one job


def test_no_traceback_even_for_a_bug(monkeypatch, db):
    """The last line of defence: an unexpected exception is one line and status 3, not a traceback."""
    def boom(*a, **k):
        raise RuntimeError("imitation bug")
    monkeypatch.setattr(cli_app, "Store", boom)  # `runs` opens its store through application.open_store
    monkeypatch.delenv("FHEMARK_DEBUG", raising=False)
    one_line(cli("runs", "--db", db), "internal error", "imitation bug", "FHEMARK_DEBUG", code=3)


def test_broken_pipe_is_quiet(db, tmp_path):
    shutil.copy(db, tmp_path / "copy.db")
    store = Store(tmp_path / "copy.db")
    big = json.dumps(rec(samples_ns=[1.0] * 100))
    store.db.executemany("INSERT INTO results (run_id, job_key, record, library, scheme, op, n, status, timestamp)"
                         " VALUES ('r', ?, ?, 'seal', 'bfv', 'add', 2048, 'ok', 1.0)",
                         [(f"k{i}", big) for i in range(300)])  # more than a pipe holds: the writer meets it closed
    store.db.commit()
    store.close()
    proc = subprocess.Popen(f"{sys.executable} -m fhemark.cli export --db {tmp_path / 'copy.db'} | head -c 1",
                            shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err


def test_a_fifo_as_suite_does_not_block(db, tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    refused(db, fifo, "pipe.yaml", "not a regular file")


def test_an_earlier_record_holding_infinity_does_not_break_the_estimate(db):
    store = Store(db)
    store.add("r", "k-inf", checked(rec(precision_bits=float("inf"), elapsed_s=2.0)))
    store.add("r", "k-ok", checked(rec(elapsed_s=3.0, setup_s=0.5)))
    assert store.job_seconds() == {"k-ok": 3.5}


@pytest.mark.parametrize("spec, needles", [
    ("{N: 8192, q_bits: [45, 45, 45], p_bits: [60], t_bits: 20, name: 'x[/]'}", ("params[0].name", "without [ ]")),
    ("{N: 8192, preset: 'my preset'}", ("params[0].preset", "letters, digits")),
])
def test_parameter_set_names_that_would_break_the_terminal(db, suite, spec, needles):
    refused(db, suite(case(f"schemes: [bfv], params: [{spec}], ops: [add]")), *needles)


def test_baseline_names_are_one_line(db):
    before = digest(db)
    one_line(cli("baseline", "save", "a\nb", "--db", db), "baseline name", "one line")
    assert digest(db) == before


@pytest.mark.parametrize("spec", ["tcp://", "tcp://host:notaport", "tcp://[::1", "tcp://host:99999"])
def test_a_cluster_address_that_is_not_one_is_one_line(tmp_path, suite, spec):
    path = suite(case("schemes: [bfv], params: [c8192], ops: [add]"))
    one_line(cli("run", "--suite", path, "--db", tmp_path / "c.db", "--no-build", "--cluster", spec),
             spec, "tcp://HOST:PORT")
    assert not (tmp_path / "c.db").exists() or Store(tmp_path / "c.db").runs() == []


def test_a_schema_version_that_is_not_a_number_is_one_line(db):
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value='one' WHERE key='schema_version'")
    con.commit()
    con.close()
    before = digest(db)
    one_line(cli("runs", "--db", db), "schema_version", "not a number")
    assert digest(db) == before


def test_history_into_a_file_is_one_line(db, tmp_path):
    blocker = tmp_path / "out"
    blocker.write_text("a file, not a folder")
    one_line(cli("report", "--history", "--db", db, "--out", blocker), "is a file, not a folder")


@pytest.mark.parametrize("body, says", [
    ("schemes: [ckks], params: [c8192], ops: [poly_16]", "CKKS c8192: needs 16 levels, has 2"),
    ("schemes: [bfv], params: [n4096], ops: [dot_8192]", "BFV n4096: packs 8192 values in one row, holds 2048")])
def test_an_application_too_big_for_the_sets_names_what_it_needs(tmp_path, suite, body, says):
    """Not a generic 'does not apply' pointing at the integer workloads: the levels or the values."""
    one_line(cli("run", "--suite", suite(case(body)), "--db", tmp_path / "a.db", "--no-build"), says,
             "larger parameter set")


def test_a_sweep_far_beyond_any_run_is_refused_before_it_is_built():
    """Counted from the axes first: a 12-million-job sweep used to be built (minutes, gigabytes)
    before the size check refused it."""
    import time

    from fhemark.errors import UserError
    from fhemark.plan.jobs import MAX_PLANNED
    huge = Suite(name="huge", cases=[{"schemes": ["bfv", "bgv"], "params": ["c8192"], "ops": ["add", "sub", "mul"],
                                      "slots": list(range(1, 4097))}] * 10)
    t0 = time.monotonic()
    with pytest.raises(UserError, match="more than the 100,000 a plan is built for"):
        build(huge, ["seal", "openfhe", "lattigo"])
    assert time.monotonic() - t0 < 5 and MAX_PLANNED == 100_000


def test_a_report_of_nothing_names_only_the_flags_given(tmp_path):
    """An empty store: no hint at --run or --suite the user never gave; with --suite: that flag."""
    store = Store(tmp_path / "e.db")
    store.start_run("x", "h", False, {}, {})
    store.close()
    line = one_line(cli("report", "--db", tmp_path / "e.db", "--out", tmp_path / "r"), "holds no results", "fhemark run")
    assert "--run" not in line and "--suite" not in line
    line = one_line(cli("report", "--db", tmp_path / "e.db", "--suite", "quick", "--out", tmp_path / "r"), "--suite")
    assert "--run" not in line
