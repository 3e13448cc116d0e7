"""Reports lay stored records out as the studies did."""

import pytest
from made_records import record

from fhemark.report import write
from fhemark.report.tables import depth_table, expansion_table, op_tables, stage_table


def rec(op="add", library="seal", scheme="bfv", n=4096, status="ok", median=1000.0, slots=None, **extra):
    r = {"library": library, "scheme": scheme, "op": op, "status": status, "job_key": f"{library}{scheme}{n}{op}{slots}",
         "params": {"N": n, "name": f"n{n}", "log_qp": 109.0}, "slots": slots or n, "vector_length": slots, "median_ns": median,
         "ci95_ns": [median * 0.9, median * 1.1] if median else None, "insecure": False, "params_match": True,
         "sizes_bytes": {"plaintext": 32768, "ciphertext": 131072}, "error": None if status == "ok" else "boom"}
    r.update(extra)
    return record(**r)


def test_study2_layout_rows_are_library_scheme_columns_are_params():
    recs = [rec(n=4096), rec(n=8192, median=2000.0), rec(scheme="ckks", n=4096, status="wrong_result", median=None)]
    (table,) = op_tables(recs)
    assert table.columns == ["library / scheme", "n4096", "n8192"]
    rows = {r[0]: r[1:] for r in table.rows}
    assert rows["seal / BFV"][0].startswith("1 µs") and rows["seal / BFV"][1].startswith("2 µs")
    assert rows["seal / CKKS"][0] == "FAILED (wrong_result)" and rows["seal / CKKS"][1] == ""


def test_study3_layout_when_vector_lengths_are_swept():
    recs = [rec(op="encode", slots=s) for s in (128, 2048)]
    (table,) = op_tables(recs)
    assert table.columns == ["library / scheme / params", "128", "2048"]
    exp = expansion_table(recs)
    ratios = {row[2]: (row[6], row[7]) for row in exp.rows}
    assert ratios["128"] == ("32.0", "4.00") and ratios["2048"] == ("2.0", "4.00")


def test_stage_table_and_depth_table():
    stages = [rec(op=f"pipeline_mul/{s}", median=m) for s, m in
              (("encode", 1e3), ("encrypt", 2e3), ("op", 3e3), ("decrypt", 4e3), ("decode", 5e3), ("total", 15e3))]
    t = stage_table(stages)
    assert t.columns[-6:] == ["encode", "encrypt", "op", "decrypt", "decode", "total"]
    assert t.rows[0][1] == "mul" and t.rows[0][-1].startswith("15 µs")
    d = depth_table([rec(op="depth_mul", depth=4, noise_by_depth=[100, 60, 30, 2], depth_limit="at depth 5: x")])
    assert d.rows[0][2] == "4" and d.rows[0][3] == "100, 60, 30, 2"


def test_report_files(tmp_path):
    files = write([rec(), rec(op="mul_relin")], tmp_path, "t", {"cpu": {"model": "X"}, "threads": 1})
    text = (tmp_path / "report.md").read_text()
    assert "add (ciphertext + ciphertext)" in text and "multiply + relinearize" in text
    assert all(f.exists() for f in files) and any(f.suffix == ".csv" for f in files)
    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!doctype html>") and "multiply + relinearize" in page and "<table class='sortable'>" in page
    # One figure per scheme and parameter set, inlined in the page.
    assert [f.name for f in files if f.suffix == ".png"] == ["ops-bfv-n4096.png"] and "<svg" in page


def test_html_marks_failures_and_escapes(tmp_path):
    write([rec(status="wrong_result", median=None), rec(op="mul_relin", library="<lib>")], tmp_path, "a & b",
          {"cpu": {"model": "X"}})
    page = (tmp_path / "report.html").read_text()
    assert "<td class='failed'>FAILED (wrong_result)</td>" in page
    assert "&lt;lib&gt;" in page and "<lib>" not in page and "a &amp; b" in page


