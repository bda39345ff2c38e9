"""HeadView and ModelView in a real headless Chromium (pytest-ipywidgets + Playwright).

Each test displays a view in solara's test page (served from 127.0.0.1) and
checks the two-way sync (a click changes the Python trait; a Python change
redraws the page), hover filtering (the panel's ``data-lines`` /
``data-focus``), that token text stays text, lazy loading at 512 tokens,
and that the page logs no errors and requests nothing from outside.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from browser_events import settle_injected
from IPython.display import display
from polling import wait_until

from attnwidget.results.explanation import Explanation
from attnwidget.views import HeadView, ModelView

pytestmark = pytest.mark.browser

TOKENS = ["[CLS]", "the", "cat", "[SEP]", "it", "sat", "[SEP]"]
XSS_TOKENS = ["<img src=x onerror=window.__xss=1>", "</script><script>window.__xss=2</script>"]


def peaked(layers: int, heads: int, rows: int, cols: int | None = None, seed: int = 0):
    """Attention with a few strong weights per row (so there are visible lines)."""
    rng = np.random.default_rng(seed)
    weights = rng.random((layers, heads, rows, cols or rows), dtype=np.float32) ** 8
    return weights / weights.sum(-1, keepdims=True)


def wait_for_rows(page: Any, count: int) -> None:
    """Wait until the head view shows ``count`` query tokens."""
    page.wait_for_function(
        "n => document.querySelectorAll('.attnw-headview .attnw-col-left .attnw-token')"
        ".length === n",
        arg=count,
    )


def lines(page: Any, scope: str) -> int:
    return int(page.locator(f"{scope} .attnw-lines").get_attribute("data-lines"))


def drawn_lines(page: Any, scope: str) -> int:
    """The line count once a panel has drawn (it may draw a frame after it opens)."""
    page.wait_for_function(
        "(sel) => Number(document.querySelector(sel)?.getAttribute('data-lines')) > 0",
        arg=f"{scope} .attnw-lines",
    )
    return lines(page, scope)


def test_head_view_clicks_hover_and_python_changes(page_watch, solara_test, page_session) -> None:
    view = HeadView(Explanation(tokens=TOKENS, attentions=peaked(2, 3, 7), sentence_b_start=4))
    display(view)
    page = page_session
    root = page.locator(".attnw-headview")
    page.locator(".attnw-headview[data-state=ready]").wait_for()
    left = page.locator(".attnw-headview .attnw-col-left .attnw-token")
    right = page.locator(".attnw-headview .attnw-col-right .attnw-token")
    assert left.all_text_contents() == TOKENS and right.all_text_contents() == TOKENS
    panel = page.locator(".attnw-headview .attnw-lines")
    full = lines(page, ".attnw-headview")
    assert full > 0

    # Hover a query token: only its lines (at most one per head and key).
    left.nth(2).hover()
    page.locator('.attnw-headview .attnw-lines[data-focus="query:2"]').wait_for()
    assert 0 < lines(page, ".attnw-headview") <= 3 * 7 < full
    right.nth(5).hover()  # a key: the lines into it
    page.locator('.attnw-headview .attnw-lines[data-focus="key:5"]').wait_for()
    page.locator(".attnw-headview .attnw-status").hover()
    page.locator('.attnw-headview .attnw-lines[data-focus=""]').wait_for()
    assert lines(page, ".attnw-headview") == full

    # Click pins the token -> Python; Python -> the page.
    left.nth(2).click()
    wait_until(lambda: view.selected_token == 2)
    page.locator('.attnw-headview .attnw-col-left .attnw-pinned[data-index="2"]').wait_for()
    view.selected_token = 5
    page.locator('.attnw-headview .attnw-col-left .attnw-pinned[data-index="5"]').wait_for()
    page.locator(".attnw-headview .attnw-status").hover()
    assert panel.get_attribute("data-focus") == "query:5"
    left.nth(5).click()  # clicking the pinned token unpins it
    wait_until(lambda: view.selected_token == -1)

    # Layer: Python -> page, page -> Python.
    view.layer = 1
    page.locator(".attnw-headview[data-layer='1']").wait_for()
    assert page.locator(".attnw-headview select.attnw-layer").input_value() == "1"
    page.locator(".attnw-headview select.attnw-layer").select_option("0")
    wait_until(lambda: view.layer == 0)

    # Heads: click toggles, double-click solos, double-click again restores.
    boxes = page.locator(".attnw-headview .attnw-headbox")
    assert boxes.all_text_contents() == ["0", "1", "2"]
    boxes.nth(1).click()
    wait_until(lambda: view.heads == [0, 2])
    page.locator(".attnw-headview[data-heads='0,2']").wait_for()
    boxes.nth(2).dblclick()
    wait_until(lambda: view.heads == [2])
    boxes.nth(2).dblclick()
    wait_until(lambda: view.heads == [0, 1, 2])
    view.heads = [1]
    page.locator(".attnw-headview[data-heads='1']").wait_for()
    assert page.locator(".attnw-headview .attnw-headbox.attnw-off").count() == 2

    # Sentence-pair filter from the page: B -> A keeps B's queries and A's keys.
    page.locator(".attnw-headview select.attnw-filter").select_option("B->A")
    wait_until(lambda: view.pair_filter == "B->A")
    wait_for_rows(page, 3)
    assert left.all_text_contents() == TOKENS[4:] and right.all_text_contents() == TOKENS[:4]
    view.pair_filter = "all"
    wait_for_rows(page, 7)
    assert root.get_attribute("data-state") == "ready"
    page_watch.assert_clean()


def thumbnail(page: Any, layer: int, head: int) -> dict[str, float]:
    """Centre of a thumbnail on the model view's canvas (see model_view.ts geometry)."""
    label_width, label_height, cell, gap = 34, 18, 72, 6
    return {
        "x": label_width + head * (cell + gap) + cell / 2,
        "y": label_height + layer * (cell + gap) + cell / 2,
    }


