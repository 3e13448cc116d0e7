"""Two versions of one library, told apart and paired: a name `lib@version` runs that version of
`lib` (the bare name, its pin), and one case measured at two versions pairs up where the job
matches but for the version (what `compare --versions` and the report's versions section judge)."""

from __future__ import annotations

import json

from ..store.record import Record


def cell(r: Record) -> tuple:
    """What libraries measured side by side share: the case without the library."""
    return (r.scheme, json.dumps(r.params, sort_keys=True, default=str), r.op, r.vector_length, r.threads, r.mode)


def base_library(name: str) -> str:
    """The library a name runs: `openfhe` of `openfhe@1.5.1` (the bare name: its pinned version)."""
    return name.partition("@")[0]


def version_of(r: Record) -> str:
    """The exact version the driver reported, else the one the name asked for."""
    return r.library_version or name_version(r.library) or "unknown"


def name_version(name: str) -> str:
    return name.partition("@")[2]


def case_key(r: Record) -> tuple:
    """A job without its version: what the record says of the resolved case (the job key hashes the
    library's full name, so two versions never share one) and of the policy it was measured under."""
    return (base_library(r.library), cell(r), r.input_state, r.target_rel_ci, r.budget_s,
            (r.workload or {}).get("file_sha256"))


def version_pairs(base: list[Record], new: list[Record], versions: tuple[str, str] | None = None
                  ) -> list[tuple[Record, Record]]:
    """Pairs of one case at two versions of one library. `versions` (old, new): the base run's
    records of the first name against the new run's of the second (both may be one run); None: every
    case left without a partner by its job key whose version-free case is unique on each side."""
    if versions is not None:
        old_of = {case_key(r): r for r in base if r.library == versions[0]}
        return [(old_of[k], r) for r in new if r.library == versions[1] and (k := case_key(r)) in old_of]
    keys = {(r.job_key, r.op) for r in base} & {(r.job_key, r.op) for r in new}
    left_base = [r for r in base if (r.job_key, r.op) not in keys]
    left_new = [r for r in new if (r.job_key, r.op) not in keys]

    def unique(recs: list[Record]) -> dict[tuple, Record]:
        by: dict[tuple, list[Record]] = {}
        for r in recs:
            by.setdefault(case_key(r), []).append(r)
        return {k: rs[0] for k, rs in by.items() if len(rs) == 1}
    olds, news = unique(left_base), unique(left_new)
    return [(olds[k], news[k]) for k in news if k in olds and olds[k].library != news[k].library]
