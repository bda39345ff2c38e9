"""ERASER (DeYoung et al., 2020) export and import of attnwidget.annotations.Store.

The directories are written here by hand in ERASER's layout: ``docs/<docid>``
(one sentence per line, tokens separated by spaces, offsets index the
flattened tokens) and ``{train,val,test}.jsonl``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from attnwidget.annotations import Store
from attnwidget.errors import InputError

# The keys ERASER's loader passes to its Annotation / Evidence dataclasses.
ANNOTATION_KEYS = {"annotation_id", "query", "evidences", "classification", "query_type", "docids"}
EVIDENCE_KEYS = {"text", "docid", "start_token", "end_token", "start_sentence", "end_sentence"}

DOCS = {
    "negR_000.txt": "the film was bad .\nreally , truly awful .\n\nI left early .\n",
    "posR_001.txt": "a great cast .\nloved it .\n",
    "pair_1_premise": "a man plays guitar .\n",
    "pair_1_hypothesis": "a person makes music .\n",
    "unused_doc": "nobody cites this .\n",
}


def ev(docid: str, start: int, end: int, text: str, s0: int = -1, s1: int = -1) -> dict[str, Any]:
    return {
        "docid": docid,
        "start_token": start,
        "end_token": end,
        "start_sentence": s0,
        "end_sentence": s1,
        "text": text,
    }


def annotation(
    aid: str, label: str, groups: list[Any], docids: Any = None, query: str = ""
) -> dict:
    return {
        "annotation_id": aid,
        "classification": label,
        "docids": docids,
        "evidences": groups,
        "query": query,
        "query_type": None,
    }


SPLITS = {
    "train": [
        annotation(
            "negR_000.txt",
            "NEG",
            [
                [ev("negR_000.txt", 3, 4, "bad", 0, 1)],
                [ev("negR_000.txt", 7, 9, "truly awful", 1, 2)],
            ],
            query="What is the sentiment of this review?",
        )
    ],
    "val": [
        annotation(
            "posR_001.txt",
            "POS",
            [
                [ev("posR_001.txt", 1, 3, "great cast"), ev("posR_001.txt", 4, 6, "loved it")],
                [ev("posR_001.txt", 2, 3, "cast")],  # inside the first: merged
            ],
        )
    ],
    "test": [
        annotation(
            "pair_1",
            "entailment",
            [
                [
                    ev("pair_1_premise", 2, 4, "plays guitar"),
                    ev("pair_1_hypothesis", 2, 4, "makes music"),
                ]
            ],
            docids=["pair_1_premise", "pair_1_hypothesis"],
        )
    ],
}


def write_eraser(root: Path, docs: dict[str, str], splits: dict[str, list[dict]]) -> Path:
    (root / "docs").mkdir(parents=True)
    for docid, text in docs.items():
        (root / "docs" / docid).write_text(text)
    for split, records in splits.items():
        (root / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root


def eraser_tokens(path: Path) -> list[str]:
    """A document's tokens as ERASER reads them: non-blank lines, split on spaces, flattened."""
    lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    return [token for line in lines for token in line.split(" ") if token]


def dump(path: Path) -> dict[str, list[Any]]:
    conn = sqlite3.connect(path)
    tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    out = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    conn.close()
    return out


def test_import_reads_multi_sentence_docs_groups_and_two_docids(tmp_path: Path) -> None:
    root = write_eraser(tmp_path / "movies", DOCS, SPLITS)
    with Store(tmp_path / "s.sqlite") as store:
        assert store.import_eraser(root) == 4  # neg, pos, premise, hypothesis
        items = {item.id: item for item in store.items()}
        assert list(items) == sorted(DOCS)  # documents in ERASER's (sorted) order
        neg = items["negR_000.txt"]
        assert neg.words == tuple(eraser_tokens(root / "docs" / "negR_000.txt"))
        assert len(neg.words) == 14 and neg.text.splitlines()[2] == "I left early ."
        assert neg.label == "NEG" and neg.text_pair is None
        got = {i: store.load(i, annotator="eraser") for i in items}
        assert got["negR_000.txt"].spans == ((3, 4), (7, 9)) and got["negR_000.txt"].label == "NEG"
        assert got["posR_001.txt"].spans == ((1, 3), (4, 6)) and got["posR_001.txt"].label == "POS"
        assert got["pair_1_premise"].spans == ((2, 4),)
        assert got["pair_1_hypothesis"].spans == ((2, 4),)
        assert got["pair_1_hypothesis"].label == "entailment"
        assert got["unused_doc"] is None and items["unused_doc"].label is None
        assert [neg.words[s:e] for s, e in got["negR_000.txt"].spans] == [
            ("bad",),
            ("truly", "awful"),
        ]
        assert store.progress("eraser") == (4, 5)
    conn = sqlite3.connect(tmp_path / "s.sqlite")
    assert conn.execute(
        "SELECT a.spans, a.label FROM annotations a JOIN items i ON i.idx = a.item_idx"
        " WHERE i.item_id = 'posR_001.txt' AND a.annotator = 'eraser'"
    ).fetchall() == [("[[1, 3], [4, 6]]", "POS")]
    conn.close()


