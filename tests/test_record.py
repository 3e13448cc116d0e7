"""The record type (store/record.py) is the export contract: the store refuses a record that breaks
it, and docs/export.md documents exactly its fields."""

import re
from pathlib import Path
from typing import get_args

import pytest

from fhemark.drivers.protocol import Effective, ErrorValue, SetupResult
from fhemark.store.record import FIELDS, Record, Status, checked
from fhemark.store.sqlite import Store

DOC = Path(__file__).parents[1] / "docs" / "export.md"
GOOD = {"library": "seal", "scheme": "bfv", "op": "add", "params": {"N": 8192}, "status": "ok", "job_key": "k",
        "suite": "s", "run_id": "r", "timestamp": 1.0, "env": {}}


def test_effective_parameters_are_derived_once_from_the_primes():
    """PROTOCOL.md setup: a driver reports the primes (exact JSON integers); fhemark derives bit
    lengths, log Q, log QP, the default levels and dnum, and refuses derived fields beside primes."""
    q, p = [1125899906826241, 1099511480321, 1099511037953], [1152921504606748673]  # 50, 40, 40, 60 bits
    eff = Effective.of({"N": 8192, "q_primes": q, "p_primes": p, "slots": 4096, "scale_bits": 40, "sigma": 3.2})
    assert (eff.q_bits, eff.p_bits, eff.levels, eff.dnum, eff.sigma) == ([50, 40, 40], [60], 2, 3, 3.2)
    assert 129 < eff.log_q < 130 < 189 < eff.log_qp < 190 and "q_primes" not in eff.model_dump()
    assert Effective.of({"N": 8, "q_primes": q, "p_primes": p + p, "levels": 1, "dnum": 1}).dnum == 1
    assert Effective.of({"N": 8, "q_primes": q * 3, "p_primes": p + p}).dnum == 5  # ceil(9 / 2)
    for bad in ({"q_primes": q, "log_qp": 189.0}, {"q_primes": [float(x) for x in q]}):
        with pytest.raises(ValueError):
            SetupResult.model_validate({"effective": bad})
    assert Effective.of({"preset": "default", "q_bits": [32]}).q_bits == [32]  # a bit scheme's own facts


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


def _store_raw(store, run_id, fields):
    """A record as an earlier fhemark stored it: its JSON, never checked against this contract."""
    import json
    store.db.execute("INSERT INTO results (run_id, job_key, record, library, scheme, op, n, status, timestamp)"
                     " VALUES (?,?,?,?,?,?,?,?,?)", (run_id, fields["job_key"], json.dumps(fields), fields["library"],
                                                    fields["scheme"], fields["op"], 8192, fields["status"], 1.0))
    store.db.commit()


def test_a_record_an_earlier_version_stored_reads_back_as_a_record(tmp_path):
    """A Dask worker's failed job said "crash" before 25 Nov 2026: it reads back as "crashed" (the word
    every reader tests for), and exports with the fields it was stored with, nothing added."""
    from fhemark.store import export
    store = Store(tmp_path / "old.db")
    run_id = store.start_run("s", "h", False, {}, {})
    old = {**GOOD, "run_id": run_id, "status": "crash", "error": "its worker failed twice", "check_passed": None,
           "samples_ns": [], "median_ns": None, "ci95_ns": None, "suite": "", "vector_length": None}
    _store_raw(store, run_id, old)
    (rec,) = store.records(run_id)
    assert isinstance(rec, Record) and rec.status == "crashed" and rec.error == "its worker failed twice"
    assert export.records(store, run_id) == [{**old, "status": "crashed", "format_version": 1}]


def test_a_stored_record_that_does_not_read_is_one_line(tmp_path):
    from fhemark.errors import StoreError
    store = Store(tmp_path / "bad.db")
    run_id = store.start_run("s", "h", False, {}, {})
    _store_raw(store, run_id, {**GOOD, "run_id": run_id, "status": "exploded"})
    with pytest.raises(StoreError, match="does not read as a record.*status"):
        list(store.records(run_id))
