"""AttentionMatrixView in a real headless Chromium (pytest-ipywidgets + Playwright).

Checks: a HeadView of a 700-token input opens as the matrix view (with its
notice); a click on a cell pins that query row in Python (``selected_token``);
setting ``layer`` or ``head`` in Python redraws the canvas (its pixels
change), and the pixels at the cells' centres show WHICH cells hold the
weight (a block pattern per head, bright where it is and dark elsewhere);
zooming asks the kernel for finer tiles and draws them; hovering
names the tokens as text (a token holding markup stays text); a 4,096-token
matrix renders; nothing is requested from outside and the page logs no error.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest
from IPython.display import display
from polling import wait_until

from attnwidget.results.explanation import Explanation
from attnwidget.views import AttentionMatrixView, HeadView

pytestmark = pytest.mark.browser

ROOT = ".attnw-matrixview"
#: The plot's origin in the canvas (matrix_view.ts LEFT, TOP).
LEFT, TOP = 86, 70
XSS = "<img src=x onerror=window.__xss=1>"

PIXELS = """() => {
  const c = document.querySelector('.attnw-matrixview canvas.attnw-matrix-canvas');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let painted = 0;
  for (let k = 3; k < d.length; k += 4) if (d[k] > 0) painted++;
  return [Array.from(d.filter((_, k) => k % 97 === 0)).join(','), painted, d.length / 4];
}"""


def attention(layers: int, heads: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((layers, heads, n, n), dtype=np.float32) * 3
    logits -= logits.max(-1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(-1, keepdims=True)
    return logits


def pixels(page: Any) -> tuple[str, int, int]:
    data, painted, total = page.evaluate(PIXELS)
    return hashlib.sha1(data.encode()).hexdigest(), painted, total


def draws(page: Any) -> int:
    return int(page.locator(ROOT).get_attribute("data-draws") or 0)


def wait_settled(page: Any) -> None:
    """The page has drawn and holds every tile its frame asked for."""
    page.locator(f'{ROOT}[data-state="ready"]').wait_for(timeout=15000)
    page.wait_for_function(
        "() => { const r = document.querySelector('.attnw-matrixview');"
        " return r && (r.dataset.pending ?? '0') === '0'; }",
        timeout=15000,
    )
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def test_clicks_pin_rows_and_python_changes_redraw(
    page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    n = 700
    tokens = [f"w{i}" for i in range(n)]
    tokens[3] = XSS
    exp = Explanation.from_attentions(attention(2, 2, n, seed=5), tokens, methods=None)
    view = HeadView(exp, layer=0, heads=[0])
    assert isinstance(view, AttentionMatrixView)
    display(view)
    page = page_session
    wait_settled(page)
    assert "at most 512 tokens" in page.locator(f"{ROOT} .attnw-matrix-notice").text_content()
    root = page.locator(ROOT)
    scale = float(root.get_attribute("data-scale"))
    box = page.locator(f"{ROOT} canvas.attnw-matrix-canvas").bounding_box()

    def at(row: float, col: float) -> tuple[float, float]:
        return box["x"] + LEFT + (col + 0.5) * scale, box["y"] + TOP + (row + 0.5) * scale

    # A click on a cell pins its query row in Python; again unpins.
    page.mouse.click(*at(250, 40))
    wait_until(lambda: view.selected_token == 250)
    page.locator(f'{ROOT}[data-selected-token="250"]').wait_for()
    page.mouse.click(*at(250, 40))
    wait_until(lambda: view.selected_token == -1)

    # Hover: the tokens as text, markup included, and the weight.
    page.mouse.move(*at(3, 0))
    status = page.locator(f"{ROOT} .attnw-matrix-status")
    wait_until(lambda: "query" in (status.text_content() or ""))
    assert XSS in status.text_content()
    assert page.evaluate("() => window.__xss ?? null") is None
    assert page.locator(f"{ROOT} img").count() == 0

    # Python sets the head, then the layer: the canvas is drawn anew, differently.
    page.mouse.move(0, 0)
    wait_settled(page)
    before, painted, total = pixels(page)
    assert painted > total // 3  # the matrix covers most of the canvas
    for change in ({"head": 1}, {"layer": 1}):
        version = root.get_attribute("data-version")
        count = draws(page)
        for name, value in change.items():
            setattr(view, name, value)
        page.locator(f'{ROOT}:not([data-version="{version}"])').wait_for()
        wait_until(lambda c=count: draws(page) > c)
        wait_settled(page)
        after, _, _ = pixels(page)
        assert after != before, change
        before = after
    assert page.locator(f"{ROOT} select.attnw-matrix-head").input_value() == "1"

    # Zoom in with the wheel: the level drops and the kernel sends finer tiles.
    page.mouse.move(*at(350, 350))
    level = int(root.get_attribute("data-level"))
    for _ in range(6):
        page.mouse.wheel(0, -300)
    page.wait_for_function(
        f"() => Number(document.querySelector('{ROOT}').dataset.level) < {level}"
    )
    wait_settled(page)
    assert int(root.get_attribute("data-level")) == 0
    # The page's select drives Python too.
    page.locator(f"{ROOT} select.attnw-matrix-head").select_option("mean")
    wait_until(lambda: view.head == -1)
    page_watch.assert_clean()


def test_4096_tokens_render(page_watch: Any, solara_test: Any, page_session: Any) -> None:
    n = 4096
    exp = Explanation.from_attentions(
        attention(1, 1, n, seed=1), [f"t{i}" for i in range(n)], methods=None
    )
    view = HeadView(exp)  # switches: a HeadView of 4,096 tokens would be 32 MiB a head
    assert isinstance(view, AttentionMatrixView)
    display(view)
    page = page_session
    wait_settled(page)
    _, painted, total = pixels(page)
    assert painted > total // 2
    root = page.locator(ROOT)
    assert root.get_attribute("data-level") == "3"  # 4,096 cells in 560 px: 8 × 8 blocks
    assert "4,096 × 4,096" in page.locator(f"{ROOT} .attnw-matrix-caption").text_content()
    page.locator(f"{ROOT} button.attnw-matrix-zoom-in").click()
    page.wait_for_function(f"() => document.querySelector('{ROOT}').dataset.level === '2'")
    wait_settled(page)
    page_watch.assert_clean()


#: RGBA of the canvas at each (row, col) cell centre (CSS px -> canvas px).
CELL_RGBA = """([cells, left, top, scale]) => {
  const c = document.querySelector('.attnw-matrixview canvas.attnw-matrix-canvas');
  const k = c.width / c.getBoundingClientRect().width;
  const ctx = c.getContext('2d');
  const at = (offset, cell) => Math.floor((offset + (cell + 0.5) * scale) * k);
  const pixel = (row, col) => ctx.getImageData(at(left, col), at(top, row), 1, 1).data;
  return cells.map(([row, col]) => Array.from(pixel(row, col)));
}"""


def blocks_attention(n: int, blocks: int, hot: list[set[tuple[int, int]]]) -> np.ndarray:
    """(1, heads, n, n): head h puts 90% of each row on its hot blocks, the rest spread."""
    size = n // blocks
    out = np.empty((1, len(hot), n, n), dtype=np.float32)
    for h, cells in enumerate(hot):
        mask = np.zeros((blocks, blocks), dtype=bool)
        for r, c in cells:
            mask[r, c] = True
        full = np.kron(mask, np.ones((size, size), dtype=bool))
        per_row = full.sum(1, keepdims=True)
        out[0, h] = np.where(full, 0.9 / per_row, 0.1 / (n - per_row))
    return out


def test_the_drawn_cells_are_the_ones_that_hold_the_weight(
    page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    """Which cells are bright: a block pattern per head, read back from the pixels."""
    n, blocks = 600, 6
    diagonal = {(b, b) for b in range(blocks)}
    anti = {(b, blocks - 1 - b) for b in range(blocks)}
    weights = blocks_attention(n, blocks, [diagonal, anti])
    exp = Explanation.from_attentions(weights, [f"w{i}" for i in range(n)], methods=None)
    view = AttentionMatrixView(exp, head=0)
    display(view)
    page = page_session
    wait_settled(page)
    scale = float(page.locator(ROOT).get_attribute("data-scale"))
    size = n // blocks
    centres = [(r, c) for r in range(blocks) for c in range(blocks)]
    spots = [[r * size + size // 2, c * size + size // 2] for r, c in centres]

    def bright(rgba: list[int]) -> float:
        return 0.2126 * rgba[0] + 0.7152 * rgba[1] + 0.0722 * rgba[2]

    for head, hot in ((0, diagonal), (1, anti)):
        if view.head != head:
            version = page.locator(ROOT).get_attribute("data-version")
            view.head = head
            page.locator(f'{ROOT}:not([data-version="{version}"])').wait_for()
            wait_settled(page)
        rgba = page.evaluate(CELL_RGBA, [spots, LEFT, TOP, scale])
        assert all(p[3] == 255 for p in rgba), "a cell centre is not painted"
        hot_light = [bright(p) for p, cell in zip(rgba, centres, strict=True) if cell in hot]
        cold_light = [bright(p) for p, cell in zip(rgba, centres, strict=True) if cell not in hot]
        # The hot blocks share one colour, the cold ones another, far apart.
        assert max(hot_light) - min(hot_light) < 8 and max(cold_light) - min(cold_light) < 8
        assert abs(min(hot_light) - max(cold_light)) > 60, (head, hot_light, cold_light)
    page_watch.assert_clean()
