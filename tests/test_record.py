"""The record type (store/record.py) is the export contract: the store refuses a record that breaks
it, and docs/export.md documents exactly its fields."""

import re
from pathlib import Path
from typing import get_args

import pytest

from fhemark.drivers.protocol import ErrorValue
from fhemark.store.record import FIELDS, Record, Status, checked
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
    store.add(run_id, "k", checked({**GOOD, "run_id": run_id}))
    with pytest.raises(ValueError, match=f"breaks the export contract.*{field}"):
        store.add(run_id, "k2", checked({**GOOD, "run_id": run_id, **bad}))
    assert len(list(store.records(run_id))) == 1  # nothing of the bad record was written


def test_docs_export_documents_exactly_the_records_fields():
    documented = set()
    for line in DOC.read_text().splitlines():
        if line.startswith("| `"):
            documented |= set(re.findall(r"`([a-z_0-9]+)`", line.split("|")[1]))
    assert documented == set(FIELDS), (f"undocumented: {sorted(set(FIELDS) - documented)}; "
                                       f"documented, no field: {sorted(documented - set(FIELDS))}")
    assert Record.model_config["extra"] == "forbid"


def _exported(tmp_path):
    """A real store (a small run on SEAL: ok records with every nested field) exported both ways."""
    import csv
    import io
    import json

    from test_cli import SMALL, fhemark, write
    db = tmp_path / "e.db"
    assert fhemark("run", "--suite", write(tmp_path, SMALL), "--db", str(db), "--allow-insecure", "--report",
                   str(tmp_path / "r"), cwd=tmp_path).returncode == 0
    as_json = json.loads(fhemark("export", "--db", str(db)).stdout)
    as_csv = list(csv.DictReader(io.StringIO(fhemark("export", "--db", str(db), "--format", "csv").stdout)))
    return as_json, as_csv


def test_csv_and_json_exports_carry_the_same_fields_and_values(tmp_path):
    import json

    from fhemark.store.export import CSV_COLUMNS
    as_json, as_csv = _exported(tmp_path)
    assert len(as_json) == len(as_csv) > 0 and list(as_csv[0]) == CSV_COLUMNS and set(CSV_COLUMNS) == set(FIELDS)
    for j, c in zip(as_json, as_csv):
        assert set(j) <= set(c), set(j) - set(c)  # nothing the JSON has is missing from the CSV
        for field in FIELDS:
            value, cell = j.get(field), c[field]
            if value is None:
                assert cell == "", (field, cell)
            elif isinstance(value, (dict, list, bool)):
                assert json.loads(cell) == value, field
            elif isinstance(value, (int, float)):
                assert float(cell) == value, field
            else:
                assert cell == value, field


def test_every_export_validates_against_the_shipped_schema(tmp_path):
    import json

    import jsonschema

    from fhemark.store.record import export_schema
    shipped = json.loads((DOC.parent / "export.schema.json").read_text())
    assert shipped == export_schema(), "stale: python -m fhemark.store.record > docs/export.schema.json"
    as_json, _ = _exported(tmp_path)
    jsonschema.validate(as_json, shipped)
    assert all(r["format_version"] == 1 for r in as_json)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{**as_json[0], "status": "crash"}], shipped)