def test_model_view_click_enlarges_and_python_selects(
    page_watch, solara_test, page_session
) -> None:
    view = ModelView(Explanation(tokens=TOKENS, attentions=peaked(2, 3, 7)))
    display(view)
    page = page_session
    page.locator(".attnw-modelview[data-state=ready]").wait_for()
    canvas = page.locator(".attnw-modelview canvas.attnw-thumbs")
    assert int(page.locator(".attnw-modelview .attnw-grid-wrap").get_attribute("data-lines")) > 0
    assert page.locator(".attnw-modelview .attnw-detail").is_hidden()

    canvas.click(position=thumbnail(page, 1, 2))
    wait_until(lambda: (view.layer, view.head) == (1, 2))
    page.locator(".attnw-modelview[data-layer='1'][data-head='2']").wait_for()
    detail = page.locator(".attnw-modelview .attnw-detail")
    assert detail.locator(".attnw-detail-title").text_content() == "Layer 1, head 2"
    full = drawn_lines(page, ".attnw-modelview .attnw-detail")
    assert full > 0

    view.select(0, 1)  # Python -> page
    page.locator(".attnw-modelview[data-layer='0'][data-head='1']").wait_for()
    assert detail.locator(".attnw-detail-title").text_content() == "Layer 0, head 1"

    # Hover a token of the enlarged head: only its lines.
    detail.locator(".attnw-col-left .attnw-token").nth(3).hover()
    detail.locator('.attnw-lines[data-focus="query:3"]').wait_for()
    assert lines(page, ".attnw-modelview .attnw-detail") <= 7

    detail.locator(".attnw-close").click()
    wait_until(lambda: (view.layer, view.head) == (-1, -1))
    detail.wait_for(state="hidden")
    canvas.click(position=thumbnail(page, 0, 0))
    wait_until(lambda: (view.layer, view.head) == (0, 0))
    canvas.click(position=thumbnail(page, 0, 0))  # the open thumbnail again closes it
    wait_until(lambda: (view.layer, view.head) == (-1, -1))
    page_watch.assert_clean()


