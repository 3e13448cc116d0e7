"""Two versions of one library side by side (issue 39): `compare` judges them case by case with its
own statistics and gate, the report says what changed and whether to upgrade, and no table, export
or ranking ever puts two versions in one cell."""

import json

import numpy as np
import pytest
from made_records import record
from typer.testing import CliRunner

from fhemark import cli as cli_mod
from fhemark import report
from fhemark.advise.recommend import Workload, recommend
from fhemark.analyse.compare import compare
from fhemark.errors import UserError
from fhemark.report import history, overview
from fhemark.report.tables import op_tables
from fhemark.report.versions import tables as version_tables
from fhemark.store import export
from fhemark.store.sqlite import Store

ENV = {"cpu": {"model": "Test CPU", "logical_cores": 2}, "threads": 1}
OPS = ("mul_relin", "rotate_1", "add", "encrypt", "sub", "mul_plain", "rescale", "decrypt")


def measured(library: str, version: str, run: str, seed: int, scale: float = 1.0, ops=OPS) -> list:
    """One library's cases as a run stores them (insecure toy ring, a tests-only set): per op 2
    processes x 3 rounds x 4 samples around a level of its own, every op `scale` times as long."""
    rng = np.random.default_rng(seed)
    out = []
    for i, op in enumerate(ops):
        center = 1e6 * (1 + i) * scale
        samples = [x for _ in range(6) for x in rng.normal(center * rng.normal(1, 0.01), center * 0.005, 4)]
        out.append(record(library=library, library_version=version, scheme="ckks", op=op, run_id=run,
                          params={"name": "toy", "N": 2048, "log_qp": 100}, insecure=True, env=ENV,
                          job_key=f"{library}-{op}", check_passed=True, samples_ns=samples,
                          median_ns=float(np.median(samples)),
                          ci95_ns=[float(np.quantile(samples, 0.25)), float(np.quantile(samples, 0.75))]))
    return out


def stored(path, *runs: list) -> Store:
    """Each list of records a run of its own in the store at `path`, its records stamped with it."""
    store = Store(path)
    for recs in runs:
        run_id = store.start_run("versions", "h", True, ENV, {})
        for r in recs:
            store.add(run_id, r.job_key, r.model_copy(update={"run_id": run_id}))
        store.finish_run(run_id)
    return store


def judged(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli_mod.app, ["compare", *args], env={"COLUMNS": "250"})
    assert out.exception is None or isinstance(out.exception, SystemExit), repr(out.exception)
    return out.exit_code, out.output


def test_a_version_ten_percent_slower_on_every_op_is_caught(tmp_path):
    """Run A at openfhe 1.5.1, run B at 1.6.1 10% slower, SEAL beside both (the machine's control):
    compare pairs the cases across versions, exits 1 and names the versions and the ops."""
    db = str(tmp_path / "v.db")
    stored(db, measured("openfhe@1.5.1", "1.5.1", "a", 1) + measured("seal", "4.1.2", "a", 2),
           measured("openfhe@1.6.1", "1.6.1", "b", 3, scale=1.1) + measured("seal", "4.1.2", "b", 4))
    status, out = judged("previous", "latest", "--db", db, "--json", str(tmp_path / "v.json"))
    assert status == 1, out
    assert "versions compared: openfhe 1.5.1 (openfhe@1.5.1) -> 1.6.1 (openfhe@1.6.1): 8 cases" in out
    answer = json.loads((tmp_path / "v.json").read_text())
    assert answer["versions"] == ["openfhe 1.5.1 (openfhe@1.5.1) -> 1.6.1 (openfhe@1.6.1): 8 cases"]
    # The upgraded library tells nothing of the machine: SEAL's cases are not read as 10% faster.
    assert not [c for c in answer["cases"] if c["library"] == "seal" and c["verdict"] != "same"], answer["cases"]
    slower = [c for c in answer["cases"] if c["verdict"] == "slower"]
    assert sorted(c["op"] for c in slower) == sorted(OPS), answer["cases"]
    assert all(c["case"].startswith("openfhe 1.5.1 -> 1.6.1 CKKS toy") for c in slower), slower
    assert all(op in out for op in OPS) and "removed" not in out.split("versions compared")[1].split("\n")[0]
    assert {lib["library"]: lib["verdict"] for lib in answer["libraries"]} == {"openfhe@1.6.1": "slower",
                                                                              "seal": "same"}
    # Named explicitly, only the versions are judged (SEAL's cases only give the machine's shift).
    status, out = judged("previous", "latest", "--db", db, "--versions", "openfhe@1.5.1,openfhe@1.6.1")
    assert status == 1 and "seal" not in out.split("versions compared")[0], out


