import numpy as np

from fhemark.stats import median_ci, summarize, tukey_labels


def test_summary_of_known_samples():
    s = summarize([10, 11, 12, 13, 14])
    assert s.median == 12 and s.mean == 12 and s.min == 10 and s.max == 14 and s.mad == 1
    assert s.ci95[0] <= 12 <= s.ci95[1]


def test_ci_covers_the_true_median_and_narrows_with_more_samples():
    rng = np.random.default_rng(3)
    small = rng.lognormal(10, 0.1, 20)
    large = rng.lognormal(10, 0.1, 2000)
    lo_s, hi_s = median_ci(small)
    lo_l, hi_l = median_ci(large)
    true = np.exp(10)
    assert lo_l <= true <= hi_l
    assert hi_l - lo_l < hi_s - lo_s


def test_ci_is_reproducible():
    a = np.arange(50, dtype=float)
    assert median_ci(a) == median_ci(a)


def test_outliers_are_labelled_not_dropped():
    samples = [100, 101, 102, 103, 104, 105, 106, 107, 150, 1000]
    labels = tukey_labels(np.array(samples, dtype=float))
    assert labels[-1] == "severe" and labels[-2] in ("mild", "severe") and labels[0] == ""
    s = summarize(samples)
    assert s.n == 10 and s.max == 1000 and s.outliers_severe >= 1


def test_single_sample():
    s = summarize([5.0])
    assert s.ci95 == (5.0, 5.0) and s.stdev == 0.0