def test_token_text_is_never_markup(page_watch, solara_test, page_session) -> None:
    tokens = ["[CLS]", *XSS_TOKENS, "ok", "[SEP]"]
    explanation = Explanation(tokens=tokens, attentions=peaked(1, 2, len(tokens)))
    head = HeadView(explanation)
    model = ModelView(explanation, layer=0, head=1)
    display(head)
    display(model)
    page = page_session
    page.locator(".attnw-headview[data-state=ready]").wait_for()
    page.locator(".attnw-modelview[data-state=ready]").wait_for()
    for scope in (".attnw-headview", ".attnw-modelview .attnw-detail"):
        for side in ("left", "right"):
            cells = page.locator(f"{scope} .attnw-col-{side} .attnw-token")
            assert cells.all_text_contents() == tokens
    assert XSS_TOKENS[0] in page.locator(".attnw-headview .attnw-token").nth(1).get_attribute(
        "title"
    )
    page.locator(".attnw-headview .attnw-col-left .attnw-token").nth(2).click()
    wait_until(lambda: head.selected_token == 2)
    settle_injected(page, page_watch)  # an injected handler would have fired by now
    assert page.evaluate("window.__xss") is None
    assert page.locator(".attnw-attention img, .attnw-attention script").count() == 0
    page_watch.assert_clean()


def test_512_tokens_render_and_load_lazily(page_watch, solara_test, page_session) -> None:
    n = 512
    # Half of each query's attention on itself: at 512 tokens peaked() alone
    # spreads every weight under the minimum visible one (0.02).
    attentions = 0.5 * peaked(3, 12, n) + 0.5 * np.eye(n, dtype=np.float32)
    explanation = Explanation(tokens=[f"w{i}" for i in range(n)], attentions=attentions)
    head = HeadView(explanation)
    model = ModelView(explanation)
    assert {c["layer"] for c in head.preload_index} == {0}  # the rest comes on request
    assert not model.preload_index
    started = time.monotonic()
    display(head)
    display(model)
    page = page_session
    page.locator(".attnw-headview[data-state=ready]").wait_for(timeout=20000)
    page.locator(".attnw-modelview[data-state=ready]").wait_for(timeout=20000)
    rendered = time.monotonic() - started
    assert page.locator(".attnw-headview .attnw-col-left .attnw-token").count() == n
    assert lines(page, ".attnw-headview") > 0

    head.layer = 2  # not in the page yet: it asks the kernel, then draws
    page.locator(".attnw-headview[data-layer='2'][data-state=ready]").wait_for(timeout=20000)
    page.locator(".attnw-headview .attnw-col-left .attnw-token").nth(300).hover()
    page.locator('.attnw-headview .attnw-lines[data-focus="query:300"]').wait_for()

    page.locator(".attnw-modelview canvas.attnw-thumbs").click(position=thumbnail(page, 2, 11))
    wait_until(lambda: (model.layer, model.head) == (2, 11))
    page.locator(".attnw-modelview[data-head='11'][data-state=ready]").wait_for(timeout=20000)
    assert lines(page, ".attnw-modelview .attnw-detail") > 0
    assert rendered < 15, f"first render took {rendered:.1f} s"
    page_watch.assert_clean()


def test_encoder_decoder_and_causal_masking(page_watch, solara_test, page_session) -> None:
    enc = ["Hello", "world", "</s>"]
    dec = ["<pad>", "Hallo", "Welt", "</s>"]
    causal = np.tril(peaked(2, 2, 4, seed=1))
    explanation = Explanation(
        tokens=enc,
        attentions=peaked(2, 2, 3),
        decoder_tokens=dec,
        decoder_attentions=causal / causal.sum(-1, keepdims=True),
        cross_attentions=peaked(2, 2, 4, 3, seed=2),
        kind="encoder-decoder",
    )
    view = HeadView(explanation)
    display(view)
    page = page_session
    page.locator(".attnw-headview[data-state=ready]").wait_for()
    left = page.locator(".attnw-headview .attnw-col-left .attnw-token")
    right = page.locator(".attnw-headview .attnw-col-right .attnw-token")
    assert left.all_text_contents() == enc
    assert page.locator(".attnw-headview .attnw-filter").is_hidden()  # no sentence pair

    page.locator(".attnw-headview select.attnw-matrix").select_option("cross")
    wait_until(lambda: view.matrix == "cross")
    wait_for_rows(page, 4)
    assert left.all_text_contents() == dec and right.all_text_contents() == enc

    view.matrix = "decoder"  # causal: a pinned query's later keys are masked
    page.wait_for_function(
        "() => document.querySelector('.attnw-headview select.attnw-matrix').value === 'decoder'"
    )
    left.nth(1).click()
    wait_until(lambda: view.selected_token == 1)
    page.locator(".attnw-headview .attnw-col-right .attnw-masked").first.wait_for()
    masked = page.locator(".attnw-headview .attnw-col-right .attnw-masked")
    assert [m.get_attribute("data-index") for m in masked.all()] == ["2", "3"]
    page_watch.assert_clean()


