"""The SQLite file behind :class:`~attnwidget.annotations.Store`: recognising it,
creating it and migrating it.

How a file is recognised as ours, before anything is written to it:

* it must open as SQLite (otherwise "not an SQLite database");
* an empty database (no tables, ``user_version`` 0) becomes a new store;
* otherwise it needs a ``meta`` table whose ``application`` row is
  :data:`APPLICATION` and a header ``application_id`` of 0 or
  :data:`APPLICATION_ID`; anything else is someone else's database;
* ``PRAGMA user_version`` is the schema version; one above
  :data:`SCHEMA_VERSION` was written by a newer attnwidget and is refused.

Versions and migrations: a new store is created at version 1 and then taken
through every step of :data:`MIGRATIONS` (``MIGRATIONS[k]`` turns version
``k + 1`` into ``k + 2``), so the code that upgrades old files is the code that
builds every new one. All of it runs in one ``BEGIN IMMEDIATE`` transaction:
two processes opening the same new file at once cannot both build it, and a
failed migration leaves the file as it was.

Version 1: ``meta``, ``items`` (words as JSON) and ``annotations`` (one row
per item and annotator: spans as JSON, label, note, saved_at).
Version 2: adds ``items.n_words`` (spans are checked without parsing the
words), ``annotations.confidence`` and ``annotations.revision``, a
``history`` table holding every save (the current rows of a v1 file become
revision 1), and an index on ``annotations(annotator, item_idx)`` for
``progress`` and ``first_unannotated``.
Version 3 (issue 23): ``annotations`` and ``history`` gain ``no_evidence``
(an explicit "nothing here is evidence"; a v2 row saved with no spans becomes
one, since saving nothing was how it was said), ``char_spans`` (character
offsets into the item text, computed from the word spans for old rows),
``guidelines_version``, ``seconds``, ``suggestion_shown``, ``granularity``
(``"word"`` for old rows) and ``reverted_from`` (the revision an undo
restored); ``annotations.history_id`` points at the history row of the
current version (the annotation's id). New tables: ``adjudications`` (the
rule and reason of a gold annotation, by its history id),
``adjudication_sources`` (the source annotations it was made from: annotator,
revision, history id) and ``assignments`` (who annotates which item), with
an index on ``assignments(annotator, item_idx)`` and one on the no-evidence
annotations of each annotator.
Version 4 (issue 23, people judging explanations): new tables only, nothing
old is touched. ``head_notes`` (a person's role and note for an attention
head or a flow edge of a model: ``kind`` "head" or "edge", ``model_name``,
``layer``, ``head`` or ``from_token``/``to_token``, the input's hash and
text, annotator, saved_at; append-only, the latest row per target and
annotator is current); ``rating_sessions`` (one per
:class:`~attnwidget.ExplanationRating`: mode, seed, whether method names
were shown, and the seeded order of its trials as JSON) and ``ratings``
(every answer: its session, order position, mode, seed, methods (JSON),
the side or control condition it was shown in, the rating / choice /
prediction, timing), with indexes by model and by session.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from attnwidget.errors import InputError

APPLICATION = "attnwidget.annotations"
"""The ``meta.application`` value of every store."""

APPLICATION_ID = 0x6177_6E31
"""The SQLite header's ``application_id`` (``PRAGMA application_id``): "awn1"."""

