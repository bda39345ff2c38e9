"""attnwidget.annotations.Store and its file: what is refused (not SQLite, someone
else's SQLite, a newer schema) without being touched, and the v1 -> v2 migration
of a version-1 store written here by hand.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from attnwidget.annotations import SCHEMA_VERSION, Store
from attnwidget.errors import InputError


def fresh(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows from a new connection of our own (not the Store's)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    tables = [name for (name,) in fresh(path, "SELECT name FROM sqlite_master WHERE type='table'")]
    return {name: sorted(fresh(path, f"SELECT * FROM {name}"), key=repr) for name in tables}


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    data = b"these are my notes, not a database\n" * 200
    path.write_bytes(data)
    with pytest.raises(InputError, match="not an SQLite database"):
        Store(path)
    assert path.read_bytes() == data
    with pytest.raises(InputError, match="is a folder"):
        Store(tmp_path)
    with pytest.raises(InputError, match="folder exists"):
        Store(tmp_path / "missing" / "x.sqlite")


def test_an_empty_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    with Store(path) as s:
        s.add_items([{"id": "a", "text": "x"}])
    assert fresh(path, "SELECT item_id FROM items") == [("a",)]


def _foreign(path: Path, statements: list[str]) -> None:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    ("statements", "match"),
    [
        (["CREATE TABLE users (name TEXT)"], "no 'meta' table.*users"),
        (
            ["CREATE TABLE meta (key TEXT, value TEXT)", "INSERT INTO meta VALUES ('x', 'y')"],
            "no application row",
        ),
        (
            [
                "CREATE TABLE meta (key TEXT, value TEXT)",
                "INSERT INTO meta VALUES ('application', 'someone.else')",
                "PRAGMA user_version = 1",
            ],
            "someone.else",
        ),
        (["CREATE TABLE meta (key TEXT)", "PRAGMA application_id = 1234"], "application_id"),
    ],
)
def test_an_sqlite_file_that_is_not_ours_is_refused_untouched(
    tmp_path: Path, statements: list[str], match: str
) -> None:
    path = tmp_path / "other.sqlite"
    _foreign(path, statements)
    data = path.read_bytes()
    with pytest.raises(InputError, match=f"not an attnwidget annotation store.*{match}"):
        Store(path)
    assert path.read_bytes() == data  # not even switched to WAL
    assert fresh(path, "PRAGMA journal_mode") == [("delete",)]


def test_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    with Store(path) as s:
        s.add_items([{"id": "a", "text": "x"}])
    _foreign(path, [f"PRAGMA user_version = {SCHEMA_VERSION + 1}"])
    before = dump(path)
    with pytest.raises(InputError, match=f"schema version {SCHEMA_VERSION + 1}.*newer.*upgrade"):
        Store(path)
    assert dump(path) == before
    assert fresh(path, "PRAGMA user_version") == [(SCHEMA_VERSION + 1,)]


def _write_v1(path: Path) -> None:
    """A store as version 1 of the schema wrote it, built by hand."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE items (idx INTEGER PRIMARY KEY, item_id TEXT NOT NULL UNIQUE,
            text TEXT NOT NULL, label TEXT, text_pair TEXT, words TEXT NOT NULL);
        CREATE TABLE annotations (item_idx INTEGER NOT NULL REFERENCES items(idx),
            annotator TEXT NOT NULL, spans TEXT NOT NULL, label TEXT, note TEXT,
            saved_at TEXT NOT NULL, PRIMARY KEY (item_idx, annotator));
        INSERT INTO meta VALUES ('application', 'attnwidget.annotations'),
            ('created_at', '2025-01-01T00:00:00+00:00'), ('labels', '["pos", "neg"]');
        INSERT INTO items VALUES (0, 'm1', 'old good movie', 'pos', NULL,
            '["old", "good", "movie"]');
        INSERT INTO items VALUES (1, 'm2', 'old bad one', NULL, 'q', '["old", "bad", "one"]');
        INSERT INTO annotations VALUES (0, 'ana', '[[1, 2]]', 'pos', 'kept',
            '2025-01-02T10:00:00.000000+00:00');
        INSERT INTO annotations VALUES (1, 'ana', '[[0, 1], [1, 3]]', NULL, NULL,
            '2025-01-02T10:01:00.000000+00:00');
        PRAGMA application_id = 1635216945;
        PRAGMA user_version = 1;
        """
    )
    conn.commit()
    conn.close()


def test_a_version_1_store_is_migrated_keeping_its_data(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    _write_v1(path)
    with Store(path) as s:
        assert s.labels == ["pos", "neg"]
        old = s.load("m1", annotator="ana")
        assert old.spans == ((1, 2),) and old.label == "pos" and old.note == "kept"
        assert old.confidence is None and old.revision == 1
        assert old.saved_at == datetime(2025, 1, 2, 10, 0, tzinfo=timezone.utc)
        assert [i.id for i in s.items()] == ["m1", "m2"] and s.item("m2").text_pair == "q"
        assert s.progress("ana") == (2, 2)
        assert s.save("m1", annotator="ana", spans=[(0, 1)], confidence=0.5).revision == 2
    assert fresh(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert fresh(path, "PRAGMA journal_mode") == [("wal",)]
    assert fresh(path, "SELECT item_id, n_words FROM items ORDER BY idx") == [("m1", 3), ("m2", 3)]
    assert sorted(fresh(path, "SELECT item_idx, revision, spans, confidence FROM history")) == [
        (0, 1, "[[1, 2]]", None),
        (0, 2, "[[0, 1]]", 0.5),
        (1, 1, "[[0, 1], [1, 3]]", None),
    ]
    indexes = {n for (n,) in fresh(path, "SELECT name FROM sqlite_master WHERE type='index'")}
    assert "annotations_by_annotator" in indexes
    with Store(path) as again:  # opening a current store migrates nothing more
        assert again.load("m2", annotator="ana").spans == ((0, 1), (1, 3))


def test_a_failed_migration_leaves_the_v1_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attnwidget.annotations import _schema

    path = tmp_path / "v1.sqlite"
    _write_v1(path)
    before = dump(path)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE annotations ADD COLUMN confidence REAL")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(_schema, "MIGRATIONS", [broken])
    with pytest.raises(RuntimeError, match="disk on fire"):
        Store(path)
    assert dump(path) == before and fresh(path, "PRAGMA user_version") == [(1,)]


def test_many_connections_creating_one_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    # Switching a new file to WAL needs it alone, and SQLite answers "database is
    # locked" at once (no busy wait) while another connection creates or switches
    # it: two kernels opening one new store together used to fail this way.
    import threading

    from attnwidget.annotations import Store

    for round_ in range(5):
        path = tmp_path / f"shared-{round_}.sqlite"
        start = threading.Barrier(8)
        errors: list[BaseException] = []

        def open_store(
            path: Path = path, start: threading.Barrier = start, errors: list = errors
        ) -> None:
            start.wait()
            try:
                Store(path).close()
            except BaseException as error:  # reported below
                errors.append(error)

        threads = [threading.Thread(target=open_store) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [], errors
