"""The results file of a resumable evaluation: one SQLite file of finished chunks.

:func:`attnwidget.evaluate` with ``store="results.sqlite"`` writes each chunk
of examples (``batch_size`` of them, cut by position in the data) in one
transaction as soon as it is computed; a run that is interrupted (an
exception, a killed kernel or process) leaves every finished chunk in the
file, and the next run with the same file loads them instead of computing
them again. The file is its own, not the annotation store's: results are
many and machine-written, rationales few and precious, and one can be
deleted without touching the other.

Tables (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`):

* ``meta(key, value)``: ``application`` = ``attnwidget.evaluation``, and
  ``config``: the evaluation's settings as JSON (methods, method options,
  metrics, target, blank id, batch size, truncation, torch threads, k, a
  fingerprint of the model's class, config and weights, attnwidget's
  version). A run whose settings differ is refused: mixing them would give
  numbers that no single run gives.
* ``examples``: one row per finished example: ``position`` in the data,
  ``example_id``, ``digest`` (of its id, text, pair, label and rationale:
  data that changed under a stored position is refused), ``chunk``,
  ``target`` (JSON), ``target_id``, ``probability``, ``tokens`` (JSON),
  ``query_index`` and ``compared`` (JSON: the positions the metrics remove
  or compare; NULL in rows written under schema 1, which a file of that
  version gains as a column when it is opened, its rows kept).
* ``method_results``: per (position, method): the float32 token ``scores``
  (little-endian bytes) and the metric values (JSON, which round-trips every
  float64 exactly, NaN included).
* ``chunks``: the finished chunks; a chunk is in it only with all of its rows.

WAL mode with ``synchronous=NORMAL``: a committed chunk survives a crash of
the process; a power cut may lose the last ones, which are recomputed.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from attnwidget.errors import InputError
from attnwidget.evaluation._compute import ChunkResult, ExampleResult

APPLICATION = "attnwidget.evaluation"
SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chunks (chunk INTEGER PRIMARY KEY, size INTEGER NOT NULL, finished_at TEXT NOT NULL);
CREATE TABLE examples (
    position INTEGER PRIMARY KEY,
    example_id TEXT NOT NULL UNIQUE,
    digest TEXT NOT NULL,
    chunk INTEGER NOT NULL REFERENCES chunks(chunk),
    target TEXT NOT NULL,
    target_id INTEGER NOT NULL,
    probability REAL NOT NULL,
    tokens TEXT NOT NULL,
    query_index INTEGER NOT NULL,
    compared TEXT
);
CREATE TABLE method_results (
    position INTEGER NOT NULL REFERENCES examples(position),
    method TEXT NOT NULL,
    scores BLOB NOT NULL,
    metrics TEXT NOT NULL,
    PRIMARY KEY (position, method)
);
"""


def _json_target(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    try:
        return json.dumps(value)
    except TypeError:
        return json.dumps(str(value))


class ResultsFile:
    """An open results file for one evaluation ``config`` (see the module docstring)."""

    def __init__(self, path: str | Path, config: dict[str, Any]) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise InputError(f"store={str(self.path)!r} is a folder; pass a file path.")
        try:
            self._conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        except sqlite3.OperationalError as error:
            raise InputError(f"cannot open or create {self.path} ({error}).") from None
        try:
            self._prepare(json.loads(json.dumps(config)))
        except BaseException:
            self._conn.close()
            raise

    def _prepare(self, config: dict[str, Any]) -> None:
        conn = self._conn
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as error:
            raise InputError(f"{self.path} is not an SQLite file ({error}).") from None
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            if not tables:
                for statement in _SCHEMA.split(";"):  # executescript would commit
                    if statement.strip():
                        conn.execute(statement)
                conn.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [("application", APPLICATION), ("config", json.dumps(config, sort_keys=True))],
                )
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            else:
                self._check(config, tables)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _check(self, config: dict[str, Any], tables: set[str]) -> None:
        conn = self._conn
        meta = {}
        if "meta" in tables:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("application") != APPLICATION:
            raise InputError(
                f"{self.path} is an SQLite file but not an attnwidget results file; pass a "
                "new path to store=."
            )
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 1:  # schema 2 adds a nullable column; the stored rows stay
            conn.execute("ALTER TABLE examples ADD COLUMN compared TEXT")
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            version = SCHEMA_VERSION
        if version != SCHEMA_VERSION:
            raise InputError(
                f"{self.path} has results schema {version}; this attnwidget reads "
                f"{SCHEMA_VERSION}. Pass a new path to store=."
            )
        stored = json.loads(meta["config"])
        differ = sorted(k for k in set(stored) | set(config) if stored.get(k) != config.get(k))
        if differ:
            raise InputError(
                f"{self.path} holds results of another evaluation (it differs in: "
                f"{', '.join(differ)}); resuming would mix them. Pass a new path to store=, "
                "or delete the file to start over."
            )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finished(self) -> set[int]:
        """The indices of the chunks already in the file."""
        return {r[0] for r in self._conn.execute("SELECT chunk FROM chunks")}

    def check(self, digests: dict[int, str]) -> None:
        """Refuse when a stored position holds another example now (``digests``: by position)."""
        for position, digest in self._conn.execute("SELECT position, digest FROM examples"):
            if position not in digests or digests[position] != digest:
                raise InputError(
                    f"{self.path}: example {position} changed since it was evaluated (or the "
                    "data is shorter); pass a new path to store= or delete the file."
                )

    def load(self, chunk: int) -> ChunkResult:
        """The stored results of one chunk."""
        rows = self._conn.execute(
            "SELECT position, example_id, target, target_id, probability, tokens, query_index,"
            " compared FROM examples WHERE chunk = ? ORDER BY position",
            (chunk,),
        ).fetchall()
        examples = []
        for position, ident, target, target_id, probability, tokens, query, compared in rows:
            result = ExampleResult(
                position=position,
                id=ident,
                target=json.loads(target),
                target_id=target_id,
                probability=probability,
                tokens=json.loads(tokens),
                query_index=query,
                compared=None if compared is None else json.loads(compared),
            )
            for method, scores, metrics in self._conn.execute(
                "SELECT method, scores, metrics FROM method_results WHERE position = ?"
                " ORDER BY rowid",
                (position,),
            ):
                result.scores[method] = np.frombuffer(scores, dtype="<f4").copy()
                result.values[method] = json.loads(metrics)
            examples.append(result)
        return ChunkResult(index=chunk, examples=examples)

    def write(self, result: ChunkResult, digests: dict[int, str]) -> None:
        """Store one finished chunk, all of it or nothing (one transaction)."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "INSERT INTO chunks VALUES (?, ?, ?)",
                (result.index, len(result.examples), datetime.now(timezone.utc).isoformat()),
            )
            for ex in result.examples:
                conn.execute(
                    "INSERT INTO examples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        ex.position,
                        ex.id,
                        digests[ex.position],
                        result.index,
                        _json_target(ex.target),
                        ex.target_id,
                        ex.probability,
                        json.dumps(ex.tokens, ensure_ascii=False),
                        ex.query_index,
                        None if ex.compared is None else json.dumps(ex.compared),
                    ),
                )
                conn.executemany(
                    "INSERT INTO method_results VALUES (?, ?, ?, ?)",
                    [
                        (
                            ex.position,
                            method,
                            np.asarray(ex.scores[method], dtype="<f4").tobytes(),
                            json.dumps(ex.values[method]),
                        )
                        for method in ex.scores
                    ],
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
