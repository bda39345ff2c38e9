"""FlowView's layout at 300 tokens, and lrp's one message, in a real headless Chromium.

At 300 tokens the diagram used to squeeze every row into 12 px: touching
coloured labels, and thousands of grey context lines as a curtain. These
tests check what a person sees there: rows at least 16 px with labels that
neither overlap nor touch and whose text is not clipped, labels level with
their node rows, a scroll box whose layer numbers stay in sight, a selection
made from Python scrolled into view, clicks that reach Python, and context
lines limited (the note says how many of how many) and faded. And, for lrp,
that the status line and the note under the diagram say the same thing: the
result does not depend on the selection.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import numpy as np
import pytest
from IPython.display import display
from polling import wait_until

from attnwidget import demo, explain
from attnwidget.methods.graph import add_residual, fuse_heads
from attnwidget.results.explanation import Explanation
from attnwidget.views import FlowView

pytestmark = pytest.mark.browser

ROOT = ".attnw-flow"
N, LAYERS = 300, 6
WORDS = "the keys to the old cabinet near the doors are on a table where cats sleep".split()


@functools.cache
def long_explanation() -> Explanation:
    """300 tokens of attention shaped like a trained encoder's: mostly local,
    a strong column on [CLS], noise everywhere (so thousands of lines pass 0.02)."""
    rng = np.random.default_rng(7)
    i = np.arange(N)
    logits = rng.standard_normal((LAYERS, 4, N, N)) * 1.5 - np.abs(i[:, None] - i[None, :]) / 8
    logits[..., 0] += 3.0
    weights = np.exp(logits)
    weights = (weights / weights.sum(-1, keepdims=True)).astype(np.float32)
    tokens = ["[CLS]", *(f"{WORDS[k % len(WORDS)]}{k}" for k in range(N - 2)), "[SEP]"]
    return Explanation.from_attentions(weights, tokens)


def geometry(page: Any) -> dict[str, float]:
    hook = page.locator(f"{ROOT} canvas.attnw-flow-canvas-paths").get_attribute("data-geometry")
    return json.loads(hook)


#: Per label of a column: top, bottom, text height needed vs. shown, font size (CSS px).
LABEL_BOXES = """(column) => Array.from(
  document.querySelectorAll(`.attnw-flow .attnw-flow-${column} .attnw-flow-tok`),
  (e) => {
    const r = e.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, scroll: e.scrollHeight, client: e.clientHeight,
             font: parseFloat(getComputedStyle(e).fontSize) };
  })"""

#: The plot canvas's top, and the scroll box's box and scroll position.
BOXES = """() => {
  const s = document.querySelector('.attnw-flow .attnw-flow-scroll').getBoundingClientRect();
  const c = document.querySelector('.attnw-flow canvas.attnw-flow-canvas-paths')
    .getBoundingClientRect();
  const h = document.querySelector('.attnw-flow .attnw-flow-header').getBoundingClientRect();
  const box = document.querySelector('.attnw-flow .attnw-flow-scroll');
  return { scrollTop: s.top, scrollBottom: s.bottom, canvasTop: c.top, headerTop: h.top,
           headerBottom: h.bottom, scrollHeight: box.scrollHeight, clientHeight: box.clientHeight };
}"""

#: Mean opacity of the context-line canvas between the node columns (0 … 1).
INK = """() => {
  const c = document.querySelector('.attnw-flow canvas.attnw-flow-canvas-bg');
  const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let sum = 0;
  for (let k = 3; k < data.length; k += 4) sum += data[k];
  return sum / (data.length / 4) / 255;
}"""


def test_300_tokens_rows_labels_and_context_lines(page_watch, solara_test, page_session) -> None:
    exp = long_explanation()
    view = FlowView(exp)
    display(view)
    page = page_session
    page.locator(f"{ROOT}[data-state=ready][data-selected='{LAYERS}:0']").wait_for()
    g = geometry(page)
    assert g["rowHeight"] >= 16  # 12 px labels need 14 px, plus a gap

    boxes = page.evaluate(BOXES)
    for column in ("left", "right"):
        labels = page.evaluate(LABEL_BOXES, column)
        assert len(labels) == N
        for k, label in enumerate(labels):
            assert label["scroll"] <= label["client"], f"{column} label {k}: text clipped"
            assert label["bottom"] - label["top"] >= label["font"] + 2, f"{column} {k}: too low"
            # Level with its node row on the canvas.
            centre = (label["top"] + label["bottom"]) / 2 - boxes["canvasTop"]
            assert abs(centre - (g["header"] + (k + 0.5) * g["rowHeight"])) <= 1
        for k in range(1, N):  # no overlap, and a gap: coloured labels never touch
            assert labels[k]["top"] >= labels[k - 1]["bottom"] + 1, f"{column} labels {k - 1}, {k}"

    # The rows do not fit: the diagram scrolls, its layer numbers at the top.
    assert boxes["scrollHeight"] > 2 * boxes["clientHeight"]
    assert abs(boxes["headerTop"] - boxes["canvasTop"]) <= 1

    # Context lines: the strongest 3 per token and layer, out of Python's count of Â ≥ 0.02.
    adjusted = add_residual(fuse_heads(exp.attentions, "mean"))
    candidates = int((adjusted >= view.threshold).sum())
    budget = 3 * N * LAYERS
    assert candidates > budget  # this input has more: the limit applies
    drawn = int(page.locator(ROOT).get_attribute("data-edges"))
    assert budget - 50 <= drawn <= budget + 50  # ties at the cut may add or drop a few
    note = page.locator(f"{ROOT} .attnw-flow-note").text_content()
    assert f"of {candidates:,} lines" in note and "at most 3 per token and layer" in note
    # Faded: with nothing selected the graph is at full opacity, and still mostly
    # clear (mean opacity of its canvas: 0.12 with every line at the old style,
    # about 0.05 now).
    view.select(LAYERS, -1)
    page.locator(f"{ROOT}[data-selected='']").wait_for()
    assert page.evaluate(INK) < 0.08
    page_watch.assert_clean()


def test_300_tokens_python_selection_scrolls_into_view_and_clicks_sync(
    page_watch, solara_test, page_session
) -> None:
    view = FlowView(long_explanation())
    display(view)
    page = page_session
    page.locator(f"{ROOT}[data-state=ready]").wait_for()
    left = page.locator(f"{ROOT} .attnw-flow-left .attnw-flow-tok")

    # Python -> page: a node far down is selected and scrolled into sight.
    view.select(0, 250)
    page.locator(f"{ROOT}[data-selected='0:250'][data-state=ready]").wait_for()
    page.wait_for_function(
        "() => { const s = document.querySelector('.attnw-flow .attnw-flow-scroll')"
        ".getBoundingClientRect(); const r = document.querySelectorAll("
        "'.attnw-flow .attnw-flow-left .attnw-flow-tok')[250].getBoundingClientRect();"
        " return r.top >= s.top + 18 && r.bottom <= s.bottom; }"
    )
    assert "attnw-selected" in (left.nth(250).get_attribute("class") or "")
    boxes = page.evaluate(BOXES)
    # Scrolled: the layer numbers stayed at the top of the box.
    assert boxes["canvasTop"] < boxes["scrollTop"] - 1000
    assert 0 <= boxes["headerTop"] - boxes["scrollTop"] <= 3  # the box's 2 px padding
    header = page.locator(f"{ROOT} .attnw-flow-header")
    assert header.locator("span").all_text_contents() == ["in", *map(str, range(1, LAYERS + 1))]

    # Page -> Python: a click on a visible label near it.
    before = page.evaluate(BOXES)["canvasTop"]
    left.nth(256).click()
    wait_until(lambda: (view.selected_layer, view.selected_token) == (0, 256))
    page.locator(f"{ROOT}[data-selected='0:256']").wait_for()
    # Clicking a row in sight does not move the diagram.
    assert abs(page.evaluate(BOXES)["canvasTop"] - before) <= 1
    # The input's top-layer scores reach the right column, far down as well.
    right = page.locator(f"{ROOT} .attnw-flow-right .attnw-flow-tok")
    assert right.nth(290).get_attribute("data-score") is not None
    page_watch.assert_clean()


@functools.cache
def lrp_explanation() -> Explanation:
    model, tokenizer = demo.load("sva-encoder")
    return explain(model, tokenizer, "the keys to the old cabinet", methods=["rollout", "lrp"])


def test_lrp_status_line_and_note_say_the_same(page_watch, solara_test, page_session) -> None:
    exp = lrp_explanation()
    layers, q = exp.num_layers, exp.query_index
    view = FlowView(exp, selected_method="lrp")
    display(view)
    page = page_session
    page.locator(f"{ROOT}[data-method=lrp][data-source=kernel][data-state=ready]").wait_for()
    status = page.locator(f"{ROOT} .attnw-status")
    note = page.locator(f"{ROOT} .attnw-flow-note")
    assert "does not depend on the selection" in note.text_content()
    text = status.text_content()
    assert text.startswith("lrp is the same for every selection")
    assert f'query #{q} "{exp.tokens[q]}"' in text
    assert "Down:" not in text and "Up:" not in text

    # Another node: Python hears the click; the words stay consistent.
    page.locator(f"{ROOT} .attnw-flow-left .attnw-flow-tok").nth(2).click()
    wait_until(lambda: (view.selected_layer, view.selected_token) == (0, 2))
    page.locator(f"{ROOT}[data-selected='0:2'][data-state=ready]").wait_for()
    page.wait_for_function(
        f"() => document.querySelector('{ROOT} .attnw-status').textContent"
        f".endsWith('Selected input #2 {json.dumps(exp.tokens[2])}.')"
    )
    assert status.text_content().startswith("lrp is the same for every selection")

    # A method whose paths start at the selection is described as such again.
    view.selected_method = "rollout"
    view.select(layers, q)
    page.locator(f"{ROOT}[data-method=rollout][data-selected='{layers}:{q}']").wait_for()
    page.wait_for_function(
        f"() => document.querySelector('{ROOT} .attnw-status').textContent.includes('Down:')"
    )
    assert "same for every selection" not in status.text_content()
    page_watch.assert_clean()


def test_selection_made_while_hidden_is_in_sight_when_shown(
    page_watch, solara_test, page_session
) -> None:
    """As in an Explorer tab not shown yet: the diagram is drawn hidden, a node far
    down is selected from Python, and once it is shown that node is in sight."""
    import ipywidgets as widgets

    view = FlowView(long_explanation())
    box = widgets.Box([view], layout=widgets.Layout(display="none"))
    display(box)
    page = page_session
    # Views start on first paint: hidden, the diagram waits; the selection made
    # from Python meanwhile is the one it opens on when shown.
    page.locator(".widget-box").first.wait_for(state="attached")
    view.select(0, 280)
    box.layout.display = "flex"
    page.locator(f"{ROOT}[data-state=ready]").wait_for()
    page.locator(f"{ROOT}[data-selected='0:280']").wait_for()
    page.wait_for_function(
        "() => { const s = document.querySelector('.attnw-flow .attnw-flow-scroll')"
        ".getBoundingClientRect(); const r = document.querySelectorAll("
        "'.attnw-flow .attnw-flow-left .attnw-flow-tok')[280].getBoundingClientRect();"
        " return s.height > 0 && r.top >= s.top + 18 && r.bottom <= s.bottom; }"
    )
    page_watch.assert_clean()