_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items (
    idx INTEGER PRIMARY KEY,
    item_id TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    label TEXT,
    text_pair TEXT,
    words TEXT NOT NULL
);
CREATE TABLE annotations (
    item_idx INTEGER NOT NULL REFERENCES items(idx),
    annotator TEXT NOT NULL,
    spans TEXT NOT NULL,
    label TEXT,
    note TEXT,
    saved_at TEXT NOT NULL,
    PRIMARY KEY (item_idx, annotator)
);
"""


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE items ADD COLUMN n_words INTEGER NOT NULL DEFAULT 0")
    rows = conn.execute("SELECT idx, words FROM items").fetchall()
    conn.executemany(
        "UPDATE items SET n_words = ? WHERE idx = ?",
        [(len(json.loads(words)), idx) for idx, words in rows],
    )
    conn.execute("ALTER TABLE annotations ADD COLUMN confidence REAL")
    conn.execute("ALTER TABLE annotations ADD COLUMN revision INTEGER NOT NULL DEFAULT 1")
    conn.execute(
        """CREATE TABLE history (
            id INTEGER PRIMARY KEY,
            item_idx INTEGER NOT NULL REFERENCES items(idx),
            annotator TEXT NOT NULL,
            revision INTEGER NOT NULL,
            spans TEXT NOT NULL,
            label TEXT,
            note TEXT,
            confidence REAL,
            saved_at TEXT NOT NULL,
            UNIQUE (item_idx, annotator, revision)
        )"""
    )
    conn.execute(
        """INSERT INTO history
               (item_idx, annotator, revision, spans, label, note, confidence, saved_at)
           SELECT item_idx, annotator, revision, spans, label, note, confidence, saved_at
           FROM annotations ORDER BY saved_at"""
    )
    conn.execute("CREATE INDEX annotations_by_annotator ON annotations (annotator, item_idx)")


_V3_COLUMNS = (
    "no_evidence INTEGER NOT NULL DEFAULT 0",
    "char_spans TEXT NOT NULL DEFAULT '[]'",
    "guidelines_version TEXT",
    "seconds REAL",
    "suggestion_shown TEXT",
    "granularity TEXT NOT NULL DEFAULT 'word'",
    "reverted_from INTEGER",
)

_V3_TABLES = (
    """CREATE TABLE adjudications (
        history_id INTEGER PRIMARY KEY REFERENCES history(id),
        rule TEXT NOT NULL,
        reason TEXT
    )""",
    """CREATE TABLE adjudication_sources (
        history_id INTEGER NOT NULL REFERENCES adjudications(history_id),
        annotator TEXT NOT NULL,
        revision INTEGER NOT NULL,
        source_id INTEGER NOT NULL REFERENCES history(id),
        PRIMARY KEY (history_id, annotator)
    )""",
    """CREATE TABLE assignments (
        item_idx INTEGER NOT NULL REFERENCES items(idx),
        annotator TEXT NOT NULL,
        PRIMARY KEY (item_idx, annotator)
    )""",
    "CREATE INDEX assignments_by_annotator ON assignments (annotator, item_idx)",
    "CREATE INDEX annotations_no_evidence ON annotations (annotator) WHERE no_evidence = 1",
)


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    from attnwidget.annotations._chars import chars_from_words, word_offsets

    for table in ("annotations", "history"):
        for column in _V3_COLUMNS:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    conn.execute("ALTER TABLE annotations ADD COLUMN history_id INTEGER REFERENCES history(id)")
    texts = dict(conn.execute("SELECT idx, text FROM items"))
    offsets: dict[int, list[tuple[int, int]]] = {}
    for table, key in (("annotations", "rowid"), ("history", "id")):
        updates = []
        for row_key, idx, spans in conn.execute(f"SELECT {key}, item_idx, spans FROM {table}"):
            if idx not in offsets:
                offsets[idx] = word_offsets(texts[idx])
            words = [(int(s), int(e)) for s, e in json.loads(spans)]
            chars = chars_from_words(words, offsets[idx])
            updates.append((json.dumps(chars), int(not words), row_key))
        conn.executemany(
            f"UPDATE {table} SET char_spans = ?, no_evidence = ? WHERE {key} = ?", updates
        )
    conn.execute(
        """UPDATE annotations SET history_id = (SELECT h.id FROM history h
           WHERE h.item_idx = annotations.item_idx AND h.annotator = annotations.annotator
           AND h.revision = annotations.revision)"""
    )
    for statement in _V3_TABLES:
        conn.execute(statement)


_V4_TABLES = (
    """CREATE TABLE head_notes (
        id INTEGER PRIMARY KEY,
        model_name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('head', 'edge')),
        layer INTEGER NOT NULL,
        head INTEGER,
        from_token INTEGER,
        to_token INTEGER,
        input_hash TEXT NOT NULL,
        input_text TEXT NOT NULL,
        role TEXT NOT NULL DEFAULT '',
        note TEXT NOT NULL DEFAULT '',
        annotator TEXT NOT NULL,
        saved_at TEXT NOT NULL,
        CHECK ((kind = 'head' AND head IS NOT NULL AND from_token IS NULL)
            OR (kind = 'edge' AND head IS NULL AND from_token IS NOT NULL
                AND to_token IS NOT NULL))
    )""",
    "CREATE INDEX head_notes_by_model ON head_notes (model_name, kind, layer)",
    """CREATE TABLE rating_sessions (
        session TEXT PRIMARY KEY,
        annotator TEXT NOT NULL,
        mode TEXT NOT NULL CHECK (mode IN ('rate', 'compare', 'simulate')),
        seed INTEGER NOT NULL,
        show_method INTEGER NOT NULL,
        methods TEXT NOT NULL,
        trials TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE ratings (
        id INTEGER PRIMARY KEY,
        session TEXT NOT NULL REFERENCES rating_sessions(session),
        position INTEGER NOT NULL,
        annotator TEXT NOT NULL,
        mode TEXT NOT NULL,
        seed INTEGER NOT NULL,
        input_hash TEXT NOT NULL,
        input_text TEXT NOT NULL,
        methods TEXT NOT NULL,
        method_shown INTEGER NOT NULL,
        explanation_shown INTEGER NOT NULL,
        rating INTEGER CHECK (rating IS NULL OR rating BETWEEN 1 AND 5),
        chosen TEXT,
        chosen_side TEXT,
        predicted TEXT,
        actual TEXT,
        correct INTEGER,
        note TEXT NOT NULL DEFAULT '',
        seconds REAL,
        saved_at TEXT NOT NULL
    )""",
    "CREATE INDEX ratings_by_session ON ratings (session, position)",
    "CREATE INDEX ratings_by_mode ON ratings (mode, annotator)",
)


def _v3_to_v4(conn: sqlite3.Connection) -> None:
    for statement in _V4_TABLES:
        conn.execute(statement)


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v1_to_v2, _v2_to_v3, _v3_to_v4]
"""``MIGRATIONS[k]`` upgrades a store from version ``k + 1`` to ``k + 2``."""

SCHEMA_VERSION = 1 + len(MIGRATIONS)
"""The version this code writes and reads (4)."""


def _not_ours(path: Path, why: str) -> InputError:
    return InputError(
        f"{path} is an SQLite database but not an attnwidget annotation store ({why}); "
        "pass the path of a store, or of a new file, to Store()"
    )


def inspect(conn: sqlite3.Connection, path: Path) -> int:
    """The schema version of the database (0: empty, a new store). Reads only.

    Raises :class:`InputError` for a file that is not SQLite, an SQLite file
    that is not a store, and a store newer than this code.
    """
    # One read transaction, so the three reads see one state of the file: read
    # apart, another process creating the store could commit in between (tables
    # read as none, then its application_id), and a new store would look foreign.
    own = not conn.in_transaction
    try:
        if own:
            conn.execute("BEGIN DEFERRED")
        try:
            tables = {
                name
                for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        finally:
            if own and conn.in_transaction:
                conn.execute("COMMIT")
    except sqlite3.DatabaseError as error:
        if "not a database" not in str(error) and "malformed" not in str(error):
            raise
        raise InputError(
            f"{path} is not an SQLite database ({error}); pass the path of an annotation "
            "store or of a new file to Store()"
        ) from None
    if not tables and version == 0 and app_id == 0:
        return 0
    if app_id not in (0, APPLICATION_ID):
        raise _not_ours(path, f"its application_id is {app_id:#x}")
    if "meta" not in tables:
        raise _not_ours(path, f"no 'meta' table; its tables are {sorted(tables)}")
    row = conn.execute("SELECT value FROM meta WHERE key = 'application'").fetchone()
    if row is None or row[0] != APPLICATION:
        found = "no application row" if row is None else f"application {row[0]!r}"
        raise _not_ours(path, f"its meta table names {found}")
    if version < 1:
        raise _not_ours(path, f"schema version {version}")
    if version > SCHEMA_VERSION:
        raise InputError(
            f"{path} is an annotation store of schema version {version}, written by a newer "
            f"attnwidget; this one reads versions up to {SCHEMA_VERSION}: upgrade attnwidget "
            "(pip install -U attnwidget) to open it"
        )
    return int(version)


def _create(conn: sqlite3.Connection, labels: list[str] | None) -> None:
    # executescript() would COMMIT the caller's transaction: one statement at a time.
    for statement in _V1.split(";"):
        if statement.strip():
            conn.execute(statement)
    now = datetime.now(timezone.utc).isoformat()
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?)",
        [("application", APPLICATION), ("created_at", now), ("labels", json.dumps(labels))],
    )
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")


def _switch_to_wal(conn: sqlite3.Connection, timeout: float) -> str:
    """``PRAGMA journal_mode=WAL``, retried while another connection holds the file.

    The switch needs the file to itself, and SQLite answers "database is
    locked" at once instead of waiting for the busy timeout when another
    process is creating or switching the same new file (two kernels opening
    one store together): retry with a short back-off for up to ``timeout``.
    """
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
            return str(mode)
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(0.1, pause * 2)


def prepare(
    conn: sqlite3.Connection,
    path: Path,
    labels: list[str] | None,
    synchronous: str,
    timeout: float = 30.0,
) -> list[str] | None:
    """Check, set up, create or migrate the store; return its labels.

    ``labels`` is the caller's ``labels=`` option: None takes the stored ones;
    a list must equal the stored list (the same names in the same order).
    """
    version = inspect(conn, path)  # before the first write: a foreign file stays untouched
    (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    if mode.lower() != "wal":
        mode = _switch_to_wal(conn, timeout)
        if mode.lower() != "wal":
            raise InputError(
                f"{path}: SQLite would not switch to WAL mode (it stays in {mode!r}); "
                "put the store on a local disk, not in memory or on a network share"
            )
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute("PRAGMA foreign_keys = ON")
    if version < SCHEMA_VERSION:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = inspect(conn, path)  # another process may have got here first
            if version == 0:
                _create(conn, labels)
                version = 1
            for step in range(version, SCHEMA_VERSION):
                MIGRATIONS[step - 1](conn)
                conn.execute(f"PRAGMA user_version = {step + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return check_labels(conn, path, labels)


def check_labels(
    conn: sqlite3.Connection, path: Path, labels: list[str] | None
) -> list[str] | None:
    """The stored labels; ``labels`` (the caller's option), when given, must equal them."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'labels'").fetchone()
    stored_labels: list[str] | None = None if row is None else json.loads(row[0])
    if labels is not None and labels != stored_labels:
        raise InputError(
            f"{path} was created with labels={stored_labels!r}, not {labels!r}: open it with "
            "labels=None (the stored labels) or the same list in the same order, or start "
            "a new store for the new labels"
        )
    return stored_labels
