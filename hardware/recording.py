"""One SQLite file per lab session: every tool call, report, event and room sample.

The file is in WAL mode: readers (`twin lab report`, `replay`) can open it while a session
writes, and a session killed with SIGKILL leaves every committed row readable (the WAL is
replayed on the next open). Rows are queued and committed by a writer thread every
`flush_interval` seconds (0.2 by default): a kill -9 loses at most that much. A restarted
session appends a new run to the same file.

Schema (times: `wall` is Unix seconds, `tick` the twin's virtual tick, 0.1 s each):

    meta(key TEXT PRIMARY KEY, value TEXT)           -- schema_version, created
    runs(run INTEGER PRIMARY KEY, wall REAL, tick INTEGER, time TEXT,
         lab TEXT,         -- the lab file, as validated JSON
         source TEXT,      -- the lab file's path
         snapshot TEXT,    -- the twin home's snapshot when the run started (JSON)
         devices TEXT,     -- JSON {device id: {"kind": twin|bound|added, "mode", "bind", "node_id"}}
         network TEXT,     -- JSON of the network conditions, or null
         ended REAL)       -- wall time of a clean end; null after a crash
    calls(id INTEGER PRIMARY KEY, run, step INTEGER, wall REAL, wall_end REAL, tick INTEGER,
          source TEXT,     -- "script", "agent", "shadow"
          tool TEXT, args TEXT, result TEXT, ok INTEGER)
    reports(id INTEGER PRIMARY KEY, run, wall REAL, tick INTEGER,
            source TEXT,   -- "real" (a subscription report) or "twin" (a cluster server change)
            device TEXT, endpoint INTEGER, cluster TEXT, attribute TEXT, value TEXT)
    samples(id INTEGER PRIMARY KEY, run, wall REAL, tick INTEGER, room TEXT,
            temperature REAL, humidity REAL, illuminance REAL, pm10 REAL)
    events(id INTEGER PRIMARY KEY, run, wall REAL, tick INTEGER, source TEXT, kind TEXT,
           device TEXT, detail TEXT)
      -- kinds: node_unavailable, node_available, matter_event, twin_event, coupling_error,
      --        divergence, expectation_failed, netem, session_start, session_end, error
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
_TABLES = {
    "calls": ("run", "step", "wall", "wall_end", "tick", "source", "tool", "args", "result", "ok"),
    "reports": ("run", "wall", "tick", "source", "device", "endpoint", "cluster", "attribute", "value"),
    "samples": ("run", "wall", "tick", "room", "temperature", "humidity", "illuminance", "pm10"),
    "events": ("run", "wall", "tick", "source", "kind", "device", "detail"),
}
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs(run INTEGER PRIMARY KEY, wall REAL, tick INTEGER, time TEXT,
    lab TEXT, source TEXT, snapshot TEXT, devices TEXT, network TEXT, ended REAL);
CREATE TABLE IF NOT EXISTS calls(id INTEGER PRIMARY KEY, run INTEGER, step INTEGER, wall REAL,
    wall_end REAL, tick INTEGER, source TEXT, tool TEXT, args TEXT, result TEXT, ok INTEGER);
CREATE TABLE IF NOT EXISTS reports(id INTEGER PRIMARY KEY, run INTEGER, wall REAL, tick INTEGER,
    source TEXT, device TEXT, endpoint INTEGER, cluster TEXT, attribute TEXT, value TEXT);
CREATE TABLE IF NOT EXISTS samples(id INTEGER PRIMARY KEY, run INTEGER, wall REAL, tick INTEGER,
    room TEXT, temperature REAL, humidity REAL, illuminance REAL, pm10 REAL);
CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY, run INTEGER, wall REAL, tick INTEGER,
    source TEXT, kind TEXT, device TEXT, detail TEXT);
CREATE INDEX IF NOT EXISTS reports_by_device ON reports(run, device, wall);
"""


