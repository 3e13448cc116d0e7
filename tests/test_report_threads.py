"""Thread scaling in the report: from stored records swept over `threads`, a study page (table and
speed-up figure) linked from the report, the table in the Markdown, HTML and CSV, and a mark where
a library ignores the setting. No page when nothing was swept."""

from made_records import record

from fhemark.report import scaling, write

ENV = {"cpu": {"model": "X"}, "threads": 1}


def rec(library, threads, median, parallelism, honoured=True, op="mul_relin", status="ok", **extra):
    """The report tests' minimal record, at one thread count (a thread count is part of the job's key)."""
    r = {"library": library, "scheme": "ckks", "op": op, "status": status, "check_passed": status == "ok",
         "job_key": f"{library}ckks8192{op}{threads}", "params": {"N": 8192, "name": "n8192", "log_qp": 218.0},
         "slots": 4096, "vector_length": None, "median_ns": median, "ci95_ns": [median * 0.9, median * 1.1],
         "insecure": False, "params_match": True, "sizes_bytes": {"plaintext": 65536, "ciphertext": 262144},
         "error": None, "run_id": "r", "threads": threads, "threads_used": threads if honoured else 1,
         "threads_honoured": honoured, "parallelism": parallelism}
    r.update(extra)
    return record(**r)


def swept():
    return [rec("openfhe", 1, 9e6, 1.0), rec("openfhe", 2, 5e6, 1.8),                 # 1.80x faster at 2 threads
            rec("seal", 1, 4e6, 1.0, honoured=False), rec("seal", 2, 4e6, 1.0, honoured=False),  # no threads
            rec("openfhe", 4, 1e6, None, status="wrong_result", median_ns=None)]        # failed: does not count


def test_a_thread_sweep_gets_its_page_its_table_and_speed_ups(tmp_path):
    files = write(swept(), tmp_path, "t", ENV)
    page = (tmp_path / "report.html").read_text()
    assert "href='threads.html'" in page and tmp_path / "threads.html" in files
    rows = {(r[0], r[4]): dict(zip(scaling.table(swept()).columns, r)) for r in scaling.table(swept()).rows}
    assert set(rows) == {("openfhe", "1"), ("openfhe", "2"), ("seal", "1"), ("seal", "2")}  # the failed 4 is left out
    fast, flat = rows["openfhe", "2"], rows["seal", "2"]
    assert fast["speed-up [95% CI]"].startswith("1.80x [1.47, 2.20]") and fast["efficiency"] == "0.90"
    assert fast["parallelism"] == "1.80" and fast["note"] == "" and fast["median [95% CI]"].startswith("5 ms")
    assert flat["speed-up [95% CI]"].startswith("1.00x") and flat["efficiency"] == "0.50"
    assert flat["note"].startswith("1c ignores the setting") and rows["seal", "1"]["note"] == ""
    assert rows["openfhe", "1"]["speed-up [95% CI]"] == "1 (baseline)"
    study = (tmp_path / "threads.html").read_text()
    assert "href='report.html'" in study and "Plotly.newPlot('f0'" in study and "<table class='sortable'>" in study
    assert "1.80x [1.47, 2.20]" in study and "1c ignores the setting" in study
    (fig,) = scaling.figures(swept())
    lines = {t["name"]: t for t in fig["data"]}
    assert lines["openfhe"]["x"] == [1, 2] and lines["openfhe"]["y"] == [1.0, 9 / 5]
    assert lines["seal"]["y"] == [1.0, 1.0] and lines["ideal (y = x)"]["y"] == [1, 2]
    md = (tmp_path / "report.md").read_text()
    assert f"### {scaling.TITLE}" in md and "| openfhe | CKKS | n8192 | mul_relin | 2 |" in md
    csv = (tmp_path / "csv" / "thread-scaling-speed-up-against-the-thread-count.csv").read_text()
    assert "1.80x [1.47, 2.20]" in csv


def test_more_than_asked_and_no_1_thread_record_are_said():
    recs = [rec("lattigo", 1, 8e6, 3.5), rec("lattigo", 2, 4e6, 3.9),           # uses more threads than asked
            rec("tfhe-rs", 2, 6e6, 1.05), rec("tfhe-rs", 4, 5e6, 1.1),          # no 1-thread record; about one core
            rec("openfhe", 2, 6e6, 1.05, threads_used=2)]
    t = scaling.table(recs)
    rows = {(r[0], r[4]): dict(zip(t.columns, r)) for r in t.rows}
    assert rows["lattigo", "1"]["note"].startswith(">t uses more than asked")
    assert rows["lattigo", "2"]["speed-up [95% CI]"].startswith("2.00x")
    assert rows["tfhe-rs", "2"]["speed-up [95% CI]"] == "-" and "no 1-thread record: no speed-up" in rows["tfhe-rs", "2"]["note"]
    assert rows["tfhe-rs", "4"]["note"].startswith("1c runs on about one core")
    assert "no 1-thread record, so no speed-up: openfhe, tfhe-rs" in t.caption
    (fig,) = scaling.figures(recs)
    assert [d["name"] for d in fig["data"]] == ["lattigo", "ideal (y = x)"]
    assert "(no 1-thread record: openfhe, tfhe-rs)" in fig["layout"]["title"]["text"]


def test_no_thread_page_when_every_record_ran_on_one_thread(tmp_path):
    recs = [rec("openfhe", 1, 9e6, 1.0), rec("seal", 1, 4e6, 1.0, honoured=False),
            rec("openfhe", 1, 1e6, 1.0, op="add")]
    assert scaling.table(recs) is None and scaling.figures(recs) == []
    files = write(recs, tmp_path, "t", ENV)
    assert not (tmp_path / "threads.html").exists() and "threads.html" not in (tmp_path / "report.html").read_text()
    assert scaling.TITLE not in (tmp_path / "report.md").read_text() and all(f.name != "threads.html" for f in files)
