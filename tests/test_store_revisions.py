"""Undo as revisions (issue 23): :meth:`Store.revert` appends, never deletes."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_annotations_processes import fresh as rows

from attnwidget.annotations import Store
from attnwidget.errors import InputError


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "r.sqlite", labels=["pos", "neg"])
    s.add_items([{"id": "r1", "text": "a truly great film"}, {"id": "r2", "text": "dull"}])
    yield s
    s.close()


def test_revert_restores_an_old_version_as_a_new_revision(store: Store) -> None:
    first = store.save(
        "r1",
        annotator="ana",
        spans=[(1, 3)],
        label="pos",
        note="first",
        confidence=0.5,
        guidelines_version="v1",
        seconds=20.0,
        suggestion_shown="rollout",
    )
    store.save("r1", annotator="ana", char_spans=[(14, 18)], label="neg", seconds=3.0)
    store.save("r1", annotator="ana", spans=[], no_evidence=True)
    undone = store.revert("r1", "ana", to_revision=1)
    assert undone.revision == 4 and undone.reverted_from == 1
    assert (undone.spans, undone.char_spans, undone.no_evidence) == (((1, 3),), ((2, 13),), False)
    assert (undone.label, undone.note, undone.confidence) == ("pos", "first", 0.5)
    assert (undone.guidelines_version, undone.suggestion_shown) == ("v1", "rollout")
    assert undone.seconds is None  # no time was spent on the copy
    assert undone.saved_at > first.saved_at and undone.id != first.id
    assert store.load("r1", annotator="ana") == undone
    history = store.history("r1", annotator="ana")
    assert [h.revision for h in history] == [1, 2, 3, 4]  # nothing deleted
    assert history[0] == first
    assert [h.reverted_from for h in history] == [None, None, None, 1]
    # undo the undo: back to the no-evidence version
    again = store.revert("r1", annotator="ana", to_revision=3)
    assert again.no_evidence and again.spans == () and again.revision == 5
    assert store.progress("ana").no_evidence == 1
    assert rows(store.path, "SELECT count(*) FROM history") == [(5,)]
    # reverting to the current revision is one more (identical) revision
    assert (
        store.revert("r1", "ana", to_revision=5).spans == ()
        and len(store.history("r1", annotator="ana")) == 6
    )


def test_revert_refuses_unknown_items_annotators_and_revisions(store: Store) -> None:
    store.save("r1", annotator="ana", spans=[(0, 1)])
    store.save("r1", annotator="ana", spans=[(1, 2)])
    before = rows(store.path, "SELECT * FROM history")
    for args, kwargs, match in [
        (("r9", "ana"), {"to_revision": 1}, r"'r9' is not in the store"),
        (("r1", "bob"), {"to_revision": 1}, r"'bob' has saved nothing for item 'r1'.*'ana'"),
        (("r2", "ana"), {"to_revision": 1}, r"nothing to revert \(annotators of this item: none"),
        (("r1", "ana"), {"to_revision": 3}, r"revisions 1 to 2; to_revision=3 is not one"),
        (("r1", "ana"), {"to_revision": 0}, "count from 1"),
        (("r1", "ana"), {"to_revision": "1"}, "revision number"),
        (("r1", "ana"), {"to_revision": True}, "revision number"),
        (("r1", ""), {"to_revision": 1}, "annotator"),
    ]:
        with pytest.raises(InputError, match=match):
            store.revert(*args, **kwargs)
    with pytest.raises(TypeError):
        store.revert("r1", "ana")  # type: ignore[call-arg]  # to_revision is required
    assert rows(store.path, "SELECT * FROM history") == before


def test_revert_on_a_read_only_store_is_refused(store: Store) -> None:
    store.save("r1", annotator="ana", spans=[(0, 1)])
    with Store(store.path, read_only=True) as reader, pytest.raises(InputError, match="read-only"):
        reader.revert("r1", "ana", to_revision=1)
    assert len(store.history("r1", annotator="ana")) == 1


def test_reverting_an_adjudicated_version_keeps_its_sources(store: Store) -> None:
    store.save("r1", annotator="ana", spans=[(1, 3)])
    store.save("r1", annotator="bob", spans=[(2, 4)])
    gold = store.adjudicate("r1", sources=["ana", "bob"], rule="union", reason="both fine")
    store.save("r1", annotator="gold", spans=[(0, 1)])  # a hand edit
    assert store.adjudication("r1") is None  # the current gold was saved by hand
    back = store.revert("r1", "gold", to_revision=1)
    assert back.sources == gold.sources == (("ana", 1), ("bob", 1))
    assert back.spans == ((1, 4),)
    found = store.adjudication("r1")
    assert found is not None and found.rule == "union" and found.reason == "both fine"
    assert store.adjudication("r1", revision=2) is None
