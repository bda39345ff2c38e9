"""HeadView and ModelView read at a glance, at 300 tokens × 12 heads, in headless Chromium.

What a person sees, checked on the page's own pixels and text: strong links
stand out with all 12 heads on while links under the minimum weight are not
drawn; the per-head weight strips are wide blocks whose opacity follows the
weight; hovering a line, a strip block or a thumbnail shows the weight
(query → key, weight, head) as the kernel has it; head boxes keep WCAG
contrast in both themes; ModelView has axis titles and keeps the enlarged
head beside the grid at notebook width.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from IPython.display import display
from polling import wait_until

from attnwidget.results.explanation import Explanation
from attnwidget.views import HeadView, ModelView

pytestmark = pytest.mark.browser

N = 300
HEADS = 12
#: attention_layout.ts MIN_WEIGHT: weaker links draw no line.
MIN_WEIGHT = 0.02


def structured(layers: int, heads: int, n: int, seed: int = 0) -> np.ndarray:
    """Like trained heads: each head has one strong key per query (its own
    offset), over a spread of weak weights."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((layers, heads, n, n)).astype(np.float32) * 1.5
    rows = np.arange(n)
    for layer in range(layers):
        for head in range(heads):
            logits[layer, head, rows, (rows * (head % 3 + 1) + head + layer) % n] += 8
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def tip_number(text: str) -> float:
    """The weight in a tooltip ("…: 0.419 (head 5)")."""
    match = re.search(r": ([−\-0-9.,e]+)(?: |$)", text)
    assert match, f"no weight in {text!r}"
    return float(match.group(1).replace("−", "-").replace(",", ""))


def assert_shown_as(text: str, weight: float) -> None:
    """The tooltip's number is `weight` to 3 significant digits (after float16 on the wire)."""
    shown = tip_number(text)
    assert abs(shown - weight) <= 6e-3 * abs(weight) + 1e-7, f"{text!r} for weight {weight}"


def pixel_alpha(page: Any, canvas: str, x: float, y: float, radius: int = 1) -> float:
    """The most opaque pixel (0..1) within `radius` device px of CSS point (x, y) on a canvas."""
    return page.evaluate(
        """([sel, x, y, r]) => {
          const c = document.querySelector(sel);
          const s = c.width / c.getBoundingClientRect().width;
          const [px, py, side] = [Math.round(x * s) - r, Math.round(y * s) - r, 2 * r + 1];
          const d = c.getContext('2d').getImageData(px, py, side, side).data;
          let a = 0;
          for (let k = 3; k < d.length; k += 4) a = Math.max(a, d[k]);
          return a / 255;
        }""",
        [canvas, x, y, radius],
    )


def geometry(page: Any, canvas: str) -> dict[str, float]:
    """The line panel's drawn geometry (its canvas's test hooks)."""
    data = page.locator(canvas).evaluate("c => ({...c.dataset})")
    return {k: float(data[k]) for k in ("x0", "x1", "row")}


def hover_canvas(page: Any, canvas: str, x: float, y: float) -> None:
    box = page.locator(canvas).bounding_box()
    page.mouse.move(box["x"] + x - 3, box["y"] + y)
    page.mouse.move(box["x"] + x, box["y"] + y)


def tip(page: Any, selector: str) -> dict[str, str]:
    """The visible tooltip's text and data attributes."""
    locator = page.locator(selector)
    locator.wait_for(state="visible")
    return {"text": locator.text_content(), **locator.evaluate("t => ({...t.dataset})")}