def test_two_versions_in_one_run_and_an_aa_pair(tmp_path):
    """The versions suite measures both in one run: `compare latest --versions OLD,NEW` judges them
    against each other; two versions that run alike (A/A) flag nothing and exit 0."""
    db = str(tmp_path / "one.db")
    stored(db, measured("openfhe@1.5.1", "1.5.1", "r", 5) + measured("openfhe@1.6.1", "1.6.1", "r", 6, scale=1.1))
    status, out = judged("latest", "--db", db, "--versions", "openfhe@1.5.1,openfhe@1.6.1")
    assert status == 1 and "8 cases: 8 slower" in out and "measured in one run" in out, out
    aa = str(tmp_path / "aa.db")
    stored(aa, measured("openfhe@1.5.1", "1.5.1", "r", 7) + measured("openfhe@1.5.2", "1.5.2", "r", 8))
    status, out = judged("latest", "--db", aa, "--versions", "openfhe@1.5.1,openfhe@1.5.2")
    assert status == 0 and "8 cases: 8 same" in out, out
    # A version the run did not measure, or two libraries: one line, what to pass instead.
    for bad, needle in (("openfhe@1.5.1,openfhe@9.9", "no case of openfhe@1.5.1"),
                        ("openfhe@1.5.1,seal", "two versions of one library")):
        status, out = judged("latest", "--db", aa, "--versions", bad)
        assert status == 2 and needle in out and "--versions OLD,NEW" in out and "Traceback" not in out, out


def test_an_upgraded_pin_is_compared_with_itself_and_named():
    """The bare name runs the pinned version: a run before and after the pin moved matches by job
    key, and the comparison says which versions it judged."""
    cmp = compare(measured("openfhe", "1.5.1", "a", 1), measured("openfhe", "1.6.1", "b", 9, scale=1.1), ENV, ENV)
    assert cmp.versions == ["openfhe 1.5.1 (openfhe) -> 1.6.1 (openfhe): 8 cases"]
    assert cmp.count("slower") == 8 and cmp.exit_status == 1
    with pytest.raises(UserError, match="no case of openfhe@2"):
        compare(measured("openfhe", "1.5.1", "a", 1), measured("openfhe", "1.6.1", "b", 9), ENV, ENV,
                versions=("openfhe@2", "openfhe"))


def test_the_report_says_what_changed_between_versions(tmp_path):
    """Three versions in one run: each against the next, faster / slower / same per op and
    parameter set with its interval, and per library what upgrading gains or loses."""
    scale_of = {"mul_relin": 0.8, "rotate_1": 1.25}  # 1.6.1 against 1.5.1; add and encrypt unchanged
    newer = measured("openfhe@1.6.1", "1.6.1", "r", 12)
    newer = [r.model_copy(update={"samples_ns": [x * scale_of.get(r.op, 1.0) for x in r.samples_ns]}) for r in newer]
    recs = measured("openfhe@1.5.1", "1.5.1", "r", 10) + measured("openfhe@1.5.2", "1.5.2", "r", 11) + newer
    summary, first, second = version_tables(recs)
    assert [row[:3] for row in summary.rows] == [["openfhe", "1.5.1 (openfhe@1.5.1)", "1.5.2 (openfhe@1.5.2)"],
                                                 ["openfhe", "1.5.2 (openfhe@1.5.2)", "1.6.1 (openfhe@1.6.1)"]]
    assert summary.rows[0][4:7] == ["0", "0", "8"]
    assert "no case changed beyond the threshold" in summary.rows[0][-1]
    assert summary.rows[1][4:7] == ["1", "1", "6"]
    assert summary.rows[1][-1] == ("faster: CKKS toy: mul_relin. slower: CKKS toy: rotate_1. "
                                   "6 other cases not beyond the threshold")
    verdicts = {row[1]: row[-1] for row in second.rows}
    assert verdicts == {op: {"mul_relin": "faster", "rotate_1": "slower"}.get(op, "same") for op in OPS}
    ratio = {row[1]: row[4] for row in second.rows}["rotate_1"]
    lo, hi = (float(x) for x in ratio.split("[")[1].rstrip("]").split(","))
    assert lo < 1.25 < hi, ratio
    assert second.title == "What changed between versions: openfhe 1.5.2 -> 1.6.1" and "one run" in second.caption
    assert version_tables(measured("openfhe", "1.5.1", "r", 1)) == []  # one version: no section
    md, page = report.write(recs, tmp_path / "rep", "versions", ENV)[:2]
    text = md.read_text()
    assert "### Should I upgrade? What changed between versions" in text and "| rotate_1 |" in text
    assert "What changed between versions: openfhe 1.5.2 -&gt; 1.6.1" in page.read_text()


