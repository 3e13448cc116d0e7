"""What a user sees: one clear line and exit status 2 for bad input, never a
traceback; a run that stores, exports, reports and resumes."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SMALL = """
name: small
description: insecure on purpose (N = 2048), tests only
policy: {warmup: 1, min_samples: 6, max_samples: 8, budget_s: 0.1}
cases:
  - libraries: [seal]
    schemes: [bfv, ckks]
    params:
      - {N: 2048, q_bits: [36, 36], p_bits: [37], t: 12289, scale_bits: 30}
    ops: [add, mul_relin]
"""


def fhemark(*args, cwd=None, check=False):
    return subprocess.run([sys.executable, "-m", "fhemark.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env={**os.environ, "COLUMNS": "200"})


def one_line_error(proc, *needles):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def write(tmp_path, text, name="s.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_malformed_yaml(tmp_path):
    one_line_error(fhemark("run", "--suite", write(tmp_path, "name: x\ncases: [\n  - {schemes: [bfv]"),
                           "--db", str(tmp_path / "d.db")), "malformed YAML", "line")


def test_unknown_suite(tmp_path):
    one_line_error(fhemark("run", "--suite", "nosuch", "--db", str(tmp_path / "d.db")), "nosuch", "quick")


@pytest.mark.parametrize("case, needles", [
    ("{libraries: [nolib], schemes: [bfv], params: [n8192], ops: [add]}", ("unknown library 'nolib'", "list libraries")),
    ("{schemes: [tfhe9], params: [n8192], ops: [add]}", ("tfhe9", "bfv")),
    ("{schemes: [bfv], params: [n8192], ops: [frobnicate]}", ("frobnicate", "list ops")),
    ("{schemes: [bfv], params: [{N: 1000, q_bits: [40], p_bits: [40], t_bits: 20}], ops: [add]}", ("N", "power of two")),
    ("{schemes: [bfv], params: [{N: 8192, q_bits: [80], p_bits: [40], t_bits: 20}], ops: [add]}", ("q_bits", "60")),
    ("{schemes: [bfv], params: [{N: 8192, q_bits: [40], p_bits: [40], t: 40961}], ops: [add]}", ("batching",)),
    ("{schemes: [bfv], params: [{N: 2048, q_bits: [36, 36], p_bits: [37], t: 12289}], ops: [add]}",
     ("below the required 128", "--allow-insecure")),
    ("{schemes: [bfv], params: [n8192], ops: [add], policy: {min_samples: 0}}", ("min_samples",)),
    ("{schemes: [bfv], params: [n8192], opz: [add]}", ("opz",)),
])
def test_bad_suites_get_one_line(tmp_path, case, needles):
    one_line_error(fhemark("run", "--suite", write(tmp_path, f"name: bad\ncases:\n  - {case}\n"),
                           "--db", str(tmp_path / "d.db")), *needles)


def test_export_without_store(tmp_path):
    one_line_error(fhemark("export", "--db", str(tmp_path / "none.db")), "does not exist")


def test_run_export_report_resume(tmp_path):
    db = str(tmp_path / "r.db")
    suite = write(tmp_path, SMALL)
    first = fhemark("run", "--suite", suite, "--db", db, "--allow-insecure", "--report", str(tmp_path / "rep"),
                    cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "mul_relin" in first.stdout and "insecure" in first.stdout
    recs = json.loads(fhemark("export", "--db", db, "--format", "json").stdout)
    assert len(recs) == 4
    for r in recs:
        for key in ("library", "library_version", "scheme", "op", "params", "security_bits", "security_table",
                    "slots", "status", "check_passed", "samples_ns", "median_ns", "ci95_ns", "noise_budget_bits",
                    "precision_bits", "sizes_bytes", "peak_rss_bytes", "driver_overhead_ns", "env", "suite",
                    "run_id", "timestamp"):
            assert key in r, key
        assert r["status"] == "ok" and r["check_passed"] is True and r["insecure"] is True
        assert r["params"]["N"] == 2048 and r["params"]["log_qp"] > 100
        assert len(r["samples_ns"]) >= 6 and r["ci95_ns"][0] <= r["median_ns"] <= r["ci95_ns"][1]
        assert r["ci_method"].startswith("order statistics") and r["processes"] == 1 and r["copies"] >= 1
        assert r["deviations"] == {}  # add and mul_relin: SEAL times the canonical work
        assert r["peak_rss_bytes"] > 10**6 and r["driver_overhead_ns"] > 0
        assert (r["noise_budget_bits"] is None) == (r["scheme"] == "ckks")
        assert (r["precision_bits"] is None) == (r["scheme"] != "ckks")
        assert r["env"]["threads"] == 1 and r["env"]["cpu"]["model"]
        assert r["host_activity"]["window_s"] > 0 and r["host_activity"]["other_cores"] >= 0
    csv_text = fhemark("export", "--db", db, "--format", "csv").stdout
    assert csv_text.splitlines()[0].startswith("run_id,suite") and len(csv_text.splitlines()) == 5
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "multiply + relinearize" in md and "seal / BFV" in md
    again = fhemark("run", "--suite", suite, "--db", db, "--allow-insecure", "--resume", cwd=tmp_path)
    assert again.returncode == 0 and "4 of 4 jobs already done" in again.stdout
    assert len(json.loads(fhemark("export", "--db", db).stdout)) == 4


def test_samples_spread_over_fresh_driver_processes(tmp_path):
    """processes: 2 measures every job in two driver processes (new process, new keys), each in two
    interleaved rounds; the interval spans both processes' medians and the export says how it was made."""
    db = str(tmp_path / "p.db")
    suite = write(tmp_path, SMALL.replace("budget_s: 0.1}", "budget_s: 0.1, processes: 2, rounds: 2}")
                  .replace("schemes: [bfv, ckks]", "schemes: [bfv]")
                  .replace("ops: [add, mul_relin]", "ops: [mul_relin, encode, rotate_random]"))
    run = fhemark("run", "--suite", suite, "--db", db, "--allow-insecure", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    recs = json.loads(fhemark("export", "--db", db, "--format", "json").stdout)
    assert {r["op"] for r in recs} == {"mul_relin", "encode", "rotate_random"}
    for r in recs:
        assert r["processes"] == 2 and set(r["sample_process"]) == {0, 1}, r["sample_process"]
        assert set(r["sample_round"]) == {0, 1, 2, 3}  # two interleaved rounds in each process
        assert "2 driver processes" in r["ci_method"] and len(r["process_medians_ns"]) == 2
        assert r["ci95_ns"][0] <= min(r["process_medians_ns"]) and r["ci95_ns"][1] >= max(r["process_medians_ns"])
        # one /proc reading per slice (none at all when every slice was shorter than a 10 ms tick)
        assert r["host_activity"] is None or r["host_activity"]["rounds"] == 4
    rot = next(r for r in recs if r["op"] == "rotate_random")  # the steps drawn, per sample and copy
    assert len(rot["sample_scalars"]) == len(rot["samples_ns"])
    assert all(len(s) == rot["copies"] and all(1 <= c["step"] < 1024 for c in s) for s in rot["sample_scalars"])
    encode = next(r for r in recs if r["op"] == "encode")
    assert "numpy" in encode["deviations"]["encode"]  # seal-python's conversion is inside its call


def test_interrupted_run_keeps_results_and_resumes(tmp_path):
    db = tmp_path / "i.db"
    suite = write(tmp_path, SMALL.replace("ops: [add, mul_relin]", "ops: [add, sub, mul, mul_relin, square, relinearize]"))
    proc = subprocess.Popen([sys.executable, "-m", "fhemark.cli", "run", "--suite", suite, "--db", str(db),
                             "--allow-insecure"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 120
    done = 0
    while time.time() < deadline and done < 2:
        time.sleep(0.2)
        if db.exists():
            try:
                done = sqlite3.connect(db).execute("SELECT COUNT(*) FROM results").fetchone()[0]
            except sqlite3.Error:
                pass
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "--resume" in err and "Traceback" not in err
    kept = sqlite3.connect(db).execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert 2 <= kept < 12
    resumed = fhemark("run", "--suite", suite, "--db", str(db), "--allow-insecure", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{kept} of 12 jobs already done" in resumed.stdout
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM results").fetchone()[0] == 12


def test_ctrl_c_while_the_command_line_loads_is_one_line_and_exit_130():
    """On a loaded host the imports take seconds, and Ctrl-C lands in them: one line, status 130.
    The interrupt is raised inside an import the command line makes, as a keypress would."""
    started = ("import builtins, sys\n"
               "real = builtins.__import__\n"
               "def interrupted(name, *a, **k):\n"
               "    if name == 'numpy': raise KeyboardInterrupt\n"
               "    return real(name, *a, **k)\n"
               "builtins.__import__ = interrupted\n"
               "import fhemark.cli\n")
    r = subprocess.run([sys.executable, "-c", started], capture_output=True, text=True, timeout=120)
    assert r.returncode == 130 and r.stderr == "interrupted while starting: nothing ran\n", r.stderr


def test_list_and_env():
    ops = fhemark("list", "ops")
    assert ops.returncode == 0 and "mul_relin" in ops.stdout and "seal: BFV/BGV/CKKS" in ops.stdout
    libs = fhemark("list", "libraries")
    assert "seal" in libs.stdout
    suites = fhemark("list", "suites")
    assert "quick" in suites.stdout
    env = json.loads(fhemark("env").stdout)
    assert env["threads"] == 1 and "cpu" in env


def test_the_budget_binds_once_six_samples_give_an_interval(tmp_path):
    """min_samples: 40 with a budget of 1 ms: a slow op is not held for 40 samples, but it keeps the
    6 that a 95% order-statistic interval needs."""
    db = str(tmp_path / "b.db")
    suite = write(tmp_path, SMALL.replace("{warmup: 1, min_samples: 6, max_samples: 8, budget_s: 0.1}",
                                          "{warmup: 1, min_samples: 40, max_samples: 60, budget_s: 0.001}")
                  .replace("schemes: [bfv, ckks]", "schemes: [bfv]").replace("ops: [add, mul_relin]", "ops: [mul_relin]"))
    assert fhemark("run", "--suite", suite, "--db", db, "--allow-insecure", cwd=tmp_path).returncode == 0
    (r,) = json.loads(fhemark("export", "--db", db, "--format", "json").stdout)
    assert r["stop_reason"] == "budget" and len(r["samples_ns"]) == 6 and r["ci95_ns"] is not None


@pytest.mark.parametrize("args, needles", [
    (["params", "--scheme", "bfv", "--depth", "2", "--plain-bits", "20", "--library", "sael"], ["--library sael", "unknown"]),
    (["params", "--scheme", "ckks", "--depth", "2", "--precision", "20", "--security", "100"], ["--security 100", "128"]),
    (["params", "--scheme", "bfv", "--depth", "2"], ["--plain-bits"]),
    (["params", "--scheme", "ckks", "--depth", "2"], ["--precision"]),
    (["params", "--scheme", "ckks", "--depth", "2", "--precision", "20", "--slots", "0"], ["--slots 0"]),
])
def test_params_names_the_flag_at_fault(args, needles):
    one_line_error(fhemark(*args), *needles)


def test_version_and_an_empty_store_variable(tmp_path):
    r = fhemark("--version")
    assert r.returncode == 0 and r.stdout.startswith("fhemark ")
    r = subprocess.run([sys.executable, "-m", "fhemark.cli", "runs"], capture_output=True, text=True, cwd=tmp_path,
                       timeout=120, env={**os.environ, "FHEMARK_DB": ""})
    one_line_error(r, "FHEMARK_DB", "empty")


def _command_paths(command, path=()):
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from _command_paths(sub, (*path, name))


def test_help_shows_flags_as_flags_and_values_with_their_placeholder():
    """typer 0.29's rich help printed `<bool>` beside every flag (`--help <bool>`, `--resume
    --no-resume <bool>`), as if it took a value: no command's help does; a value keeps its placeholder."""
    import typer.main
    from typer.testing import CliRunner

    from fhemark.cli import app
    paths = list(_command_paths(typer.main.get_command(app)))
    assert ("run",) in paths and ("baseline", "save") in paths
    for path in paths:
        r = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert r.exit_code == 0 and "--help" in r.output, (path, r.output)
        assert "<bool>" not in r.output, (path, r.output)
    lines = {line.split()[1]: line for line in fhemark("run", "--help").stdout.splitlines()
             if line.startswith("│ --")}
    assert "<bool>" not in "".join(lines.values())
    assert "<path>" in lines["--db"] and "<str>" in lines["--suite"]
    assert "--no-resume" in lines["--resume"]
    assert fhemark("--help").stdout.count("<bool>") == 0


# The packages only `make test` installs (pyproject.toml's test extra): the first command runs without them.
TEST_ONLY = ("pytest", "xdist", "ruff", "selenium", "distributed", "sklearn", "jsonschema", "mkdocs")


def test_a_run_with_its_report_needs_none_of_the_test_packages(tmp_path):
    """`make run` installs fhemark without its test extra (18 s of pip less on a fresh machine): a run that
    stores, prints its table and writes its report imports none of them (each is shadowed by a module
    that refuses to load)."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    for name in TEST_ONLY:
        (shadow / f"{name}.py").write_text(f"raise ImportError('{name} is a test package: make run does not install it')\n")
    (tmp_path / "small.yaml").write_text(SMALL)
    proc = subprocess.run([sys.executable, "-m", "fhemark.cli", "run", "--suite", "small.yaml", "--allow-insecure",
                           "--db", "s.db"], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "COLUMNS": "200", "PYTHONPATH": str(shadow)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert (tmp_path / "report" / "small" / "report.html").is_file() and "add" in proc.stdout
