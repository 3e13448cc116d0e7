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
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import StoreError, UserError
from .record import Record, stored

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

# SQLite's application id (header bytes 68..71): "FHMK". A file is opened as a store only when it
# carries this id, is empty or new, or is a store written before the id existed (a meta table with
# a schema version); anything else is refused before a byte is written to it.
APPLICATION_ID = 0x46484D4B
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _sqlite_problem(path: Path, exc: sqlite3.Error, doing: str, option: str = "--db") -> StoreError:
    """One line naming the store, what failed and what to do; everything committed before stays."""
    text = str(exc)
    low = text.lower()
    if "readonly" in low or "read-only" in low:
        return StoreError(f"{path}: the store is read-only, {doing} failed ({text})",
                          f"make the file and its folder writable, or pass {option} with a writable file")
    if "disk is full" in low or "database or disk is full" in low:
        return StoreError(f"{path}: the disk is full, {doing} failed; everything stored before it is kept",
                          f"free some space, or pass {option} with a file on another disk")
    if "locked" in low or "busy" in low:
        return StoreError(f"{path}: the store is locked by another process, {doing} failed",
                          f"wait for the other fhemark to finish, or pass {option} with another file")
    if "unable to open" in low:
        return StoreError(f"{path}: cannot open the store ({text})", "check that its folder exists and is writable")
    if "malformed" in low or "not a database" in low or "corrupt" in low:
        return StoreError(f"{path}: the store is damaged ({text})",
                          f"pass {option} with another file (`sqlite3 FILE .recover` may save its contents)")
    return StoreError(f"{path}: {doing} failed ({type(exc).__name__}: {text})", f"pass {option} with another file")


def inspect(path: Path, option: str = "--db") -> str:
    """What `path` holds: 'missing', 'empty', 'fhemark' (this application id) or 'legacy' (an fhemark
    store from before the id). Anything else raises StoreError: nothing is written to it; its fix names
    `option`, the flag that gave the path."""
    if not path.exists():
        if path.is_symlink():
            raise StoreError(f"{path}: a link to a missing file", f"pass {option} with a file path")
        if not path.parent.is_dir():
            raise StoreError(f"{path}: folder '{path.parent}' does not exist", f"create it or pass {option} with another path")
        return "missing"
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not an fhemark store", f"pass {option} with a file, e.g. {path / 'fhemark.db'}")
    if not path.is_file():
        raise StoreError(f"{path} is not a regular file", f"pass {option} with a file path")
    try:
        with path.open("rb") as f:
            head = f.read(100)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the store ({exc.strerror or exc})", f"check its permissions or pass {option}")
    if not head:
        return "empty"
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        raise StoreError(f"{path} is not an fhemark store (not an SQLite database; nothing was written to it)",
                         f"pass {option} with another file, or remove this one if it is yours to delete")
    app = int.from_bytes(head[68:72], "big")
    if app == APPLICATION_ID:
        return "fhemark"
    if app != 0:
        raise StoreError(f"{path} is another application's SQLite database (application id {app:#010x}), not an "
                         "fhemark store; nothing was written to it", f"pass {option} with another file")
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            version = con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() \
                if "meta" in tables else None
            user_version = con.execute("PRAGMA user_version").fetchone()[0]
            # An fhemark store from before the application id: its own tables, with its columns.
            ours = {"meta", "runs", "results"} <= tables and {"run_id", "job_key", "record"} <= {
                r[1] for r in con.execute("PRAGMA table_info(results)")}
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise _sqlite_problem(path, exc, "reading its header", option)
    if user_version != 0:  # set by its application (fhemark never sets it): even with no table yet
        raise StoreError(f"{path} is another application's SQLite database (user_version {user_version}), not an "
                         "fhemark store; nothing was written to it", f"pass {option} with another file")
    if version is None or not ours:
        if not tables:
            return "empty"
        listed = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise StoreError(f"{path} is an SQLite database but not an fhemark store (tables: {listed}); nothing was "
                         "written to it", f"pass {option} with another file")
    return "legacy"


