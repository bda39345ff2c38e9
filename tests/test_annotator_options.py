"""Annotator, issue 23: undo/redo, explicit "no evidence", what the annotator sees
(guidelines and their version, label and prediction hidden by default, time
per item), granularity (word, token, char), the assignment's queue and model
suggestions. Each keyword is strict: a bad value is refused naming the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from attnwidget.annotations import Store
from attnwidget.errors import InputError
from attnwidget.views import Annotator
from attnwidget.views.annotate._options import guidelines_hash

TEXTS = ["a truly great film", "the keys to the cabinet", "dull", "fine"]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "r.sqlite"


@pytest.fixture(scope="module")
def classifier() -> Any:
    from tiny_models import build

    return build("bert-cls")


def test_undo_and_redo_restore_revisions_as_new_ones(path: Path) -> None:
    ann = Annotator(TEXTS, store=path, annotator="ana")
    with pytest.raises(InputError, match="no undo"):
        ann.undo()
    ann.selection = [[0, 1]]
    ann.save(advance=False)
    ann.selection = [[1, 3]]
    ann.save(advance=False)
    assert ann.history == {"undo": True, "redo": False, "shown": 2}
    back = ann.undo()
    assert (back.revision, back.reverted_from, back.spans) == (3, 1, ((0, 1),))
    assert ann.selection == [[0, 1]] and ann.saved["reverted_from"] == 1
    assert ann.history == {"undo": False, "redo": True, "shown": 1}
    forward = ann.redo()
    assert (forward.revision, forward.reverted_from, ann.selection) == (4, 2, [[1, 3]])
    assert [a.revision for a in ann.store.history("0", annotator="ana")] == [1, 2, 3, 4]
    ann.undo()
    ann.selection = [[2, 4]]  # a save after an undo drops the redo step
    ann.save(advance=False)
    assert ann.history == {"undo": True, "redo": False, "shown": 6}
    assert ann.undo().spans == ((0, 1),)


def test_no_evidence_is_explicit_and_counted_apart(path: Path) -> None:
    ann = Annotator(TEXTS, store=path, annotator="ana")
    with pytest.raises(InputError, match="nothing is marked"):
        ann.save()
    assert ann.store.load("0", annotator="ana") is None
    ann.save(no_evidence=True)
    ann.selection = [[0, 1]]
    with pytest.raises(InputError):
        ann.save(no_evidence=True)  # marks and "no evidence" contradict
    ann.save()
    assert ann.progress == [2, 4, 1]
    assert ann.store.load("0", annotator="ana").no_evidence
    with pytest.raises(InputError, match="no_evidence"):
        ann.save(no_evidence="yes")


def test_guidelines_version_and_seconds_are_saved(path: Path) -> None:
    text = "# Rules\n\nMark the **words** that decide the label."
    ann = Annotator(TEXTS, store=path, annotator="ana", guidelines=text)
    assert ann.settings["guidelines"] == text
    assert (
        ann.settings["guidelines_version"] == guidelines_hash(text)
        and len(guidelines_hash(text)) == 12
    )
    ann.selection = [[0, 1]]
    saved = ann.save(seconds=4.25)
    assert (saved.guidelines_version, saved.seconds) == (guidelines_hash(text), 4.25)
    named = Annotator(TEXTS, store=path, annotator="ben", guidelines=text, guidelines_version="v2")
    named.selection = [[0, 1]]
    assert named.save().guidelines_version == "v2"
    plain = Annotator(TEXTS, store=path, annotator="cy")
    plain.selection = [[0, 1]]
    assert plain.save().guidelines_version is None and plain.settings["guidelines"] == ""
    plain.selection = [[0, 1]]
    with pytest.raises(InputError, match="seconds"):
        plain.save(seconds=-1)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"guidelines": 3}, "markdown string"),
        ({"guidelines_version": ""}, "guidelines_version"),
        ({"show_label": "yes"}, "show_label"),
        ({"show_prediction": 1}, "show_prediction"),
        ({"show_prediction": True}, "pass model="),
        ({"granularity": "sentence"}, "granularity='sentence'"),
        ({"granularity": "token"}, "pass tokenizer="),
        ({"suggest": "rollout"}, "pass model= and tokenizer="),
        ({"suggest_top": 0.5}, "add suggest="),
        ({"assigned_only": "no"}, "assigned_only"),
        ({"assigned_only": True}, "no assignment"),
    ],
)
def test_bad_options_are_refused_naming_the_fix(path: Path, options: Any, match: str) -> None:
    with pytest.raises(InputError, match=match):
        Annotator(TEXTS, store=path, annotator="ana", **options)
    assert len(Store(path)) == 0  # refused before any item was added


def test_suggest_options_need_a_known_method_and_a_share(path: Path, classifier: Any) -> None:
    model, tokenizer = classifier
    kw = {"model": model, "tokenizer": tokenizer}
    with pytest.raises(InputError, match="not a method"):
        Annotator(TEXTS, store=path, annotator="ana", suggest="nope", **kw)
    for top in (0, 1.5, "0.2", True):
        with pytest.raises(InputError, match="suggest_top"):
            Annotator(TEXTS, store=path, annotator="ana", suggest="rollout", suggest_top=top, **kw)


def test_char_granularity_saves_character_spans(path: Path) -> None:
    ann = Annotator(["北京欢迎你", "ab cd"], store=path, annotator="ana", granularity="char")
    assert ann.item["words"] == ["北", "京", "欢", "迎", "你"] and ann.item["gaps"] == [""] * 5
    ann.selection = [[1, 3]]
    saved = ann.save()
    assert (saved.char_spans, saved.granularity) == (((1, 3),), "char")
    assert ann.item["words"] == ["a", "b", "c", "d"] and ann.item["gaps"] == ["", " ", "", ""]
    ann.selection = [[1, 3]]  # "b" and "c": the space between is inside the span
    assert ann.save(advance=False).char_spans == ((1, 4),)
    ann.previous()
    assert ann.selection == [[1, 3]] and ann.saved["spans"] == [[1, 3]]


def test_token_granularity_marks_the_tokenizer_tokens(path: Path, classifier: Any) -> None:
    _, tokenizer = classifier
    text = "the cabinet keys"
    ann = Annotator([text], store=path, annotator="ana", tokenizer=tokenizer, granularity="token")
    words = ann.item["words"]
    assert "".join(words) == text.replace(" ", "") and ann.item["gaps"][-1] == ""
    k = next(i for i, w in enumerate(words) if w.startswith("cab"))
    ann.selection = [[k, k + 1]]
    saved = ann.save(advance=False)
    start, end = saved.char_spans[0]
    assert text[start:end] == words[k] and saved.granularity == "token"


def test_label_hidden_unless_show_label(path: Path) -> None:
    items = [{"id": "a", "text": "good film", "label": "pos"}]
    assert Annotator(items, store=path, annotator="ana").item["label"] == ""
    assert Annotator(items, store=path, annotator="ana", show_label=True).item["label"] == "pos"


def test_the_queue_follows_the_assignment(path: Path) -> None:
    store = Store(path)
    store.add_items([{"id": f"i{k}", "text": f"item number {k}"} for k in range(6)])
    store.assign(["ana", "ben"], overlap=1, seed=0)
    queue = store.queue("ana")
    ann = Annotator(store=store, annotator="ana")
    assert [item.id for item in ann._items] == queue and ann.count == len(queue)
    assert ann.settings["queue"] == len(queue)
    ann.selection = [[0, 1]]
    ann.save()
    assert ann.progress[:2] == [1, len(queue)]
    assert store.queue("ana", pending=True) == queue[1:]
    every = Annotator(store=store, annotator="ana", assigned_only=False)
    assert every.count == 6 and every.settings["queue"] is None
    with pytest.raises(InputError):
        Annotator(store=store, annotator="zoe")  # not in the assignment


def test_suggestions_are_marked_accepted_and_recorded(path: Path, classifier: Any) -> None:
    model, tokenizer = classifier
    ann = Annotator(
        ["the keys to the cabinet are on the table"],
        store=path,
        annotator="ana",
        model=model,
        tokenizer=tokenizer,
        suggest="rollout",
        suggest_top=0.2,
    )
    assert ann.settings["suggest"] == "rollout"
    assert ann.suggested and ann.selection == []  # suggested, not marked
    n = sum(end - start for start, end in ann.suggested)
    assert 1 <= n <= 3  # about a fifth of 9 tokens (one word each here)
    assert ann.accept_suggestions() == ann.suggested
    saved = ann.save(advance=False)
    assert saved.suggestion_shown == "rollout"
    assert ann.prediction == {}  # suggestions do not show the prediction
