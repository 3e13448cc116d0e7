"""Three inputs a new user can get wrong with `fhemark choose` (issue 48), each refused in one line
before it costs anything: a --verify-db that is a text file, a program no ring holds (refused as
impossible), and a workload that loops only at a ring larger than the load check's. The first two
must leave the folder as it was; the loop's line must come within the file's build budget."""

from __future__ import annotations

import textwrap
from pathlib import Path

from typer.testing import CliRunner

from fhemark import cli as cli_mod
from fhemark.model import guard, workload_file

SQUARE = """
from fhemark.workload import Uniform, Workload

def compute(c):
    x = c.encrypted("x")
    return c.mul(x, x)

W = Workload("square_b", compute, schemes=("bfv",), inputs={"x": Uniform(0, 10, length=16)})
"""

# BFV depth 80: no ring SEAL builds holds it at 128 bits (N = 32768 allows 881 bits of log QP).
DEEP = """
from fhemark.workload import Uniform, Workload

def compute(c):
    x = c.encrypted("x")
    for _ in range(80):
        x = c.mul(x, x)
    return x

W = Workload("deep_b", compute, schemes=("bfv",), inputs={"x": Uniform(0, 1, length=4)})
"""

# The load check builds BFV at 8192 slots: this file passes it and loops at every larger ring. Depth 4
# puts SEAL's search at N = 16384 from its first set.
LATE = """
from fhemark.workload import Uniform, Workload

def compute(c):
    x = c.encrypted("x")
    while c.slots is not None and c.slots > 8192:
        pass
    for _ in range(4):
        x = c.mul(x, x)
    return x

W = Workload("late_b", compute, schemes=("bfv",), inputs={"x": Uniform(0, 1, length=4)})
"""


def cli(*args):
    result = CliRunner().invoke(cli_mod.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def write(folder: Path, body: str, name: str) -> Path:
    (folder / name).write_text(textwrap.dedent(body))
    return folder / name


def contents(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under `root`, hidden ones included (a store's lock folder): a file's bytes."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in root.rglob("*")}


def one_line(result, *needles: str) -> str:
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    assert all(n in lines[0] for n in needles), lines[0]
    return lines[0]


def test_a_verify_db_that_is_a_text_file_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the measuring store's default, ./fhemark.db, lies here
    monkeypatch.delenv("FHEMARK_DB", raising=False)
    f = write(tmp_path, SQUARE, "square.py")
    (tmp_path / "notes.txt").write_text("my notes, not a store\n")
    before = contents(tmp_path)
    r = cli("choose", f, "--library", "seal", "--verify-db", tmp_path / "notes.txt")
    # the problem (a text file is no store) and the fix, naming the flag that gave the path
    one_line(r, "notes.txt is not an fhemark store", "pass --verify-db with another file")
    assert "searching" not in r.output
    assert contents(tmp_path) == before  # neither ./fhemark.db nor anything else made, notes.txt untouched


def test_a_program_refused_as_impossible_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FHEMARK_DB", raising=False)
    f = write(tmp_path, DEEP, "deep.py")
    before = contents(tmp_path)
    # Every output a choose writes named, and a set given with --at (it is not run either).
    r = cli("choose", f, "--library", "seal", "--verify-db", tmp_path / "search.db", "--out", tmp_path / "snippets",
            "--json", tmp_path / "answer.json", "--at", "{N: 16384, q_bits: [60, 60, 60], p_bits: [60], t_bits: 20}")
    one_line(r, "impossible: deep_b on BFV", "lower the depth")
    # no store (the default ./fhemark.db nor --verify-db's), no report, snippet or worst-input file
    assert contents(tmp_path) == before


def test_a_loop_only_at_a_larger_ring_gets_its_line_within_the_files_budget(tmp_path, monkeypatch):
    # The limits are the module's constants (20 s a build, 45 s in all for a file's builds that run out:
    # under the README's 60 s); the test makes them small to stay fast. The path is choose's own: SEAL's
    # search at N = 16384 and a set given with --at at N = 32768, each built once under guard.
    monkeypatch.setattr(workload_file, "BUILD_TIMEOUT_S", 1)
    monkeypatch.setattr(workload_file, "BUILD_BUDGET_S", 1.5)
    monkeypatch.setattr(workload_file, "_OVERTIME", {})
    limits: list[float] = []
    guarded = guard.run

    def run(fn, path, timeout_s):
        if timeout_s != workload_file.LOAD_TIMEOUT_S:  # a build's limit (the load check's is its own)
            limits.append(timeout_s)
        return guarded(fn, path, timeout_s)

    monkeypatch.setattr(guard, "run", run)
    f = write(tmp_path, LATE, "late.py")
    r = cli("choose", f, "--library", "seal", "--repeats", "1", "--db", tmp_path / "m.db", "--out", tmp_path / "out",
            "--at", "{N: 32768, q_bits: [60, 60, 60, 60], p_bits: [60], t_bits: 20}")
    assert r.exit_code == 1 and "internal error" not in r.output, r.output
    text = " ".join(r.stdout.split())
    # the search's set and the given one: each excluded with the file's line, neither chosen
    assert "not chosen: seal BFV (search): N = 16384" in text and "late.py:6: did not finish within 1 s" in text, text
    assert "seal BFV (pinned)" in text and text.count("workload_error: ") == 2, text
    # every build of the file shares one budget: their limits add up to no more than it
    assert limits and sum(limits) <= workload_file.BUILD_BUDGET_S, limits
