"""Character spans, explicit "no evidence" and what each save records (issue 23).

Offsets are computed by hand in the comments; stores are real SQLite files.
"""

from __future__ import annotations

import json
import pickle
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest

from attnwidget.annotations import Progress, Store
from attnwidget.errors import InputError

#            0123456789012345678
FILM = "a truly great film"  # words a(0,1) truly(2,7) great(8,13) film(14,18)
#             0123456
CHINESE = "我喜欢这部电影"  # no spaces: one word of 7 characters
PUNCT = "Well, that's it!"  # words Well,(0,5) that's(6,12) it!(13,16)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "c.sqlite", labels=["pos", "neg"])
    s.add_items(
        [
            {"id": "film", "text": FILM},
            {"id": "zh", "text": CHINESE},
            {"id": "punct", "text": PUNCT},
        ]
    )
    yield s
    s.close()


def fresh(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_word_spans_are_kept_as_characters_too(store: Store) -> None:
    saved = store.save("film", annotator="ana", spans=[(1, 3)])
    assert saved.char_spans == ((2, 13),)  # "truly great", the space between included
    assert saved.granularity == "word"
    assert store.char_spans("film", annotator="ana") == ((2, 13),)
    assert store.char_rationale("film", annotator="ana").tolist() == [0, 0] + [1] * 11 + [0] * 5
    touching = store.save("film", annotator="ana", spans=[(1, 2), (2, 3)])
    assert touching.spans == ((1, 2), (2, 3))  # word spans that touch stay apart
    assert touching.char_spans == ((2, 7), (8, 13))  # and so the space is not marked
    rows = fresh(store.path, "SELECT spans, char_spans, granularity FROM annotations")
    assert rows == [("[[1, 2], [2, 3]]", "[[2, 7], [8, 13]]", "word")]
    assert store.char_rationale("film", annotator="bob") is None


def test_char_spans_save_and_give_words_by_overlap(store: Store) -> None:
    # "gre" (8, 11) overlaps only "great"; (6, 9) = "y g" overlaps "truly" and "great".
    part = store.save("film", annotator="ana", char_spans=[(8, 11)])
    assert part.char_spans == ((8, 11),) and part.spans == ((2, 3),)
    assert part.granularity == "char"
    assert store.rationale("film", annotator="ana").tolist() == [0, 0, 1, 0]
    across = store.save("film", annotator="ana", char_spans=[(6, 9)])
    assert across.spans == ((1, 3),)
    # two marks inside one word give that word once; sorted, merged
    inside = store.save("film", annotator="ana", char_spans=[(16, 18), (14, 15)])
    assert inside.char_spans == ((14, 15), (16, 18)) and inside.spans == ((3, 4),)
    assert store.load("film", annotator="ana") == inside


def test_text_without_spaces_and_punctuation_marks(store: Store) -> None:
    saved = store.save("zh", annotator="ana", char_spans=[(5, 7), (1, 3)], granularity="char")
    assert saved.char_spans == ((1, 3), (5, 7))  # 喜欢, 电影
    assert saved.spans == ((0, 1),)  # the one "word" (the whole text) overlaps
    assert store.char_rationale("zh", annotator="ana").tolist() == [0, 1, 1, 0, 0, 1, 1]
    assert store.rationale("zh", annotator="ana").tolist() == [1]
    comma = store.save("punct", annotator="ana", char_spans=[(4, 5), (15, 16)])
    assert comma.char_spans == ((4, 5), (15, 16)) and comma.spans == ((0, 1), (2, 3))


def test_char_spans_are_trimmed_merged_and_checked(store: Store) -> None:
    # " truly " (1, 8): the spaces at either end mark nothing and are dropped.
    assert store.save("film", annotator="ana", char_spans=[(1, 8)]).char_spans == ((2, 7),)
    # overlapping and touching spans merge: (2, 5) + (4, 7) + (7, 10)
    merged = store.save("film", annotator="ana", char_spans=[(7, 10), (2, 5), (4, 7)])
    assert merged.char_spans == ((2, 10),) and merged.spans == ((1, 3),)
    before = fresh(store.path, "SELECT count(*) FROM history")
    for bad, match in [
        ([(0, 19)], "not inside the text.*18 characters"),
        ([(-1, 2)], "not inside"),
        ([(5, 5)], "not inside"),
        ([(7, 8)], "only whitespace"),
        ([(True, 3)], "bool"),
        ([(0.5, 3)], "not an integer"),
        ((0, 3), "looks like one"),
        ("0-3", "list of"),
        ([(0, 1, 2)], "each is"),
    ]:
        with pytest.raises(InputError, match=match):
            store.save("film", annotator="ana", char_spans=bad)
    with pytest.raises(InputError, match="not both"):
        store.save("film", annotator="ana", spans=[(0, 1)], char_spans=[(0, 1)])
    assert fresh(store.path, "SELECT count(*) FROM history") == before


def test_empty_spans_need_no_evidence_and_it_is_counted_apart(store: Store) -> None:
    with pytest.raises(InputError, match=r"no_evidence=True.*spans=\[\], no_evidence=True"):
        store.save("film", annotator="ana", spans=[])
    with pytest.raises(InputError, match="no_evidence=True"):
        store.save("film", annotator="ana", char_spans=[])
    with pytest.raises(InputError, match="nothing to save"):
        store.save("film", annotator="ana")
    with pytest.raises(InputError, match="no_evidence=True says no word"):
        store.save("film", annotator="ana", spans=[(0, 1)], no_evidence=True)
    with pytest.raises(InputError, match="True or False"):
        store.save("film", annotator="ana", spans=[], no_evidence=1)
    assert store.load("film", annotator="ana") is None  # still "not yet annotated"
    assert store.first_unannotated("ana") == 0

    nothing = store.save("film", annotator="ana", spans=[], no_evidence=True, label="neg")
    assert nothing.no_evidence and nothing.spans == () and nothing.char_spans == ()
    assert store.save("zh", annotator="ana", no_evidence=True).no_evidence  # spans left out
    store.save("punct", annotator="ana", spans=[(0, 1)])
    assert store.rationale("film", annotator="ana").tolist() == [0, 0, 0, 0]
    assert store.first_unannotated("ana") is None

    progress = store.progress("ana")
    assert progress == (3, 3) and isinstance(progress, tuple)
    done, total = progress  # unpacks as the pair it always was
    assert (done, total, progress.done, progress.total, progress.no_evidence) == (3, 3, 3, 3, 2)
    assert list(progress) == [3, 3] and len(progress) == 2
    assert repr(progress) == "Progress(done=3, total=3, no_evidence=2)"
    copy = pickle.loads(pickle.dumps(progress))
    assert copy == progress and copy.no_evidence == 2 and isinstance(copy, Progress)
    assert store.progress("bob") == (0, 3) and store.progress("bob").no_evidence == 0
    # saving spans again clears it
    assert not store.save("film", annotator="ana", spans=[(2, 3)]).no_evidence
    assert store.progress("ana").no_evidence == 1


def test_each_save_records_what_was_shown_and_spent(store: Store) -> None:
    saved = store.save(
        "film",
        annotator="ana",
        spans=[(2, 3)],
        guidelines_version="sha256:ab12",
        seconds=12.5,
        suggestion_shown="grad_attention",
        granularity="token",
    )
    got = store.load("film", annotator="ana")
    assert got == saved
    assert (got.guidelines_version, got.seconds, got.suggestion_shown, got.granularity) == (
        "sha256:ab12",
        12.5,
        "grad_attention",
        "token",
    )
    assert store.history("film", annotator="ana")[0].seconds == 12.5
    plain = store.save("film", annotator="ana", spans=[(2, 3)])
    assert (plain.guidelines_version, plain.seconds, plain.suggestion_shown) == (None,) * 3
    frame = store.to_dataframe()
    row = frame.iloc[0]
    assert row["char_spans"] == ((8, 13),) and not row["no_evidence"]
    assert row["granularity"] == "word" and row["seconds"] != row["seconds"]  # NaN
    for kwargs, match in [
        ({"seconds": -1}, "finite number >= 0"),
        ({"seconds": float("inf")}, "finite"),
        ({"seconds": "10s"}, "not a number"),
        ({"seconds": True}, "not a number"),
        ({"guidelines_version": ""}, "non-empty string"),
        ({"guidelines_version": 3}, "non-empty string"),
        ({"suggestion_shown": 1.0}, "non-empty string"),
        ({"granularity": "sentence"}, r"'word', 'token', 'char'"),
    ]:
        with pytest.raises(InputError, match=match):
            store.save("film", annotator="ana", spans=[(0, 1)], **kwargs)
    assert store.load("film", annotator="ana") == plain


def test_eraser_export_rounds_char_spans_out_and_says_so(store: Store, tmp_path: Path) -> None:
    store.save("film", annotator="ana", char_spans=[(9, 11)])  # "re" of "great"
    store.save("zh", annotator="ana", char_spans=[(0, 7)])  # the whole word: no rounding
    store.save("punct", annotator="ana", spans=[], no_evidence=True)
    with pytest.warns(UserWarning, match=r"1 annotations have character spans.*'film'"):
        store.export_eraser(tmp_path / "out", annotator="ana")
    records = {
        r["annotation_id"]: r
        for r in map(json.loads, (tmp_path / "out" / "test.jsonl").read_text().splitlines())
    }
    (evidence,) = records["film"]["evidences"][0]
    assert (evidence["start_token"], evidence["end_token"], evidence["text"]) == (2, 3, "great")
    assert records["punct"]["evidences"] == []
    store.save("film", annotator="ana", char_spans=[(8, 13)])  # exactly "great": no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.export_eraser(tmp_path / "out2", annotator="ana")


def test_eraser_import_of_an_empty_rationale_is_no_evidence(tmp_path: Path) -> None:
    root = tmp_path / "eraser"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "d1").write_text("good film\n")
    (root / "docs" / "d2").write_text("bad film\n")
    lines = [
        {"annotation_id": "d1", "classification": "POS", "docids": ["d1"], "query": "",
         "query_type": None, "evidences": [[{"docid": "d1", "start_token": 0,
                                             "end_token": 1, "text": "good"}]]},
        {"annotation_id": "d2", "classification": "NEG", "docids": ["d2"], "query": "",
         "query_type": None, "evidences": []},
    ]  # fmt: skip
    (root / "test.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with Store(tmp_path / "e.sqlite") as s:
        assert s.import_eraser(root) == 2
        assert s.load("d1", annotator="eraser").char_spans == ((0, 4),)
        empty = s.load("d2", annotator="eraser")
        assert empty.no_evidence and empty.spans == () and empty.label == "NEG"
        assert s.progress("eraser").no_evidence == 1