def test_import_keeps_the_query_as_text_pair_on_request(tmp_path: Path) -> None:
    root = write_eraser(tmp_path / "m", DOCS, SPLITS)
    with Store(tmp_path / "q.sqlite") as store:
        store.import_eraser(root, annotator="gold", splits=("train",), query_as_pair=True)
        assert store.item("negR_000.txt").text_pair == "What is the sentiment of this review?"
        assert store.annotators() == ["gold"] and store.progress("gold") == (1, 5)


def test_sentence_only_evidence_and_docs_jsonl(tmp_path: Path) -> None:
    root = tmp_path / "fever"
    root.mkdir()
    (root / "docs.jsonl").write_text(
        json.dumps({"docid": "d1", "document": "one two .\nthree four five .\nsix ."}) + "\n"
    )
    record = annotation("d1", "SUPPORTS", [[ev("d1", -1, -1, "three four five .", 1, 2)]])
    (root / "val.jsonl").write_text(json.dumps(record) + "\n")
    with Store(tmp_path / "f.sqlite") as store:
        assert store.import_eraser(root) == 1
        assert store.load("d1", annotator="eraser").spans == ((3, 7),)


def test_an_annotation_without_evidence_names_its_document_by_its_id(tmp_path: Path) -> None:
    splits = {"train": [annotation("posR_001.txt", "POS", [])]}  # Movies: docids null
    root = write_eraser(tmp_path / "m", {"posR_001.txt": DOCS["posR_001.txt"]}, splits)
    with Store(tmp_path / "n.sqlite") as store:
        assert store.import_eraser(root) == 1
        saved = store.load("posR_001.txt", annotator="eraser")
        assert saved.spans == () and saved.label == "POS"


def test_a_wrong_evidence_text_warns_and_the_offsets_win(tmp_path: Path) -> None:
    splits = {"test": [annotation("posR_001.txt", "POS", [[ev("posR_001.txt", 1, 3, "awful")]])]}
    root = write_eraser(tmp_path / "m", {"posR_001.txt": DOCS["posR_001.txt"]}, splits)
    with Store(tmp_path / "w.sqlite") as store:
        with pytest.warns(UserWarning, match="1 ERASER evidences.*'awful'.*'great cast'"):
            store.import_eraser(root)
        assert store.load("posR_001.txt", annotator="eraser").spans == ((1, 3),)


def _broken(kind: str) -> tuple[dict[str, str], dict[str, list[dict]], str]:
    docs = dict(DOCS)
    splits = json.loads(json.dumps(SPLITS))
    if kind == "shared document":  # FEVER-style: two queries on one document
        splits["val"].append(annotation("q2", "POS", [[ev("negR_000.txt", 0, 1, "the")]]))
        return docs, splits, "also cited by annotation 'negR_000.txt'.*FEVER"
    if kind == "unknown docid":
        splits["test"][0]["evidences"][0][0]["docid"] = "pair_9_premise"
        return docs, splits, "test.jsonl line 1.*'pair_9_premise', not in docs/"
    if kind == "out of range":
        splits["val"][0]["evidences"][0][1]["end_token"] = 8
        return docs, splits, r"val.jsonl line 1.*\[4, 8\) are outside the document's 7 tokens"
    if kind == "not an offset":
        splits["val"][0]["evidences"][0][1]["start_token"] = 4.0
        return docs, splits, "start_token is 4.0"
    if kind == "no document":
        splits["val"].append(annotation("ghost", "POS", []))
        return docs, splits, "'ghost'.*names no document"
    if kind == "label":
        return docs, splits, "label 'entailment' is not one of this store's labels"
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind",
    ["shared document", "unknown docid", "out of range", "not an offset", "no document", "label"],
)
def test_bad_eraser_data_is_refused_and_nothing_is_written(tmp_path: Path, kind: str) -> None:
    docs, splits, match = _broken(kind)
    root = write_eraser(tmp_path / "bad", docs, splits)
    with Store(tmp_path / "b.sqlite", labels=["NEG", "POS"] if kind == "label" else None) as s:
        s.add_items([{"id": "mine", "text": "already here"}])
        before = dump(s.path)
        with pytest.raises(InputError, match=match):
            s.import_eraser(root)
        assert dump(s.path) == before


