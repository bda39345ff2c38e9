"""Adjudication (issue 23): gold annotations by majority, union, intersection or one
annotator, on characters, each case computed by hand below."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_annotations_processes import fresh as rows

from attnwidget.annotations import Adjudication, Store
from attnwidget.errors import InputError

#       0         1
#       012345678901234567
FILM = "a truly great film"  # a(0,1) truly(2,7) great(8,13) film(14,18)

# Characters each source marks:
#   ana  (2, 13)  "truly great"   (word spans (1, 3): granularity word)
#   bob  (8, 18)  "great film"    (word spans (2, 4): granularity word)
#   cy   (10, 16) "eat fi"        (characters: granularity char)
#   dee  no evidence
# How many of ana, bob, cy mark each character:
#   2..7 "truly" and 7 (space): 1 (ana) | 8, 9 "gr": 2 (ana, bob) | 10..12 "eat": 3
#   13 (space), 14, 15 "fi": 2 (bob, cy) | 16, 17 "lm": 1 (bob)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "a.sqlite", labels=["pos", "neg"])
    s.add_items([{"id": "f", "text": FILM}, {"id": "g", "text": "other words here"}])
    s.save("f", annotator="ana", spans=[(1, 3)], label="pos")
    s.save("f", annotator="bob", spans=[(2, 4)], label="pos")
    s.save("f", annotator="cy", char_spans=[(10, 16)], label="neg")
    s.save("f", annotator="dee", spans=[], no_evidence=True)
    yield s
    s.close()


@pytest.mark.parametrize(
    ("sources", "rule", "chars", "words", "label"),
    [
        # 3 sources: a character is in when 2 or 3 mark it: 8..15 -> (8, 16)
        (["ana", "bob", "cy"], "majority", ((8, 16),), ((2, 4),), "pos"),
        (["ana", "bob", "cy"], "union", ((2, 18),), ((1, 4),), "pos"),
        (["ana", "bob", "cy"], "intersection", ((10, 13),), ((2, 3),), "pos"),
        (["ana", "bob", "cy"], "cy", ((10, 16),), ((2, 4),), "neg"),
        # 4 sources, dee marking nothing: 3 of 4 are needed; the characters marked by
        # exactly 2 of 4 (8, 9, 13..15) are a tie, and a tie is out. pos: 2 of 4, no label.
        (["ana", "bob", "cy", "dee"], "majority", ((10, 13),), ((2, 3),), None),
        # 2 sources: majority is intersection
        (["ana", "bob"], "majority", ((8, 13),), ((2, 3),), "pos"),
        (["ana", "dee"], "union", ((2, 13),), ((1, 3),), None),
    ],
)
def test_rules_on_characters(
    store: Store,
    sources: list[str],
    rule: str,
    chars: tuple[tuple[int, int], ...],
    words: tuple[tuple[int, int], ...],
    label: str | None,
) -> None:
    gold = store.adjudicate("f", sources=sources, rule=rule)
    assert (gold.char_spans, gold.spans, gold.label) == (chars, words, label)
    assert gold.annotator == "gold" and not gold.no_evidence and gold.revision == 1
    assert store.load("f", annotator="gold") == gold


def test_nothing_in_gives_a_no_evidence_gold(store: Store) -> None:
    gold = store.adjudicate("f", sources=["cy", "dee"], rule="intersection")
    assert gold.no_evidence and gold.spans == () and gold.char_spans == ()
    named = store.adjudicate("f", sources=["ana", "dee"], rule="dee", as_annotator="ref")
    assert named.no_evidence and named.annotator == "ref"


def test_granularity_is_the_sources_when_they_agree(store: Store) -> None:
    assert store.adjudicate("f", sources=["ana", "bob"], rule="union").granularity == "word"
    assert store.adjudicate("f", sources=["ana", "cy"], rule="union").granularity == "char"


def test_the_gold_is_linked_to_the_exact_source_versions(store: Store) -> None:
    ana = store.save("f", annotator="ana", spans=[(1, 2)], label="pos")  # ana's revision 2
    gold = store.adjudicate("f", sources=["bob", "ana"], rule="union", reason="tie broken")
    assert gold.sources == (("ana", 2), ("bob", 1))
    bob = store.load("f", annotator="bob")
    assert store.adjudication("f") == Adjudication(
        "union", "tie broken", (("ana", 2, ana.id), ("bob", 1, bob.id))
    )
    assert rows(store.path, "SELECT history_id, rule, reason FROM adjudications") == [
        (gold.id, "union", "tie broken")
    ]
    linked = rows(
        store.path,
        "SELECT s.annotator, s.revision, h.spans FROM adjudication_sources s"
        " JOIN history h ON h.id = s.source_id ORDER BY s.annotator",
    )
    assert linked == [("ana", 2, "[[1, 2]]"), ("bob", 1, "[[2, 4]]")]
    # a source saved afterwards changes nothing of the gold, which stays linked
    store.save("f", annotator="ana", spans=[(0, 1)])
    assert store.load("f", annotator="gold") == gold
    assert store.history("f", annotator="gold")[0].sources == (("ana", 2), ("bob", 1))
    # adjudicating again is a new gold revision with its own link
    again = store.adjudicate("f", sources=["ana", "bob"], rule="intersection")
    assert again.revision == 2 and again.sources == (("ana", 3), ("bob", 1))
    assert again.char_spans == () and again.no_evidence  # (0, 1) and (8, 18) share nothing
    assert store.adjudication("f", revision=1).rule == "union"
    assert store.adjudication("f", annotator="ana") is None  # saved by hand


def test_bad_adjudications_are_refused_and_write_nothing(store: Store) -> None:
    before = rows(store.path, "SELECT count(*) FROM history")
    for kwargs, match in [
        ({"sources": ["ana", "eve"]}, r"\['eve'\] have not annotated it.*'ana'"),
        ({"item_id": "g", "sources": ["ana"]}, "have not annotated it"),
        ({"item_id": "nope", "sources": ["ana"]}, "not in the store"),
        ({"sources": ["ana", "gold"]}, "as_annotator='gold' is also a source"),
        ({"sources": ["ana"], "as_annotator": "ana"}, "also a source"),
        ({"sources": ["ana", "bob"], "rule": "mean"}, r"rule='mean'.*'majority'"),
        ({"sources": ["ana", "bob"], "rule": "cy"}, "one of the sources"),
        ({"sources": []}, "name the annotators"),
        ({"sources": "ana"}, "list of annotator names"),
        ({"sources": ["ana", "ana"]}, "more than once"),
        ({"sources": ["ana"], "reason": 3}, "note is a int"),
    ]:
        arguments = {"item_id": "f", **kwargs}
        with pytest.raises(InputError, match=match):
            store.adjudicate(**arguments)
    assert rows(store.path, "SELECT count(*) FROM history") == before
    assert rows(store.path, "SELECT count(*) FROM adjudications") == [(0,)]
    with pytest.raises(InputError, match="has no annotation by 'gold'"):
        store.adjudication("f")
    with pytest.raises(InputError, match="has no revision 4 by 'ana'"):
        store.adjudication("f", annotator="ana", revision=4)


def test_agreement_and_review_leave_the_adjudicators_out_unless_named(store: Store) -> None:
    from attnwidget.annotations import agreement, review

    before = agreement(store, n_resamples=10).overall
    store.adjudicate("f", sources=["ana", "bob"], rule="union", as_annotator="gold")
    store.adjudicate("f", sources=["ana", "cy"], rule="ana", as_annotator="judge")
    assert store.adjudicators() == ["gold", "judge"]
    after = agreement(store, n_resamples=10).overall
    # the gold versions are merges of ana's: counted, they would pair with everyone
    assert list(after.index) == list(before.index)
    assert not any("gold" in pair or "judge" in pair for pair in after.index)
    named = agreement(store, ["ana", "gold"], n_resamples=10).overall
    assert "ana vs gold" in named.index
    assert set(review(store)["annotators"].iloc[0]) == {"ana", "bob", "cy", "dee"}


def test_the_adjudicator_may_set_the_label(store: Store) -> None:
    by_rule = store.adjudicate("f", sources=["ana", "cy"], rule="union")
    assert by_rule.label is None  # pos against neg: no label has more than half
    chosen = store.adjudicate("f", sources=["ana", "cy"], rule="union", label="neg")
    assert chosen.label == "neg" and store.load("f", annotator="gold").label == "neg"
    assert chosen.spans == by_rule.spans
    cleared = store.adjudicate("f", sources=["ana", "bob"], rule="ana", label=None)
    assert cleared.label is None  # ana said pos; the adjudicator says none
    with pytest.raises(InputError, match="not one of this store's labels"):
        store.adjudicate("f", sources=["ana", "bob"], label="maybe")
    assert store.load("f", annotator="gold").revision == cleared.revision  # nothing written
