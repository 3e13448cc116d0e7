"""The fidelity benchmarks' pure parts, on injected readings: Go's output parsed, rounds pooled, the
floor ratio and what goes beside it, the rows and the safety checks. Nothing is run or timed."""
import importlib.util
import os
import sys

import pytest

from fhemark.locations import project_root
from fhemark.stats import floor

_BENCH = project_root() / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, _BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # the benchmarks import their shared module by its bare name
    spec.loader.exec_module(mod)
    return mod


run = _load("fidelity_run")
lattigo = _load("fidelity_lattigo")
seal = _load("fidelity_seal")
boot = _load("fidelity_bootstrap")

_NAME = "BenchmarkCKKS/Evaluator/{}/RingType=Standard/logN={}/logQP=390/Qi=8/Pi=1/LogScale=40/PrecMode=PREC64"
_GO_OUT = "\n".join([
    "goos: linux", "pkg: github.com/tuneinsight/lattigo/v6/schemes/ckks",
    _NAME.format("Rescale", 14) + "   \t       7\t   3211438 ns/op\t 2101 B/op\t  12 allocs/op",
    _NAME.format("Rescale", 14) + "-2 \t       7\t   3105401 ns/op\t 2101 B/op\t  12 allocs/op",
    _NAME.format("Add/Ciphertext", 14) + " \t     100\t    224023 ns/op",
    "PASS",
])


def test_go_output_parses_into_one_reading_per_count_line():
    out = lattigo.parse_bench(_GO_OUT)
    assert set(out) == {"Evaluator/Rescale", "Evaluator/Add/Ciphertext"}
    r = out["Evaluator/Rescale"]
    assert r["ns_per_op"] == [3211438.0, 3105401.0] and r["iterations"] == [7, 7]
    assert r["bytes_per_op"] == [2101.0, 2101.0] and r["allocs_per_op"] == [12.0, 12.0]
    assert out["Evaluator/Add/Ciphertext"]["ns_per_op"] == [224023.0]
    assert out["Evaluator/Add/Ciphertext"]["bytes_per_op"] == []


def _match(go_name: str):
    return next(m for m in lattigo.MATCHES if m.scheme == "ckks" and m.go_name == go_name)


def test_a_benchmark_that_printed_too_few_lines_or_other_parameters_is_a_failure():
    out = lattigo.parse_bench(_GO_OUT)
    lattigo.check_bench(out, [_match("Evaluator/Rescale")], 2, "round 1")
    with pytest.raises(run.Failure, match="printed 1 ns/op line"):
        lattigo.check_bench(out, [_match("Evaluator/Add/Ciphertext")], 2, "round 1")
    with pytest.raises(run.Failure, match="printed 0 ns/op line"):
        lattigo.check_bench(out, [_match("Evaluator/Rotate")], 1, "round 1")
    other = lattigo.parse_bench(_NAME.format("Rescale", 13) + "  7  3211438 ns/op")
    with pytest.raises(run.Failure, match="LogN=14"):
        lattigo.check_bench(other, [_match("Evaluator/Rescale")], 1, "round 1")


def test_orders_are_random_per_round_and_repeatable():
    o = run.orders(40, seed=3)
    assert o == run.orders(40, seed=3)
    assert set(o) == {("reference", "fhemark"), ("fhemark", "reference")}


def test_interleave_alternates_the_sides_in_each_rounds_order(capsys):
    calls = []

    def side(name):
        def f(i):
            calls.append((i, name))
            return {"op": [float(i)]}
        return f

    rounds = run.interleave(5, {"reference": side("reference"), "fhemark": side("fhemark")}, seed=1)
    assert calls == [(i, name) for i, o in enumerate(run.orders(5, seed=1)) for name in o]
    assert [r["order"] for r in rounds] == [list(o) for o in run.orders(5, seed=1)]
    assert run.pool(rounds, "fhemark", "op") == [[0.0], [1.0], [2.0], [3.0], [4.0]]
    assert run.pool(rounds, "reference", "missing") == [[]] * 5


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_the_reference_loop_runs_on_the_core_fhemarks_drivers_measure_on(monkeypatch):
    """fhemark's drivers are pinned to one core (measure/affinity.py): the library's own loop runs there
    too, and this process gets its cores back after."""
    before = os.sched_getaffinity(0)
    core = max(before)
    monkeypatch.setattr(run, "measuring_cpus", lambda threads: frozenset({core}))
    seen = {}

    def side(name):
        def f(i):
            seen[name] = os.sched_getaffinity(0)
            return {}
        return f
    run.interleave(1, {"reference": side("reference"), "fhemark": side("fhemark")})
    assert seen == {"reference": {core}, "fhemark": before} and os.sched_getaffinity(0) == before


def _levels(fast: float, fast_n: int, slow_n: int) -> list[float]:
    """Readings at the host's two levels (1.6x apart), 2% apart inside a level."""
    return [fast * (1 + 0.02 * (i % 3)) for i in range(fast_n)] + [1.6 * fast * (1 + 0.02 * (i % 3)) for i in range(slow_n)]


def test_floors_judge_where_medians_read_how_often_the_host_was_slow():
    # the same speed on both sides; the reference met the slow level in 1 reading of 8, fhemark in 6 of 8
    reference = [_levels(100.0, 4, 0), _levels(100.0, 3, 1)]
    fhemark = [_levels(100.0, 1, 3), _levels(100.0, 1, 3)]
    j = run.judge(reference, fhemark)
    assert j["ratio"] == pytest.approx(floor(sum(fhemark, [])) / floor(sum(reference, [])))
    assert j["ratio"] == pytest.approx(1.0, abs=0.03)
    assert j["ratio_ci95"][0] <= 1 <= j["ratio_ci95"][1] and j["p"] > 0.05
    assert j["median_ratio"] > 1.4  # the old estimator reads the slow share
    assert j["rounds"] == 2 and j["reference_readings"] == 8 and j["fhemark_samples"] == 8
    assert len(j["median_ratio_by_round"]) == 2
    assert (j["reference_fast_rounds"], j["fhemark_fast_rounds"]) == (2, 2)