def test_import_refuses_a_folder_that_is_not_eraser(tmp_path: Path) -> None:
    with Store(tmp_path / "n.sqlite") as s:
        with pytest.raises(InputError, match="not a folder"):
            s.import_eraser(tmp_path / "missing")
        (tmp_path / "empty").mkdir()
        with pytest.raises(InputError, match=r"none of.*train.jsonl"):
            s.import_eraser(tmp_path / "empty")
        (tmp_path / "empty" / "test.jsonl").write_text("")
        with pytest.raises(InputError, match="neither a docs/ folder"):
            s.import_eraser(tmp_path / "empty")
        write_eraser(tmp_path / "junk", DOCS, {})
        (tmp_path / "junk" / "train.jsonl").write_text("{not json\n")
        with pytest.raises(InputError, match=r"train.jsonl line 1 is not JSON"):
            s.import_eraser(tmp_path / "junk")


def test_import_checks_items_already_in_the_store(tmp_path: Path) -> None:
    root = write_eraser(tmp_path / "m", DOCS, SPLITS)
    with Store(tmp_path / "e.sqlite") as s:
        s.add_items([{"id": "posR_001.txt", "text": "a great cast .\nloved it .", "label": None}])
        s.import_eraser(root)  # same text: fine, and the store's label (None) is kept
        assert s.item("posR_001.txt").label is None
        assert s.load("posR_001.txt", annotator="eraser").label == "POS"
    with Store(tmp_path / "e2.sqlite") as s:
        s.add_items([{"id": "posR_001.txt", "text": "a different review"}])
        with pytest.raises(InputError, match=r"'posR_001.txt' is already in the store"):
            s.import_eraser(root)


def _annotated_store(path: Path) -> Store:
    store = Store(path, labels=["pos", "neg"])
    store.add_items(
        [
            {"id": "r1", "text": "A truly great film .\nI loved it .", "label": "pos"},
            {"id": "r2", "text": "dull .\nfar too long .\nskip", "label": "neg"},
            {"id": "r3", "text": "fine", "label": "pos"},
        ]
    )
    store.save("r1", annotator="ana", spans=[(1, 3), (6, 8)], label="pos")
    store.save("r2", annotator="ana", spans=[(0, 1), (3, 5), (5, 7)], label="neg")
    store.save("r3", annotator="ana", spans=[], no_evidence=True, label="pos")
    return store


def test_export_writes_eraser_files(tmp_path: Path) -> None:
    out = tmp_path / "export"
    with _annotated_store(tmp_path / "a.sqlite") as store:
        assert store.export_eraser(out, split="val") == out
    assert sorted(p.name for p in out.iterdir()) == ["docs", "val.jsonl"]
    assert sorted(p.name for p in (out / "docs").iterdir()) == ["r1", "r2", "r3"]
    assert (out / "docs" / "r2").read_text() == "dull .\nfar too long .\nskip\n"
    records = [json.loads(line) for line in (out / "val.jsonl").read_text().splitlines()]
    assert [r["annotation_id"] for r in records] == ["r1", "r2", "r3"]
    for record in records:
        assert set(record) == ANNOTATION_KEYS
        assert record["query"] == "" and record["query_type"] is None
        assert record["docids"] == [record["annotation_id"]]
        tokens = eraser_tokens(out / "docs" / record["annotation_id"])
        for group in record["evidences"]:
            for evidence in group:
                assert set(evidence) == EVIDENCE_KEYS
                assert (
                    evidence["text"].split(" ")
                    == tokens[evidence["start_token"] : evidence["end_token"]]
                )
    r2 = records[1]
    assert r2["classification"] == "neg"
    assert r2["evidences"] == [
        [ev("r2", 0, 1, "dull", 0, 1)],
        [ev("r2", 3, 5, "too long", 1, 2)],
        [ev("r2", 5, 7, ". skip", 1, 3)],  # across two sentences; end_sentence exclusive
    ]
    assert records[0]["evidences"][1] == [ev("r1", 6, 8, "loved it", 1, 2)]
    assert records[2]["evidences"] == [] and records[2]["classification"] == "pos"