class Store:
    """`readonly`: for commands that only read (export, report, runs, compare, recommend): the file
    must already be a store, and is opened so that nothing can be written to it."""

    def __init__(self, path: Path, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        kind = inspect(self.path)
        if readonly and kind in ("missing", "empty"):
            raise StoreError(f"store {self.path} {'does not exist' if kind == 'missing' else 'is empty'}",
                             "run `fhemark run` first or pass --db")
        try:
            if readonly:
                self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
            else:
                self.db = sqlite3.connect(self.path, timeout=30)
            row = self._open(kind)
        except sqlite3.Error as exc:
            raise _sqlite_problem(self.path, exc, "opening the store")
        if row is not None and int(row[0]) > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: store schema {row[0]}, this fhemark reads {SCHEMA_VERSION}",
                             "use a new --db file or the fhemark version that wrote it")

    def _open(self, kind: str):
        """The stored schema version (None for a new store), creating or migrating the schema when writable."""
        fresh = kind in ("missing", "empty")
        row = None if fresh else self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is not None and not str(row[0]).isdigit():
            raise StoreError(f"{self.path}: its schema_version {str(row[0])[:40]!r} is not a number: not an fhemark "
                             "store, or a damaged one; nothing was written to it", "pass --db with another file")
        self._tables = set() if fresh else {r[0] for r in self.db.execute("SELECT name FROM sqlite_master")}
        if self.readonly and not {"runs", "results"} <= self._tables:
            raise StoreError(f"store {self.path} has no runs yet", "run `fhemark run` first or pass --db")
        if self.readonly or (row is not None and int(row[0]) > SCHEMA_VERSION):
            return row
        if fresh or kind == "legacy":
            self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        self.db.executescript(_SCHEMA)
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) < SCHEMA_VERSION and all(v in _MIGRATIONS for v in range(int(row[0]), SCHEMA_VERSION)):
            self.db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
        self.db.commit()
        self._tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master")}
        return row

    @contextmanager
    def _sql(self, doing: str):
        """Every statement: an SQLite failure becomes one line; a failed write is rolled back, what was
        committed before it stays."""
        try:
            yield
        except sqlite3.Error as exc:
            try:
                self.db.rollback()
            except sqlite3.Error:
                pass
            raise _sqlite_problem(self.path, exc, doing)

    def close(self) -> None:
        try:
            self.db.close()
        except sqlite3.Error:
            pass

    # -- runs ----------------------------------------------------------------
    def start_run(self, suite: str, suite_hash: str, allow_insecure: bool, env: dict, plan: dict) -> str:
        run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        with self._sql("starting a run"):
            self.db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?)",
                            (run_id, suite, suite_hash, time.time(), None, int(allow_insecure), json.dumps(env),
                             json.dumps(plan)))
            self.db.commit()
        return run_id

    def finish_run(self, run_id: str) -> None:
        with self._sql("marking the run finished"):
            self.db.execute("UPDATE runs SET finished=? WHERE run_id=?", (time.time(), run_id))
            self.db.commit()

    def latest_run(self, suite_hash: str) -> dict | None:
        with self._sql("reading runs"):
            row = self.db.execute("SELECT run_id, finished FROM runs WHERE suite_hash=? ORDER BY started DESC LIMIT 1",
                                  (suite_hash,)).fetchone()
        return {"run_id": row[0], "finished": row[1]} if row else None

    def latest_run_of_suite(self, suite: str) -> dict | None:
        """The newest run of a suite by name, whatever its plan: what --resume compares against."""
        with self._sql("reading runs"):
            row = self.db.execute("SELECT run_id, finished, suite_hash FROM runs WHERE suite=? ORDER BY started DESC"
                                  " LIMIT 1", (suite,)).fetchone()
        return {"run_id": row[0], "finished": row[1], "suite_hash": row[2]} if row else None

    def run_plan(self, run_id: str) -> dict:
        """A run's stored plan (Plan.to_json: its suite, allow_insecure, its jobs); {} where unreadable."""
        with self._sql("reading a run's plan"):
            row = self.db.execute("SELECT plan FROM runs WHERE run_id=?", (run_id,)).fetchone()
        try:
            plan = json.loads(row[0]) if row else {}
        except (ValueError, TypeError):
            return {}
        return plan if isinstance(plan, dict) else {}

    def plan_keys(self, run_id: str) -> set[str]:
        """The job keys of a run's stored plan."""
        try:
            return {j["key"] for j in self.run_plan(run_id).get("jobs", [])}
        except (TypeError, KeyError, AttributeError):
            return set()

    def job_seconds(self) -> dict[str, float]:
        """Per job key, the newest time a finished measurement of it took (elapsed_s + setup_s): for
        estimating a plan from earlier runs. Only an estimate: a store it cannot be read from gives none."""
        try:
            with self._sql("reading earlier results"):
                rows = self.db.execute(  # json_valid: a record holding Infinity is Python's JSON, not SQLite's
                    "SELECT job_key, json_extract(record, '$.elapsed_s'), json_extract(record, '$.setup_s')"
                    " FROM results WHERE status='ok' AND json_valid(record) ORDER BY id").fetchall()
        except StoreError:
            return {}
        return {k: float(e) + float(s if isinstance(s, (int, float)) else 0) for k, e, s in rows
                if isinstance(e, (int, float))}

    def run_env(self, run_id: str) -> dict:
        with self._sql("reading a run"):
            row = self.db.execute("SELECT env FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    def run_ids(self) -> list[str]:
        with self._sql("reading runs"):
            return [r[0] for r in self.db.execute("SELECT run_id FROM runs ORDER BY started")]

    # -- baselines -----------------------------------------------------------
    def save_baseline(self, name: str, run_id: str) -> None:
        if not name.strip() or len(name) > 100 or any(c < " " or c == "\x7f" for c in name):
            raise UserError(f"baseline name {name!r} is not a name", "use printable text on one line, up to 100 characters")
        if name in ("latest", "previous") or any(i.startswith(name) for i in self.run_ids()):
            raise UserError(f"baseline name `{name}` reads as a run reference", "choose another name")
        try:
            with self._sql("saving the baseline"):
                self.db.execute("INSERT INTO baselines VALUES (?,?,?)", (name, run_id, time.time()))
                self.db.commit()
        except StoreError as exc:
            if "UNIQUE" not in exc.problem:
                raise
            raise UserError(f"baseline `{name}` exists ({self.baselines()[name]})",
                            "baselines never move: choose a new name, or `fhemark baseline drop` it first")

    def drop_baseline(self, name: str) -> None:
        with self._sql("dropping the baseline"):
            gone = self.db.execute("DELETE FROM baselines WHERE name=?", (name,)).rowcount
            self.db.commit()
        if gone == 0:
            raise UserError(f"no baseline `{name}` in {self.path}", "see `fhemark baseline list`")

    def baselines(self) -> dict[str, str]:
        if "baselines" not in self._tables:  # a schema-1 store opened read-only: none yet
            return {}
        with self._sql("reading baselines"):
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
        hits = [i for i in ids if i.startswith(ref)] if ref else []
        if len(hits) != 1:
            what = "no run" if not hits else f"{len(hits)} runs"
            raise UserError(f"{what} in {self.path} matches `{ref}`",
                            "give a run id from `fhemark runs`, a baseline name, or `latest` / `previous`")
        return hits[0]

    def runs(self) -> list[dict]:
        with self._sql("reading runs"):
            rows = self.db.execute("SELECT r.run_id, r.suite, r.started, r.finished, COUNT(x.id) FROM runs r"
                                   " LEFT JOIN results x ON x.run_id = r.run_id GROUP BY r.run_id ORDER BY r.started"
                                   ).fetchall()
        return [{"run_id": a, "suite": b, "started": c, "finished": d, "results": n} for a, b, c, d, n in rows]

    # -- results -------------------------------------------------------------
    def add(self, run_id: str, job_key: str, record: Record) -> None:
        """Write one measurement at once: an interrupted run keeps everything before it. The fields it
        was made with are stored (one left out stays absent, as in the export)."""
        with self._sql("storing a result"):
            self.db.execute(
                "INSERT INTO results (run_id, job_key, record, library, scheme, op, n, status, timestamp)"
                " VALUES (?,?,?,?,?,?,?,?,?)",
                (run_id, job_key, json.dumps(record.model_dump(exclude_unset=True)), record.library, record.scheme,
                 record.op, record.params.get("N"), record.status, record.timestamp))
            self.db.commit()

    def done_keys(self, run_id: str) -> set[str]:
        with self._sql("reading results"):
            return {r[0] for r in self.db.execute("SELECT DISTINCT job_key FROM results WHERE run_id=?", (run_id,))}

    def records(self, run_id: str | None = None) -> Iterator[Record]:
        """The stored records, oldest first, as Records (`record.stored`: an earlier version's words
        brought up to the contract)."""
        q, args = "SELECT id, record FROM results", ()
        if run_id:
            q, args = q + " WHERE run_id=?", (run_id,)
        with self._sql("reading results"):
            cur = self.db.execute(q + " ORDER BY id", args)
            while rows := cur.fetchmany(256):
                for row_id, rec in rows:
                    try:
                        yield stored(json.loads(rec))
                    except ValueError as exc:
                        raise StoreError(f"{self.path}: result {row_id} does not read as a record: {exc}",
                                         "export the store with the fhemark version that wrote it") from None
