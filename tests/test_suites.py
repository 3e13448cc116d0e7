from fhemark.drivers.registry import manifests
from fhemark.plan.jobs import build
from fhemark.plan.suites import builtin_names, load


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