def test_export_refusals(tmp_path: Path) -> None:
    with _annotated_store(tmp_path / "a.sqlite") as store:
        store.save("r1", annotator="bob", spans=[(0, 1)])
        with pytest.raises(InputError, match=r"2 annotators.*annotator="):
            store.export_eraser(tmp_path / "x")
        store.export_eraser(tmp_path / "x", annotator="bob")
        assert len((tmp_path / "x" / "test.jsonl").read_text().splitlines()) == 1
        with pytest.raises(InputError, match="split"):
            store.export_eraser(tmp_path / "y", split="../test")
        store.add_items([{"id": "a/b", "text": "slash"}])
        with pytest.raises(InputError, match="'a/b' cannot be an ERASER document file name"):
            store.export_eraser(tmp_path / "z", annotator="ana")
    assert not (tmp_path / "y").exists() and not (tmp_path / "z").exists()


def read_eraser(root: Path, split: str) -> tuple[dict[str, list[list[str]]], list[dict]]:
    """An ERASER folder read as the format describes it (DeYoung et al. 2020), not by our importer.

    ``docs/<docid>``: one sentence per line, tokens separated by spaces (blank
    lines hold no sentence); ``<split>.jsonl``: one annotation per line, its
    ``evidences`` a list of groups of ``{docid, start_token, end_token}``
    (end exclusive, offsets into the document's tokens taken in order) with
    ``text``, ``start_sentence`` and ``end_sentence`` (end exclusive).
    Returns each document's sentences (lists of tokens) and the annotations.
    """
    docs = {}
    for path in sorted((root / "docs").iterdir()):
        lines = path.read_text(encoding="utf-8").split("\n")
        docs[path.name] = [[t for t in line.split(" ") if t] for line in lines if line.strip()]
    text = (root / f"{split}.jsonl").read_text(encoding="utf-8")
    return docs, [json.loads(line) for line in text.splitlines() if line.strip()]


def test_round_trip_export_then_import_gives_the_same_items_spans_and_labels(
    tmp_path: Path,
) -> None:
    out = tmp_path / "export"
    with _annotated_store(tmp_path / "a.sqlite") as store:
        store.export_eraser(out, annotator="ana", split="train")
        items = store.items()
        saved = {i.id: store.load(i.id, annotator="ana") for i in items}
    # Read back by the format alone: every item's words, spans and label are there.
    docs, records = read_eraser(out, "train")
    assert sorted(docs) == sorted(i.id for i in items)
    by_id = {r["annotation_id"]: r for r in records}
    assert sorted(by_id) == sorted(saved) and len(records) == len(saved)
    for item in items:
        sentences = docs[item.id]
        tokens = [t for sentence in sentences for t in sentence]
        assert tuple(tokens) == item.words
        assert [line.split() for line in item.text.splitlines() if line.strip()] == sentences
        sentence_of = [n for n, sentence in enumerate(sentences) for _ in sentence]
        record = by_id[item.id]
        assert record["classification"] == saved[item.id].label
        assert record["docids"] in (None, [item.id])
        spans = []
        for group in record["evidences"]:
            for evidence in group:
                start, end = evidence["start_token"], evidence["end_token"]
                assert evidence["docid"] == item.id and 0 <= start < end <= len(tokens)
                assert evidence["text"] == " ".join(tokens[start:end])
                assert evidence["start_sentence"] == sentence_of[start]
                assert evidence["end_sentence"] == sentence_of[end - 1] + 1
                spans.append((start, end))
        assert tuple(sorted(spans)) == saved[item.id].spans
    # And our importer reads the same files as that reading does.
    with Store(tmp_path / "b.sqlite", labels=["pos", "neg"]) as again:
        assert again.import_eraser(out, annotator="ana") == 3
        assert [(i.id, i.text, i.words, i.label) for i in again.items()] == [
            (i.id, i.text, i.words, i.label) for i in items
        ]
        for item_id, old in saved.items():
            new = again.load(item_id, annotator="ana")
            assert (new.spans, new.label) == (old.spans, old.label)
