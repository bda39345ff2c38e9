"""NeuronView in a real headless Chromium (pytest-ipywidgets + Playwright), live
and as a saved page opened offline.

Checks: a click on a token makes it the query in Python; Python's head,
layer and token changes redraw the page (the drawn weights and scores are
Python's, as the views format numbers); the layer and head pickers reach
Python; a rotary model shows q and k before and after rotation; hostile
token names stay text; nothing is requested from outside the machine and the
page logs no error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from IPython.display import display
from polling import wait_until
from tiny_models import build

from attnwidget.views import NeuronView
from attnwidget.views.core.format import format_number

pytestmark = pytest.mark.browser

ROOT = ".attnw-neuronview"
TEXT = "the cat sat on the mat"
HOSTILE = [
    "<img src=x onerror=window.__xss=1>",
    "</script><script>window.__xss=2</script>",
    '"><svg onload=window.__xss=3>',
    "&lt;b&gt;",
]


def wait_data(page: Any, **expected: str) -> None:
    selector = ROOT + "".join(f'[data-{k}="{v}"]' for k, v in expected.items())
    page.locator(selector).wait_for(timeout=15000)


def drawn_weights(page: Any) -> list[str]:
    return page.locator(f"{ROOT} .attnw-neuron-weight").all_text_contents()


def drawn_scores(page: Any) -> list[str]:
    return page.locator(f"{ROOT} .attnw-neuron-score").all_text_contents()


def expected(view: NeuronView) -> tuple[list[str], list[str]]:
    """The weights and scores the page should show for Python's selection."""
    sel = view.selection
    rows = list(zip(sel["weights"], sel["scores"], sel["mask"], strict=True))
    weights = [format_number(float(w)) if m else "–" for w, _s, m in rows]
    scores = [format_number(float(s)) if m else "masked" for _w, s, m in rows]
    return weights, scores


def assert_drawn(page: Any, view: NeuronView) -> None:
    weights, scores = expected(view)
    wait_until(lambda: drawn_weights(page) == weights)
    assert drawn_scores(page) == scores


def test_clicks_and_python_changes_round_trip(
    page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    model, tokenizer = build("bert-cls")
    view = NeuronView(model, tokenizer, TEXT, layer=1, head=0, selected_token=1)
    display(view)
    page = page_session
    wait_data(page, state="ready", layer="1", head="0", token="1")
    assert_drawn(page, view)
    tokens = page.locator(f"{ROOT} button.attnw-neuron-token").all_text_contents()
    assert tokens == view.tokens
    assert page.locator(f"{ROOT} canvas.attnw-neuron-vector").count() == 1 + 2 * len(view.tokens)

    # A click on a token in the page -> Python, and the page redraws for it.
    before = drawn_weights(page)
    page.locator(f'{ROOT} button.attnw-neuron-token[data-index="3"]').click()
    wait_until(lambda: view.selected_token == 3)
    wait_data(page, token="3", state="ready")
    assert_drawn(page, view)
    assert drawn_weights(page) != before

    # Python sets the head -> the drawn values change to that head's.
    before = drawn_weights(page)
    view.head = 2
    wait_data(page, head="2", state="ready")
    assert_drawn(page, view)
    assert drawn_weights(page) != before

    # Python sets the layer -> new arrays come from Python and are drawn.
    view.layer = 0
    wait_data(page, layer="0", state="ready")
    assert view.data_layer == 0
    assert_drawn(page, view)

    # The page's pickers -> Python.
    page.locator(f"{ROOT} select.attnw-head").select_option("1")
    wait_until(lambda: view.head == 1)
    page.locator(f"{ROOT} select.attnw-layer").select_option("1")
    wait_until(lambda: view.layer == 1 and view.data_layer == 1)
    wait_data(page, layer="1", head="1", state="ready")
    assert_drawn(page, view)
    page_watch.assert_clean()


def test_rotary_model_shows_q_and_k_before_and_after_rotation(
    page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    model, tokenizer = build("llama-lm")
    view = NeuronView(model, tokenizer, TEXT, layer=0, head=3, selected_token=2)
    display(view)
    page = page_session
    wait_data(page, state="ready", head="3", token="2")
    assert_drawn(page, view)  # causal: keys after the query are "masked"
    names = page.locator(f"{ROOT} canvas.attnw-neuron-vector").evaluate_all(
        "cs => cs.map(c => c.dataset.name)"
    )
    n = len(view.tokens)
    assert len(names) == 2 + 3 * n  # q, rotated q; per key: k, rotated k, q ∘ k
    assert sum(name.startswith("rotated k of") for name in names) == n
    caption = page.locator(f"{ROOT} .attnw-neuron-caption").text_content()
    assert "rotary" in caption and "grouped-query" in caption
    page_watch.assert_clean()


class HostileTokenizer:
    """A real tokenizer whose token names are markup."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner(*args, **kwargs)

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [HOSTILE[i % len(HOSTILE)] for i in range(len(ids))]


def check_names_are_text(page: Any, view: NeuronView) -> None:
    wait_data(page, state="ready")
    tokens = page.locator(f"{ROOT} button.attnw-neuron-token").all_text_contents()
    assert tokens == view.tokens
    injected = page.evaluate(
        """() => ({
          xss: window.__xss ?? null,
          elements: document.querySelectorAll(
            '.attnw-neuronview img, .attnw-neuronview script, .attnw-neuronview svg').length,
        })"""
    )
    assert injected == {"xss": None, "elements": 0}


def test_hostile_token_names_stay_text(
    page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    model, tokenizer = build("gpt2-lm")
    view = NeuronView(model, HostileTokenizer(tokenizer), TEXT)
    display(view)
    check_names_are_text(page_session, view)
    page_watch.assert_clean()


def test_saved_page_draws_offline_and_says_which_layer_it_holds(
    tmp_path: Path, open_page: Any
) -> None:
    model, tokenizer = build("gpt2-lm")
    view = NeuronView(model, HostileTokenizer(tokenizer), TEXT, layer=1, head=1)
    path = tmp_path / "neuron.html"
    view.to_html(path)
    watch = open_page(path)
    page = watch.page
    check_names_are_text(page, view)
    assert_drawn(page, view)
    page.locator(f'{ROOT} button.attnw-neuron-token[data-index="4"]').click()
    wait_data(page, token="4", state="ready")
    view.selected_token = 4
    assert_drawn(page, view)  # the page computes nothing: Python's numbers, saved
    page.locator(f"{ROOT} select.attnw-layer").select_option("0")
    wait_data(page, state="waiting", layer="0")
    status = page.locator(f"{ROOT} .attnw-neuron-status").text_content()
    assert "holds layer 1" in status
    watch.assert_clean()