def contrast(a: str, b: str) -> float:
    """WCAG contrast of two computed CSS colours ("rgb(r, g, b)")."""

    def luminance(css: str) -> float:
        r, g, b = (float(v) / 255 for v in re.findall(r"[\d.]+", css)[:3])
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def test_head_view_at_300_tokens_reads_at_a_glance(page_watch, solara_test, page_session) -> None:
    attention = structured(2, HEADS, N)
    tokens = [f"w{i}" for i in range(N)]
    view = HeadView(Explanation(tokens=tokens, attentions=attention), theme="light")
    display(view)
    page = page_session
    page.set_viewport_size({"width": 1000, "height": 900})
    scope = ".attnw-headview"
    canvas = f"{scope} canvas.attnw-lines-canvas"
    page.locator(f"{scope}[data-state=ready]").wait_for(timeout=20000)
    page.wait_for_function(
        "sel => Number(document.querySelector(sel)?.getAttribute('data-lines')) > 0",
        arg=f"{scope} .attnw-lines",
    )
    g = geometry(page, canvas)
    layer = attention[0]

    def y(token: int) -> float:
        return (token + 0.5) * g["row"]

    # Links under the minimum weight are not drawn; all others are (drawn or
    # counted as left out by the line budget). Weights within 1 % of the
    # threshold (float16, the curve's 1/4096 steps) may fall either side.
    panel = page.locator(f"{scope} .attnw-lines")
    visible = int(panel.get_attribute("data-lines")) + int(panel.get_attribute("data-hidden"))
    surely = int((layer >= MIN_WEIGHT * 1.01).sum())
    maybe = int((layer >= MIN_WEIGHT * 0.99).sum())
    assert surely <= visible <= maybe, (surely, visible, maybe)
    assert visible < layer.size / 50  # the weak spread is not drawn

    # A strong link stands out with all 12 heads on: at a point of its line
    # (a quarter of the way, away from where lines meet at the tokens) it is
    # at least half opaque; bertviz's weight / heads would be ~0.06.
    h, q, k = np.unravel_index(np.argmax(layer[:, :20, :20]), (HEADS, 20, 20))
    strongest = float(layer[h, q, k])
    assert strongest > 0.5
    f = 0.25
    alpha = pixel_alpha(page, canvas, g["x0"] + f * (g["x1"] - g["x0"]), y(q) + f * (y(k) - y(q)))
    assert alpha >= 0.5, f"weight {strongest:.2f} drawn at opacity {alpha:.2f}"

    # Pin a query (page -> Python): its lines and the per-head strips stay.
    q = 4
    page.locator(f'{scope} .attnw-col-left .attnw-token[data-index="{q}"]').click()
    wait_until(lambda: view.selected_token == q)
    page.locator(f'{scope} .attnw-lines[data-focus="query:{q}"]').wait_for()
    page.locator(f"{scope} .attnw-status").hover()

    # Strip blocks beside the keys: 12 heads take ~120 px (bertviz's ~110),
    # not 1 px a head; a block's opacity is the square root of its weight.
    strip = f"{scope} canvas.attnw-strip[data-side=query]"
    per_head = float(page.locator(strip).get_attribute("data-per-head"))
    assert per_head * HEADS >= 96 and page.locator(strip).bounding_box()["width"] >= 96
    head, key = np.unravel_index(np.argmax(layer[:, q, :25]), (HEADS, 25))
    weight = float(layer[head, q, key])
    left = head * per_head
    for x in (left + 1.5, left + per_head / 2, left + per_head - 2.5):
        seen = pixel_alpha(page, strip, x, y(key), radius=0)
        assert abs(seen - np.sqrt(weight)) < 0.08, f"block of head {head} at x={x}: {seen}"
    between_rows = pixel_alpha(page, strip, left + per_head / 2, y(key) + g["row"] / 2, 0)
    assert between_rows < 0.05  # a gap between the rows' blocks
    hover_canvas(page, strip, left + per_head / 2, y(key))
    shown = tip(page, f"{scope} .attnw-tip")
    assert shown["kind"] == "strip"
    assert shown["text"].startswith(f'#{q} "w{q}" → #{key} "w{key}": ')
    assert shown["text"].endswith(f"(head {head})")
    assert_shown_as(shown["text"], weight)

    # A line of the pinned query: at its midpoint the tooltip names it; where
    # heads' lines coincide, the heaviest head's.
    key = int(np.argmax(layer[:, q, :25].max(0)))
    head = int(np.argmax(layer[:, q, key]))
    hover_canvas(page, canvas, (g["x0"] + g["x1"]) / 2, (y(q) + y(key)) / 2)
    page.wait_for_function(
        "([sel, k]) => (t => t?.dataset.key === k && t.dataset.kind === 'line')"
        "(document.querySelector(sel))",
        arg=[f"{scope} .attnw-tip", str(key)],
    )
    shown = tip(page, f"{scope} .attnw-tip")
    assert shown["text"].startswith(f'#{q} "w{q}" → #{key} "w{key}": ') and shown["head"] == str(
        head
    )
    assert_shown_as(shown["text"], float(layer[head, q, key]))
    page.locator(f"{scope} .attnw-status").hover()
    page.locator(f"{scope} .attnw-tip").wait_for(state="hidden")

    # Head boxes in both themes (Python -> page): each colour >= 3:1 on the
    # view's background, each label >= 4.5:1 on its box.
    for theme in ("dark", "light"):
        view.theme = theme
        page.locator(f"{scope}[data-palette={theme}]").wait_for()
        background = page.locator(scope).evaluate("r => getComputedStyle(r).backgroundColor")
        boxes = page.locator(f"{scope} .attnw-headbox").evaluate_all(
            "bs => bs.map(b => [getComputedStyle(b).backgroundColor, getComputedStyle(b).color])"
        )
        assert len(boxes) == HEADS
        for fill, label in boxes:
            assert contrast(fill, background) >= 3, (theme, fill, background)
            assert contrast(label, fill) >= 4.5, (theme, label, fill)
    page_watch.assert_clean()


