"""The SQLite store: the only module that touches the database.

Schema history (bump SCHEMA_VERSION and add a migration for every change):
  1: runs, results (one row per measurement; raw samples as JSON arrays).
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

from .errors import UserError

SCHEMA_VERSION = 1

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
"""


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

    def resolve_run(self, ref: str | None) -> str | None:
        """A run id, a unique prefix of one, `latest` or `previous` (the run before the latest); None: every run."""
        if ref is None:
            return None
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
                            "give a run id from `fhemark runs`, or `latest` / `previous`")
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
