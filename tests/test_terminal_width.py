"""`choose` and `recommend` read at 80 columns: no figure cut to '…' or broken across lines, the
decisive columns in the table and every other figure below it; at wide terminals the same holds.
`choose`'s progress counts the sets searched, and the sets measured of how many."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pytest
from made_records import record
from rich.console import Console
from rich.progress import Progress

from fhemark.advise import choose as chooser
from fhemark.advise.advisor import Need
from fhemark.advise.choose import Answer, Candidate
from fhemark.model.requirements import for_all
from fhemark.model.workload_file import load
from fhemark.report.choice import narrow_interval, print_answer

EXAMPLES = Path(__file__).parent.parent / "examples"
(STATS,) = load(EXAMPLES / "statistics.py")
SECURITY = {"hestd2018": {"bits": 128}, "guidelines2024": {"bits": 128}}
SIZES = {"relin_keys": 3 * 2**20, "galois_keys": 40 * 2**20, "ciphertext": 2**19, "output:0": 2**18}


def cand(lib: str, scheme: str, n: int, q: list[int], median: float, p: tuple = (60,), origin: str = "search",
         **fields) -> Candidate:
    spec = {"N": n, "q_bits": q, "p_bits": list(p), **({"scale_bits": 40} if scheme == "ckks" else {"t_bits": 20})}
    rec = record(library=lib, scheme=scheme, op=STATS.name, params=spec, median_ns=median,
                 ci95_ns=[median * 0.98, median * 1.03], security=SECURITY, security_bits=128,
                 peak_rss_bytes=123 * 2**20, sizes_bytes=SIZES, **fields)
    return Candidate(lib, scheme, spec, origin, verified=True, record=rec)


def answer(**kw) -> Answer:
    """Five libraries' sets as a search of statistics.py finds them: a deep chain, the library's own
    choice beside its search, an interval that straddles two units, both kinds of margin."""
    chosen = [cand("seal", "ckks", 16384, [60, 40, 40, 40, 60], 41.2e6, precision_bits=25.3),
              cand("openfhe", "ckks", 16384, [60, 40, 40, 40, 40], 42.0e6, p=(60, 60), precision_bits=23.1),
              cand("openfhe", "ckks", 32768, [60] + [50] * 10, 98.7e6, p=(60, 60), origin="openfhe-auto",
                   precision_bits=30.0),
              cand("lattigo", "bfv", 16384, [60, 60, 60], 120.0e6, noise_budget_bits=23),
              cand("tenseal", "bfv", 16384, [60, 60, 60], 118.0e6, noise_budget_bits=20),
              cand("seal", "bgv", 8192, [60, 60], 998e3, noise_budget_bits=5)]
    return Answer(STATS, for_all(STATS), 20.0, 128, "hestd2018", chosen, run_id="20240101-abcdef", **kw)


def printed(ans: Answer, width: int) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO())
    print_answer(ans, console)
    return console.export_text().splitlines()


def assert_whole(lines: list[str], width: int, figures: list[str]) -> None:
    """Every line fits; nothing is cut; each figure stands whole on one line."""
    assert all(len(line.rstrip()) <= width for line in lines), "\n".join(lines)
    text = "\n".join(lines)
    assert "…" not in text, text
    for fig in figures:
        assert any(fig in line for line in lines), f"{fig!r} not whole in:\n{text}"


@pytest.mark.parametrize("width", [80, 200])
def test_the_choose_table_reads_whole_at_80_and_200_columns(width):
    ans = answer()
    lines = printed(ans, width)
    figures = ["seal", "openfhe", "lattigo", "tenseal", "CKKS", "BFV", "BGV", "16384", "32768",
               "41.2 ms", "998 µs", "+5.3 bits", "23 bits", "q 60+50+50+50+50+50+50+50+50+50+50, P 60+60, scale 2^40",
               "128 (guidelines2024)", "123.00 MiB", "43.00 MiB", "1.00 MiB", "2/10"]
    assert_whole(lines, width, figures)
    best = next(line for line in lines if re.match(r"\s*1\s+seal\s+BGV", line))
    assert "998 µs [978 µs, 1.03 ms] *" in best  # the interval straddles two units: each end keeps its own
    assert any(re.search(r"41\.2 ms \[40\.4, 42\.4\]\s", line) for line in lines)  # the ends in the median's unit
    assert not any("120 ms" in line and "*" in line for line in lines)  # only the indistinguishable are marked
    ranked = [c.library for c in ans.ranked()]
    assert ranked[0] == "seal" and len(ranked) == 6


def test_the_full_table_stays_where_it_fits():
    lines = printed(answer(), 400)
    header = next(line for line in lines if "┃ library" in line)
    assert all(col in header for col in ("set", "chain", "security bits", "peak memory", "levels need/have"))
    assert_whole(lines, 400, ["openfhe-auto", "q 60+40+40+40+60, P 60, scale 2^40", "+5.3 bits precision"])


def test_throughput_and_the_shared_sets_read_whole_at_80_columns():
    ans = answer(objective="throughput")
    ans.shared = [cand("openfhe", "ckks", 16384, [60, 40, 40, 40, 60], 43.3e6, origin="shared", precision_bits=24.0)]
    for i, c in enumerate(ans.chosen + ans.shared):
        c.record = c.record.model_copy(update={"mode": "throughput", "batch": 2 + i, "throughput_per_s": 1234.0 - i,
                                               "throughput_ci95": [1200.0 - i, 1260.0 - i]})
    lines = printed(ans, 80)
    assert_whole(lines, 80, ["1.23k/s [1.2, 1.26] *", "k at once 2", "the same program with every library",
                             "1.23k/s [1.19, 1.25]", "k at once 8"])


def test_the_interval_drops_only_a_shared_unit():
    assert narrow_interval("12.3 ms", "12.1 ms", "12.5 ms") == "12.3 ms [12.1, 12.5]"
    assert narrow_interval("998 µs", "980 µs", "1.03 ms") == "998 µs [980 µs, 1.03 ms]"
    assert narrow_interval("1.23k/s", "1.2k/s", "1.26k/s") == "1.23k/s [1.2, 1.26]"
    assert narrow_interval("802/s", "787/s", "1.01k/s") == "802/s [787/s, 1.01k/s]"
    assert narrow_interval("1e+03 µs", "980 µs", "1.01 ms") == "1e+03 µs [980 µs, 1.01 ms]"


@pytest.mark.parametrize("width", [80, 200])
def test_the_recommendation_reads_whole_at_80_and_200_columns(width):
    from test_recommend import STORE, rec

    from fhemark.advise.recommend import Workload, recommend
    from fhemark.report.text import print_recommendation
    store = STORE + [rec("openfhe", "ckks", "mul_relin", 1.01e6, params="c16384", precision_bits=30.5,
                         deviations={"mul_relin": "relinearises lazily"}),
                     rec("openfhe", "ckks", "rotate_1", 8e5, params="c16384")]
    w = Workload(ops={"mul_relin": 2, "rotate_1": 1})
    console = Console(width=width, record=True, file=io.StringIO())
    print_recommendation(recommend(store, w), w, console)
    lines = console.export_text().splitlines()
    assert_whole(lines, width, ["openfhe CKKS c16384 ‡1", "seal CKKS c8192", "lattigo BGV c8192", "2.82 ms",
                                "30 ms", "30.5 bits prec", "18.0 bits prec"])
    assert any(re.match(r"[\s│]*1\*[\s│]+openfhe CKKS c16384", line) for line in lines)
    assert any(line.startswith("‡1 openfhe mul_relin") and "relinearises lazily" in line for line in lines)


# -- the progress ----------------------------------------------------------------------------------

def test_the_search_says_each_set_it_begins_and_the_measurement_each_set_of_its_total(monkeypatch):
    said = []
    monkeypatch.setattr(chooser, "verify", lambda w, need, lib, spec, repeats, db, samples=2:
                        ("wrong_result: short", record(status="wrong_result")) if spec["N"] == 8192
                        else ("", record(status="ok")))
    monkeypatch.setattr(chooser, "hardest", lambda *a: ("", None, None))  # no worst input to look for here
    space = [{"N": n, "q_bits": [50, 40], "p_bits": [60], "scale_bits": 40} for n in (8192, 16384, 32768)]
    chooser._search(None, Need("ckks", 1, 20.0), "lib", space, 1, None, lambda *a: said.append(a))
    assert [a[2] for a in said if len(a) > 2] == [1, 1]  # two begun; the third never is

    def fake_run(suite, libs, store, progress):
        for case in suite.cases:
            progress(f"{case.libraries[0]} {case.schemes[0]}")
        return []
    monkeypatch.setattr(chooser.measuring, "run_suite", fake_run)
    ans = Answer(STATS, for_all(STATS), 20.0, 128, "hestd2018",
                 [cand("seal", "ckks", 16384, [60, 40, 60], 1e6), cand("seal", "bfv", 16384, [60, 60], 1e6)])
    said.clear()
    chooser._measure(ans, None, lambda *a: said.append(a))
    assert said[0][2:] == (0, 2) and [a[2] for a in said[1:]] == [1, 1]


def test_the_progress_counts_sets_and_estimates_the_time_left_only_when_measuring():
    from fhemark.cli.advice import _choose_columns, _say
    console = Console(width=80, record=True, file=io.StringIO())
    progress = Progress(*_choose_columns(), console=console, auto_refresh=False)
    task = progress.add_task("searching parameters", total=None, last="", since=None)
    say = _say(progress, task)

    def shown() -> str:
        console.print(progress.get_renderable())
        lines = console.export_text().splitlines()
        assert all(len(line.rstrip()) <= 80 for line in lines) and "…" not in "\n".join(lines)
        return " ".join(" ".join(lines).split())
    for n in (8192, 16384, 32768):
        say("searching parameters", f"seal ckks N = {n}, q = 60+40+40+40+40+60, P = 60, scale 2^40", 1)
    text = shown()
    assert "set 3" in text and "left" not in text and "scale 2^40" in text
    say("measuring", "5 sets, every sample checked", 0, 5)
    assert "0/5 sets" in shown()
    say("measuring", "seal ckks N=16384 statistics_4096", 1)
    say("measuring", "seal bfv N=16384 statistics_4096", 1)
    progress.update(task, since=time.monotonic() - 10)  # two sets in 10 s: three more take about 15
    text = shown()
    assert "2/5 sets" in text and "about 0:00:15 left" in text


def test_a_time_or_rate_rounded_up_to_the_next_unit_is_written_in_it():
    from fhemark.report.formats import fmt_rate, fmt_time
    assert fmt_time(999.5e3) == "1 ms" and fmt_time(999.4e3) == "999 µs" and fmt_time(999.6e6) == "1 s"
    assert fmt_rate(999.7) == "1k/s" and fmt_rate(999.7e3) == "1M/s" and fmt_rate(12.34) == "12.3/s"


@pytest.mark.parametrize("width", [80, 100])
def test_what_the_program_needs_reads_at_80_columns(width):
    """The requirements `choose` prints first: at a narrow terminal each scheme's figures whole, none cut
    to '…', every rotation and step count on screen."""
    from fhemark.report.choice import print_requirements
    console = Console(width=width, record=True, file=io.StringIO())
    print_requirements(STATS.name, for_all(STATS), console)
    lines = console.export_text().splitlines()
    assert_whole(lines, width, ["2048", "24 add", "depth 2", "9.22e+05", "CKKS needs:"])

