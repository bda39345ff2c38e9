"""The Explorer's Compare tab in a real headless Chromium (solara's test page on
127.0.0.1): nothing is compared until the tab is shown; then it draws a
CompareView of the shown methods with the progress line saying so, and a
token pinned there is pinned in the other views, and back."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from IPython.display import display
from polling import wait_until

from attnwidget import demo
from attnwidget.views import Explorer

pytestmark = pytest.mark.browser

TEXT = "the keys to the cabinet"


@functools.cache
def encoder() -> tuple[Any, Any]:
    return demo.load("sva-encoder")


def show_tab(page: Any, title: str) -> None:
    page.locator(".attnw-explorer .lm-TabBar-tab", has_text=title).click()


def test_the_compare_tab_draws_when_shown_and_pins_with_the_views(
    page_watch, solara_test, page_session
) -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, TEXT)
    saliency = explorer.views["saliency"]
    display(explorer)
    page = page_session
    page.locator(".attnw-saliency .attnw-tok", has_text="cabinet").first.wait_for()
    tab = page.locator(".attnw-explorer .lm-TabBar-tab", has_text="Compare")
    tab.wait_for()
    explorer.wait()
    assert explorer.compare_view is None  # not computed before it is shown

    show_tab(page, "Compare")
    root = page.locator(".attnw-explorer .attnw-compare[data-state=ready]")
    root.wait_for()
    view = explorer.compare_view
    assert view is not None and view.methods == saliency.methods
    page.locator(".attnw-explorer-progress", has_text="Compare: 4 methods in").wait_for()
    rows = root.locator('.attnw-tok[data-method="rollout"]')
    assert rows.all_text_contents() == explorer.explanation.tokens

    # A token pinned in the Compare tab is pinned in the other views...
    root.locator('.attnw-tok[data-method="raw"][data-index="2"]').click()
    wait_until(lambda: view.selected_token == 2 and saliency.selected_token == 2)
    wait_until(lambda: explorer.views["flow"].selected_token == 2)
    # ...and one pinned in another view reaches the Compare tab's page.
    show_tab(page, "Saliency")
    page.locator('.attnw-saliency .attnw-tok[data-method="rollout"][data-index="4"]').click()
    wait_until(lambda: view.selected_token == 4)
    show_tab(page, "Compare")
    root.locator('.attnw-tok.attnw-selected[data-index="4"]').first.wait_for()

    # A new input while the tab is shown: compared again, drawn again.
    explorer.text = "the key near the old doors"
    wait_until(lambda: view.tokens == explorer.explanation.tokens, timeout=30)
    root.locator('.attnw-tok[data-method="raw"]', has_text="doors").wait_for()
    page_watch.assert_clean()
