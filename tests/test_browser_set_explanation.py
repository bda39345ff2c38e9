"""``set_explanation`` in a real headless Chromium (pytest-ipywidgets + Playwright):
the page redraws with the new explanation and never shows attention it had
loaded for the old one."""

from __future__ import annotations

import numpy as np
import pytest
from IPython.display import display
from polling import wait_until

from attnwidget.results.explanation import Explanation
from attnwidget.views import HeadView, ModelView

pytestmark = pytest.mark.browser


def peaked(layers: int, heads: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = rng.random((layers, heads, n, n), dtype=np.float32) ** 8
    return weights / weights.sum(-1, keepdims=True)


def test_head_view_redraws_the_new_explanation(page_watch, solara_test, page_session) -> None:
    old = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    new = ["[CLS]", "dogs", "bark", "[SEP]"]
    view = HeadView(Explanation(tokens=old, attentions=peaked(2, 3, 5)), layer=1)
    display(view)
    page = page_session
    left = page.locator(".attnw-headview .attnw-col-left .attnw-token")
    page.locator(".attnw-headview[data-state=ready]").wait_for()
    left.nth(2).click()
    wait_until(lambda: view.selected_token == 2)

    view.set_explanation(Explanation(tokens=new, attentions=peaked(2, 3, 4, seed=1)))
    page.wait_for_function(
        "n => document.querySelectorAll('.attnw-headview .attnw-col-left .attnw-token')"
        ".length === n",
        arg=len(new),
    )
    assert left.all_text_contents() == new
    page.locator(".attnw-headview[data-state=ready][data-layer='1']").wait_for()
    assert page.locator(".attnw-headview .attnw-pinned").count() == 0
    assert int(page.locator(".attnw-headview .attnw-lines").get_attribute("data-lines")) > 0
    page_watch.assert_clean()


def test_model_view_drops_attention_loaded_for_the_old_explanation(
    page_watch, solara_test, page_session
) -> None:
    """Large inputs with no head enlarged send no attention with the state, and a new
    explanation of the same shape changes neither ``preload`` nor ``matrices``: the page
    must still forget the heads it fetched for the old one."""
    n = 300
    old = Explanation(tokens=[f"w{i}" for i in range(n)], attentions=peaked(4, 6, n))
    weights = peaked(4, 6, n, seed=2)
    weights[0, 0] = np.eye(n, dtype=np.float32)  # head (0, 0): exactly n lines
    new = Explanation(tokens=[f"v{i}" for i in range(n)], attentions=weights)
    view = ModelView(old)
    display(view)
    page = page_session
    root = page.locator(".attnw-modelview")
    detail_lines = page.locator(".attnw-modelview .attnw-detail .attnw-lines")
    page.locator(".attnw-modelview[data-state=ready]").wait_for()

    view.select(0, 0)  # fetched from the kernel: the old explanation's head
    page.locator(".attnw-modelview[data-state=ready][data-layer='0'][data-head='0']").wait_for()
    page.wait_for_function(
        "() => Number(document.querySelector('.attnw-modelview .attnw-detail .attnw-lines')"
        ".dataset.lines) > 0"
    )
    assert int(detail_lines.get_attribute("data-lines")) != n
    view.select(-1, -1)
    page.locator(".attnw-modelview[data-head='-1']").wait_for()

    preload_before, matrices_before = view.preload, list(view.matrices)
    view.set_explanation(new)
    assert (view.preload, list(view.matrices)) == (preload_before, matrices_before)
    view.select(0, 0)
    page.locator(".attnw-modelview .attnw-detail .attnw-col-left .attnw-token").first.wait_for()
    page.wait_for_function(
        "n => document.querySelector('.attnw-modelview .attnw-detail .attnw-lines')"
        ".dataset.lines === String(n)",
        arg=n,
        timeout=15000,
    )
    assert root.get_attribute("data-state") == "ready"
    tokens = page.locator(".attnw-modelview .attnw-detail .attnw-col-left .attnw-token")
    assert tokens.first.text_content() == "v0"
    page_watch.assert_clean()
