"""The record: what a run stores for one measurement and the export carries (docs/export.md), as
one type. A record is made as one where it is measured (`checked`), stored from it and read back as
one (`stored`, Store.records), and every reader reads its fields by name: a field the contract does
not name, or a status word no reader knows (a worker's "crash" for "crashed"), is a bug caught where
the record is made, not a record that silently slips past the readers that test for the word."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import field_error

# "ok" and the protocol's error kinds (drivers/protocol.py ErrorValue; a test keeps them equal): the
# only words a record's status may hold.
Status = Literal["ok", "unsupported", "invalid_params", "insecure_params", "wrong_result", "timeout", "crashed",
                 "out_of_memory", "internal", "workload_error"]
Number = float | None
Bytes = int | None


class Record(BaseModel):
    """One measurement (or one stage of a pipeline, or a failed job). Optional fields are absent or
    null where they do not apply (a failed job has no samples; a latency record no throughput)."""

    model_config = ConfigDict(extra="forbid")

    # what ran, where, under which parameters
    library: str
    library_version: str | None = None
    driver_version: str | None = None
    library_build: dict[str, Any] | None = None
    wraps: str | None = None
    scheme: str
    op: str
    title: str | None = None
    params: dict[str, Any]
    effective_params: dict[str, Any] | None = None
    params_match: bool | None = None
    params_mismatch: list[str] = []
    security_bits: int | None = None
    security_table: str | None = None
    security: dict[str, dict[str, Any]] = {}
    insecure: bool = False
    p_fail_log2: Number = None
    slots: int | None = None
    vector_length: int | None = None
    threads: int = 1
    threads_used: int | None = None
    threads_honoured: bool | None = None
    workload: dict[str, Any] | None = None
    job_key: str
    suite: str
    run_id: str
    timestamp: float
    env: dict[str, Any]
    # the outcome
    status: Status
    error: str | None = None
    refusal: dict[str, Any] | None = None  # a failure's kind and numbers as a search reads them (PROTOCOL.md "Refusals")
    check_passed: bool | None = None
    samples_ns: list[float] = []
    sample_process: list[int] = []
    sample_round: list[int] = []
    # per sample, the runner's tick: libraries' samples with one tick (and round) were taken in
    # adjacent requests, tens of milliseconds apart; [] where the mode takes no ticks
    sample_tick: list[int] = []
    sample_scalars: list[Any] = []
    warmup_ns: list[float] = []
    copies: int | None = None
    iters: int | None = None
    # hot: each timed region warmed up by the same calls on the same operands just before it;
    # cold: not warmed up (README "Input state"). None: no
    # timed samples (a failure), or stored before input states were recorded (all cold).
    input_state: Literal["hot", "cold"] | None = None
    median_ns: Number = None
    mean_ns: Number = None
    stdev_ns: Number = None
    mad_ns: Number = None
    min_ns: Number = None
    max_ns: Number = None
    ci95_ns: list[float] | None = None
    ci_method: str | None = None
    rel_ci_half_width: Number = None
    processes: int | None = None
    process_medians_ns: list[float] = []
    outliers: dict[str, int] | None = None
    ns_per_slot: Number = None
    deviations: dict[str, str] = {}
    target_rel_ci: Number = None
    budget_s: Number = None
    stop_reason: str | None = None
    elapsed_s: Number = None
    setup_s: Number = None
    notes: list[str] = []
    # what the library's result and process said
    noise_budget_bits: Number = None
    precision_bits: Number = None
    precision_bits_before: Number = None
    max_abs_error: Number = None
    sizes_bytes: dict[str, int] = {}
    levels: dict[str, int] = {}
    peak_rss_bytes: Bytes = None
    driver_overhead_ns: Number = None
    parallelism: Number = None
    host_activity: dict[str, Any] | None = None
    # depth probes
    depth: int | None = None
    depth_limit: str | None = None
    noise_by_depth: list[float | None] = []
    precision_by_depth: list[float] = []
    # throughput mode (measure/throughput.py)
    mode: Literal["latency", "throughput"] = "latency"
    batch: int | None = None
    throughput_per_s: Number = None
    throughput_ci95: list[float] | None = None
    throughput_by_batch: list[dict[str, Any]] = []
    throughput_parallelism: Number = None
    throughput_peak_rss_bytes: Bytes = None
    throughput_cores: int | None = None
    throughput_method: str | None = None
    # set by the export, never stored: the version of this contract the export follows
    format_version: int | None = None


FIELDS = tuple(Record.model_fields)
# The export's version: a later version adds fields; renaming or removing one raises it.
FORMAT_VERSION = 1


def export_schema() -> dict:
    """The JSON Schema of `fhemark export --format json`: an array of records (docs/export.schema.json)."""
    item = Record.model_json_schema()
    defs = item.pop("$defs", {})
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "fhemark export",
              "description": "fhemark export --format json: one record per measurement (docs/export.md)",
              "type": "array", "items": item}
    if defs:
        schema["$defs"] = defs
    return schema


def checked(fields: dict[str, Any]) -> Record:
    """The record `fields` describe, checked against the contract: a record that breaks it is a bug
    in fhemark, raised as a ValueError that names the job and the field. Where a record is built, it
    is built through here."""
    try:
        return Record.model_validate(fields)
    except ValidationError as exc:
        field, msg = field_error(exc, top="record")
        raise ValueError(f"record of job {fields.get('job_key')} ({fields.get('library')} {fields.get('op')}) breaks "
                         f"the export contract (store/record.py): {field}: {msg}") from None


# What earlier fhemark versions stored otherwise, as this contract words it: a store they wrote still
# reads. A Dask worker's failed job said "crash" until 25 Nov 2026 (measure/cluster.py).
_STATUS_WAS = {"crash": "crashed"}


def stored(fields: dict[str, Any]) -> Record:
    """A record as read back from a store: what an earlier version wrote otherwise brought up to the
    contract first (`_STATUS_WAS`); a ValueError where it still breaks it."""
    if fields.get("status") in _STATUS_WAS:
        fields = {**fields, "status": _STATUS_WAS[fields["status"]]}
    return checked(fields)


if __name__ == "__main__":  # python -m fhemark.store.record > docs/export.schema.json
    import json
    print(json.dumps(export_schema(), indent=1))
