"""attnwidget.annotations.Store: items, saves, reads, refusals, schema versions.

What the store wrote is read back with a fresh ``sqlite3`` connection where it
matters, not only through the Store that wrote it.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from attnwidget.annotations import SCHEMA_VERSION, Annotation, Item, Store
from attnwidget.annotations._schema import APPLICATION, APPLICATION_ID
from attnwidget.errors import InputError

ITEMS = [
    {"id": "r1", "text": "a truly great film", "label": "pos"},
    {"id": "r2", "text": "dull  and\tfar too long", "label": "neg", "text_pair": "why?"},
    {"id": "r3", "text": "fine"},
]


def fresh(path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows from a new connection of our own (not the Store's)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    tables = [name for (name,) in fresh(path, "SELECT name FROM sqlite_master WHERE type='table'")]
    return {name: sorted(fresh(path, f"SELECT * FROM {name}"), key=repr) for name in tables}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "r.sqlite", labels=["pos", "neg"])
    s.add_items(ITEMS)
    yield s
    s.close()


def test_new_store_is_wal_versioned_and_named(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    with Store(path) as s:
        assert s.labels is None
    assert fresh(path, "PRAGMA journal_mode") == [("wal",)]
    assert fresh(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert fresh(path, "PRAGMA application_id") == [(APPLICATION_ID,)]
    meta = dict(fresh(path, "SELECT key, value FROM meta"))
    assert meta["application"] == APPLICATION and json.loads(meta["labels"]) is None
    assert SCHEMA_VERSION == 4


def test_items_are_stored_with_their_words_and_order(store: Store) -> None:
    rows = fresh(
        store.path, "SELECT idx, item_id, text, label, text_pair, words, n_words FROM items"
    )
    assert [r[:2] for r in rows] == [(0, "r1"), (1, "r2"), (2, "r3")]
    assert json.loads(rows[1][5]) == ["dull", "and", "far", "too", "long"] and rows[1][6] == 5
    assert rows[1][3:5] == ("neg", "why?")
    got = store.items()
    assert [i.id for i in got] == ["r1", "r2", "r3"] and len(store) == 3
    assert store.item("r2") == Item("r2", ITEMS[1]["text"], "neg", "why?")
    assert store.item("r2").words == ("dull", "and", "far", "too", "long")


def test_adding_items_again_is_idempotent_but_a_changed_text_is_refused(store: Store) -> None:
    assert store.add_items([*ITEMS, {"id": "r4", "text": "new one"}]) == 1
    assert [i.id for i in store.items()] == ["r1", "r2", "r3", "r4"]
    before = dump(store.path)
    for changed in (
        {"id": "r1", "text": "another text"},
        {"id": "r1", "text": "a truly great film"},
    ):
        with pytest.raises(InputError, match=r"r1.*already in the store with a different"):
            store.add_items([{"id": "r9", "text": "fresh"}, changed])
    with pytest.raises(InputError, match="different text"):
        store.add_items([{"id": "x", "text": "one"}, {"id": "x", "text": "two"}])
    assert dump(store.path) == before  # all or nothing: r9 and x were not added


def test_add_items_accepts_dataframes_and_item_objects(tmp_path: Path) -> None:
    with Store(tmp_path / "d.sqlite") as s:
        frame = pd.DataFrame({"id": ["a", "b"], "text": ["x y", "z"], "label": ["p", None]})
        assert s.add_items(frame) == 2
        assert s.add_items([Item("c", "w w w")]) == 1
        assert [(i.id, i.label) for i in s.items()] == [("a", "p"), ("b", None), ("c", None)]


@pytest.mark.parametrize(
    ("items", "match"),
    [
        ({"id": "a", "text": "x"}, "list of items"),
        ([{"text": "x"}], "no 'id'"),
        ([{"id": "a"}], "no 'text'"),
        ([{"id": "a", "text": "   "}], "no words"),
        ([{"id": 1.5, "text": "x"}], "string"),
        ([{"id": "a", "text": "x", "label": 1}], "int2str"),
        ([{"id": "a", "text": "x", "label": "maybe"}], "not one of this store's labels"),
    ],
)
def test_bad_items_are_refused(store: Store, items: Any, match: str) -> None:
    before = dump(store.path)
    with pytest.raises(InputError, match=match):
        store.add_items(items)
    assert dump(store.path) == before


def test_save_commits_one_row_per_annotator_and_keeps_history(store: Store) -> None:
    first = store.save("r1", annotator="ana", spans=[(2, 4), (0, 1)], label="pos", confidence=0.9)
    assert first.spans == ((0, 1), (2, 4)) and first.revision == 1
    store.save("r1", annotator="bob", spans=[], no_evidence=True, note="nothing decisive")
    second = store.save("r1", annotator="ana", spans=[[1, 3]], label="neg", note="changed mind")
    assert second.revision == 2
    rows = fresh(
        store.path,
        "SELECT a.annotator, a.spans, a.label, a.note, a.confidence, a.revision FROM annotations a"
        " JOIN items i ON i.idx = a.item_idx WHERE i.item_id = 'r1' ORDER BY a.annotator",
    )
    assert rows == [
        ("ana", "[[1, 3]]", "neg", "changed mind", None, 2),
        ("bob", "[]", None, "nothing decisive", None, 1),
    ]
    history = fresh(store.path, "SELECT annotator, revision, spans, confidence FROM history")
    assert sorted(history) == [
        ("ana", 1, "[[0, 1], [2, 4]]", 0.9),
        ("ana", 2, "[[1, 3]]", None),
        ("bob", 1, "[]", None),
    ]
    assert [h.spans for h in store.history("r1", annotator="ana")] == [((0, 1), (2, 4)), ((1, 3),)]


def test_load_returns_a_frozen_annotation_or_none(store: Store) -> None:
    assert store.load("r1", annotator="ana") is None
    saved = store.save("r2", annotator="ana", spans=[(0, 1), (3, 5)], label="neg", confidence=1)
    got = store.load("r2", annotator="ana")
    assert isinstance(got, Annotation) and got == saved
    assert got.spans == ((0, 1), (3, 5)) and isinstance(got.spans[0], tuple)
    assert got.confidence == 1.0 and got.label == "neg" and got.note is None
    assert got.saved_at.tzinfo is not None
    assert abs((datetime.now(timezone.utc) - got.saved_at).total_seconds()) < 60
    with pytest.raises(AttributeError):
        got.label = "pos"  # type: ignore[misc]
    with Store(store.path) as other:  # another connection sees it (and the stored labels)
        assert other.load("r2", annotator="ana") == saved and other.labels == ["pos", "neg"]
    assert store.load("r2", annotator="bob") is None


def test_annotators_progress_and_first_unannotated(store: Store) -> None:
    assert store.annotators() == [] and store.progress("ana") == (0, 3)
    assert store.first_unannotated("ana") == 0
    store.save("r1", annotator="ana", spans=[(0, 1)])
    store.save("r3", annotator="ana", spans=[], no_evidence=True)
    store.save("r2", annotator="bob", spans=[(0, 1)])
    assert store.annotators() == ["ana", "bob"]
    assert store.progress("ana") == (2, 3) and store.progress("bob") == (1, 3)
    assert store.progress("nobody") == (0, 3)
    assert store.first_unannotated("ana") == 1 and store.first_unannotated("bob") == 0
    assert store.first_unannotated("ana", start=2) is None
    assert store.first_unannotated("bob", start=1) == 2
    store.save("r2", annotator="ana", spans=[(4, 5)])
    assert store.first_unannotated("ana") is None and store.progress("ana") == (3, 3)


def test_to_dataframe_and_rationale_vectors(store: Store) -> None:
    empty = store.to_dataframe()
    assert len(empty) == 0 and "spans" in empty.columns
    store.save("r2", annotator="bob", spans=[(3, 5)], label="neg", confidence=0.25, note="n")
    store.save("r1", annotator="ana", spans=[(0, 1), (2, 3)])
    store.save("r2", annotator="ana", spans=[(1, 2)], label="pos")
    frame = store.to_dataframe(vectors=True)
    assert list(frame[["item_id", "annotator"]].itertuples(index=False, name=None)) == [
        ("r1", "ana"),
        ("r2", "ana"),
        ("r2", "bob"),
    ]
    bob = frame.iloc[2]
    assert bob["spans"] == ((3, 5),) and bob["label"] == "neg" and bob["note"] == "n"
    assert bob["confidence"] == 0.25 and bob["item_label"] == "neg" and bob["n_words"] == 5
    assert "UTC" in str(frame["saved_at"].dtype)
    assert np.isnan(frame.iloc[0]["confidence"])
    assert frame.iloc[0]["rationale"].tolist() == [1, 0, 1, 0]
    assert bob["rationale"].tolist() == [0, 0, 0, 1, 1]
    assert store.rationale("r2", annotator="bob").tolist() == [0, 0, 0, 1, 1]
    assert store.rationale("r3", annotator="bob") is None
    assert list(store.to_dataframe("bob")["annotator"]) == ["bob"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"spans": [(0, 2), (1, 3)]}, "overlap"),
        ({"spans": [(0, 2), (0, 2)]}, "overlap"),
        ({"spans": [(0, 5)]}, "out of range.*4 words"),
        ({"spans": [(-1, 2)]}, "out of range"),
        ({"spans": [(2, 2)]}, "end <= start"),
        ({"spans": [(3, 1)]}, "end <= start"),
        ({"spans": [(0.0, 1)]}, "not an integer"),
        ({"spans": [(0, "1")]}, "not an integer"),
        ({"spans": [(True, 2)]}, "bool"),
        ({"spans": (0, 1)}, "one .start, end. pair"),
        ({"spans": [(0, 1, 2)]}, "3 values"),
        ({"spans": "0-1"}, "list of"),
        ({"spans": [(0, 1)], "label": "meh"}, "not one of this store's labels"),
        ({"spans": [(0, 1)], "confidence": 1.01}, r"outside \[0, 1\]"),
        ({"spans": [(0, 1)], "confidence": -0.1}, r"outside \[0, 1\]"),
        ({"spans": [(0, 1)], "confidence": float("nan")}, r"outside \[0, 1\]"),
        ({"spans": [(0, 1)], "confidence": "high"}, "not a number"),
        ({"spans": [(0, 1)], "note": 3}, "note"),
        ({"spans": [(0, 1)], "annotator": ""}, "annotator"),
    ],
)
def test_bad_saves_are_refused_and_write_nothing(
    store: Store, kwargs: dict[str, Any], match: str
) -> None:
    store.save("r1", annotator="ana", spans=[(1, 2)])
    before = dump(store.path)
    arguments = {"annotator": "ana", **kwargs}
    with pytest.raises(InputError, match=match):
        store.save("r1", **arguments)
    assert dump(store.path) == before
    assert store.load("r1", annotator="ana").spans == ((1, 2),)


def test_unknown_item_is_refused_naming_the_fix(store: Store) -> None:
    before = dump(store.path)
    with pytest.raises(InputError, match=r"'r9' is not in the store.*add_items"):
        store.save("r9", annotator="ana", spans=[])
    with pytest.raises(InputError, match="not in the store"):
        store.load("r9", annotator="ana")
    assert dump(store.path) == before
    assert issubclass(InputError, ValueError)


def test_numpy_spans_are_accepted(store: Store) -> None:
    saved = store.save("r1", annotator="ana", spans=np.array([[0, 2], [3, 4]]))
    assert saved.spans == ((0, 2), (3, 4)) and type(saved.spans[0][0]) is int


def test_labels_are_persisted_and_a_different_list_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    Store(path, labels=["pos", "neg"]).close()
    assert json.loads(dict(fresh(path, "SELECT key, value FROM meta"))["labels"]) == ["pos", "neg"]
    before = dump(path)
    for other in (["pos"], ["neg", "pos"], ["pos", "neg", "mixed"]):
        with pytest.raises(InputError, match=r"created with labels=.*labels=None"):
            Store(path, labels=other)
    with Store(path) as same:
        assert same.labels == ["pos", "neg"]
    with Store(path, labels=["pos", "neg"]) as same:
        assert same.labels == ["pos", "neg"]
    assert dump(path) == before
    Store(tmp_path / "free.sqlite").close()
    with pytest.raises(InputError, match="created with labels=None"):
        Store(tmp_path / "free.sqlite", labels=["pos"])
    for bad in ("pos", [], ["a", "a"], ["a", 1]):
        with pytest.raises(InputError, match="labels"):
            Store(tmp_path / "bad.sqlite", labels=bad)


def test_close_and_context_manager(tmp_path: Path) -> None:
    with Store(tmp_path / "c.sqlite") as s:
        s.add_items([{"id": "a", "text": "x y"}])
        s.save("a", annotator="ana", spans=[(0, 1)])
    s.close()  # twice is fine
    with pytest.raises(InputError, match="closed"):
        s.load("a", annotator="ana")
    assert "closed" in repr(s)
    assert fresh(tmp_path / "c.sqlite", "SELECT spans FROM annotations") == [("[[0, 1]]",)]


def test_int_ids_are_stored_as_their_decimal_string(tmp_path: Path) -> None:
    with Store(tmp_path / "i.sqlite") as s:
        s.add_items([{"id": 7, "text": "seven words"}])
        s.save(7, annotator="ana", spans=[(1, 2)])
        assert s.load("7", annotator="ana").item_id == "7"
    with Store(tmp_path / "j.sqlite") as s, pytest.raises(InputError, match="bool"):
        s.add_items([{"id": True, "text": "x"}])
