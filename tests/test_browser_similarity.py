"""SaliencyView of a sentence pair in a real headless Chromium: both texts drawn.

The explanation is built from arrays (what explain(..., target="similarity")
returns has the same fields), so the test needs no model.
"""

from __future__ import annotations

import numpy as np
import pytest
from IPython.display import display
from polling import wait_until

from attnwidget.results.explanation import Explanation
from attnwidget.views import SaliencyView
from attnwidget.views.core.format import format_number

pytestmark = pytest.mark.browser


def pair_explanation() -> Explanation:
    first, second = ["[CLS]", "a", "dog", "runs", "[SEP]"], ["[CLS]", "dogs", "run", "[SEP]"]
    rng = np.random.default_rng(3)

    def attention(n: int) -> np.ndarray:
        weights = rng.random((2, 2, n, n)).astype(np.float32)
        return weights / weights.sum(-1, keepdims=True)

    return Explanation(
        tokens=first,
        attentions=attention(5),
        scores={"raw": np.full(5, 0.2, np.float32), "lrp": np.linspace(-0.1, 0.3, 5)},
        kind="embedding",
        target="similarity",
        target_score=0.8125,
        pooling="mean",
        pair_tokens=second,
        pair_attentions=attention(4),
        # The pair's raw row is twice the first's: on a shared range it is darker.
        pair_scores={"raw": np.full(4, 0.4, np.float32), "lrp": np.linspace(0.3, -0.1, 4)},
    )


def test_the_pair_is_a_second_block_on_shared_colours(page_watch, solara_test, page_session):
    exp = pair_explanation()
    view = SaliencyView(exp)
    display(view)
    pair = page_session.locator(".attnw-saliency .attnw-tok.attnw-pair")
    pair.first.wait_for()
    assert pair.count() == 2 * 4  # two methods × four tokens of the second text
    assert page_session.locator('.attnw-pair[data-method="raw"]').all_text_contents() == [
        "[CLS]",
        "dogs",
        "run",
        "[SEP]",
    ]
    first = page_session.locator('.attnw-tok:not(.attnw-pair)[data-method="raw"]')
    assert first.count() == 5
    caption = page_session.locator(".attnw-saliency-similarity").text_content()
    assert format_number(0.8125) in caption and "mean-pooled" in caption
    # One range per method over both texts: equal scores of the two texts look
    # alike, and the pair's larger raw scores a different colour than the first's.
    colour = "cells => cells.map(c => getComputedStyle(c).backgroundColor)"
    pair_words = page_session.locator('.attnw-pair[data-method="raw"][data-index="1"]')
    first_word = page_session.locator(
        '.attnw-tok:not(.attnw-pair)[data-method="raw"][data-index="1"]'
    )
    assert pair_words.evaluate_all(colour) != first_word.evaluate_all(colour)
    title = page_session.locator('.attnw-pair[data-method="lrp"][data-index="2"]')
    score = format_number(float(exp.pair_scores["lrp"][2]))
    assert title.get_attribute("title") == f'lrp · second text #2 "run" · score {score}'

    # Clicking the second text selects nothing; the first text's tokens select.
    pair_words.click()
    first_word.click()
    wait_until(lambda: view.selected_token == 1)
    assert page_session.locator(".attnw-pair.attnw-selected").count() == 0

    # A plain explanation from Python: the second block goes away.
    view.set_explanation(
        Explanation(tokens=exp.tokens, attentions=exp.attentions, scores=exp.scores)
    )
    pair.first.wait_for(state="detached")
    assert page_session.locator(".attnw-saliency-similarity").count() == 0
    page_watch.assert_clean()