def test_exported_pages_work_without_a_kernel(tmp_path, browser) -> None:
    """to_html pages embed the attention: the views draw and react with no kernel."""
    from offline_browser import open_offline

    explanation = Explanation(tokens=TOKENS, attentions=peaked(2, 3, 7), sentence_b_start=4)
    HeadView(explanation, layer=1).to_html(tmp_path / "head.html")
    ModelView(explanation, layer=0, head=2).to_html(tmp_path / "model.html")

    watch = open_offline(browser, tmp_path / "head.html")
    page = watch.page
    page.locator(".attnw-headview[data-state=ready][data-layer='1']").wait_for()
    assert lines(page, ".attnw-headview") > 0
    page.locator(".attnw-headview .attnw-col-left .attnw-token").nth(2).hover()
    page.locator('.attnw-headview .attnw-lines[data-focus="query:2"]').wait_for()
    page.locator(".attnw-headview select.attnw-layer").select_option("0")
    page.locator(".attnw-headview[data-state=ready][data-layer='0']").wait_for()
    page.locator(".attnw-headview .attnw-headbox").nth(0).click()
    page.locator(".attnw-headview[data-heads='1,2']").wait_for()
    watch.assert_clean()
    page.context.close()

    watch = open_offline(browser, tmp_path / "model.html")
    page = watch.page
    page.locator(".attnw-modelview[data-state=ready][data-head='2']").wait_for()
    page.locator(".attnw-modelview canvas.attnw-thumbs").click(position=thumbnail(page, 1, 1))
    page.locator(".attnw-modelview[data-state=ready][data-layer='1'][data-head='1']").wait_for()
    assert lines(page, ".attnw-modelview .attnw-detail") > 0
    watch.assert_clean()
    page.context.close()


def visible_lines(weights: np.ndarray) -> int:
    """Lines a focused query draws in one head: keys whose float16 weight, on
    the line curve's 1/4096 steps, reaches the minimum visible weight
    (attention_layout.ts lineCurve: CURVE_STEPS, MIN_WEIGHT)."""
    wire = np.asarray(weights, dtype=np.float16).astype(np.float64)
    steps = 4096
    return int((np.floor(wire * steps + 0.5) / steps >= 0.02).sum())


def wait_lines(page: Any, scope: str, count: int) -> None:
    """Wait until the panel in ``scope`` has drawn exactly ``count`` lines."""
    page.wait_for_function(
        "([sel, n]) => Number(document.querySelector(sel)?.getAttribute('data-lines')) === n",
        arg=[f"{scope} .attnw-lines", count],
    )


