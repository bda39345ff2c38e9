"""Left-out keys (``ignore_keys``) in a real headless Chromium (pytest-ipywidgets + Playwright).

The views that draw attention say which keys an explanation leaves out and
that its rows were renormalised: HeadView and ModelView in a line under their
controls (the matrix's note), AttentionMatrixView and FlowView in their
captions. HeadView draws no line into a left-out key; a swap to an
explanation without left-out keys removes the line; token text in the note
stays text; nothing is requested from outside and the page logs no error.
"""

from __future__ import annotations

import numpy as np
import pytest
from browser_events import settle_injected
from IPython.display import display

from attnwidget.results.explanation import Explanation
from attnwidget.views import AttentionMatrixView, FlowView, HeadView, ModelView

pytestmark = pytest.mark.browser

XSS = "<img src=x onerror=window.__xss=1>"
TOKENS = ["[CLS]", "the", XSS, "sat", "[SEP]"]
#: The note of [0, 2, -1]: the markup of token 2 is shown as text.
NOTE = f"keys #0 '[CLS]', #2 {XSS!r}, #4 '[SEP]' left out, rows renormalised"


def sink_attention(layers: int = 2, heads: int = 2, seed: int = 0) -> np.ndarray:
    """Half of every row on key 0 (a sink), the rest peaked at random."""
    rng = np.random.default_rng(seed)
    n = len(TOKENS)
    weights = rng.random((layers, heads, n, n)) ** 6
    weights = 0.5 * weights / weights.sum(-1, keepdims=True)
    weights[..., 0] += 0.5
    return weights.astype(np.float32)


def test_the_views_say_which_keys_are_left_out(page_watch, solara_test, page_session) -> None:
    exp = Explanation.from_attentions(
        sink_attention(), TOKENS, methods=["raw", "rollout"], ignore_keys=[0, 2, -1]
    )
    head, model = HeadView(exp), ModelView(exp, layer=1, head=0)
    flow, matrix = FlowView(exp), AttentionMatrixView(exp)
    for view in (head, model, flow, matrix):
        display(view)
    page = page_session
    for root in (".attnw-headview", ".attnw-modelview"):
        page.locator(f"{root}[data-state=ready]").wait_for()
        note = page.locator(f"{root} .attnw-keys-note")
        assert note.is_visible()
        assert note.text_content() == f"Attention with {NOTE} (ignore_keys)."
    page.locator(".attnw-matrixview .attnw-matrix-caption").wait_for()
    assert page.locator(".attnw-matrixview .attnw-matrix-caption").text_content().endswith(NOTE)
    caption = page.locator(".attnw-flow .attnw-caption")
    assert caption.text_content().endswith(f"Attention with {NOTE}.")

    # HeadView draws the renormalised rows: no line goes into a left-out key.
    right = page.locator(".attnw-headview .attnw-col-right .attnw-token")
    right.nth(0).hover()
    page.locator('.attnw-headview .attnw-lines[data-focus="key:0"]').wait_for()
    assert page.locator(".attnw-headview .attnw-lines").get_attribute("data-lines") == "0"
    right.nth(1).hover()
    page.locator('.attnw-headview .attnw-lines[data-focus="key:1"]').wait_for()
    assert int(page.locator(".attnw-headview .attnw-lines").get_attribute("data-lines")) > 0

    # Another explanation, nothing left out: the line goes.
    head.set_explanation(Explanation(tokens=TOKENS, attentions=sink_attention(seed=1)))
    page.locator(".attnw-headview .attnw-keys-note").wait_for(state="hidden")
    assert page.locator(".attnw-headview .attnw-keys-note").text_content() == ""

    settle_injected(page, page_watch)  # a token's markup would have run by now
    assert page.evaluate("window.__xss") is None
    assert page.locator(".attnw img").count() == 0
    page_watch.assert_clean()


def test_the_image_view_says_which_keys_are_left_out(page_watch, solara_test, page_session) -> None:
    # A DeiT's [CLS] and distillation token left out: the patch maps are the
    # renormalised rows, and the caption under the image says so.
    from image_fixtures import picture
    from tiny_vision import build_vision

    import attnwidget
    from attnwidget.views import ImageView

    vit, processor = build_vision("deit")
    exp = attnwidget.explain(vit, processor, picture(), methods=["raw"], ignore_keys="special")
    view = ImageView(exp)
    assert view.ignored_keys == [f"#{k} {exp.tokens[k]!r}" for k in exp.special_tokens]
    display(view)
    page = page_session
    page.locator(".attnw-imageview[data-state=ready]").wait_for()
    caption = page.locator(".attnw-imageview .attnw-image-specials").text_content()
    keys = ", ".join(view.ignored_keys)
    assert caption.endswith(
        f"Attention with keys {keys} left out, rows renormalised (ignore_keys)."
    )
    plain = ImageView(attnwidget.explain(vit, processor, picture(), methods=["raw"]))
    assert plain.ignored_keys == []