def test_a_real_difference_is_told_from_one():
    reference = [_levels(100.0, 6, 2) for _ in range(3)]
    fhemark = [_levels(130.0, 6, 2) for _ in range(3)]
    j = run.judge(reference, fhemark)
    assert j["ratio"] == pytest.approx(1.3, rel=0.01)
    assert j["ratio_ci95"][0] > 1 and j["p"] < 0.05
    assert "0 of 1 floor ratios' 95% intervals contain 1, 1 above" in run.decided([j])


def test_a_side_that_read_nothing_gives_no_ratio_and_too_few_readings_no_interval():
    assert run.judge([[1.0, 2.0]], [[]])["ratio"] is None
    assert run.judge([[]], [[]])["rounds"] == 0
    few = run.judge([[100.0, 101.0]], [[100.0, 102.0]])
    assert few["ratio"] and few["ratio_ci95"] is None
    assert run.ratio_cell(few).endswith("[too few]")


def test_fast_rounds_count_the_rounds_that_reached_the_floor_band():
    assert run.fast_rounds([[100.0, 160.0], [165.0, 170.0], [108.0]]) == 2
    assert run.fast_rounds([[], [100.0]]) == 1
    assert run.fast_rounds([[]]) == 0


def _go_detail(name: str) -> dict:
    return {"full_name": name, "iterations": [7], "bytes_per_op": [], "allocs_per_op": []}


def test_lattigo_rows_pool_the_rounds_and_carry_a_failed_rounds_status():
    m = _match("Evaluator/Rescale")
    detail = {m.go_name: _go_detail(_NAME.format("Rescale", 14))}
    rounds = [{"order": ["reference", "fhemark"], "reference": {m.go_name: _levels(3000.0, 3, 0)},
               "fhemark": {"rescale_into": _levels(3100.0, 3, 3), "rescale": _levels(5000.0, 3, 3)}, "go_detail": detail},
              {"order": ["fhemark", "reference"], "reference": {m.go_name: _levels(3000.0, 2, 1)},
               "fhemark": {"rescale_into": _levels(3100.0, 3, 3)}, "go_detail": detail}]
    ok = {"status": "ok", "median_ns": 1.0}
    records = [{"rescale_into": ok, "rescale": ok}, {"rescale_into": ok, "rescale": {"status": "wrong_result", "error": "x"}}]
    rows = {r["fhemark_op"]: r for r in lattigo.build_rows({"ckks": rounds}, {"ckks": records})
            if r["lattigo_benchmark"].endswith("Rescale")}
    into = rows["rescale_into"]
    assert into["status"] == "ok" and into["preallocated_output"] and into["rounds"] == 2
    assert into["ratio_floor"] == pytest.approx(3100 / 3000, rel=0.02)
    assert into["lattigo_readings"] == 6 and into["fhemark_samples"] == 12
    assert rows["rescale"]["status"] == "wrong_result" and rows["rescale"]["rounds"] == 1


def test_seal_rows_judge_each_op_over_the_rounds():
    rounds = [{"order": ["fhemark", "reference"], "reference": {"add": _levels(20.0, 8, 4)},
               "fhemark": {"add": _levels(21.0, 4, 8)}} for _ in range(3)]
    records = [{"add": {"status": "ok", "median_ns": 30.0, "input_state": "hot"}}] * 3
    (row,) = seal.build_rows("ckks", 4096, ["add"], rounds, records)
    assert row["status"] == "ok" and row["rounds"] == 3 and row["input_state"] == "hot"
    assert row["ratio_floor"] == pytest.approx(1.05, rel=0.02)
    assert row["ratio_median_unpaired"] > row["ratio_floor"]
    assert row["fhemark_median_ns_by_round"] == [30.0] * 3


def test_the_within_share_counts_floor_ratios():
    assert run.within([1.02, 0.97, 1.2, None]) == "2 of 3 cells (67%) within ±5%"


def test_lattigo_s_bootstrapping_benchmark_line_is_read_as_one_mean_of_its_bootstraps():
    """BenchmarkConcurrentBootstrap's sub-benchmark, named by ParamsToString ("Bootstrap/logN=16/..."), run
    with -test.cpu 1 -test.benchtime 3x: one line, 3 iterations, the mean ns a bootstrap."""
    line = ("BenchmarkConcurrentBootstrap/Bootstrap/logN=16/LogSlots=15/logQP=1767.000000/levels=30/a=6/b=5 \t"
            "       3\t17123456789 ns/op")
    got = lattigo.parse_bench(line)[boot.GO_BENCH]
    assert got["iterations"] == [3] and got["ns_per_op"] == [17123456789.0]


def test_the_bootstrap_summary_reads_rounds_too_few_for_a_p_value():
    """Three rounds of one Go reading each: judge() gives no p; the summary says so (a run of 30 minutes
    once ended in a TypeError there, after every reading was taken)."""
    j = run.judge([[36.4e9], [36.8e9], [32.7e9]], [[33.5e9, 33.6e9, 33.4e9], [32.3e9, 32.4e9, 32.2e9],
                                                   [34.8e9, 34.9e9, 34.7e9]])
    text = boot.summary({**j, "p": None}, {"effective_params": {"bootstrap": {"lattigo_parameters": "x"}}}, 1.0)
    assert "no p: too few readings" in text and "fhemark's record: set x" in text
