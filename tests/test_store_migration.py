"""Schema 2 -> 3 (issue 23): a store written by the previous attnwidget is taken
forward with nothing lost, and a read-only one is refused, untouched.

The version-2 file is built here with the SQL the previous code wrote (copied
from ``sqlite_master`` of a store it created) and rows as it wrote them, so
the test does not depend on the migration code to make its input.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from attnwidget.annotations import SCHEMA_VERSION, Store
from attnwidget.errors import InputError

V2_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items (
    idx INTEGER PRIMARY KEY,
    item_id TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    label TEXT,
    text_pair TEXT,
    words TEXT NOT NULL
, n_words INTEGER NOT NULL DEFAULT 0);
CREATE TABLE annotations (
    item_idx INTEGER NOT NULL REFERENCES items(idx),
    annotator TEXT NOT NULL,
    spans TEXT NOT NULL,
    label TEXT,
    note TEXT,
    saved_at TEXT NOT NULL, confidence REAL, revision INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (item_idx, annotator)
);
CREATE TABLE history (
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
        );
CREATE INDEX annotations_by_annotator ON annotations (annotator, item_idx);
PRAGMA application_id = 1635216945;
PRAGMA user_version = 2;
"""

ITEMS = [
    ("m1", "a truly great film", "pos", None),
    ("m2", "dull  and\tfar too long", "neg", "why?"),  # runs of whitespace between words
    ("m3", "naïve, café-style\nfun", None, None),  # punctuation, accents, a line break
]

# (item index, annotator, revision, spans, label, note, confidence): the last
# revision of each (item, annotator) is its current row, as the old code kept it.
SAVES = [
    (0, "ana", 1, [[1, 3]], "pos", None, 0.5),
    (0, "ana", 2, [[0, 1], [2, 4]], "neg", "changed", None),
    (0, "bob", 1, [], None, "nothing here", None),  # an empty save: v2's "no evidence"
    (1, "ana", 1, [[0, 1], [3, 5]], "neg", None, 1.0),
    (2, "bob", 1, [[0, 2], [2, 3]], None, None, None),  # touching spans, kept apart
]


