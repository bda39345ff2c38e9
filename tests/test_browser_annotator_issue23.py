"""Annotator in a real headless Chromium, issue 23: undo and redo (keys and
buttons; the store holds the new revisions), an empty save asks and the
"No evidence" choice is stored and counted apart, guidelines drawn from
markdown as text (hostile guidelines stay text) with their version stored,
the data label and the prediction hidden by default and shown on opt-in,
seconds recorded, a character span selected with the mouse saved exactly,
the queue of an assignment, and suggestions drawn, accepted and recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_events import settle_injected
from IPython.display import display
from polling import wait_until
from test_browser_annotator import HOSTILE, INJECTED, ROOT, chip, drag, marked, wait_item

from attnwidget.annotations import Store
from attnwidget.views import Annotator
from attnwidget.views.annotate._options import guidelines_hash

pytestmark = pytest.mark.browser

TEXTS = ["the keys to the cabinet are here", "a truly great film", "dull and long"]


def text_of(page: Any, selector: str) -> str:
    return page.locator(f"{ROOT} {selector}").text_content() or ""


def test_undo_redo_and_no_evidence(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    store = Store(tmp_path / "r.sqlite")
    ann = Annotator(TEXTS, store=store, annotator="ana")
    display(ann)
    page = page_session
    wait_item(page, 0, 15000)
    page.locator(ROOT).focus()

    # An empty save asks; nothing is stored.
    page.keyboard.press("Enter")
    page.locator(f'{ROOT}[data-asking="true"]').wait_for()
    assert "press N (No evidence)" in text_of(page, ".attnw-ann-status")
    assert store.load("0", annotator="ana") is None and ann.index == 0
    page.keyboard.press("n")
    wait_item(page, 1)
    found = store.load("0", annotator="ana")
    assert found is not None and found.no_evidence and found.seconds is not None
    assert found.seconds > 0
    assert text_of(page, ".attnw-ann-progress-text") == "1 / 3 done, 1 no evidence"

    # Two saves of item 1, then undo restores the first marks as a new revision.
    drag(page, 0, 1)
    wait_until(lambda: ann.selection == [[0, 2]])
    page.locator(f"{ROOT} .attnw-ann-save").click()
    wait_item(page, 2)
    page.keyboard.press("ArrowLeft")
    wait_item(page, 1)
    chip(page, 3).click()
    wait_until(lambda: ann.selection == [[0, 2], [3, 4]])
    page.keyboard.press("Enter")
    wait_item(page, 2)
    page.keyboard.press("ArrowLeft")
    wait_item(page, 1)
    assert page.locator(ROOT).get_attribute("data-revision") == "2"
    page.keyboard.press("Control+z")
    page.locator(f'{ROOT}[data-revision="3"][data-state="ready"]').wait_for()
    assert marked(page) == [0, 1]
    assert text_of(page, ".attnw-ann-revision") == "showing revision 3, restores revision 1"
    history = store.history("1", annotator="ana")
    assert [(a.revision, a.reverted_from, a.spans) for a in history][-1] == (3, 1, ((0, 2),))
    assert page.locator(f"{ROOT} .attnw-ann-undo").is_disabled()
    page.keyboard.press("Control+Shift+z")  # redo
    page.locator(f'{ROOT}[data-revision="4"][data-state="ready"]').wait_for()
    assert marked(page) == [0, 1, 3]
    page.locator(f"{ROOT} .attnw-ann-undo").click()  # the button too
    page.locator(f'{ROOT}[data-revision="5"][data-state="ready"]').wait_for()
    page.keyboard.press("Control+y")
    page.locator(f'{ROOT}[data-revision="6"][data-state="ready"]').wait_for()
    assert store.load("1", annotator="ana").spans == ((0, 2), (3, 4))

    # "No evidence" with words marked is refused in the page: clear them first.
    page.keyboard.press("n")
    page.locator(f'{ROOT}[data-error*="clear them"]').wait_for()
    assert store.load("1", annotator="ana").revision == 6
    page_watch.assert_clean()


def test_guidelines_label_and_prediction_hidden_then_shown(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    guidelines = (
        "# Rules\n\nMark **only** the words that decide the label.\n\n"
        f"- never {HOSTILE[0]}\n- {HOSTILE[1]} and {HOSTILE[2]}\n\n[more](https://x.test/g)"
    )
    items = [{"id": "a", "text": "a truly great film", "label": "pos"}]
    ann = Annotator(items, store=tmp_path / "g.sqlite", annotator="ana", guidelines=guidelines)
    display(ann)
    page = page_session
    wait_item(page, 0, 15000)
    panel = page.locator(f"{ROOT} details.attnw-ann-guidelines")
    version = guidelines_hash(guidelines)
    assert text_of(page, ".attnw-ann-guidelines-title") == f"Guidelines (version {version})"
    page.locator(f"{ROOT} .attnw-ann-guidelines-title").click()
    assert panel.get_attribute("open") is not None
    assert text_of(page, ".attnw-ann-guidelines-body h4") == "Rules"
    assert text_of(page, ".attnw-ann-guidelines-body strong") == "only"
    bullets = page.locator(f"{ROOT} .attnw-ann-guidelines-body li").all_text_contents()
    assert bullets == [f"never {HOSTILE[0]}", f"{HOSTILE[1]} and {HOSTILE[2]}"]
    assert page.locator(f"{ROOT} .attnw-ann-guidelines-body a").count() == 0  # no live link
    settle_injected(page, page_watch)
    assert page.evaluate(INJECTED) == {"xss": None, "elements": 0, "handlers": 0}
    # Hidden by default: the data label (and no prediction without show_prediction).
    assert "data label" not in text_of(page, ".attnw-ann-position")
    assert text_of(page, ".attnw-ann-hint") == ""
    chip(page, 2).click()
    wait_until(lambda: ann.selection == [[2, 3]])
    page.keyboard.press("Enter")
    wait_until(lambda: ann.store.load("a", annotator="ana") is not None)
    assert ann.store.load("a", annotator="ana").guidelines_version == version

    shown = Annotator(items, store=tmp_path / "g.sqlite", annotator="ben", show_label=True)
    display(shown)
    page.locator(f"{ROOT} >> nth=1").locator(".attnw-ann-position").wait_for()
    position = page.locator(f"{ROOT} >> nth=1").locator(".attnw-ann-position").text_content()
    assert 'data label "pos"' in (position or "")
    page_watch.assert_clean()


def test_char_granularity_saves_the_dragged_characters(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    ann = Annotator(
        ["北京欢迎你"], store=tmp_path / "c.sqlite", annotator="ana", granularity="char"
    )
    display(ann)
    page = page_session
    wait_item(page, 0, 15000)
    assert page.locator(f"{ROOT} .attnw-ann-word").all_text_contents() == list("北京欢迎你")
    drag(page, 2, 3)  # 欢迎
    wait_until(lambda: ann.selection == [[2, 4]])
    page.keyboard.press("Enter")
    wait_until(lambda: ann.store.load("0", annotator="ana") is not None)
    saved = ann.store.load("0", annotator="ana")
    assert (saved.char_spans, saved.granularity) == (((2, 4),), "char")
    assert "北京欢迎你"[2:4] == "欢迎"
    page_watch.assert_clean()


def test_the_queue_of_an_assignment(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    store = Store(tmp_path / "q.sqlite")
    store.add_items([{"id": f"i{k}", "text": f"item number {k}"} for k in range(6)])
    store.assign(["ana", "ben"], overlap=1, seed=3)
    queue = store.queue("ana")
    ann = Annotator(store=store, annotator="ana")
    display(ann)
    page = page_session
    wait_item(page, 0, 15000)
    assert text_of(page, ".attnw-ann-queue") == f"your queue: {len(queue)} items"
    assert page.locator(ROOT).get_attribute("data-item") == queue[0]
    chip(page, 0).click()
    page.keyboard.press("Enter")
    wait_item(page, 1)
    assert page.locator(ROOT).get_attribute("data-item") == queue[1]
    assert text_of(page, ".attnw-ann-progress-text") == f"1 / {len(queue)} done"
    page_watch.assert_clean()


def test_suggestions_drawn_accepted_and_recorded(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    from tiny_models import build

    model, tokenizer = build("bert-cls")
    ann = Annotator(
        ["the keys to the cabinet are on the table"],
        store=tmp_path / "s.sqlite",
        annotator="ana",
        model=model,
        tokenizer=tokenizer,
        suggest="rollout",
    )
    display(ann)
    page = page_session
    wait_item(page, 0, 15000)
    page.locator(f"{ROOT} .attnw-ann-word.attnw-suggested").first.wait_for()
    suggested = page.locator(f"{ROOT} .attnw-ann-word").evaluate_all(
        "cs => cs.filter(c => c.classList.contains('attnw-suggested')).map(c => +c.dataset.index)"
    )
    assert suggested == [i for s, e in ann.suggested for i in range(s, e)]
    assert "anchor" in text_of(page, ".attnw-ann-warning")
    assert marked(page) == []  # suggested, not marked
    assert text_of(page, ".attnw-ann-hint") == ""  # the prediction stays hidden
    page.locator(ROOT).focus()
    page.keyboard.press("a")
    wait_until(lambda: ann.selection == ann.suggested)
    assert marked(page) == suggested
    page.keyboard.press("Enter")
    wait_until(lambda: ann.store.load("0", annotator="ana") is not None)
    saved = ann.store.load("0", annotator="ana")
    assert saved.suggestion_shown == "rollout"
    assert saved.spans == tuple(tuple(s) for s in ann.suggested)
    page_watch.assert_clean()


def test_token_granularity_draws_tokens_and_saves_their_characters(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    from tiny_models import build

    _, tokenizer = build("bert-cls")
    text = "the cabinet keys"
    ann = Annotator(
        [text],
        store=tmp_path / "t.sqlite",
        annotator="ana",
        tokenizer=tokenizer,
        granularity="token",
    )
    display(ann)
    page = page_session
    wait_item(page, 0, 15000)
    assert page.locator(ROOT).get_attribute("data-granularity") == "token"
    words = page.locator(f"{ROOT} .attnw-ann-word").all_text_contents()
    assert words == ann.item["words"]
    assert page.locator(f"{ROOT} .attnw-ann-words").text_content() == text  # spaces between
    last = len(words) - 1
    drag(page, last - 1, last)
    wait_until(lambda: ann.selection == [[last - 1, last + 1]])
    page.keyboard.press("Enter")
    wait_until(lambda: ann.store.load("0", annotator="ana") is not None)
    saved = ann.store.load("0", annotator="ana")
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)[
        "offset_mapping"
    ]
    assert saved.char_spans == ((offsets[last - 1][0], offsets[last][1]),)  # exactly
    assert saved.granularity == "token"
    page_watch.assert_clean()
