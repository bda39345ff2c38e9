"""SaliencyView in a real headless Chromium (pytest-ipywidgets + Playwright).

Each test displays the widget in solara's test page (served from 127.0.0.1)
and checks the two-way sync, the hover text, that token text stays text
(no HTML injection), that the page logs no errors and that it requests
nothing from outside the machine.
"""

from __future__ import annotations

import numpy as np
import pytest
from browser_events import settle_injected
from IPython.display import display
from polling import wait_until

from attnwidget.results.explanation import Explanation
from attnwidget.views import SaliencyView
from attnwidget.views.core.format import format_number

pytestmark = pytest.mark.browser

XSS_TOKENS = ["<img src=x onerror=window.__xss=1>", "</script><script>window.__xss=2</script>"]


def make_explanation(tokens: list[str]) -> Explanation:
    n = len(tokens)
    rng = np.random.default_rng(0)
    weights = rng.random((2, 2, n, n)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    scores = {
        "rollout": rng.random(n).astype(np.float32),
        "signed_demo": np.linspace(-1.5, 0.75, n, dtype=np.float32),
    }
    return Explanation(tokens=tokens, attentions=weights, scores=scores)


def test_click_and_python_selection_round_trip(page_watch, solara_test, page_session) -> None:
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    view = SaliencyView(make_explanation(tokens))
    display(view)

    cells = page_session.locator(".attnw-saliency .attnw-tok")
    cells.first.wait_for()
    assert cells.count() == 2 * len(tokens)  # one row per method
    row = page_session.locator('.attnw-tok[data-method="rollout"]')
    assert row.all_text_contents() == tokens

    # Click in the page -> the Python trait changes.
    page_session.locator('.attnw-tok[data-method="signed_demo"][data-index="2"]').click()
    wait_until(lambda: view.selected_token == 2)
    selected = page_session.locator(".attnw-tok.attnw-selected")
    assert selected.count() == 2  # the whole column
    assert {c.get_attribute("data-index") for c in selected.all()} == {"2"}

    # Set from Python -> the page highlights the new column.
    view.selected_token = 4
    page_session.locator('.attnw-tok.attnw-selected[data-index="4"]').first.wait_for()
    assert {c.get_attribute("data-index") for c in selected.all()} == {"4"}
    assert selected.count() == 2
    view.selected_token = -1
    selected.first.wait_for(state="detached")

    # Clicking the selected token again clears the selection.
    page_session.locator('.attnw-tok[data-method="rollout"][data-index="1"]').click()
    wait_until(lambda: view.selected_token == 1)
    page_session.locator('.attnw-tok[data-method="rollout"][data-index="1"]').click()
    wait_until(lambda: view.selected_token == -1)

    # Hover text: method, token and the score, formatted as Python formats it.
    score = view.explanation.scores["signed_demo"][3]
    title = page_session.locator('.attnw-tok[data-method="signed_demo"][data-index="3"]')
    assert title.get_attribute("title") == f'signed_demo · #3 "sat" · score {format_number(score)}'
    title.hover()
    status = page_session.locator(".attnw-saliency .attnw-status")
    assert "signed_demo" in status.text_content() and format_number(score) in status.text_content()

    # Colours: the signed row is diverging (its zero is the near-white centre),
    # the rollout row sequential (viridis).
    colours = page_session.locator('.attnw-tok[data-method="rollout"]').evaluate_all(
        "cells => cells.map(c => getComputedStyle(c).backgroundColor)"
    )
    assert len(set(colours)) == len(tokens)

    assert page_watch.requests, "the request listener saw nothing"
    page_watch.assert_clean()


def test_token_text_is_never_markup(page_watch, solara_test, page_session) -> None:
    tokens = ["[CLS]", *XSS_TOKENS, "ok", "[SEP]"]
    view = SaliencyView(make_explanation(tokens))
    display(view)

    row = page_session.locator('.attnw-tok[data-method="rollout"]')
    row.first.wait_for()
    assert row.all_text_contents() == tokens  # shown literally
    settle_injected(page_session, page_watch)  # an injected handler would have fired by now
    assert page_session.evaluate("window.__xss") is None
    assert page_session.locator(".attnw-saliency img, .attnw-saliency script").count() == 0

    # The hover text carries the token as plain text too.
    assert XSS_TOKENS[0] in row.nth(1).get_attribute("title")
    page_session.locator('.attnw-tok[data-method="rollout"][data-index="1"]').click()
    wait_until(lambda: view.selected_token == 1)
    status = page_session.locator(".attnw-saliency .attnw-status")
    assert XSS_TOKENS[0].replace('"', '\\"') in status.text_content()
    assert page_session.evaluate("window.__xss") is None

    page_watch.assert_clean()


def test_long_input_wraps_and_keys_reveal_the_selection(
    page_watch, solara_test, page_session
) -> None:
    n = 512
    tokens = [f"tok{i}" for i in range(n)]
    view = SaliencyView(make_explanation(tokens))
    page_session.set_viewport_size({"width": 800, "height": 500})
    display(view)
    row = page_session.locator('.attnw-tok[data-method="rollout"]')
    row.first.wait_for()
    assert row.count() == n
    root = page_session.locator(".attnw-saliency")
    # Wrapped into lines as wide as the output: nothing scrolls sideways.
    assert root.evaluate("e => e.scrollWidth <= e.clientWidth")
    assert root.locator(".attnw-scroll").evaluate("e => e.scrollWidth <= e.clientWidth")
    assert int(root.locator(".attnw-lines").get_attribute("data-lines")) > 10

    # End (keyboard) selects the last token and scrolls the page down to it.
    root.focus()
    page_session.keyboard.press("End")
    wait_until(lambda: view.selected_token == n - 1)
    last = page_session.locator(f'.attnw-tok[data-method="rollout"][data-index="{n - 1}"]')
    page_session.locator(f'.attnw-tok.attnw-selected[data-index="{n - 1}"]').first.wait_for()
    wait_until(lambda: last.evaluate("c => c.getBoundingClientRect().bottom <= innerHeight"))
    last.click()  # clicking the selected token clears the selection
    wait_until(lambda: view.selected_token == -1)
    page_watch.assert_clean()