def merged() -> list:
    """One bare name at two versions: two stores merged, or runs before and after the pin moved."""
    return measured("openfhe", "1.5.1", "a", 1) + measured("openfhe", "1.6.1", "b", 2, scale=2.0)


def test_two_versions_of_one_name_never_share_a_cell(tmp_path):
    recs = merged()
    mul = next(t for t in op_tables(recs) if "`mul_relin`" in t.title)
    rows = {row[0]: row[1] for row in mul.rows}
    assert set(rows) == {"openfhe@1.5.1 / CKKS", "openfhe@1.6.1 / CKKS"}, mul.rows
    # 1 ms at 1.5.1, doubled at 1.6.1: each in its own cell, never one of 1.5 ms
    assert rows["openfhe@1.5.1 / CKKS"].startswith("1 ms") and rows["openfhe@1.6.1 / CKKS"].startswith("2.0")
    (setup,) = overview.setups(recs)
    assert setup.libraries == ["openfhe@1.5.1", "openfhe@1.6.1"]
    mul_cells = {c.library: c.ratio for c in setup.cells if c.rec.op == "mul_relin"}
    assert mul_cells["openfhe@1.5.1"] == 1.0 and mul_cells["openfhe@1.6.1"] == pytest.approx(2.0, rel=0.05)
    # The version section of the same records compares them instead of merging them.
    assert [row[:3] for row in version_tables(recs)[0].rows] == [["openfhe", "1.5.1 (openfhe@1.5.1)",
                                                                  "1.6.1 (openfhe@1.6.1)"]]
    # An explicit version and the bare name are two rows too.
    explicit = measured("openfhe", "1.5.1", "a", 1) + measured("openfhe@1.6.1", "1.6.1", "a", 2)
    mul = next(t for t in op_tables(explicit) if "`mul_relin`" in t.title)
    assert {row[0] for row in mul.rows} == {"openfhe / CKKS", "openfhe@1.6.1 / CKKS"}


def test_export_keeps_each_records_version(tmp_path):
    store = stored(tmp_path / "e.db", merged()[:len(OPS)], merged()[len(OPS):])
    rows = export.records(store)
    assert sorted({(r["library"], r["library_version"]) for r in rows}) == [("openfhe", "1.5.1"), ("openfhe", "1.6.1")]
    assert len(rows) == 2 * len(OPS)  # one row per record: nothing grouped, nothing averaged
    assert "library_version" in export.to_csv(rows).splitlines()[0]


def test_recommend_ranks_each_version_on_its_own_records():
    """A candidate's ops all come from one version: 1.5.1's mul never costs a 1.6.1 candidate."""
    ranking = recommend(merged(), Workload(ops={"mul_relin": 1, "rotate_1": 1}))
    by = {c.library: c for c in ranking}
    assert set(by) == {"openfhe@1.5.1", "openfhe@1.6.1"}
    assert {r.library_version for r in by["openfhe@1.6.1"].evidence} == {"1.6.1"}
    assert by["openfhe@1.6.1"].cost == pytest.approx(2 * by["openfhe@1.5.1"].cost, rel=0.05)


def test_history_keeps_each_name_a_series_and_says_where_the_pin_moved(tmp_path):
    store = stored(tmp_path / "h.db", measured("openfhe", "1.5.1", "a", 1)[:1],
                   measured("openfhe", "1.6.1", "b", 2, scale=2.0)[:1] + measured("openfhe@1.5.1", "1.5.1", "b", 3)[:1])
    series = {s.label: s for s in history.collect([store])}
    assert set(series) == {"openfhe CKKS toy mul_relin", "openfhe@1.5.1 CKKS toy mul_relin"}
    before, after = series["openfhe CKKS toy mul_relin"].points
    assert (before.version, after.version) == ("1.5.1", "1.6.1")
    assert after.verdict == "slower" and after.why.endswith("version 1.5.1 -> 1.6.1"), after.why
