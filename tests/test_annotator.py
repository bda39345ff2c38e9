"""Annotator without a browser: items in every accepted form, saves that reach
the SQLite file at once (read back with a fresh sqlite3 connection), resuming,
unsaved marks kept per item, the page's messages and their replies, refusals
that name the fix, and the model's prediction and word scores.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import traitlets

import attnwidget
from attnwidget.annotations import Store
from attnwidget.annotations.alignment import align
from attnwidget.errors import InputError
from attnwidget.views import Annotator
from attnwidget.views.core.buffers import decode_float32

TEXTS = ["a truly great film", "dull and far too long", "fine", "not bad at all"]


def rows(path: Path, annotator: str = "ana") -> dict[str, tuple[Any, ...]]:
    """The stored annotations, read with a fresh connection (what another process sees)."""
    with sqlite3.connect(path) as conn:
        found = conn.execute(
            "SELECT i.item_id, a.spans, a.label, a.note, a.confidence FROM annotations a"
            " JOIN items i ON i.idx = a.item_idx WHERE a.annotator = ?",
            (annotator,),
        ).fetchall()
    return {r[0]: (json.loads(r[1]), *r[2:]) for r in found}


class Page:
    """Plays the page: sends its messages to the widget and records the replies."""

    def __init__(self, widget: Annotator, monkeypatch: pytest.MonkeyPatch) -> None:
        self.widget = widget
        self.replies: list[dict[str, Any]] = []
        monkeypatch.setattr(
            widget, "send", lambda content, buffers=None: self.replies.append(content)
        )
        self.counter = 0

    def ask(self, **content: Any) -> dict[str, Any]:
        self.counter += 1
        self.widget._on_message(self.widget, {"request": self.counter, **content}, [])
        reply = self.replies[-1]
        assert reply["request"] == self.counter
        return reply

    def save(self, **fields: Any) -> dict[str, Any]:
        w = self.widget
        base = {"index": w.index, "item_id": w.item["id"], "spans": [[0, 1]], "label": ""}
        base.update(note="", confidence=None, advance=True)
        return self.ask(type="save", **{**base, **fields})


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "rationales.sqlite"


def test_exported_lazily_from_the_package() -> None:
    assert attnwidget.Annotator is Annotator
    assert "Annotator" in attnwidget.__all__


def test_save_reaches_the_file_at_once_and_enter_goes_on(path: Path) -> None:
    ann = Annotator(TEXTS, store=path, annotator="ana", labels=["pos", "neg"])
    words = ["a", "truly", "great", "film"]
    assert ann.item == {"index": 0, "id": "0", "words": words, "text_pair": "", "label": ""}
    assert (ann.count, ann.progress, ann.labels, ann.saved) == (
        4,
        [0, 4, 0],
        ["pos", "neg"],
        None,
    )
    ann.selection = [(2, 3), (1, 2)]
    assert ann.selection == [[1, 2], [2, 3]]  # sorted; touching spans stay apart
    ann.label, ann.note, ann.confidence = "pos", "the adjectives", 0.8
    saved = ann.save()
    assert saved.revision == 1
    assert rows(path) == {"0": ([[1, 2], [2, 3]], "pos", "the adjectives", 0.8)}
    assert ann.index == 1 and ann.progress == [1, 4, 0]
    assert (ann.selection, ann.label, ann.note, ann.confidence, ann.saved) == (
        [],
        "",
        "",
        None,
        None,
    )
    assert ann.current_item.text == TEXTS[1]
    # Saving nothing marked must be said: no evidence is an answer too; the last item stays.
    ann.index = 3
    with pytest.raises(InputError, match=r"nothing is marked.*no_evidence=True"):
        ann.save()
    assert "3" not in rows(path)
    ann.save(no_evidence=True)
    assert ann.index == 3 and rows(path)["3"] == ([], None, None, None)
    assert ann.progress == [2, 4, 1] and ann.saved["no_evidence"] is True


def test_reopening_resumes_at_the_first_unannotated_and_shows_saved_marks(path: Path) -> None:
    ann = Annotator(TEXTS, store=path, annotator="ana", labels=["pos", "neg"])
    ann.selection, ann.label = [(0, 2)], "pos"
    ann.save()
    ann.selection, ann.label, ann.confidence = [(0, 1)], "neg", 0.25
    ann.save()
    ann.store.close()
    again = Annotator(TEXTS, store=path, annotator="ana")  # labels from the store
    assert again.labels == ["pos", "neg"]
    assert again.index == 2 and again.progress == [2, 4, 0]
    again.previous()
    assert (again.selection, again.label, again.confidence) == ([[0, 1]], "neg", 0.25)
    assert again.saved["revision"] == 1 and again.saved["spans"] == [[0, 1]]
    # Another annotator starts from the beginning.
    other = Annotator(TEXTS, store=Store(path), annotator="ben")
    assert other.index == 0 and other.progress == [0, 4, 0]
    assert other.jump_to_first_unannotated() == 0


def test_unsaved_marks_are_kept_per_item_while_moving(path: Path) -> None:
    ann = Annotator(TEXTS, store=path, annotator="ana", labels=["pos", "neg"])
    ann.selection, ann.label = [(1, 3)], "neg"
    assert ann.next() == 1
    assert ann.selection == []
    assert ann.previous() == 0
    assert (ann.selection, ann.label) == ([[1, 3]], "neg")
    assert rows(path) == {}  # kept in the session only, never saved unasked
    assert ann.previous() == 0  # clamped at the ends
    ann.index = 3
    assert ann.next() == 3


def test_jump_to_first_unannotated(path: Path) -> None:
    ann = Annotator(TEXTS, store=path, annotator="ana")
    ann.save(no_evidence=True)
    ann.index = 3
    ann.save(no_evidence=True)
    assert ann.jump_to_first_unannotated() == 1
    ann.save(no_evidence=True)
    ann.save(no_evidence=True)
    assert ann.progress == [4, 4, 4]
    assert ann.jump_to_first_unannotated() is None


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("selection", [(0, 2), (1, 3)], r"overlap; merge them into \(0, 3\)"),
        ("selection", [(3, 9)], "out of range: the text has 4 words"),
        ("selection", [(2, 2)], "end is exclusive"),
        ("label", "meh", r"not one of this annotator's labels \['pos', 'neg'\]"),
        ("confidence", 1.5, "outside \\[0, 1\\]"),
        ("index", 7, r"use 0..3 \(4 items\)"),
        ("selected_method", "rollout", "not in the overlay"),
    ],
)
def test_bad_values_from_python_are_refused_naming_the_fix(
    path: Path, name: str, value: Any, match: str
) -> None:
    ann = Annotator(TEXTS, store=path, annotator="ana", labels=["pos", "neg"])
    with pytest.raises(traitlets.TraitError, match=match):
        setattr(ann, name, value)


def test_items_as_dicts_dataframe_and_dataset(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    datasets = pytest.importorskip("datasets")
    dicts = [{"id": "r1", "text": "good", "label": "pos"}, {"text": "bad", "text_pair": "why?"}]
    ann = Annotator(dicts, store=tmp_path / "a.sqlite", annotator="ana")
    assert [i.id for i in ann._items] == ["r1", "1"]
    assert ann.labels == ["pos"]  # the items' own labels when nothing else names any
    ann.next()
    assert ann.item["text_pair"] == "why?"

    frame = pd.DataFrame(
        {"text": ["one two", "three"], "label": ["neg", None], "text_pair": [np.nan, "q"]},
        index=[10, 20],
    )
    ann = Annotator(frame, store=tmp_path / "b.sqlite", annotator="ana", labels=["pos", "neg"])
    assert [(i.id, i.label, i.text_pair) for i in ann._items] == [
        ("10", "neg", None),
        ("20", None, "q"),
    ]
    assert ann.item["label"] == ""  # the data's label is hidden unless asked for
    shown = Annotator(frame, store=tmp_path / "b.sqlite", annotator="ana", show_label=True)
    assert shown.item["label"] == "neg"

    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
    )
    ds = datasets.Dataset.from_dict({"text": ["meh", "wow"], "label": [0, 1]}, features=features)
    ann = Annotator(ds, store=tmp_path / "c.sqlite", annotator="ana")
    assert [(i.id, i.label) for i in ann._items] == [("0", "neg"), ("1", "pos")]


@pytest.mark.parametrize(
    ("items", "match"),
    [
        ([], "examples is empty"),
        ("just one text", "examples is one string: pass a list of texts"),
        ({"id": "a", "text": "x"}, "wrap it in a list"),
        ([{"id": "a"}], "item 0 \\(id 'a'\\) has no text to annotate"),
        (["ok", "   "], "item 1 \\(id '1'\\) has no text"),
        ([{"id": "a", "text": None}], "has no text"),
        ([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}], "the same id 'a'"),
        ([3.5], "item 0 is a float"),
        (42, "examples is a int"),
    ],
)
def test_bad_items_are_refused_naming_the_fix(path: Path, items: Any, match: str) -> None:
    with pytest.raises(InputError, match=match):
        Annotator(items, store=path, annotator="ana")


def test_bad_store_annotator_and_options(path: Path) -> None:
    Store(path, labels=["pos", "neg"]).close()
    with pytest.raises(InputError, match="was created with labels"):
        Annotator(TEXTS, store=path, annotator="ana", labels=["yes", "no"])
    with pytest.raises(InputError, match=r"pass labels=\['pos', 'neg'\] \(or leave labels out\)"):
        Annotator(TEXTS, store=Store(path), annotator="ana", labels=["neg", "pos"])
    with pytest.raises(InputError, match=r"pass an attnwidget\.annotations\.Store or a file path"):
        Annotator(TEXTS, store=42, annotator="ana")
    with pytest.raises(InputError, match="non-empty string"):
        Annotator(TEXTS, store=path, annotator=" ")
    with pytest.raises(InputError, match="needs a model"):
        Annotator(TEXTS, store=path, annotator="ana", show_scores=True)
    with pytest.raises(TypeError, match="did you mean 'labels'"):
        Annotator(TEXTS, store=path, annotator="ana", lables=["pos"])
    Annotator(TEXTS, store=path, annotator="ana")
    with pytest.raises(InputError, match="different text"):
        Annotator(["another text"], store=path, annotator="ana")  # id "0" names TEXTS[0]


def test_examples_is_the_name_and_items_still_works_with_a_warning(tmp_path: Path) -> None:
    """``examples`` as in evaluate(); ``items=`` warns (at the caller) and gives the same."""
    new = Annotator(examples=TEXTS, store=tmp_path / "a.sqlite", annotator="ana")
    with pytest.warns(DeprecationWarning, match="items= is deprecated.*use examples=") as record:
        old = Annotator(items=TEXTS, store=tmp_path / "b.sqlite", annotator="ana")
    assert [w.filename for w in record if w.category is DeprecationWarning] == [__file__]
    assert [(i.id, i.text) for i in old._items] == [(i.id, i.text) for i in new._items]
    assert (old.count, old.item, old.progress) == (new.count, new.item, new.progress)
    with pytest.raises(TypeError, match=r"give examples= only \(items= is its deprecated name\)"):
        Annotator(TEXTS, items=TEXTS, store=tmp_path / "c.sqlite", annotator="ana")
    with pytest.raises(InputError, match="holds no items: pass the examples"):
        Annotator(store=tmp_path / "c.sqlite", annotator="ana")
    # No examples: the store's own items (a store may come first).
    assert [i.id for i in Annotator(Store(tmp_path / "a.sqlite"), annotator="ana")._items] == [
        i.id for i in new._items
    ]


def test_keyword_state_is_applied_after_the_items(path: Path) -> None:
    ann = Annotator(TEXTS, store=path, annotator="ana", index=2, selection=[(0, 1)])
    assert ann.index == 2 and ann.selection == [[0, 1]]


def test_items_that_are_part_of_a_larger_store(path: Path) -> None:
    store = Store(path)
    store.add_items([{"id": f"x{k}", "text": f"other item {k}"} for k in range(5)])
    store.save("x1", annotator="ana", spans=[(0, 1)])
    ann = Annotator([{"id": "x3", "text": "other item 3"}, "new one"], store=store, annotator="ana")
    assert not ann._order.aligned
    assert ann.progress == [0, 2, 0] and ann.index == 0  # x1 is not one of these items
    ann.save(no_evidence=True)
    assert ann.progress == [1, 2, 1] and ann.index == 1
    assert store.progress("ana") == (2, 6)


def test_page_messages_save_move_and_refuse(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ann = Annotator(TEXTS, store=path, annotator="ana", labels=["pos", "neg"])
    page = Page(ann, monkeypatch)
    reply = page.save(spans=[[1, 3]], label="pos", confidence=0.5)
    assert reply == {"type": "saved", "request": 1, "index": 0, "item_id": "0"} | {
        "revision": 1,
        "progress": [1, 4, 0],
    }
    assert ann.index == 1 and rows(path)["0"] == ([[1, 3]], "pos", None, 0.5)

    # Refused: nothing written, nothing moved, the marks as they were.
    ann.selection, ann.label = [[0, 1]], "neg"
    for fields, match in [
        ({"label": "meh"}, "not one of this annotator's labels"),
        ({"spans": [[0, 2], [1, 3]]}, "overlap"),
        ({"spans": [[0, 9]]}, "out of range"),
        ({"confidence": 2}, "outside"),
        ({"item_id": "3"}, "is not item 1"),
        ({"index": 99}, "is not an item"),
    ]:
        reply = page.save(**fields)
        assert reply["type"] == "refused" and match in reply["message"], (fields, reply)
    assert ann.index == 1 and (ann.selection, ann.label) == ([[0, 1]], "neg")
    assert set(rows(path)) == {"0"}

    assert page.ask(type="go", index=3) == {"type": "shown", "request": 8, "index": 3}
    assert ann.index == 3
    assert page.ask(type="first") == {"type": "shown", "request": 9, "index": 1}
    reply = page.save(advance=False, spans=[[0, 1]], note="n")
    assert reply["type"] == "saved" and ann.index == 1 and ann.saved["note"] == "n"
    # An empty save must say "no evidence": refused, nothing written; then said.
    ann.index = 2
    reply = page.save(spans=[])
    assert reply["type"] == "refused" and "nothing is marked" in reply["message"]
    assert set(rows(path)) == {"0", "1"}
    reply = page.save(spans=[], no_evidence=True, seconds=3.5)
    assert reply["type"] == "saved" and reply["progress"] == [3, 4, 1]
    assert ann.store.load("2", annotator="ana").seconds == 3.5
    ann.index = 3
    ann.save(no_evidence=True)
    reply = page.ask(type="first")
    assert reply["type"] == "refused" and "all 4 items are saved" in reply["message"]
    ann._on_message(ann, {"type": "unknown"}, [])
    ann._on_message(ann, "not a dict", [])
    assert len(page.replies) == 13  # nothing answered those two


def test_a_saved_page_refuses_to_save(path: Path) -> None:
    ann = Annotator(["<b>bold</b> & <script>x</script>"], store=path, annotator="ana")
    html = ann.to_html()
    assert "this is a saved page" in html
    assert "<script>x</script>" not in html  # the state is escaped inside the page


# ---- the model ------------------------------------------------------------------


@pytest.fixture(scope="module")
def classifier():
    from tiny_models import build

    model, tokenizer = build("bert-cls")
    return model, tokenizer


def test_prediction_is_shown_and_labels_come_from_the_model(path: Path, classifier) -> None:
    model, tokenizer = classifier
    texts = ["the keys to the cabinet are on the table", "the movie was great"]
    was = model.training
    hidden = Annotator(texts, store=path, annotator="ana", model=model, tokenizer=tokenizer)
    assert hidden.prediction == {}  # hidden unless asked for: it anchors the annotator
    ann = Annotator(
        texts, store=path, annotator="ana", model=model, tokenizer=tokenizer, show_prediction=True
    )
    assert model.training == was  # run in eval mode, left as it was
    assert ann.labels == ["negative", "positive"]
    assert set(ann.prediction) == {"label", "probability", "truncated"}
    import torch

    model.eval()  # as the Annotator runs it (and leaves it as it was)
    try:
        with torch.no_grad():
            logits = model(**tokenizer(texts[0], return_tensors="pt")).logits[0]
    finally:
        model.train(was)
    probs = torch.softmax(logits, -1)
    assert ann.prediction["label"] == ann.labels[int(probs.argmax())]
    assert ann.prediction["probability"] == pytest.approx(float(probs.max()), rel=1e-5)
    assert ann.scores == b"" and ann.methods == []  # show_scores is off by default
    ann.next()
    assert ann.prediction["label"] in ann.labels


def test_show_scores_sends_word_scores_as_float32_bytes(path: Path, classifier) -> None:
    model, tokenizer = classifier
    text = "the keys to the cabinet are on the table"
    ann = Annotator(
        [text],
        store=path,
        annotator="ana",
        model=model,
        tokenizer=tokenizer,
        methods=["raw", "rollout", "input_x_gradient"],
        show_scores=True,
    )
    assert ann.methods == ["raw", "rollout", "input_x_gradient"]
    assert isinstance(ann.scores, bytes) and ann.shape == [3, 9]
    assert ann.selected_method == "raw" and ann.signed[2] is True
    words = decode_float32(ann.scores, ann.shape)
    exp = attnwidget.explain(model, tokenizer, text, methods=ann.methods)
    alignment = align(tokenizer, text, input_ids=exp.input_ids)
    for i, name in enumerate(ann.methods):
        token = np.asarray(exp.scores[name], dtype=np.float64)
        expected = [token[alignment.token_words == w].sum() for w in range(9)]
        np.testing.assert_allclose(words[i], expected, rtol=1e-4, atol=1e-7)
    # "cabinet" is three WordPiece tokens: its score is their sum.
    pieces = alignment.tokens_of(4)
    assert len(pieces) == 3
    assert words[1, 4] == pytest.approx(
        float(np.asarray(exp.scores["rollout"])[pieces].sum()), rel=1e-4
    )


def test_model_refusals(path: Path, classifier) -> None:
    from tiny_models import build

    model, tokenizer = classifier
    with pytest.raises(InputError, match="needs its tokenizer too"):
        Annotator(TEXTS, store=path, annotator="ana", model=model)
    with pytest.raises(InputError, match="add show_scores=True"):
        Annotator(
            TEXTS, store=path, annotator="ana", model=model, tokenizer=tokenizer, methods=["raw"]
        )
    lm, lm_tokenizer = build("gpt2-lm")
    with pytest.raises(InputError, match="pass a sequence classifier"):
        Annotator(TEXTS, store=path, annotator="ana", model=lm, tokenizer=lm_tokenizer)
    with pytest.raises(attnwidget.UnknownMethodError):
        Annotator(
            TEXTS, store=path, annotator="ana", model=model, tokenizer=tokenizer,
            methods=["nope"], show_scores=True,
        )  # fmt: skip


def test_an_item_the_model_cannot_score_says_why_and_stays_usable(path: Path, classifier) -> None:
    model, tokenizer = classifier

    def broken(item: Any) -> Any:
        raise RuntimeError("CUDA out of memory")

    ann = Annotator(
        ["fine text"],
        store=path,
        annotator="ana",
        model=model,
        tokenizer=tokenizer,
        show_prediction=True,
    )
    ann._model._predictions.clear()
    ann._model._predict = broken
    ann.index = 0
    ann._run_model()
    assert "the model could not score this item: CUDA out of memory" in ann.status
    ann.save(no_evidence=True)  # annotating goes on
    assert rows(path)["0"] == ([], None, None, None)


def test_the_shipped_demo_model(path: Path) -> None:
    from attnwidget import demo

    model, tokenizer = demo.load("sva-encoder")
    ann = Annotator(
        ["the keys to the cabinet are", "the author that the critics praise is"],
        store=path,
        annotator="ana",
        model=model,
        tokenizer=tokenizer,
        show_scores=True,
        methods=["rollout"],
        show_prediction=True,
    )
    assert ann.labels == ["singular", "plural"]
    assert ann.prediction["label"] in ann.labels
    assert ann.shape == [1, 6]
    assert np.isfinite(decode_float32(ann.scores, ann.shape)).all()


def test_selected_method_is_the_overlay_name_and_method_still_works(path: Path, classifier) -> None:
    """The overlay's method is ``selected_method``; ``method=`` and ``ann.method`` warn."""
    model, tokenizer = classifier
    options = dict(model=model, tokenizer=tokenizer, methods=["raw", "rollout"], show_scores=True)
    new = Annotator(["a truly great film"], store=path, annotator="ana", **options)
    new.selected_method = "rollout"
    with pytest.warns(DeprecationWarning, match="method= is deprecated.*use selected_method=") as w:
        old = Annotator(
            ["a truly great film"], store=path, annotator="bo", method="rollout", **options
        )
    assert [r.filename for r in w if r.category is DeprecationWarning] == [__file__]
    assert old.selected_method == new.selected_method == "rollout"
    assert old.get_state(["selected_method"]) == {"selected_method": "rollout"}
    with pytest.warns(DeprecationWarning, match=r"\.method is deprecated.*use \.selected_method"):
        assert old.method == "rollout"
    with pytest.warns(DeprecationWarning, match=r"\.method is deprecated"):
        old.method = "raw"
    assert old.selected_method == "raw"
    assert "method" not in Annotator.class_trait_names(sync=True)
