"""The SQLite store: the only module that touches the database.

Schema history (bump SCHEMA_VERSION and add a migration for every change):
  1: runs, results (one row per measurement; raw samples as JSON arrays).
  2: baselines (a name for a run, set once: a comparison's reference never moves).
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

from .errors import UserError

SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    suite TEXT NOT NULL,
    suite_hash TEXT NOT NULL,
    started REAL NOT NULL,
    finished REAL,
    allow_insecure INTEGER NOT NULL,
    env TEXT NOT NULL,
    plan TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    job_key TEXT NOT NULL,
    record TEXT NOT NULL,
    library TEXT NOT NULL,
    scheme TEXT NOT NULL,
    op TEXT NOT NULL,
    n INTEGER,
    status TEXT NOT NULL,
    timestamp REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS results_run ON results(run_id, job_key);
CREATE TABLE IF NOT EXISTS baselines (
    name TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    created REAL NOT NULL
);
"""

# version -> the step to the next one. The schema script above already creates every
# table that is missing, so a step only records what it added.
_MIGRATIONS = {1: "baselines table"}


class Store:
    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(self.path)
            self.db.executescript(_SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.path}: not a usable fhemark store ({exc})", "pass --db with another file")
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            self.db.commit()
        elif int(row[0]) < SCHEMA_VERSION and all(v in _MIGRATIONS for v in range(int(row[0]), SCHEMA_VERSION)):
            self.db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
            self.db.commit()
        elif int(row[0]) != SCHEMA_VERSION:
            raise UserError(f"{self.path}: store schema {row[0]}, this fhemark reads {SCHEMA_VERSION}",
                            "use a new --db file or the fhemark version that wrote it")

    def close(self) -> None:
        self.db.close()

    # -- runs ----------------------------------------------------------------
    def start_run(self, suite: str, suite_hash: str, allow_insecure: bool, env: dict, plan: dict) -> str:
        run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?)",
                        (run_id, suite, suite_hash, time.time(), None, int(allow_insecure), json.dumps(env),
                         json.dumps(plan)))
        self.db.commit()
        return run_id

    def finish_run(self, run_id: str) -> None:
        self.db.execute("UPDATE runs SET finished=? WHERE run_id=?", (time.time(), run_id))
        self.db.commit()

    def latest_run(self, suite_hash: str) -> dict | None:
        row = self.db.execute("SELECT run_id, finished FROM runs WHERE suite_hash=? ORDER BY started DESC LIMIT 1",
                              (suite_hash,)).fetchone()
        return {"run_id": row[0], "finished": row[1]} if row else None

    def run_env(self, run_id: str) -> dict:
        row = self.db.execute("SELECT env FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    def run_ids(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT run_id FROM runs ORDER BY started")]

    # -- baselines -----------------------------------------------------------
    def save_baseline(self, name: str, run_id: str) -> None:
        if name in ("latest", "previous") or any(i.startswith(name) for i in self.run_ids()):
            raise UserError(f"baseline name `{name}` reads as a run reference", "choose another name")
        try:
            self.db.execute("INSERT INTO baselines VALUES (?,?,?)", (name, run_id, time.time()))
        except sqlite3.IntegrityError:
            raise UserError(f"baseline `{name}` exists ({self.baselines()[name]})",
                            "baselines never move: choose a new name, or `fhemark baseline drop` it first")
        self.db.commit()

    def drop_baseline(self, name: str) -> None:
        if self.db.execute("DELETE FROM baselines WHERE name=?", (name,)).rowcount == 0:
            raise UserError(f"no baseline `{name}` in {self.path}", "see `fhemark baseline list`")
        self.db.commit()

    def baselines(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT name, run_id FROM baselines ORDER BY created"))

    def resolve_run(self, ref: str | None) -> str | None:
        """A baseline name, a run id, a unique prefix of one, `latest` or `previous` (the run before the
        latest); None: every run."""
        if ref is None:
            return None
        named_runs = self.baselines()
        if ref in named_runs:
            return named_runs[ref]
        ids = self.run_ids()
        named = {"latest": -1, "previous": -2}
        if ref in named:
            if len(ids) < -named[ref]:
                raise UserError(f"{self.path} has {len(ids)} run(s), no `{ref}` run", "run `fhemark run` first")
            return ids[named[ref]]
        hits = [i for i in ids if i.startswith(ref)]
        if len(hits) != 1:
            what = "no run" if not hits else f"{len(hits)} runs"
            raise UserError(f"{what} in {self.path} matches `{ref}`",
                            "give a run id from `fhemark runs`, a baseline name, or `latest` / `previous`")
        return hits[0]

    def runs(self) -> list[dict]:
        rows = self.db.execute("SELECT r.run_id, r.suite, r.started, r.finished, COUNT(x.id) FROM runs r"
                               " LEFT JOIN results x ON x.run_id = r.run_id GROUP BY r.run_id ORDER BY r.started")
        return [{"run_id": a, "suite": b, "started": c, "finished": d, "results": n} for a, b, c, d, n in rows]

    # -- results -------------------------------------------------------------
    def add(self, run_id: str, job_key: str, record: dict[str, Any]) -> None:
        """Write one measurement at once: an interrupted run keeps everything before it."""
        self.db.execute(
            "INSERT INTO results (run_id, job_key, record, library, scheme, op, n, status, timestamp)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (run_id, job_key, json.dumps(record), record["library"], record["scheme"], record["op"],
             (record.get("params") or {}).get("N"), record["status"], record["timestamp"]))
        self.db.commit()

    def done_keys(self, run_id: str) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT DISTINCT job_key FROM results WHERE run_id=?", (run_id,))}

    def records(self, run_id: str | None = None) -> Iterator[dict]:
        q, args = "SELECT record FROM results", ()
        if run_id:
            q, args = q + " WHERE run_id=?", (run_id,)
        for (rec,) in self.db.execute(q + " ORDER BY id", args):
            yield json.loads(rec)
