from fhemark.drivers.registry import manifests
from fhemark.plan.jobs import build
from fhemark.plan.smoke import SMOKE_MAX_N, smoke
from fhemark.plan.suites import builtin_names, load, thread_counts


def test_every_builtin_suite_plans():
    libs = ["seal", "lattigo", "openfhe", "tfhe-rs", "tenseal", "concrete"]
    for name in builtin_names():
        suite = load(name)  # every library it names built here, versions (`openfhe@1.5.1`) included
        named = [lib for case in suite.cases if case.libraries != "all" for lib in case.libraries]
        plan = build(suite, libs + named)
        assert plan.jobs, name


def test_full_adds_the_long_sweep():
    short, full = load("study4"), load("study4", full=True)
    assert len(full.cases) > len(short.cases) and full.name == "study4-full"
    libs = ["tfhe-rs", "seal", "openfhe", "concrete"]
    ops = {j.op for j in build(full, libs).jobs}
    assert "multiadd_1024x64" in ops and "multiadd_1024x64" not in {j.op for j in build(short, libs).jobs}


def test_word_wise_sums_are_planned_only_where_they_cannot_wrap():
    plan = build(load("study4"), ["seal"], known=["seal", "tfhe-rs", "lattigo", "openfhe", "concrete"])
    assert plan.unavailable == ["concrete", "openfhe", "tfhe-rs"]  # named by the suite, not built: skipped and listed
    jobs = plan.jobs
    wide = {j.op for j in jobs if j.params.t and j.params.t > 2}
    assert "multiadd_256x32" in wide  # 45-bit t holds 256 * 2^32
    assert not any(op.endswith("x64") for op in wide)


def test_libraries_all_marks_jobs_unnamed():
    plan = build(load("headline"), ["seal", "tfhe-rs"])
    assert {j.library for j in plan.jobs} == {"seal", "tfhe-rs"} and not any(j.named for j in plan.jobs)


def test_every_library_draws_the_same_inputs_for_the_same_case():
    """Inputs are seeded by the case without the library (rotate_random rotates by the same steps
    everywhere), while each library's job keeps its own identity for resume and compare."""
    plan = build(load("quick"), ["seal", "lattigo", "openfhe", "tenseal"], known=list(manifests()))
    by_case: dict = {}
    for j in (j for j in plan.jobs if j.params.kind == "rlwe"):  # the TFHE family: one library per case
        by_case.setdefault((j.scheme, j.params, j.op, j.slots), []).append(j)
    for jobs in by_case.values():
        assert len({j.input_key for j in jobs}) == 1
        assert len({j.key for j in jobs}) == len(jobs) >= 3  # TenSEAL beside the others where it has the scheme


def test_comparing_suites_spread_samples_over_several_processes():
    """A second run sees other keys and another memory layout: the studies, quick, apps and tenseal
    take their samples from at least 2 processes, and the RLWE ones from at least 6 slices
    (processes x rounds), the fewest that give the run-to-run interval."""
    libs = ["seal", "lattigo", "openfhe", "tfhe-rs", "tenseal", "concrete"]
    for name in ("study1", "study2", "study3", "study4", "quick", "apps", "tenseal"):
        jobs = build(load(name), libs).jobs
        assert all(j.policy.processes >= 2 for j in jobs), name
        assert all(j.policy.processes * j.policy.rounds >= 6 for j in jobs if j.scheme in ("bfv", "bgv", "ckks")
                   and name != "study4"), name


def _shape(jobs) -> set:
    """What a suite measures, without how long: library, scheme, op, thread count and the policy's structure."""
    return {(j.library, j.scheme, j.op, j.threads, j.policy.processes, j.policy.rounds, j.policy.mode,
             j.policy.interleave, j.policy.inputs) for j in jobs}


def test_the_smoke_form_keeps_every_suites_shape_at_its_smallest_ring_and_fewest_samples():
    """`fhemark run --smoke`: every case, library, scheme, op and thread count of the suite (the thread axis
    as written), each policy's processes, rounds and mode; one sample per slice, no warm-up; the smallest
    ring of each case (study1-3: N = 4096 of 4096..32768); a case above the smoke form's ring left out."""
    libs = ["seal", "lattigo", "openfhe", "tfhe-rs", "tenseal", "concrete"]
    for name in builtin_names():
        suite = load(name)
        named = [lib for case in suite.cases if case.libraries != "all" for lib in case.libraries]
        small = smoke(suite)
        jobs = [j for j in build(suite, libs + named).jobs if j.params.N <= SMOKE_MAX_N]
        assert len(small.skipped) == len(suite.cases) - len(small.suite.cases), name
        if not jobs:  # bootstrap: every case at N = 2^16, each left out in one line
            assert not small.suite.cases and small.skipped, name
            continue
        smoked = build(small.suite, libs + named).jobs
        assert small.suite.name == f"{name}-smoke" and _shape(smoked) == _shape(jobs), name
        assert all(j.policy.warmup == 0 and j.policy.min_samples == 1
                   and j.policy.max_samples == j.policy.processes * j.policy.rounds for j in smoked), name
        assert len(smoked) <= len(jobs)
    study = build(smoke(load("study2")).suite, libs).jobs
    assert {j.params.N for j in study} == {4096}
    assert {j.threads for j in build(smoke(load("threads")).suite, libs).jobs} == set(thread_counts("all"))


def test_a_smoke_form_says_why_it_leaves_a_case_out():
    small = smoke(load("bootstrap"))
    assert not small.suite.cases and len(small.skipped) == len(load("bootstrap").cases) == 3
    for line, lib in zip(small.skipped, ("lattigo", "openfhe", "openfhe")):
        assert line.startswith("smoke: skipped bootstrap cases[") and f"({lib}; ckks; bootstrap)" in line
        assert f"smallest ring is N = 65536, above the smoke form's largest, N = {SMOKE_MAX_N}" in line


def test_a_smoke_form_keeps_a_larger_set_only_where_an_op_needs_it():
    """study4's 8- and 16-bit integers: compare_16 exists only at 16 bits, so both widths stay; study3's
    vector lengths shrink to the shortest and the longest."""
    case = next(c for c in smoke(load("study4")).suite.cases if "compare_16" in c.ops and c.schemes == ["tfhe_int"])
    assert len(case.params) == 2
    assert smoke(load("study3")).suite.cases[0].slots == [128, 2048]
