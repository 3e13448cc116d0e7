"""benchmarks/reproducibility.py's comparison of two runs: the figures the README quotes."""
import importlib.util

from fhemark.locations import project_root

_spec = importlib.util.spec_from_file_location("reproducibility", project_root() / "benchmarks" / "reproducibility.py")
repro = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(repro)


def _rec(library, median, spread, status="ok", op="add"):
    """Six rounds of three samples around `median`, each round `spread` apart (drift alike for all)."""
    rounds = [r for r in range(6) for _ in range(3)]
    samples = [median * (1 + spread * r) for r in rounds]
    return {"library": library, "scheme": "bfv", "params": {"name": "c8192", "N": 8192}, "op": op,
            "vector_length": None, "status": status, "median_ns": sorted(samples)[9],
            "ci95_ns": [median * 0.97, median * 1.03], "samples_ns": samples, "sample_round": rounds}


def test_medians_ratios_and_status_changes_are_counted_against_the_first_run():
    first = [_rec("seal", 100, 0.0), _rec("lattigo", 200, 0.0), _rec("seal", 10, 0.0, op="mul"),
             _rec("lattigo", 10, 0.0, op="mul")]
    later = [_rec("seal", 101, 0.0), _rec("lattigo", 230, 0.0), _rec("seal", 10, 0.0, op="mul"),
             _rec("lattigo", 10, 0.0, op="mul", status="wrong_result")]
    c = repro.compare(first, later)
    assert (c["cases"], c["median_inside_first_interval"], c["medians_moved_over_5pct"]) == (3, 2, 1)
    assert (c["ratios"], c["ratios_within_5pct"]) == (1, 0)  # lattigo/seal on add moved 14%
    assert c["ratios_claimed_within_5pct"] == 1 and c["claimed_ratios_within_5pct"] == 0
    assert [(f["first"], f["later"]) for f in c["status_changes"]] == [("ok", "wrong_result")]


def test_ratios_are_also_counted_apart_by_the_cost_of_the_op():
    """Below 1 ms (the slower library's first-run median) the ops are memory-bound: the README quotes both."""
    first = [_rec("seal", 2e6, 0.0), _rec("lattigo", 3e6, 0.0), _rec("seal", 5e5, 0.0, op="mul"),
             _rec("lattigo", 4e5, 0.0, op="mul"), _rec("seal", 1e5, 0.0, op="sub"), _rec("lattigo", 1e5, 0.0, op="sub")]
    later = [_rec("seal", 2e6, 0.0), _rec("lattigo", 3.03e6, 0.0), _rec("seal", 5e5, 0.0, op="mul"),
             _rec("lattigo", 4.8e5, 0.0, op="mul"), _rec("seal", 1e5, 0.0, op="sub"), _rec("lattigo", 1e5, 0.0, op="sub")]
    c = repro.compare(first, later)
    assert c["ratios_by_cost"] == {"from_1ms": {"ratios": 1, "within_5pct": 1},
                                   "below_1ms": {"ratios": 2, "within_5pct": 1}}
