"""Subword tokens look the same in every view, and a selection from Python is revealed.

A real WordPiece tokenizer (the tiny BERT's) splits "cabinets" into
``cab ##in ##et ##s``. Every view shows the pieces without the ``##``
marker (NeuronView used to keep it), and each piece's tooltip still names
the tokenizer's own string, so the marker is one hover away. When Python
selects a token that is out of sight, the page scrolls it into view.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from offline_browser import open_offline
from tiny_models import build

import attnwidget
from attnwidget.views import FlowView, HeadView, NeuronView, SaliencyView
from attnwidget.views.core.standalone import bundle_script, document, exported, widget_bundle

pytestmark = pytest.mark.browser

TEXT = "the cabinets are playing"

#: The text and title of every token element of a view's root.
TOKENS_JS = """sel => [...document.querySelectorAll(sel)].map(e => [e.textContent, e.title])"""


def save(path: Path, views: list[Any]) -> Path:
    blocks, replies = [], []
    for view in views:
        block, answers = exported(view)
        blocks.append(block)
        replies.extend(answers)
    bundle = bundle_script(widget_bundle(views[0]))
    path.write_text(document(path.stem, blocks, bundle, replies), encoding="utf-8")
    return path


def test_subwords_are_shown_alike_with_the_marker_on_hover(tmp_path: Path, browser: Any) -> None:
    model, tokenizer = build("bert-cls")
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=["raw", "rollout"])
    raw = list(exp.raw_tokens or [])
    assert "##in" in raw, raw  # the tokenizer really splits a word here
    shown = list(exp.tokens)
    views = {
        '.attnw-saliency .attnw-tok[data-method="raw"]': SaliencyView(exp),
        ".attnw-headview .attnw-col-left .attnw-token": HeadView(exp),
        ".attnw-flow .attnw-flow-left .attnw-flow-tok": FlowView(exp, selected_method="rollout"),
        ".attnw-neuronview .attnw-neuron-token": NeuronView(model, tokenizer, TEXT),
    }
    assert views[".attnw-neuronview .attnw-neuron-token"].tokens == shown
    offline = open_offline(browser, save(tmp_path / "tokens.html", list(views.values())))
    try:
        page = offline.page
        for selector in views:
            page.locator(selector).first.wait_for(timeout=15000)
            cells = page.evaluate(TOKENS_JS, selector)
            texts = [text for text, _title in cells]
            assert texts == shown, (selector, texts)
            assert not any("##" in text for text in texts), selector
            for (_text, title), mark, text in zip(cells, raw, shown, strict=True):
                # A piece whose tokenizer string differs names it on hover.
                assert (f'(token "{mark}")' in title) == (mark != text), (selector, title)
        offline.assert_clean()
    finally:
        offline.page.context.close()


def test_a_token_selected_from_python_scrolls_into_view(
    page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    from IPython.display import display

    model, tokenizer = build("bert-cls")
    text = " ".join([TEXT] * 4)  # ~54 tokens (the tiny BERT takes 64): the views scroll
    exp = attnwidget.explain(model, tokenizer, text, methods=["raw"])
    last = len(exp.tokens) - 2
    head, saliency = HeadView(exp), SaliencyView(exp)
    display(head)
    display(saliency)
    page = page_session
    page.set_viewport_size({"width": 900, "height": 700})
    cell = page.locator(f'.attnw-headview .attnw-col-left [data-index="{last}"]')
    cell.wait_for(state="attached", timeout=15000)
    column = page.locator(f'.attnw-saliency .attnw-col[data-index="{last}"]')
    column.wait_for(state="attached", timeout=15000)
    page.evaluate("() => window.scrollTo(0, 0)")
    assert not _in_view(page, cell) and not _in_view(page, column)

    head.selected_token = last
    page.wait_for_function(
        "el => el.classList.contains('attnw-pinned')", arg=cell.element_handle(), timeout=15000
    )
    page.wait_for_function(IN_VIEW, arg=cell.element_handle(), timeout=5000)
    saliency.selected_token = last
    page.locator(f'.attnw-saliency[data-selected="{last}"]').wait_for(timeout=15000)
    page.wait_for_function(IN_VIEW, arg=column.element_handle(), timeout=5000)
    page_watch.assert_clean()


#: True when the element is inside the window and inside every scroller of its
#: view (the notebook's own nested scrollers around the view are the host's).
IN_VIEW = """el => {
  const r = el.getBoundingClientRect();
  if (r.bottom <= 0 || r.top >= innerHeight || r.right <= 0 || r.left >= innerWidth) return false;
  const root = el.closest('.attnw');
  for (let p = el.parentElement; p && root.contains(p); p = p.parentElement) {
    const s = getComputedStyle(p);
    if (!/(auto|scroll)/.test(s.overflowY + s.overflowX)) continue;
    const b = p.getBoundingClientRect();
    const out = r.bottom <= b.top || r.top >= b.bottom || r.right <= b.left || r.left >= b.right;
    if (out) return false;
  }
  return true;
}"""


def _in_view(page: Any, locator: Any) -> bool:
    return bool(page.evaluate(IN_VIEW, locator.element_handle()))
