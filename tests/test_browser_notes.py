"""Notes on heads (HeadView, ModelView) and edges (FlowView) in a real headless Chromium.

A role and a note typed in the page's notes panel and saved are in the store
(read back with a fresh sqlite3 connection); a new view of the same model
lists them; hostile text stays text; without a store the panel is hidden.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser_events import settle_injected
from IPython.display import display
from polling import wait_until

from attnwidget.results.explanation import Explanation
from attnwidget.views import FlowView, HeadView, ModelView

pytestmark = pytest.mark.browser

TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]"]
HOSTILE = "<img src=x onerror=window.__xss=1>"


def explanation() -> Explanation:
    rng = np.random.default_rng(0)
    weights = rng.random((2, 3, len(TOKENS), len(TOKENS)), dtype=np.float32) ** 3
    weights /= weights.sum(-1, keepdims=True)
    return Explanation.from_attentions(weights, TOKENS, methods=["raw", "rollout"])


def stored(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT model_name, kind, layer, head, from_token, to_token, role, note, annotator"
            " FROM head_notes ORDER BY id"
        ).fetchall()


def test_a_head_note_typed_in_headview_is_stored_and_shown_again(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    path = tmp_path / "notes.sqlite"
    exp = explanation()
    display(HeadView(exp))  # no store: no panel
    view = HeadView(exp, store=path, annotator="ana", model_name="tiny-bert", layer=1)
    display(view)
    page = page_session
    page.locator(".attnw-headview[data-state=ready]").nth(1).wait_for(timeout=15000)
    assert page.locator(".attnw-headview").nth(0).locator(".attnw-notes").is_hidden()
    panel = page.locator('.attnw-notes[data-kind="head"]')
    panel.wait_for(timeout=10000)
    assert panel.locator(".attnw-notes-layer").input_value() == "1"  # follows the view
    panel.locator(".attnw-notes-head").select_option("2")
    panel.locator(".attnw-notes-role").fill("previous-token head")
    panel.locator(".attnw-notes-text").fill(f"looks back one token {HOSTILE}")
    panel.locator(".attnw-notes-save").click()
    page.locator('.attnw-notes[data-status="saved"]').wait_for(timeout=10000)
    note = f"looks back one token {HOSTILE}"
    assert stored(path) == [
        ("tiny-bert", "head", 1, 2, None, None, "previous-token head", note, "ana")
    ]
    assert panel.get_attribute("data-count") == "1"
    # An empty save is refused in the page (nothing sent).
    panel.locator(".attnw-notes-save").click()
    assert panel.get_attribute("data-status") == "error" and len(stored(path)) == 1

    # A new view on the same model (another annotator, even ModelView) lists the note.
    again = ModelView(exp, store=path, annotator="bob", model_name="tiny-bert")
    display(again)
    other = page.locator('.attnw-modelview .attnw-notes[data-kind="head"]')
    other.wait_for(timeout=15000)
    item = other.locator(".attnw-notes-item").first
    item.wait_for(timeout=10000)
    assert item.get_attribute("data-layer") == "1" and item.get_attribute("data-head") == "2"
    assert item.locator(".attnw-notes-item-role").text_content() == "previous-token head"
    assert item.locator(".attnw-notes-item-note").text_content() == note  # text, not markup
    # Another model's view does not list it.
    display(HeadView(exp, store=path, annotator="bob", model_name="gpt2"))
    wait_until(lambda: page.locator('.attnw-notes[data-kind="head"]').count() == 3)
    assert page.locator('.attnw-notes[data-kind="head"]').nth(2).get_attribute("data-count") == "0"
    settle_injected(page, page_watch)
    assert page.evaluate("() => window.__xss ?? null") is None
    assert page.locator(".attnw-notes img").count() == 0
    page_watch.assert_clean()


def test_an_edge_note_typed_in_flowview_is_stored_and_shown_again(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    path = tmp_path / "notes.sqlite"
    exp = explanation()
    view = FlowView(exp, store=path, annotator="ana", model_name="tiny-bert")
    display(view)
    page = page_session
    panel = page.locator('.attnw-notes[data-kind="edge"]')
    panel.wait_for(timeout=15000)
    panel.locator(".attnw-notes-layer").select_option("2")
    panel.locator(".attnw-notes-from").select_option("2")
    panel.locator(".attnw-notes-to").select_option("1")
    panel.locator(".attnw-notes-role").fill(HOSTILE)
    panel.locator(".attnw-notes-save").click()
    page.locator('.attnw-notes[data-status="saved"]').wait_for(timeout=10000)
    assert stored(path) == [("tiny-bert", "edge", 2, None, 2, 1, HOSTILE, "", "ana")]
    assert view.note_store is not None and len(view.note_store.head_notes("tiny-bert")) == 1

    display(FlowView(exp, store=path, annotator="bob", model_name="tiny-bert"))
    item = page.locator('.attnw-notes[data-kind="edge"]').nth(1).locator(".attnw-notes-item")
    item.wait_for(timeout=15000)
    assert (item.get_attribute("data-from"), item.get_attribute("data-to")) == ("2", "1")
    assert item.locator(".attnw-notes-item-role").text_content() == HOSTILE
    assert item.locator(".attnw-notes-where").text_content() == "L2 cat → the"
    settle_injected(page, page_watch)
    assert page.evaluate("() => window.__xss ?? null") is None
    assert page.locator(".attnw-notes img").count() == 0
    page_watch.assert_clean()