def test_deviating_cells_carry_a_mark_and_the_footnote_says_what_differs(tmp_path):
    """A library that times different work (PROTOCOL.md boundaries) is marked in every table,
    Markdown, HTML and CSV, with the same numbered footnote for the same deviation."""
    dec = "also decodes: Decrypt returns a decoded plaintext"
    recs = [rec(op="decrypt"), rec(op="decrypt", library="openfhe", deviations={"decrypt": dec}),
            rec(op="decrypt", library="openfhe", n=8192, deviations={"decrypt": dec})]
    (table,) = op_tables(recs)
    openfhe = next(r for r in table.rows if r[0].startswith("openfhe"))
    seal = next(r for r in table.rows if r[0].startswith("seal"))
    assert all(c.endswith("‡1") for c in openfhe[1:]) and "‡" not in "".join(seal)
    assert table.footnotes == [f"‡1 openfhe decrypt: {dec}"]
    write(recs, tmp_path, "t", {"cpu": {"model": "X"}})
    assert f"‡1 openfhe decrypt: {dec}" in (tmp_path / "report.md").read_text()
    assert f"<li>‡1 openfhe decrypt: {dec}</li>" in (tmp_path / "report.html").read_text()
    notes = (tmp_path / "csv" / "decrypt-decrypt.footnotes.csv").read_text()
    assert "‡1" in notes and dec in notes


def test_a_cell_without_enough_samples_for_an_interval_says_so():
    (table,) = op_tables([rec(ci95_ns=None, samples_ns=[1.0, 2.0, 3.0])])
    assert "n = 3, no CI" in table.rows[0][1]


def test_captions_name_sets_whose_security_differs_between_the_tables():
    both = {"hestd2018": {"bits": 128}, "guidelines2024": {"bits": 125}}
    (table,) = op_tables([rec(n=8192, security=both), rec(library="lattigo", n=8192, security=both)])
    assert "security of n8192: 128 (hestd2018), 125 (guidelines2024) bits" in table.caption
    (same,) = op_tables([rec(security={"hestd2018": {"bits": 128}, "guidelines2024": {"bits": 128}})])
    assert "security of" not in same.caption


def test_terminal_footnotes_print_the_deviation_text_verbatim():
    import io

    from rich.console import Console

    from fhemark.report.text import print_results
    buf = io.StringIO()
    text = "MultipartyKeyGen([sk]) also copies s"
    print_results([rec(op="keygen_public", library="openfhe", deviations={"keygen_public": text})],
                  Console(file=buf, width=200))
    out = buf.getvalue()
    assert "‡1" in out and f"openfhe keygen_public: {text}" in out


def test_time_inside_timed_regions_counts_copies_and_warmups_once_per_pipeline():
    from fhemark.analyse.select import timed_seconds
    recs = [rec(samples_ns=[1e9, 1e9], copies=2, warmup_ns=[1e9]),  # 2 samples x 2 copies + 1 warm-up
            rec(op="pipeline_add/encode", samples_ns=[5e9]), rec(op="pipeline_add/total", samples_ns=[1e9]),
            rec(op="depth_mul", depth=3, samples_ns=[9e9]), rec(status="wrong_result", samples_ns=[])]
    assert timed_seconds(recs) == 6.0


def test_the_report_states_how_its_intervals_were_made(tmp_path):
    write([rec(ci_method="order statistics (distribution-free, binomial coverage >= 95%)", processes=3)], tmp_path, "t",
          {"cpu": {"model": "X"}})
    md = (tmp_path / "report.md").read_text()
    assert "Intervals: order statistics" in md and "3 driver process(es)" in md


def test_the_report_states_where_each_runs_wall_time_went(tmp_path):
    recs = [rec(samples_ns=[2e9, 2e9], copies=1, run_id="r1"), rec(op="sub", samples_ns=[1e9], run_id="r2")]
    runs = [{"run_id": "r1", "started": 100.0, "finished": 140.0}, {"run_id": "r2", "started": 200.0, "finished": None}]
    write(recs, tmp_path, "t", {"cpu": {"model": "X"}}, runs)
    md = (tmp_path / "report.md").read_text()
    assert "run r1: 4.0 s of 40 s inside timed regions (10%)" in md
    assert "run r2" not in md  # unfinished: no wall time to divide by


