"""The record type (store/record.py) is the export contract: the store refuses a record that breaks
it, and docs/export.md documents exactly its fields."""

import re
from pathlib import Path
from typing import get_args

import pytest

from fhemark.drivers.protocol import ErrorValue
from fhemark.store.record import FIELDS, Record, Status
from fhemark.store.sqlite import Store

DOC = Path(__file__).parents[1] / "docs" / "export.md"
GOOD = {"library": "seal", "scheme": "bfv", "op": "add", "params": {"N": 8192}, "status": "ok", "job_key": "k",
        "suite": "s", "run_id": "r", "timestamp": 1.0, "env": {}}


def test_status_words_are_ok_and_the_protocols_error_kinds():
    assert get_args(Status) == ("ok",) + get_args(ErrorValue.model_fields["kind"].annotation)


@pytest.mark.parametrize("bad, field", [({"status": "crash"}, "status"), ({"median": 3.0}, "median"),
                                        ({"mode": "fast"}, "mode"), ({"library": None}, "library")])
def test_the_store_refuses_a_record_that_breaks_the_contract(tmp_path, bad, field):
    store = Store(tmp_path / "s.db")
    run_id = store.start_run("s", "h", False, {}, {})
    store.add(run_id, "k", {**GOOD, "run_id": run_id})
    with pytest.raises(ValueError, match=f"breaks the export contract.*{field}"):
        store.add(run_id, "k2", {**GOOD, "run_id": run_id, **bad})
    assert len(list(store.records(run_id))) == 1  # nothing of the bad record was written


def test_docs_export_documents_exactly_the_records_fields():
    documented = set()
    for line in DOC.read_text().splitlines():
        if line.startswith("| `"):
            documented |= set(re.findall(r"`([a-z_0-9]+)`", line.split("|")[1]))
    assert documented == set(FIELDS), (f"undocumented: {sorted(set(FIELDS) - documented)}; "
                                       f"documented, no field: {sorted(documented - set(FIELDS))}")
    assert Record.model_config["extra"] == "forbid"
