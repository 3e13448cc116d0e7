"""The report's "Hand, compiler and expert" page, from injected records (no HEIR, no library): the
rows per workload and the compiler's cost split into parameters and code."""

from made_records import record

from fhemark.report import compilers, write

ONE_LEVEL = {"N": 8192, "q_bits": [47, 37], "p_bits": [60], "scale_bits": 37, "log_qp": 144.0}
HEIRS = {"N": 16384, "q_bits": [55, 45, 45], "p_bits": [60, 60], "scale_bits": 45, "log_qp": 310.0, "name": "heir"}


def _rec(library, params, median, key, built=None, **extra):
    return record(library=library, scheme="ckks", op="dot_8", params=params, median_ns=median,
                  ci95_ns=[median * 0.9, median * 1.1], job_key=key, library_build=built, precision_bits=25.0,
                  security_bits=128, security_table="hestd2018", security={"hestd2018": {"bits": 128, "below_table": False}},
                  sizes_bytes={"relin_keys": 3 * 2**20}, peak_rss_bytes=200 * 2**20, **extra)


def _heir(params, median, key, params_from):
    return _rec("heir->lattigo", params, median, key, {"fhe_compiler": "heir", "params_from": params_from})


def test_hand_rows_alone_make_no_page():
    # a driver's build names its language's compiler (Lattigo's: Go's gc): not an FHE compiler's row
    assert compilers.tables([_rec("lattigo", ONE_LEVEL, 2e6, "h", {"compiler": "gc"})]) == []


def test_per_workload_hand_compiler_rows_and_the_gaps_split_into_parameters_and_code():
    longer = {**ONE_LEVEL, "q_bits": [47, 37, 37, 37], "name": "N=8192,logQP=144+2 levels"}
    recs = [_rec("lattigo", ONE_LEVEL, 2e6, "h"), _rec("seal", ONE_LEVEL, 3e6, "s"),
            _heir(HEIRS, 12e6, "c1", "heir"),
            _heir({**ONE_LEVEL, "name": "N=8192,logQP=144"}, 0, "c2", "fhemark:N=8192,logQP=144"),
            _heir(longer, 4e6, "c3", "fhemark:N=8192,logQP=144+2 levels")]
    recs[3] = recs[3].model_copy(update={"status": "invalid_params", "median_ns": None, "ci95_ns": None,
                                         "error": "The level in the scheme param is smaller than the max level."})
    page, gaps = compilers.tables(recs)
    kinds = [(r[1], r[2], r[3]) for r in page.rows]
    assert kinds == [("hand", "lattigo", "choose"), ("hand", "seal", "choose"),
                     ("compiler", "heir->lattigo", "heir"), ("compiler", "heir->lattigo", "fhemark:N=8192,logQP=144"),
                     ("compiler", "heir->lattigo", "fhemark:N=8192,logQP=144+2 levels")]
    heir_row = page.rows[2]
    assert heir_row[4:8] == ["N = 16384, q = 55+45+45, P = 60+60, scale 2^45", "310", "2", "128 (hestd2018)"]
    assert heir_row[8].startswith("12 ms [")
    assert heir_row[9:] == ["200.00 MiB", "3.00 MiB", "25.0"]
    assert page.rows[3][8] == "refused (invalid_params)"
    # parameters: 12 ms at HEIR's set / 4 ms at fhemark's (its levels added); code: 4 ms / hand Lattigo's 2 ms,
    # at the set given before the levels were added
    by = {g[2]: g[3:] for g in gaps.rows}
    assert by["fhemark:N=8192,logQP=144+2 levels"] == ["3.00", "2.00", "N = 8192, q = 47+37, P = 60, scale 2^37"]
    assert by["fhemark:N=8192,logQP=144"][:2] == ["-", "-"]


def test_an_expert_row_is_the_published_set_of_the_workloads_fherma_kernel():
    expert = {"N": 16384, "q_bits": [60, 59, 59, 59, 59], "p_bits": [60], "scale_bits": 59, "log_qp": 356.0}
    facts = {"workload": "dot_8", "fherma": "logistic"}
    recs = [_rec("openfhe", expert, 9e6, "e", workload=facts), _rec("openfhe", ONE_LEVEL, 5e6, "o", workload=facts)]
    (page,) = compilers.tables(recs)
    assert [(r[1], r[3].split(" (")[0]) for r in page.rows] == [("hand", "choose"), ("expert", "FHERMA logistic")]
    assert page.rows[1][4] == "N = 16384, q = 60+59+59+59+59, P = 60, scale 2^59"


def test_the_report_holds_the_page(tmp_path, monkeypatch):
    from fhemark.report import plots
    monkeypatch.setattr(plots, "write", lambda *a: [])  # the figures are other tests'
    recs = [_rec("lattigo", ONE_LEVEL, 2e6, "h"), _heir(HEIRS, 12e6, "c1", "heir")]
    write(recs, tmp_path / "r", "t", {})
    assert "Hand, compiler and expert" in (tmp_path / "r" / "report.md").read_text()