def test_ratio_table_reads_libraries_in_the_hosts_fast_state():
    """The host slowed SEAL down in most of its samples and Lattigo in few: their medians read 1.1x
    apart, their floors 3x, and the table gives the floors' ratio with its interval."""
    from fhemark.report.tables import ratio_table
    rounds = [r for r in range(6) for _ in range(3)]
    fast = [100.0] * 4 + [280.0] * 14      # SEAL: 4 of 18 samples in the fast state
    slow = [300.0] * 14 + [510.0] * 4      # Lattigo, 3x SEAL's cost: 14 of 18
    table = ratio_table([rec(run_id="r", samples_ns=fast, sample_round=rounds, median=280.0),
                         rec(run_id="r", library="lattigo", samples_ns=slow, sample_round=rounds, median=300.0)])
    (row,) = table.rows
    assert table.columns[2:] == ["lattigo", "seal"]
    assert row[2].startswith("3.00x [") and row[3].startswith("1 (fastest)")
    lo, hi = (float(x) for x in row[2].split("[")[1].split("]")[0].split(", "))
    assert 1 < lo <= 3 <= hi


def test_a_layer_is_shown_as_a_ratio_to_the_library_it_wraps():
    """TenSEAL over SEAL: ratios of floors per op from one run; a library that wraps nothing, or whose
    wrapped library did not run the op, has no row."""
    from fhemark.report.tables import layer_table
    recs = [_paired("seal", 100.0), _paired("tenseal", 150.0, wraps="seal"), _paired("lattigo", 300.0),
            _paired("tenseal", 80.0, op="sub", wraps="seal")]
    table = layer_table(recs)
    (row,) = table.rows
    assert row[0] == "tenseal over seal" and row[2] == "add" and row[-1].startswith("1.5x [")
    lo, hi = (float(x) for x in row[-1].split("[")[1].split("]")[0].split(", "))
    assert 1 < lo < 1.5 < hi
    assert layer_table([_paired("seal", 100.0), _paired("lattigo", 300.0)]) is None


def test_a_layers_routine_is_set_against_the_wrapped_librarys_portable_program():
    """TenSEAL's dot against SEAL's rotate-and-sum: what a user of each would run, labelled as such;
    where the wrapped library has the routine too, routine against routine."""
    from fhemark.report.tables import layer_table
    recs = [_paired("seal", 100.0, op="dot_64"), _paired("tenseal", 90.0, op="dot_64_native", wraps="seal")]
    (row,) = layer_table(recs).rows
    assert row[2] == "dot_64_native / dot_64" and row[-1].startswith("0.9x")
    recs.append(_paired("seal", 45.0, op="dot_64_native"))
    (row,) = layer_table(recs).rows
    assert row[2] == "dot_64_native" and row[-1].startswith("2x")


def _paired(library, median, op="add", scheme="bfv", run_id="r", **extra):
    """A record measured in 6 interleaved rounds on a host that slows one sample in four by 1.7x."""
    rounds = [r for r in range(6) for _ in range(3)]
    return rec(op=op, library=library, scheme=scheme, median=median, run_id=run_id, sample_round=rounds,
               samples_ns=[median * (1 + 0.02 * (i % 3)) * (1.7 if i % 4 == 3 else 1) for i in range(18)], **extra)


def _overview_recs():
    dec = "also decodes: Decrypt returns a decoded plaintext"
    return [_paired("seal", 100.0), _paired("lattigo", 300.0),
            _paired("seal", 200.0, op="decrypt"), _paired("openfhe", 100.0, op="decrypt", deviations={"decrypt": dec}),
            _paired("seal", 50.0, scheme="ckks"), _paired("lattigo", 40.0, scheme="ckks", run_id="r2"),
            rec(scheme="bgv", median=10.0, run_id="r")]  # one library: its times, no ratios


