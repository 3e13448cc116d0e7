"""Records made by hand for tests. The readers (analyse, advise, report) take Records as the store
gives them, so a test's record is made as one: the fields it names, the contract's required fields
defaulted where it does not care."""

from fhemark.store.record import Record, checked

REQUIRED = {"library": "seal", "scheme": "bfv", "op": "add", "params": {"N": 8192}, "status": "ok", "job_key": "k",
            "suite": "s", "run_id": "r", "timestamp": 0.0, "env": {}}


def record(**fields) -> Record:
    """A Record of `fields` (checked against the contract), each required field defaulted where not given."""
    return checked({**REQUIRED, **fields})
