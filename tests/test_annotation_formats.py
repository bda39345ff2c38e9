"""Label Studio, doccano, Prodigy and datasets to and from a Store, both ways.

The files are written here by hand after each tool's documented schema (see
each module's docstring for the page): character offsets, end exclusive.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from attnwidget.annotations import Store
from attnwidget.annotations.formats import (
    export_doccano,
    export_eraser_all,
    export_label_studio,
    export_prodigy,
    from_dataset,
    import_doccano,
    import_eraser_all,
    import_label_studio,
    import_prodigy,
    to_dataset,
)
from attnwidget.annotations.formats._common import keeps_chars
from attnwidget.errors import InputError

REVIEW = "The plot was thin, but the acting is superb."
#         0123456789012345678901234567890123456789012345
# words:  The(0,3) plot(4,8) was(9,12) thin,(13,18) but(19,22) the(23,26) acting(27,33)
#         is(34,36) superb.(37,44)
TWEET = "Service slow; food cold."
# words:  Service(0,7) slow;(8,13) food(14,18) cold.(19,24)

LABEL_STUDIO = [
    {
        "id": 101,
        "data": {"text": REVIEW, "id": "rev-1"},
        "annotations": [
            {
                "id": 11,
                "completed_by": {"id": 1, "email": "ana@example.org"},
                "was_cancelled": False,
                "result": [
                    {
                        "id": "r1",
                        "from_name": "label",
                        "to_name": "text",
                        "type": "labels",
                        "value": {
                            "start": 37,
                            "end": 44,
                            "text": "superb.",
                            "labels": ["EVIDENCE"],
                        },
                    },
                    {
                        "id": "r2",
                        "from_name": "sentiment",
                        "to_name": "text",
                        "type": "choices",
                        "value": {"choices": ["pos"]},
                    },
                ],
            },
            {
                "id": 12,
                "completed_by": 2,
                "was_cancelled": False,
                "result": [
                    {
                        "id": "r3",
                        "from_name": "label",
                        "to_name": "text",
                        "type": "labels",
                        # "thin" without its comma, and a bit of "superb": rounded out to words
                        "value": {"start": 13, "end": 17, "text": "thin", "labels": ["EVIDENCE"]},
                    },
                    {
                        "id": "r4",
                        "from_name": "label",
                        "to_name": "text",
                        "type": "labels",
                        "value": {"start": 37, "end": 43, "text": "superb", "labels": ["EVIDENCE"]},
                    },
                ],
            },
            {"id": 13, "completed_by": 3, "was_cancelled": True, "result": []},
        ],
        "predictions": [],
    },
    {
        "id": 102,
        "data": {"text": TWEET},
        "annotations": [
            {
                "id": 21,
                "completed_by": {"id": 1, "email": "ana@example.org"},
                "result": [
                    {
                        "id": "r5",
                        "from_name": "label",
                        "to_name": "text",
                        "type": "labels",
                        "value": {"start": 0, "end": 13, "text": "Service slow;", "labels": ["X"]},
                    }
                ],
            }
        ],
    },
]


def rows(store: Store) -> list[tuple]:
    frame = store.to_dataframe()
    return [
        (r.item_id, r.annotator, tuple(r.spans), r.label if isinstance(r.label, str) else None)
        for r in frame.itertuples()
    ]


def test_label_studio_import(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(LABEL_STUDIO))
    store = Store(tmp_path / "s.sqlite")
    report = import_label_studio(store, path)
    assert report.items_added == 2 and report.saved == 3
    assert rows(store) == [
        ("rev-1", "2", ((3, 4), (8, 9)), None),
        ("rev-1", "ana@example.org", ((8, 9),), "pos"),
        ("102", "ana@example.org", ((0, 2),), None),  # no data.id: the task's id
    ]
    assert [(r.char_span, r.word_span, r.text) for r in report.rounded] == [
        ((13, 17), (3, 4), "thin"),
        ((37, 43), (8, 9), "superb"),
    ]
    assert report.skipped == [
        "export.json task[0].annotations[2]: cancelled (was_cancelled) by '3'"
    ]
    # Idempotent: the same file again changes nothing.
    again = import_label_studio(store, path)
    assert (again.saved, again.unchanged, again.items_added) == (0, 3, 0)


def test_label_studio_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(LABEL_STUDIO))
    store = Store(tmp_path / "s.sqlite", labels=["pos", "neg"])
    import_label_studio(store, path)
    out = export_label_studio(store, tmp_path / "out.json", span_label="EVIDENCE")
    tasks = json.loads(out.read_text())
    assert [t["data"]["id"] for t in tasks] == ["rev-1", "102"]
    first = tasks[0]["annotations"][1]
    assert first["completed_by"]["email"] == "ana@example.org"
    region = first["result"][0]
    assert region["type"] == "labels" and region["value"] == {
        "start": 37,
        "end": 44,
        "text": "superb.",
        "labels": ["EVIDENCE"],
    }
    assert first["result"][1]["value"] == {"choices": ["pos"]}
    rounded = tasks[0]["annotations"][0]["result"]
    if keeps_chars(store):  # the store keeps the characters: exactly the file's
        assert [(r["value"]["start"], r["value"]["end"]) for r in rounded] == [(13, 17), (37, 43)]
    else:  # words only: the words the characters overlapped
        assert [(r["value"]["start"], r["value"]["end"]) for r in rounded] == [(13, 18), (37, 44)]
    back = Store(tmp_path / "back.sqlite", labels=["pos", "neg"])
    report = import_label_studio(back, out)
    assert rows(back) == rows(store) and report.saved == 3
    again_path = export_label_studio(back, tmp_path / "again.json", span_label="EVIDENCE")
    again = json.loads(again_path.read_text())
    strip = [
        [{k: v for k, v in a.items() if k != "created_at"} for a in t["annotations"]] for t in tasks
    ]
    assert strip == [
        [{k: v for k, v in a.items() if k != "created_at"} for a in t["annotations"]] for t in again
    ]


def test_label_studio_refusals_write_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite", labels=["pos", "neg"])
    bad = json.loads(json.dumps(LABEL_STUDIO))
    bad[1]["annotations"][0]["result"][0]["value"]["end"] = 99  # past the text's end
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"task\[1\].*\(0, 99\) is outside"):
        import_label_studio(store, tmp_path / "bad.json")
    assert len(store) == 0 and rows(store) == []
    bad = json.loads(json.dumps(LABEL_STUDIO))
    del bad[0]["data"]["text"]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"task\[0\].*'data'.*no 'text' key"):
        import_label_studio(store, tmp_path / "bad.json")
    bad = json.loads(json.dumps(LABEL_STUDIO))
    bad[0]["annotations"][0]["result"][1]["value"]["choices"] = ["meh"]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"label 'meh' is not one of this store's labels"):
        import_label_studio(store, tmp_path / "bad.json")
    (tmp_path / "bad.json").write_text('{"data": ')
    with pytest.raises(InputError, match=r"bad.json is not JSON: line 1"):
        import_label_studio(store, tmp_path / "bad.json")
    (tmp_path / "bad.json").write_text('{"data": {}}')
    with pytest.raises(InputError, match=r"list of tasks"):
        import_label_studio(store, tmp_path / "bad.json")
    assert len(store) == 0


DOCCANO_ANA = [
    {
        "id": 7,
        "text": REVIEW,
        "label": [[27, 33, "EVIDENCE"], [37, 44, "EVIDENCE"]],
        "cats": ["pos"],
    },
    {"id": 8, "text": TWEET, "label": [[8, 13, "EVIDENCE"], [19, 24, "EVIDENCE"]]},
]
DOCCANO_BEN = [
    {"id": 7, "text": REVIEW, "label": [[4, 18, "EVIDENCE"]], "cats": ["neg"]},
    # doccano's intent-detection layout: "entities" and "cats"
    {"id": 8, "text": TWEET, "entities": [[19, 23, "EVIDENCE"]], "cats": ["neg"]},
]


def write_jsonl(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_doccano_folder_round_trip(tmp_path: Path) -> None:
    folder = tmp_path / "doccano"
    write_jsonl(folder / "ana.jsonl", DOCCANO_ANA)
    write_jsonl(folder / "ben.jsonl", DOCCANO_BEN)
    store = Store(tmp_path / "s.sqlite")
    report = import_doccano(store, folder)
    assert rows(store) == [
        ("7", "ana", ((6, 7), (8, 9)), "pos"),
        ("7", "ben", ((1, 4),), "neg"),
        ("8", "ana", ((1, 2), (3, 4)), None),
        ("8", "ben", ((3, 4),), "neg"),
    ]
    assert [(r.annotator, r.char_span) for r in report.rounded] == [("ben", (19, 23))]
    out = export_doccano(store, tmp_path / "out", span_label="EVIDENCE")
    assert sorted(p.name for p in out.iterdir()) == ["ana.jsonl", "ben.jsonl"]
    ana = [json.loads(line) for line in (out / "ana.jsonl").read_text().splitlines()]
    assert ana[0] == {"id": "7", "text": REVIEW, "label": DOCCANO_ANA[0]["label"], "cats": ["pos"]}
    assert ana[1]["label"] == DOCCANO_ANA[1]["label"] and "cats" not in ana[1]
    back = Store(tmp_path / "back.sqlite")
    import_doccano(back, out)
    assert rows(back) == rows(store)
    one = export_doccano(store, tmp_path / "one.jsonl", annotator="ben")
    assert import_doccano(back, one, annotator="ben").unchanged == 2


def test_doccano_errors_name_the_line_and_key(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    path = tmp_path / "ana.jsonl"
    path.write_text(json.dumps(DOCCANO_ANA[0]) + "\n{not json\n")
    with pytest.raises(InputError, match=r"ana.jsonl line 2 is not JSON"):
        import_doccano(store, path)
    write_jsonl(path, [DOCCANO_ANA[0], {"id": 9, "label": []}])
    with pytest.raises(InputError, match=r"ana.jsonl line 2: no 'text' key"):
        import_doccano(store, path)
    write_jsonl(path, [DOCCANO_ANA[0], {"id": 9, "text": "x y", "label": [[0, 1]]}])
    with pytest.raises(InputError, match=r"line 2, 'label'\[0\] is \[0, 1\]"):
        import_doccano(store, path)
    write_jsonl(path, [DOCCANO_ANA[0], {"id": 7, "text": "another text", "label": []}])
    with pytest.raises(InputError, match=r"item '7' .* different text"):
        import_doccano(store, path)
    assert len(store) == 0


def test_reimport_conflicts(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "ana.jsonl", DOCCANO_ANA)
    store = Store(tmp_path / "s.sqlite")
    import_doccano(store, path)
    changed = [dict(DOCCANO_ANA[0], label=[[0, 3, "EVIDENCE"]]), DOCCANO_ANA[1]]
    write_jsonl(path, changed)
    with pytest.raises(InputError, match=r"1 annotation.* differ.*nothing was written"):
        import_doccano(store, path)
    assert store.load("7", annotator="ana").spans == ((6, 7), (8, 9))
    kept = import_doccano(store, path, on_conflict="keep")
    assert (kept.kept, kept.unchanged, kept.saved) == (1, 1, 0)
    replaced = import_doccano(store, path, on_conflict="replace")
    assert (replaced.replaced, replaced.saved) == (1, 1)
    assert store.load("7", annotator="ana").spans == ((0, 1),)
    assert len(store.history("7", annotator="ana")) == 2


PRODIGY = [
    {
        "text": REVIEW,
        "tokens": [{"text": "The", "start": 0, "end": 3, "id": 0}],
        "spans": [{"start": 27, "end": 44, "label": "EVIDENCE", "token_start": 6, "token_end": 8}],
        "accept": ["pos"],
        "answer": "accept",
        "meta": {"id": "rev-1"},
        "_input_hash": 12345,
        "_task_hash": -678,
        "_session_id": "rationales-ana",
        "_annotator_id": "rationales-ana",
    },
    {
        "text": TWEET,
        "spans": [],
        "answer": "accept",
        "meta": {"id": "tw-1"},
        "_annotator_id": "rationales-ana",
    },
    {
        "text": TWEET,
        "spans": [{"start": 0, "end": 7, "label": "EVIDENCE"}],
        "answer": "reject",
        "meta": {"id": "tw-1"},
        "_annotator_id": "rationales-ben",
    },
    {
        "text": TWEET,
        "spans": [{"start": 14, "end": 24, "label": "EVIDENCE"}],
        "answer": "accept",
        "_input_hash": 999,
        "_session_id": "rationales-ben",
    },
]


def test_prodigy_round_trip(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "db-out.jsonl", PRODIGY)
    store = Store(tmp_path / "s.sqlite")
    report = import_prodigy(store, path)
    assert rows(store) == [
        ("rev-1", "rationales-ana", ((6, 9),), "pos"),
        ("tw-1", "rationales-ana", (), None),
        ("999", "rationales-ben", ((2, 4),), None),
    ]
    assert report.skipped == [
        "db-out.jsonl line 3: answer 'reject' by 'rationales-ben'"
        " (only accepted lines are imported)"
    ]
    out = export_prodigy(store, tmp_path / "out.jsonl", span_label="EVIDENCE")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["spans"] == [
        {"start": 27, "end": 44, "label": "EVIDENCE", "token_start": 6, "token_end": 8}
    ]
    assert lines[0]["tokens"][6] == {"text": "acting", "start": 27, "end": 33, "id": 6}
    assert (lines[0]["answer"], lines[0]["accept"], lines[0]["meta"]) == (
        "accept",
        ["pos"],
        {"id": "rev-1"},
    )
    assert lines[1]["spans"] == [] and lines[1]["_annotator_id"] == "rationales-ana"
    back = Store(tmp_path / "back.sqlite")
    import_prodigy(back, out)
    assert rows(back) == rows(store)


def test_prodigy_errors(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    path = write_jsonl(tmp_path / "p.jsonl", [dict(PRODIGY[0], answer="maybe")])
    with pytest.raises(InputError, match=r"p.jsonl line 1: 'answer' is 'maybe'"):
        import_prodigy(store, path)
    line = {k: v for k, v in PRODIGY[0].items() if not k.startswith("_")}
    write_jsonl(path, [line])
    with pytest.raises(InputError, match=r"line 1: no '_annotator_id'.*annotator="):
        import_prodigy(store, path)
    assert import_prodigy(store, path, annotator="ana").saved == 1
    write_jsonl(path, [dict(PRODIGY[0], spans=[{"start": "27", "end": 44}])])
    with pytest.raises(InputError, match=r"spans\[0\]: 'start' is '27'"):
        import_prodigy(store, path)


def test_dataset_round_trip(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite", labels=["pos", "neg"])
    store.add_items([{"id": "a", "text": "a truly  great film", "label": "pos"}])
    store.add_items([{"id": "b", "text": "dull and long", "text_pair": "why?"}])
    store.save("a", annotator="ana", spans=[(1, 3)], label="pos")
    store.save("a", annotator="ben", spans=[(3, 4)])
    extra = (
        {"no_evidence": True} if "no_evidence" in inspect.signature(store.save).parameters else {}
    )
    store.save("b", annotator="ana", spans=[], label="neg", **extra)
    data = to_dataset(store)
    assert data.column_names == [
        "item_id",
        "text",
        "text_pair",
        "item_label",
        "annotator",
        "label",
        "spans",
        "char_spans",
        "rationale",
    ]
    assert data[0] == {
        "item_id": "a",
        "text": "a truly  great film",
        "text_pair": None,
        "item_label": "pos",
        "annotator": "ana",
        "label": "pos",
        "spans": [[1, 3]],
        "char_spans": [[2, 14]],
        "rationale": [0, 1, 1, 0],
    }
    assert data[2]["rationale"] == [0, 0, 0] and data[2]["text_pair"] == "why?"
    back = Store(tmp_path / "back.sqlite", labels=["pos", "neg"])
    report = from_dataset(back, data)
    assert report.saved == 3 and rows(back) == rows(store)
    assert [(i.id, i.label, i.text_pair) for i in back.items()] == [
        ("a", "pos", None),
        ("b", None, "why?"),
    ]
    words_only = [{k: v for k, v in row.items() if k != "char_spans"} for row in data]
    assert from_dataset(back, words_only).unchanged == 3
    with pytest.raises(InputError, match=r"row 0: no 'annotator' key"):
        from_dataset(back, [{"item_id": "a", "text": "x"}])


def test_eraser_all_annotators_and_gold(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite", labels=["pos", "neg"])
    store.add_items([{"id": "d1", "text": "a great film", "label": "pos"}])
    store.add_items([{"id": "d2", "text": "dull and long", "label": "neg"}])
    for who, spans in (("ana", [(1, 2)]), ("ben", [(1, 3)]), ("gold", [(1, 2)])):
        store.save("d1", annotator=who, spans=spans, label="pos")
    store.save("d2", annotator="ben", spans=[(0, 1)], label="neg")
    files = export_eraser_all(store, tmp_path / "eraser")
    assert {name: path.name for name, path in files.items()} == {
        "gold": "test.jsonl",
        "ana": "test.ana.jsonl",
        "ben": "test.ben.jsonl",
    }
    gold = [json.loads(line) for line in files["gold"].read_text().splitlines()]
    assert [(g["annotation_id"], g["evidences"][0][0]["text"]) for g in gold] == [("d1", "great")]
    ben = [json.loads(line) for line in files["ben"].read_text().splitlines()]
    assert [b["annotation_id"] for b in ben] == ["d1", "d2"]
    back = Store(tmp_path / "back.sqlite", labels=["pos", "neg"])
    assert import_eraser_all(back, tmp_path / "eraser") == {"gold": 1, "ana": 1, "ben": 2}
    assert rows(back) == rows(store)
    store.save("d2", annotator="c.d", spans=[(0, 1)], label="neg")
    with pytest.raises(InputError, match=r"\['c.d'\] cannot be part of an ERASER file name"):
        export_eraser_all(store, tmp_path / "other")


def test_store_methods_are_the_functions(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "ana.jsonl", DOCCANO_ANA)
    store = Store(tmp_path / "s.sqlite")
    assert store.import_doccano(path).saved == 2
    write_jsonl(tmp_path / "ben.jsonl", DOCCANO_BEN)
    store.import_doccano(tmp_path / "ben.jsonl")
    back = Store(tmp_path / "back.sqlite")
    back.import_label_studio(store.export_label_studio(tmp_path / "ls.json"))
    back.import_prodigy(store.export_prodigy(tmp_path / "p.jsonl"), on_conflict="keep")
    back.import_doccano(store.export_doccano(tmp_path / "d"), on_conflict="keep")
    assert rows(back) == rows(store)
    assert store.to_dataset().num_rows == 4
    assert store.agreement(n_resamples=10).overall.loc["ana vs ben", "n_items"] == 2