def test_the_overview_ranks_libraries_per_setup_with_intervals_and_deviation_marks():
    from fhemark.report.overview import build
    ov = build(_overview_recs())
    assert [(s.title, s.compared) for s in ov.setups] == [("BFV n4096", True), ("BGV n4096", False), ("CKKS n4096", True)]
    bfv = {(c.op, c.library): c for c in ov.setups[0].cells}
    assert bfv["add", "seal"].fastest and bfv["add", "lattigo"].ratio == pytest.approx(3.0)
    lo, hi = bfv["add", "lattigo"].ci
    assert 2.7 < lo < 3.0 < hi < 3.3 and bfv["add", "lattigo"].how == "floors"
    # OpenFHE's decrypt also decodes (different work): marked, shown at its ratio, never the yardstick.
    assert bfv["decrypt", "seal"].fastest and not bfv["decrypt", "openfhe"].fastest
    assert bfv["decrypt", "openfhe"].ratio == pytest.approx(0.5) and bfv["decrypt", "openfhe"].deviation == " ‡1"
    assert ov.footnotes == ["‡1 openfhe decrypt: also decodes: Decrypt returns a decoded plaintext"]
    # Different runs: floors too (the host's fast state is the same host's), said so.
    seal_ckks = next(c for c in ov.setups[2].cells if c.library == "seal")
    assert seal_ckks.how == "floors, different runs" and seal_ckks.ci[0] < 1.25 < seal_ckks.ci[1]
    rows = {row[0]: dict(zip(ov.glance.columns, row)) for row in ov.glance.rows}
    # decrypt: seal alone does the protocol's work (openfhe's also decodes): no win there, like-for-like only
    assert rows["BFV n4096"]["seal"] == "1.00x · fastest 1/1 like-for-like (1 clearly)"
    assert rows["BFV n4096"]["openfhe"] == ""  # its one shared cell times different work: left out
    assert rows["BFV n4096"]["caveats"] == "‡ 1 cells: different work"
    assert rows["BGV n4096"]["seal"] == "ran alone" and rows["BGV n4096"]["lattigo"] == ""
    assert rows["BFV n4096"]["parameters"] == "N = 4096, log QP = 109: same in every library"


def test_every_setup_gets_an_interactive_figure_that_marks_deviating_cells():
    from fhemark.report.interactive import figure
    from fhemark.report.overview import library_colours as _colours
    from fhemark.report.overview import build
    ov = build(_overview_recs())
    bfv = figure(ov.setups[0], ov, _colours(ov)).to_dict()
    odd = [t for t in bfv["data"] if t["text"] and any(t["text"])]
    assert len(odd) == 1 and odd[0]["name"] == "openfhe" and list(odd[0]["text"]) == ["‡1"]
    # beyond the like-for-like cells' span: drawn at the axis edge, pointing out; its hover keeps the value
    assert list(odd[0]["marker"]["symbol"]) in (["diamond-open"], ["triangle-left"], ["triangle-right"])
    assert "also decodes" in odd[0]["hovertext"][0]
    lo, hi = (10 ** v for v in bfv["layout"]["xaxis"]["range"])
    assert lo <= odd[0]["x"][0] <= hi and "100µx" not in str(bfv["layout"]) and bfv["layout"]["xaxis"]["exponentformat"] == "none"
    assert odd[0]["showlegend"] is True  # openfhe ran nothing else: its only trace carries its legend entry
    assert "decrypt ‡" in bfv["layout"]["yaxis"]["ticktext"] and bfv["layout"]["xaxis"]["type"] == "log"
    lattigo = next(t for t in bfv["data"] if t["name"] == "lattigo")
    assert list(lattigo["x"]) == [3.0] and "run r, job lattigobfv4096addNone" in lattigo["hovertext"][0]
    bgv = figure(ov.setups[1], ov, _colours(ov)).to_dict()  # one library: its median times in ms
    assert list(bgv["data"][0]["x"]) == [10.0 / 1e6] and "only seal ran" in bgv["layout"]["xaxis"]["title"]["text"]


