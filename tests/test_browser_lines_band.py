"""Long inputs: the attention lines are drawn near what is visible, and whole for exports.

A lines canvas of hundreds of tokens is thousands of pixels tall, and what a
canvas costs to redraw is the length of line it rasterises; so LinePanel
draws (clips to) a band around the visible part and redraws on scroll. An
SVG/PNG export must still show every line.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from offline_browser import open_offline

from attnwidget.results.explanation import Explanation
from attnwidget.views import HeadView

pytestmark = pytest.mark.browser

N = 400

#: Alpha summed over canvas rows [y0, y1) (CSS px; the canvas may be drawn at a dpr).
INK = """([selector, y0, y1]) => {
  const canvas = document.querySelector(selector);
  const scale = canvas.height / canvas.getBoundingClientRect().height;
  const top = Math.floor(y0 * scale), rows = Math.max(1, Math.floor((y1 - y0) * scale));
  const data = canvas.getContext('2d').getImageData(0, top, canvas.width, rows).data;
  let ink = 0;
  for (let i = 3; i < data.length; i += 4) ink += data[i];
  return ink;
}"""

#: The same, for an image given as a data: URL (the canvas as the SVG export holds it).
IMAGE_INK = """async ([src, fractions]) => {
  const image = new Image();
  image.src = src;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.naturalWidth;
  canvas.height = image.naturalHeight;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(image, 0, 0);
  return fractions.map(([a, b]) => {
    const top = Math.floor(a * canvas.height), rows = Math.floor((b - a) * canvas.height);
    const data = ctx.getImageData(0, top, canvas.width, rows).data;
    let ink = 0;
    for (let i = 3; i < data.length; i += 4) ink += data[i];
    return ink;
  });
}"""

LINES = ".attnw-headview canvas.attnw-lines-canvas"


def local_attention() -> np.ndarray:
    """Each token attends to itself and its neighbours: every line is short, so ink at
    a height means lines were drawn there."""
    weights = np.zeros((1, 2, N, N), dtype=np.float32)
    for d in (-1, 0, 1):
        idx = np.arange(max(0, -d), min(N, N - d))
        weights[:, :, idx, idx + d] = 1.0
    return weights / weights.sum(-1, keepdims=True)


def test_long_inputs_draw_the_visible_band_and_export_everything(
    tmp_path: Path, browser: Any
) -> None:
    path = tmp_path / "long.html"
    HeadView(Explanation(tokens=[f"t{i}" for i in range(N)], attentions=local_attention())).to_html(
        path
    )
    watch = open_offline(browser, path)
    page = watch.page
    try:
        page.set_viewport_size({"width": 1000, "height": 600})
        page.locator(".attnw-headview[data-state=ready]").wait_for()
        page.wait_for_function("() => document.querySelector('.attnw-lines').dataset.lines > 0")
        height = page.locator(LINES).evaluate("c => c.getBoundingClientRect().height")
        assert height >= N * 10  # far taller than the window
        top, bottom = [0, 300], [height - 300, height]
        page.wait_for_timeout(100)
        assert page.evaluate(INK, [LINES, *top]) > 0
        assert page.evaluate(INK, [LINES, *bottom]) == 0  # off screen: not rasterised

        # Scrolling to the end redraws there.
        page.locator(".attnw-headview .attnw-scroll-y").evaluate(
            "e => { e.scrollTop = e.scrollHeight; }"
        )
        page.wait_for_function(f"() => ({INK})({[LINES, *bottom]!r}) > 0")
        assert page.evaluate(INK, [LINES, *top]) == 0

        # The SVG export holds the whole canvas: lines at the top and at the bottom.
        with page.expect_download() as download:
            page.locator('.attnw-toolbar button[data-format="svg"]').click()
        svg = Path(download.value.path()).read_text(encoding="utf-8")
        root = ET.fromstring(svg)
        images = [e.get("src") for e in root.iter() if e.tag.endswith("}img")]
        # In page order: the key-side weight strip, the lines, the query-side strip.
        assert len(images) == 3 and all(
            re.match(r"data:image/png;base64,", i or "") for i in images
        )
        first, last = page.evaluate(IMAGE_INK, [images[1], [[0, 0.05], [0.95, 1.0]]])
        assert first > 0 and last > 0
        watch.assert_clean()
    finally:
        page.context.close()
