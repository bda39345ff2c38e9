"""AttentionMatrixView's colour scale in a real headless Chromium (issue 20).

A real tiny Llama's attention on about 2,000 tokens: the page opens on the
scale Python fitted, names it and its range in the legend, and the canvas
pixels at the cells' centres show the attended cells (the lower triangle)
in colours apart from the masked ones (weight 0, the bottom colour), not
one dark square. Choosing "linear" in the page refits it in Python and the
legend says where it clips.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from IPython.display import display
from polling import wait_until
from test_browser_attention_matrix_view import CELL_RGBA, LEFT, ROOT, TOP, wait_settled
from test_matrix_colors import long_causal_explanation

from attnwidget.views import AttentionMatrixView
from attnwidget.views.core.format import format_number

pytestmark = pytest.mark.browser

#: Cells this far from the diagonal lie in one triangle even when a pixel pools 4 × 4.
MARGIN = 16


def sample_cells(n: int, below: bool, count: int = 300) -> list[list[int]]:
    """Cells spread over the lower (attended) or upper (masked) triangle."""
    rng = np.random.default_rng(0)
    cells: list[list[int]] = []
    while len(cells) < count:
        r, c = (int(v) for v in rng.integers(0, n, 2))
        if (c < r - MARGIN) if below else (c > r + MARGIN):
            cells.append([r, c])
    return cells


def legend(page: Any) -> str:
    return page.locator(f"{ROOT} .attnw-matrix-legend-scale").text_content() or ""


def test_a_long_causal_input_opens_with_its_cells_apart_from_the_masked_ones(
    page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    exp = long_causal_explanation()
    view = AttentionMatrixView(exp)
    n = len(exp.tokens)
    display(view)
    page = page_session
    wait_settled(page)
    cmap = view.color_map
    root = page.locator(ROOT)
    # The legend names the scale and its range, as Python fitted them.
    assert legend(page) == cmap["label"] and "log scale" in legend(page)
    assert root.get_attribute("data-color-scale") == cmap["scale"] == "log"
    ends = page.locator(f"{ROOT} .attnw-matrix-legend span").all_text_contents()
    assert ends == [f"≤ {format_number(cmap['lo'])}", format_number(cmap["hi"])]

    scale = float(root.get_attribute("data-scale"))
    attended = np.array(page.evaluate(CELL_RGBA, [sample_cells(n, True), LEFT, TOP, scale]))
    masked = np.array(page.evaluate(CELL_RGBA, [sample_cells(n, False), LEFT, TOP, scale]))
    assert (attended[:, 3] == 255).all() and (masked[:, 3] == 255).all(), "a cell is not painted"
    bottom = masked[0, :3]
    assert (masked[:, :3] == bottom).all()  # weight 0: the scale's bottom colour
    # Every attended cell stands apart from the masked colour (viridis' first
    # tenth differs from it by under ~45 in RGB distance).
    distance = np.linalg.norm(attended[:, :3] - bottom, axis=1)
    assert (distance > 60).mean() > 0.95, np.percentile(distance, [5, 50, 95])

    # "linear" from the page: Python refits, the legend says where it clips.
    page.locator(f"{ROOT} select.attnw-matrix-scale").select_option("linear")
    wait_until(lambda: view.color_map["scale"] == "linear")
    label = view.color_map["label"]
    assert "99.9th percentile" in label and "cells above" in label
    wait_until(lambda: legend(page) == label)
    top = page.locator(f"{ROOT} .attnw-matrix-legend span").all_text_contents()[1]
    assert top == f"≥ {format_number(view.color_map['hi'])}"
    page_watch.assert_clean()