def test_the_overview_comes_before_the_detailed_tables_in_both_reports(tmp_path):
    from fhemark.report.interactive import plotly_js
    write(_overview_recs(), tmp_path, "t", {"cpu": {"model": "X"}})
    page = (tmp_path / "report.html").read_text()
    glance, first_table = page.index("At a glance"), page.index("<h3 id='t0'>")
    assert glance < page.index("id='overview-0'") < page.index("<li>‡1 openfhe decrypt: also decodes") < first_table
    assert [f"id='overview-{i}'" in page for i in range(4)] == [True, True, True, False]
    # plotly.js once, beside the page (it was 4.9 MB inlined in every page): loaded by a relative
    # path, so the report still opens offline and from file://
    assert plotly_js()[:300] not in page and page.count("<script src='plotly.min.js'></script>") == 1
    assert (tmp_path / "plotly.min.js").read_text() == plotly_js()
    assert page.count("<table class='sortable'>") == page.count("<table")
    md = (tmp_path / "report.md").read_text()
    assert md.index("## Overview") < md.index("At a glance") < md.index("## Detailed tables") < md.index("### add")
    assert "![ratio-bfv-n4096](plots/ratio-bfv-n4096.png)" in md and "ratio-bgv" not in md
    assert (tmp_path / "plots" / "ratio-ckks-n4096.svg").exists()


def test_the_overview_states_each_setups_security_once():
    from fhemark.report.overview import build
    both = {"hestd2018": {"bits": 116}, "guidelines2024": {"bits": 113}}
    ov = build([rec(security=both, security_bits=116, security_table="hestd2018", insecure=True),
                rec(library="lattigo", security=both, security_bits=116, security_table="hestd2018", insecure=True)])
    (row,) = ov.glance.rows
    assert row[2] == "† below the requested level: 116 (hestd2018), 113 (guidelines2024) bits"


def test_a_page_per_study_layout_is_written_and_linked_where_the_records_hold_it(tmp_path):
    from fhemark.report import studies
    recs = [rec(op=f"pipeline_mul/{stage}", median=m) for stage, m in (("encode", 1e5), ("encrypt", 2e6), ("op", 5e6),
                                                                        ("decrypt", 1e6), ("decode", 1e5))]
    recs += [rec(op="mul_relin", n=n, median=m) for n, m in ((4096, 1e6), (8192, 3e6))]           # Study 2: over N
    recs += [rec(op="add", slots=s, median=1e4 + s) for s in (128, 256)]                            # Study 3: over length
    recs += [rec(op=f"multiadd_{k}x32", library="tfhe-rs", scheme="tfhe_int", median=k * 1e8) for k in (3, 8)]
    (stack,) = studies.study1(recs)
    assert stack["layout"]["barmode"] == "stack" and [t["name"] for t in stack["data"]] == list(studies._STAGES)
    assert stack["data"][2]["y"] == [5.0]  # the op stage of seal's mul pipeline, in ms
    (by_n,) = studies.study2(recs)
    assert by_n["data"][0]["x"] == [4096, 8192] and by_n["layout"]["xaxis"]["type"] == "log"
    assert [f["layout"]["title"]["text"] for f in studies.study3(recs)] == ["Study 3: add against the vector length"]
    (sums,) = studies.study4(recs)
    assert sums["data"][0]["x"] == [3, 8]
    recs += [rec(op=f"matvec_{d}", scheme="ckks", median=d * 1e6, workload={"workload": "matvec", "size": d,
                                                                          "variant": "portable"}) for d in (64, 256)]
    (apps,) = studies.applications(recs)
    assert apps["data"][0]["x"] == [64, 256] and "(portable)" in apps["data"][0]["name"]
    write(recs, tmp_path, "t", {"cpu": {"model": "X"}})
    page = (tmp_path / "report.html").read_text()
    for slug in ("study1", "study2", "study3", "study4", "applications"):
        assert f"href='{slug}.html'" in page and (tmp_path / f"{slug}.html").exists()
    assert "Plotly.newPlot('f0'" in (tmp_path / "study1.html").read_text()


def test_the_terminal_table_lists_operations_as_a_computation_runs_them():
    """Keys, encode, encrypt, arithmetic, key switching, decrypt, decode: whatever order the jobs ran in."""
    from rich.console import Console

    from fhemark.report.text import print_results
    ran = ["decode", "rotate_1", "keygen_relin", "add", "decrypt", "encrypt_pk", "mul_relin", "encode", "keygen_public"]
    recs = [record(library="seal", scheme="bfv", op=op, params={"name": "c8192", "N": 8192}, status="ok",
                   job_key=op, median_ns=1000.0, rel_ci_half_width=0.01) for op in ran]
    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    print_results(recs, console)
    text = console.export_text()
    shown = sorted(ran, key=lambda op: text.index(f" {op} "))
    assert shown == ["keygen_public", "keygen_relin", "encode", "encrypt_pk", "add", "mul_relin", "rotate_1",
                     "decrypt", "decode"]


