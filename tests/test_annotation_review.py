"""attnwidget.annotations.review: the items worth a second look, on a real SQLite store.

Every expectation is worked out by hand from the annotations below (token F1
of two word sets A, B: 2|A∩B| / (|A| + |B|), 1 when both are empty).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from attnwidget.annotations import InputError, Store, review
from attnwidget.annotations.review import disagreement_order, summarize


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "r.sqlite", labels=["pos", "neg"])
    s.add_items(
        [
            {"id": "keys", "text": "the keys to the cabinet", "label": "pos"},  # 5 words
            {"id": "film", "text": "a truly great film"},  # 4 words
            {"id": "dull", "text": "dull and long", "label": "neg"},
            {"id": "none", "text": "nobody read this", "text_pair": "a CABINET pair"},
            {"id": "same", "text": "all agree here"},
        ]
    )
    # keys: ana {1}, bob {1, 2}: F1 = 2*1/(1+2) = 2/3; ben {1}: ana-ben 1, bob-ben 2/3.
    s.save("keys", annotator="ana", spans=[(1, 2)], label="pos")
    s.save("keys", annotator="bob", spans=[(1, 3)], label="neg")
    s.save("keys", annotator="ben", spans=[(1, 2)], label="pos")
    # film: ana {1, 2, 3}, bob no evidence: F1 = 0.
    s.save("film", annotator="ana", spans=[(1, 4)])
    s.save("film", annotator="bob", spans=[], no_evidence=True)
    # dull: ana only.
    s.save("dull", annotator="ana", spans=[(0, 1)], label="neg")
    # same: ana and bob both {0, 1}: F1 = 1.
    s.save("same", annotator="ana", spans=[(0, 2)])
    s.save("same", annotator="bob", spans=[(0, 2)])
    return s


def test_one_row_per_item_with_what_its_annotators_did(store: Store) -> None:
    frame = review(store, annotators=["ana", "bob"])
    assert frame["item_id"].tolist() == ["keys", "film", "dull", "none", "same"]
    assert frame["position"].tolist() == [0, 1, 2, 3, 4]
    rows = frame.set_index("item_id")
    assert rows.loc["keys", "annotators"] == ("ana", "bob")
    assert rows.loc["keys", "labels"] == ("pos", "neg")
    assert rows.loc["film", "no_evidence"] == ("bob",)
    assert rows.loc["none", "n_annotators"] == 0
    assert rows.loc["film", "item_label"] is None
    assert rows.loc["keys", "token_f1"] == pytest.approx(2 / 3)
    assert rows.loc["film", "token_f1"] == 0.0
    assert rows.loc["same", "token_f1"] == 1.0
    assert math.isnan(rows.loc["dull", "token_f1"]) and math.isnan(rows.loc["none", "token_f1"])


def test_token_f1_is_the_mean_over_pairs(store: Store) -> None:
    rows = review(store).set_index("item_id")  # everyone: ana, ben, bob
    # keys: ana-ben 1, ana-bob 2/3, ben-bob 2/3 -> mean 7/9.
    assert rows.loc["keys", "token_f1"] == pytest.approx(7 / 9)
    assert rows.loc["keys", "annotators"] == ("ana", "ben", "bob")


def test_filters(store: Store) -> None:
    ids = lambda frame: frame["item_id"].tolist()  # noqa: E731
    two = {"annotators": ["ana", "bob"]}
    assert ids(review(store, text="CABINET", **two)) == ["keys", "none"]  # text_pair too
    assert ids(review(store, text="great", **two)) == ["film"]
    assert ids(review(store, label="neg", **two)) == ["keys", "dull"]  # bob's label; item's
    assert ids(review(store, label="pos", **two)) == ["keys"]
    assert ids(review(store, annotator="bob", **two)) == ["keys", "film", "same"]
    assert ids(review(store, annotator=["ana", "ben"])) == ["keys"]
    assert ids(review(store, max_token_f1=0.7, **two)) == ["keys", "film"]
    assert ids(review(store, max_token_f1=0.0, **two)) == ["film"]
    assert ids(review(store, max_token_f1=1, **two)) == ["keys", "film", "same"]
    assert ids(review(store, no_evidence=True, **two)) == ["film"]
    assert ids(review(store, no_evidence=False, **two)) == ["keys", "dull", "none", "same"]
    assert ids(review(store, text="the", annotator="bob", max_token_f1=0.9, **two)) == ["keys"]
    assert ids(review(store, text="", label="")) == ["keys", "film", "dull", "none", "same"]
    assert ids(review(store, text="absent")) == []


def test_disagreement_order(store: Store) -> None:
    ordered = disagreement_order(summarize(store, ["ana", "bob"]))
    # film 0, keys 2/3, same 1; then dull and none (fewer than two annotators).
    assert [item.item_id for item in ordered] == ["film", "keys", "same", "dull", "none"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"annotator": "zoe"}, "'zoe' has saved nothing"),
        ({"annotators": ["ana", "zoe"]}, "'zoe' has saved nothing"),
        ({"annotators": "ana"}, "list of annotator names"),
        ({"max_token_f1": 1.5}, r"\[0, 1\]"),
        ({"max_token_f1": True}, "a number"),
        ({"no_evidence": "yes"}, "True, False or None"),
        ({"text": 3}, "text=3"),
        ({"annotator": 3}, "annotator=3"),
    ],
)
def test_bad_filters_are_refused(store: Store, options: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        review(store, **options)


def test_a_store_with_one_annotator_has_no_f1(tmp_path: Path) -> None:
    s = Store(tmp_path / "one.sqlite")
    s.add_items([{"id": "a", "text": "one two"}])
    s.save("a", annotator="ana", spans=[(0, 1)])
    frame = review(s)
    assert frame["annotators"].tolist() == [("ana",)]
    assert math.isnan(frame["token_f1"][0])
    assert review(s, max_token_f1=1).empty