def write_v2(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(V2_SCHEMA)
    conn.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [
            ("application", "attnwidget.annotations"),
            ("created_at", "2025-03-01T00:00:00+00:00"),
            ("labels", json.dumps(["pos", "neg"])),
        ],
    )
    for idx, (ident, text, label, pair) in enumerate(ITEMS):
        words = text.split()
        conn.execute(
            "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?)",
            (idx, ident, text, label, pair, json.dumps(words), len(words)),
        )
    for n, (idx, who, rev, spans, label, note, sure) in enumerate(SAVES):
        stamp = f"2025-03-02T10:{n:02d}:00.000000+00:00"
        values = (idx, who, json.dumps(spans), label, note, sure, stamp, rev)
        conn.execute(
            "INSERT INTO history (item_idx, annotator, spans, label, note, confidence,"
            " saved_at, revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )
        conn.execute(
            "INSERT OR REPLACE INTO annotations (item_idx, annotator, spans, label, note,"
            " confidence, saved_at, revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )
    conn.commit()
    conn.close()


def fresh(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    tables = [name for (name,) in fresh(path, "SELECT name FROM sqlite_master WHERE type='table'")]
    return {name: sorted(fresh(path, f"SELECT * FROM {name}"), key=repr) for name in tables}


def test_a_v2_store_is_migrated_with_every_annotation_kept(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite"
    write_v2(path)
    assert SCHEMA_VERSION >= 3  # later versions add tables only
    with Store(path) as store:
        assert store.labels == ["pos", "neg"]
        assert [i.id for i in store.items()] == ["m1", "m2", "m3"]
        for idx, who, rev, spans, label, note, sure in SAVES:
            item_id = ITEMS[idx][0]
            versions = store.history(item_id, annotator=who)
            old = versions[rev - 1]
            assert old.revision == rev and [list(s) for s in old.spans] == spans
            assert (old.label, old.note, old.confidence) == (label, note, sure)
            assert old.granularity == "word" and old.seconds is None
            assert old.guidelines_version is None and old.suggestion_shown is None
            assert old.no_evidence is (spans == [])  # v2 said "no evidence" by saving nothing
        current = store.load("m1", annotator="ana")
        assert current.revision == 2 and current.spans == ((0, 1), (2, 4))
        assert current.id == store.history("m1", annotator="ana")[-1].id  # history_id filled
        # Character spans computed from the words, by hand:
        assert current.char_spans == ((0, 1), (8, 18))  # "a", "great film"
        assert store.load("m2", annotator="ana").char_spans == ((0, 4), (14, 22))  # too long
        assert store.load("m3", annotator="bob").char_spans == ((0, 17), (18, 21))
        assert store.load("m3", annotator="bob").spans == ((0, 2), (2, 3))  # still apart
        assert store.load("m1", annotator="bob").no_evidence
        assert store.progress("bob") == (2, 3) and store.progress("bob").no_evidence == 1
        assert store.rationale("m2", annotator="ana").tolist() == [1, 0, 0, 1, 1]
        # and it is a working v3 store: every new write path runs on it
        assert store.save("m3", annotator="ana", char_spans=[(0, 4)]).spans == ((0, 1),)
        assert store.revert("m1", "ana", to_revision=1).spans == ((1, 3),)
        assert store.adjudicate("m1", sources=["ana", "bob"], rule="union").spans == ((1, 3),)
        assert sorted(store.assign(["ana", "bob"], overlap=1).values()) == [1, 2]
    assert fresh(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert fresh(path, "PRAGMA integrity_check") == [("ok",)]
    assert fresh(path, "PRAGMA foreign_key_check") == []
    assert fresh(path, "SELECT count(*) FROM history") == [(len(SAVES) + 3,)]


def test_migration_keeps_every_old_row_bit_for_bit(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite"
    write_v2(path)
    before = dump(path)
    Store(path).close()
    after = dump(path)
    # Every old column of every old row is unchanged; the new columns come after them.
    for table in ("meta", "items", "annotations", "history"):
        width = len(before[table][0])
        assert sorted((row[:width] for row in after[table]), key=repr) == before[table], table
    with Store(path) as again:  # opening a current store migrates nothing more
        assert dump(path) == after
        assert again.load("m2", annotator="ana").spans == ((0, 1), (3, 5))


def test_a_read_only_v2_store_is_not_migrated_and_says_how(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite"
    write_v2(path)
    before = path.read_bytes()
    with pytest.raises(InputError, match="schema version 2") as caught:
        Store(path, read_only=True)
    message = str(caught.value)
    assert "never migrated" in message and "Store(path)" in message and "copy" in message
    assert path.read_bytes() == before
    assert fresh(path, "PRAGMA user_version") == [(2,)]


def test_a_failed_v3_migration_leaves_the_v2_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not a mock of the store: the real migration runs, on a real file, and is made to
    # fail after its first writes, to show that it is one transaction.
    from attnwidget.annotations import _schema

    path = tmp_path / "v2.sqlite"
    write_v2(path)
    before = dump(path)
    real = _schema.MIGRATIONS[1]

    def failing(conn: sqlite3.Connection) -> None:
        real(conn)
        raise RuntimeError("power cut")

    monkeypatch.setattr(_schema, "MIGRATIONS", [_schema.MIGRATIONS[0], failing])
    with pytest.raises(RuntimeError, match="power cut"):
        Store(path)
    assert dump(path) == before and fresh(path, "PRAGMA user_version") == [(2,)]


def test_the_newer_schema_and_foreign_file_refusals_still_hold(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match="newer"):
        Store(path)
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match="not an attnwidget annotation store"):
        Store(other)