def test_model_view_pins_a_token_of_the_enlarged_head(
    page_watch, solara_test, page_session
) -> None:
    attentions = peaked(2, 3, 7)
    view = ModelView(Explanation(tokens=TOKENS, attentions=attentions), layer=0, head=2)
    display(view)
    page = page_session
    scope = ".attnw-modelview .attnw-detail"
    page.locator(".attnw-modelview[data-state=ready][data-head='2']").wait_for()
    panel = page.locator(f"{scope} .attnw-lines")
    left = page.locator(f"{scope} .attnw-col-left .attnw-token")
    away = page.locator(".attnw-modelview > .attnw-status")  # no token under the mouse
    full = drawn_lines(page, scope)
    expected = {r: visible_lines(attentions[0, 2, r]) for r in range(7)}
    assert full == sum(expected.values()) and expected[2] != expected[4] != expected[1]

    # A click pins the token: Python gets it, the panel keeps only its lines.
    left.nth(2).click()
    wait_until(lambda: view.selected_token == 2)
    page.locator(f'{scope} .attnw-col-left .attnw-pinned[data-index="2"]').wait_for()
    away.hover()
    wait_lines(page, scope, expected[2])
    assert panel.get_attribute("data-focus") == "query:2"
    # Hovering another token previews its lines while one is pinned (as HeadView).
    left.nth(4).hover()
    page.locator(f'{scope} .attnw-lines[data-focus="query:4"]').wait_for()
    wait_lines(page, scope, expected[4])
    away.hover()
    page.locator(f'{scope} .attnw-lines[data-focus="query:2"]').wait_for()
    wait_lines(page, scope, expected[2])

    # Python -> page: another pinned token redraws the lines.
    view.selected_token = 1
    page.locator(f'{scope} .attnw-col-left .attnw-pinned[data-index="1"]').wait_for()
    assert page.locator(f"{scope} .attnw-pinned").count() == 1
    wait_lines(page, scope, expected[1])
    # Another head keeps the pin (the same query tokens) and draws its lines.
    view.select(1, 2)
    page.locator(".attnw-modelview[data-layer='1'][data-head='2'][data-state=ready]").wait_for()
    wait_lines(page, scope, visible_lines(attentions[1, 2, 1]))
    assert panel.get_attribute("data-focus") == "query:1"

    # Clicking the pinned token again unpins: all the lines are back.
    left.nth(1).click()
    wait_until(lambda: view.selected_token == -1)
    away.hover()
    wait_lines(page, scope, sum(visible_lines(row) for row in attentions[1, 2]))
    assert page.locator(f"{scope} .attnw-pinned").count() == 0

    # Esc unpins first, then closes the head; × closes and unpins at once.
    left.nth(3).click()
    wait_until(lambda: view.selected_token == 3)
    page.keyboard.press("Escape")
    wait_until(lambda: view.selected_token == -1)
    assert (view.layer, view.head) == (1, 2)
    page.keyboard.press("Escape")
    wait_until(lambda: (view.layer, view.head) == (-1, -1))
    view.select(0, 2)
    page.locator(".attnw-modelview[data-head='2'][data-state=ready]").wait_for()
    left.nth(5).click()
    wait_until(lambda: view.selected_token == 5)
    page.locator(f"{scope} .attnw-close").click()
    wait_until(lambda: (view.layer, view.head, view.selected_token) == (-1, -1, -1))
    page_watch.assert_clean()


def test_exported_model_view_shows_the_pinned_token(tmp_path, open_page) -> None:
    """to_html keeps the pin, and the saved page pins and unpins without a kernel."""
    attentions = peaked(2, 3, 7)
    view = ModelView(
        Explanation(tokens=TOKENS, attentions=attentions), layer=0, head=2, selected_token=4
    )
    view.to_html(tmp_path / "pinned.html")
    watch = open_page(tmp_path / "pinned.html")
    page = watch.page
    scope = ".attnw-modelview .attnw-detail"
    page.locator(".attnw-modelview[data-state=ready][data-head='2']").wait_for()
    page.locator(f'{scope} .attnw-col-left .attnw-pinned[data-index="4"]').wait_for()
    page.locator(f'{scope} .attnw-lines[data-focus="query:4"]').wait_for()
    wait_lines(page, scope, visible_lines(attentions[0, 2, 4]))

    left = page.locator(f"{scope} .attnw-col-left .attnw-token")
    away = page.locator(".attnw-modelview > .attnw-status")
    left.nth(4).click()  # unpin in the page
    away.hover()
    wait_lines(page, scope, sum(visible_lines(row) for row in attentions[0, 2]))
    left.nth(1).click()
    page.locator(f'{scope} .attnw-col-left .attnw-pinned[data-index="1"]').wait_for()
    away.hover()
    page.keyboard.press("Escape")
    page.locator(f'{scope} .attnw-lines[data-focus=""]').wait_for()
    page.keyboard.press("Escape")
    page.locator(".attnw-modelview[data-head='-1']").wait_for()
    watch.assert_clean()
