"""The Explorer in a real headless Chromium: linked pins, methods computed when picked, saving.

Live tests display the Explorer in solara's test page (pytest-ipywidgets,
served from 127.0.0.1); the saved page is opened from a file with the
network cut off (offline_browser.py).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from IPython.display import display
from polling import wait_until

from attnwidget import demo
from attnwidget.capture.state import model_lock
from attnwidget.views import Explorer

pytestmark = pytest.mark.browser

TEXT = "the keys to the cabinet"


@functools.cache
def encoder() -> tuple[Any, Any]:
    return demo.load("sva-encoder")


def wait_drawn(page: Any, word: str) -> None:
    """Wait for this test's Explorer (a word of its text), not a previous test's page."""
    page.locator(".attnw-saliency .attnw-tok", has_text=word).first.wait_for()


def show_tab(page: Any, title: str) -> None:
    page.locator(".attnw-explorer .lm-TabBar-tab", has_text=title).click()


def test_a_click_pins_the_token_in_every_view(page_watch, solara_test, page_session) -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, TEXT)
    saliency, flow, head = (explorer.views[k] for k in ("saliency", "flow", "head"))
    display(explorer)
    page = page_session
    wait_drawn(page, "cabinet")
    page.locator('.attnw-saliency .attnw-tok[data-method="rollout"][data-index="2"]').click()
    wait_until(lambda: saliency.selected_token == 2)
    wait_until(lambda: head.selected_token == 2 and flow.selected_token == 2)
    assert flow.selected_layer == 0
    # The other views redraw with the token pinned (drawn in their hidden tabs too).
    show_tab(page, "Heads")
    page.locator('.attnw-headview .attnw-col-left .attnw-pinned[data-index="2"]').wait_for()
    show_tab(page, "Flow")
    page.locator(".attnw-flow[data-selected='0:2']").wait_for()

    # A pin made in the head view reaches the saliency view's page.
    show_tab(page, "Heads")
    page.locator('.attnw-headview .attnw-col-left .attnw-token[data-index="3"]').click()
    wait_until(lambda: head.selected_token == 3 and saliency.selected_token == 3)
    show_tab(page, "Saliency")
    page.locator('.attnw-saliency .attnw-tok.attnw-selected[data-index="3"]').first.wait_for()
    page.locator(".attnw-flow[data-selected='0:3']").wait_for(state="attached")
    page_watch.assert_clean()


def test_a_method_picked_in_the_page_shows_computing_then_its_scores(
    page_watch, solara_test, page_session
) -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, "the key near the doors")
    explorer.wait()
    display(explorer)
    page = page_session
    wait_drawn(page, "doors")
    assert page.locator('.attnw-saliency .attnw-tok[data-method="lrp"]').count() == 0
    button = page.locator(".attnw-explorer-methods button", has_text="lrp")
    button.click()  # computed in the worker thread, shown when done
    page.locator('.attnw-saliency .attnw-tok[data-method="lrp"]').first.wait_for()
    page.locator(".attnw-explorer-progress", has_text="lrp: computed in").wait_for()
    explorer.wait()
    assert "lrp" in explorer.explanation.scores
    # While a job waits for the model, its state is in Python and on the button.
    # (The Python side only: with the model's lock held in this thread, the
    # page's copy of the state was not reliably updated under the test server.)
    with model_lock(model):
        explorer.compute("chefer2021", wait=False)
        wait_until(lambda: explorer.progress.startswith("Computing chefer2021"))
        assert explorer.computing == "chefer2021"
        assert explorer._buttons["chefer2021"].description == "chefer2021 (computing…)"
    explorer.wait()
    page.locator('.attnw-saliency .attnw-tok[data-method="chefer2021"]').first.wait_for()
    page_watch.assert_clean()


def test_the_saved_page_opens_offline_and_shows_every_tab(open_page, tmp_path) -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, TEXT)
    explorer.compute("lrp")
    path = tmp_path / "explorer.html"
    explorer.to_html(path)
    watch = open_page(path)
    page = watch.page
    drawn = {
        "Saliency": '.attnw-saliency .attnw-tok[data-method="lrp"]',
        "Flow": ".attnw-flow[data-state=ready]",
        "Heads": ".attnw-headview[data-state=ready]",
        "Model": ".attnw-modelview[data-state=ready]",
    }
    page.locator(drawn["Saliency"]).first.wait_for()  # the first tab is shown
    for title, selector in drawn.items():
        page.locator(".attnw-xtab-bar label", has_text=title).click()
        panel = page.locator(f'.attnw-xtab-panel[data-tab="{title}"]')
        panel.locator(selector).first.wait_for(state="visible")
        for other in drawn:  # one panel shown at a time
            if other != title:
                assert not page.locator(f'.attnw-xtab-panel[data-tab="{other}"]').is_visible()
        box = panel.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 50
    assert page.locator(".attnw-xtab-status", has_text="Explaining target").count() == 1
    watch.assert_clean()