def test_model_view_at_300_tokens_axes_layout_and_weights(
    page_watch, solara_test, page_session
) -> None:
    attention = structured(2, HEADS, N, seed=1)
    tokens = [f"w{i}" for i in range(N)]
    view = ModelView(Explanation(tokens=tokens, attentions=attention))
    display(view)
    page = page_session
    page.set_viewport_size({"width": 1000, "height": 900})  # a notebook's width
    scope = ".attnw-modelview"
    page.locator(f"{scope}[data-state=ready]").wait_for(timeout=20000)
    thumbs = page.locator(f"{scope} canvas.attnw-thumbs")
    grid = thumbs.bounding_box()

    # Axis titles: "Heads" above the thumbnails, "Layers" to their left.
    heads_title = page.locator(f"{scope} .attnw-axis-heads")
    layers_title = page.locator(f"{scope} .attnw-axis-layers")
    assert "Heads" in heads_title.text_content() and "Layers" in layers_title.text_content()
    assert heads_title.bounding_box()["y"] + heads_title.bounding_box()["height"] <= grid["y"] + 1
    assert layers_title.bounding_box()["x"] + layers_title.bounding_box()["width"] <= grid["x"] + 1

    # Hover a thumbnail on its strongest pooled link: the tooltip gives that
    # link's pooled weight (300 tokens pool into bins) as Python computes it.
    index = view.thumb_index[0]
    re_, ce = index["row_edges"], index["col_edges"]
    pooled = np.array(
        [
            [
                attention[0, 0, re_[i] : re_[i + 1], ce[j] : ce[j + 1]].sum(-1).mean()
                for j in range(len(ce) - 1)
            ]
            for i in range(len(re_) - 1)
        ]
    )
    i, j = np.unravel_index(np.argmax(pooled), pooled.shape)
    label_width, label_height, cell, gap, pad = 34, 18, 72, 6, 4  # model_view.ts geometry
    inner = cell - 2 * pad

    def centre(edges: list[int], k: int) -> float:
        return pad + (edges[k] + edges[k + 1]) / 2 / N * inner

    x = label_width + pad + inner / 2
    y = label_height + (centre(re_, i) + centre(ce, j)) / 2
    page.mouse.move(grid["x"] + x - 2, grid["y"] + y)
    page.mouse.move(grid["x"] + x, grid["y"] + y)
    shown = tip(page, f"{scope} > .attnw-tip")
    assert shown["text"].startswith(
        f"Layer 0, head 0: #{re_[i]}–#{re_[i + 1] - 1} → #{ce[j]}–#{ce[j + 1] - 1}: "
    )
    assert "pooled" in shown["text"] and shown["text"].endswith("(click to enlarge)")
    assert_shown_as(shown["text"].split(" (pooled")[0], float(pooled[i, j]))

    # Enlarge a head (page -> Python): it opens beside the grid, in view.
    thumbs.click(
        position={
            "x": label_width + 2 * (cell + gap) + cell / 2,
            "y": label_height + cell + gap + cell / 2,
        }
    )
    wait_until(lambda: (view.layer, view.head) == (1, 2))
    detail = page.locator(f"{scope} .attnw-detail")
    page.locator(f"{scope}[data-layer='1'][data-head='2'][data-state=ready]").wait_for(
        timeout=20000
    )
    box = detail.bounding_box()
    scroller = page.locator(f"{scope} .attnw-grid-scroll").bounding_box()
    assert box["x"] >= scroller["x"] + scroller["width"] - 1, (
        "the enlarged head wrapped below the grid"
    )
    assert box["y"] < grid["y"] + grid["height"] and box["x"] + box["width"] <= 1000

    # Python -> page: pin a query, then hover its strongest line in the enlarged head.
    q = 6
    view.selected_token = q
    page.locator(f'{scope} .attnw-detail .attnw-lines[data-focus="query:{q}"]').wait_for()
    canvas = f"{scope} .attnw-detail canvas.attnw-lines-canvas"
    g = geometry(page, canvas)
    key = int(np.argmax(attention[1, 2, q, :25]))
    hover_canvas(page, canvas, (g["x0"] + g["x1"]) / 2, (q + key + 1) / 2 * g["row"])
    shown = tip(page, f"{scope} .attnw-detail .attnw-tip")
    assert shown["kind"] == "line" and shown["head"] == "2"
    assert shown["text"].startswith(f'#{q} "w{q}" → #{key} "w{key}": ')
    assert_shown_as(shown["text"], float(attention[1, 2, q, key]))
    page_watch.assert_clean()


def test_bertviz_style_model_view_follows_a_light_page(
    page_watch, solara_test, page_session
) -> None:
    """attnwidget.model_view(...) used to draw bertviz's dark block on a light
    notebook; by default it now follows the page, as head_view does."""
    import torch

    from attnwidget import model_view

    attention = structured(1, 4, 12)
    view = model_view(
        tuple(torch.from_numpy(a)[None] for a in attention), [f"w{i}" for i in range(12)]
    )
    page = page_session
    root = page.locator(".attnw-modelview[data-state=ready]")
    root.wait_for()
    assert (
        root.get_attribute("data-theme") is None and root.get_attribute("data-palette") == "light"
    )
    text = root.evaluate("r => getComputedStyle(r).color")
    assert contrast(text, "rgb(255, 255, 255)") >= 4.5  # dark text: the light page's own
    view.theme = "dark"  # Python -> page: bertviz's look on request
    page.locator(".attnw-modelview[data-theme=dark][data-palette=dark]").wait_for()
    page_watch.assert_clean()