def test_the_terminal_table_says_per_row_who_is_fastest_and_by_how_much():
    """◆ the fastest by floors; another library 3x slower beyond doubt reads 3x; one the data cannot
    tell from the fastest reads ≈; a row of one library has no marks."""
    from rich.console import Console

    from fhemark.report.text import print_results
    recs = [_paired("seal", 100.0), _paired("lattigo", 300.0), _paired("openfhe", 101.0),
            _paired("seal", 50.0, op="mul_relin")]
    for i, r in enumerate(recs):
        r.job_key, r.params = f"k{i}", {"name": "n4096", "N": 4096}
    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    print_results(recs, console)
    lines = console.export_text().splitlines()
    add = next(line for line in lines if " add " in line)
    lattigo, openfhe, seal = (cell.strip() for cell in add.split("│")[4:7])
    assert seal.endswith("◆") and lattigo.endswith(" 3x") and openfhe.endswith("≈")
    mul = next(line for line in lines if " mul_relin " in line)
    assert "◆" not in mul and "≈" not in mul


def test_no_heading_or_link_of_the_html_report_shows_a_backtick(tmp_path):
    """Titles are written for Markdown (`op`); the HTML shows them as code, not as literal backticks."""
    import re
    write(_overview_recs(), tmp_path, "t", {"cpu": {"model": "X"}})
    page = (tmp_path / "report.html").read_text()
    headings = re.findall(r"<h[1-4][^>]*>(.*?)</h[1-4]>", page) + re.findall(r"<nav>(.*?)</nav>", page, re.S)
    assert headings and not any("`" in h for h in headings)
    assert "<code>add</code>" in page


def test_sizes_read_in_kib_and_mib():
    from fhemark.report.tables import facts_table, key_table
    r = record(library="seal", scheme="bfv", op="add", status="ok", job_key="k", params={"name": "c8192", "N": 8192},
               sizes_bytes={"relin_keys": 37757568, "ciphertext": 786432, "galois_key_count": 3, "output:cz": 786432})
    row = key_table([r]).rows[0]
    assert "36.01 MiB" in row and "768.0 KiB" in row and "3" in row and "37757568" not in row
    assert "768.0 KiB" in facts_table([r]).rows[0]


def test_a_library_has_one_colour_in_the_static_and_the_interactive_figures(tmp_path):
    from fhemark.report.overview import build, library_colours
    recs = _overview_recs()
    write(recs, tmp_path, "t", {"cpu": {"model": "X"}})
    colours = library_colours(build(recs))
    svg = (tmp_path / "plots" / "ratio-bfv-n4096.svg").read_text()
    for lib in ("lattigo", "openfhe", "seal"):  # openfhe: matplotlib's own second colour is another
        assert colours[lib] in svg, lib  # the static figure draws each library in its interactive colour


def test_a_tfhe_family_setup_shows_each_librarys_own_lwe_sizes_not_a_ring():
    """A TFHE-family preset is each library's own set: the overview names its LWE/GLWE problems per
    library (what the security estimate judged), never 'N = 0, log QP = 0'."""
    from fhemark.report.overview import _parameters
    facts = {"lwe_dimension": 805, "glwe_dimension": 3, "polynomial_size": 512,
             "lwe_problems": [{"name": "LWE (n=805)", "n": 805, "log_q": 32, "secret": "binary", "noise_std": 240.5},
                              {"name": "GLWE (k*N=1536)", "n": 1536, "log_q": 32, "secret": "binary", "noise_std": 0.012}]}
    tfhe = record(library="tfhe-rs", scheme="tfhe_bool", params={"N": 0, "preset": "default", "name": "default"},
                  effective_params=facts)
    text = _parameters([tfhe], tfhe.params)
    assert text == "default, each library's own set (tfhe-rs: LWE (n=805), log q 32, GLWE (k*N=1536), log q 32)"
    assert "N = 0" not in text