class RecordingError(Exception):
    """The recording file cannot be opened or is not a lab recording (one line)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def connect(path: str | Path, create: bool = False) -> sqlite3.Connection:
    path = Path(path)
    if not create and not path.exists():
        raise RecordingError(f"{path}: no such recording")
    try:
        db = sqlite3.connect(str(path), check_same_thread=False, timeout=10)
        db.execute("PRAGMA journal_mode=WAL")
        if create:
            db.executescript(SCHEMA)
            db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            db.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)", (str(time.time()),))
            db.commit()
        version = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.DatabaseError as err:
        raise RecordingError(f"{path}: not a lab recording ({err})") from None
    if version is None or int(version[0]) != SCHEMA_VERSION:
        raise RecordingError(f"{path}: recording schema {version and version[0]} is not "
                             f"{SCHEMA_VERSION}")
    return db


class Recorder:
    """Appends one run to a session file; thread-safe, committed in the background."""

    def __init__(self, path: str | Path, flush_interval: float = 0.2):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = connect(self.path, create=True)
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.run: int | None = None
        self._rows: dict[str, list[tuple[Any, ...]]] = {t: [] for t in _TABLES}
        self._lock = threading.Lock()
        self._db_lock = threading.Lock()
        self._interval = flush_interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="lab-recorder")
        self._thread.start()

    def start_run(self, *, wall: float, tick: int, time_text: str, lab: Any, source: str,
                  snapshot: Any, devices: Any, network: Any) -> int:
        with self._db_lock:
            cur = self.db.execute(
                "INSERT INTO runs(wall, tick, time, lab, source, snapshot, devices, network) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (wall, tick, time_text, _dumps(lab), source, _dumps(snapshot), _dumps(devices),
                 _dumps(network)))
            self.db.commit()
        self.run = int(cur.lastrowid)
        return self.run

    # ---- rows (queued) ---------------------------------------------------------------
    def call(self, step: int, wall: float, wall_end: float, tick: int, source: str, tool: str,
             args: Any, result: Any) -> None:
        self._add("calls", (self.run, step, wall, wall_end, tick, source, tool, _dumps(args),
                            _dumps(result), int(bool(result.get("ok")))))

    def report(self, wall: float, tick: int, source: str, device: str, endpoint: int,
               cluster: str, attribute: str, value: Any) -> None:
        self._add("reports", (self.run, wall, tick, source, device, endpoint, cluster, attribute,
                              _dumps(value)))

    def sample(self, wall: float, tick: int, room: str, state: dict[str, float]) -> None:
        self._add("samples", (self.run, wall, tick, room, state.get("temperature"),
                              state.get("humidity"), state.get("illuminance"), state.get("pm10")))

    def event(self, wall: float, tick: int | None, source: str, kind: str, device: str | None,
              detail: Any) -> None:
        self._add("events", (self.run, wall, tick, source, kind, device, _dumps(detail)))

    def _add(self, table: str, row: tuple[Any, ...]) -> None:
        with self._lock:
            self._rows[table].append(row)

    # ---- writing -----------------------------------------------------------------------
    def flush(self) -> None:
        with self._lock:
            rows, self._rows = self._rows, {t: [] for t in _TABLES}
        if not any(rows.values()):
            return
        with self._db_lock:
            for table, batch in rows.items():
                if batch:
                    cols = _TABLES[table]
                    self.db.executemany(f"INSERT INTO {table}({','.join(cols)}) VALUES "
                                        f"({','.join('?' * len(cols))})", batch)
            self.db.commit()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.flush()

    def close(self, wall: float | None = None) -> None:
        self._stop.set()
        self._thread.join(5)
        self.flush()
        if self.run is not None and wall is not None:
            with self._db_lock:
                self.db.execute("UPDATE runs SET ended=? WHERE run=?", (wall, self.run))
                self.db.commit()
        self.db.close()


# ---- reading ------------------------------------------------------------------------------

class Recording:
    """Read access to a session file (also while it is being written)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.db = connect(self.path)
        self.db.row_factory = sqlite3.Row

    def runs(self) -> list[dict[str, Any]]:
        return [_row(r) for r in self.db.execute("SELECT * FROM runs ORDER BY run")]

    def run(self, run: int | None = None) -> dict[str, Any]:
        runs = self.runs()
        if not runs:
            raise RecordingError(f"{self.path}: the recording has no runs")
        if run is None:
            return runs[-1]
        for r in runs:
            if r["run"] == run:
                return r
        raise RecordingError(f"{self.path}: no run {run}; runs: {', '.join(str(r['run']) for r in runs)}")

    def rows(self, table: str, run: int) -> list[dict[str, Any]]:
        if table not in _TABLES:
            raise ValueError(table)
        return [_row(r) for r in self.db.execute(f"SELECT * FROM {table} WHERE run=? ORDER BY id", (run,))]

    def counts(self, run: int) -> dict[str, int]:
        return {t: self.db.execute(f"SELECT COUNT(*) FROM {t} WHERE run=?", (run,)).fetchone()[0]
                for t in _TABLES}

    def close(self) -> None:
        self.db.close()


_JSON_COLUMNS = {"lab", "snapshot", "devices", "network", "args", "result", "value", "detail"}


def _row(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    for key in _JSON_COLUMNS & out.keys():
        if out[key] is not None:
            out[key] = json.loads(out[key])
    return out


__all__ = ["Recorder", "Recording", "RecordingError", "SCHEMA", "SCHEMA_VERSION", "connect"]
