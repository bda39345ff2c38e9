"""ImageView in a real headless Chromium (pytest-ipywidgets + Playwright), live
and as a saved page opened offline.

Checks: a click on a patch reaches Python and Python's changes redraw the page
(data attributes, the legend's range text, the canvas pixels); hovering shows
the patch's value as the views format numbers; layers beyond the initial state
come from the kernel (live) or the recorded replies (saved page); token names
stay text; the SVG/PNG downloads hold the drawn pixels; nothing is requested
from outside the machine and the page logs no error.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser_events import settle_injected
from image_fixtures import made_explanation
from IPython.display import display
from polling import wait_until
from test_export import png_size_and_pixels

from attnwidget.results.explanation import Explanation
from attnwidget.views import ImageView
from attnwidget.views.core.format import format_number
from attnwidget.views.image import image_view as image_module

pytestmark = pytest.mark.browser

ROOT = ".attnw-imageview"
READY = f"{ROOT}[data-state=ready]"
HOSTILE = [
    "<img src=x onerror=window.__xss=1>",
    "</script><script>window.__xss=2</script>",
    '"><svg onload=window.__xss=3>',
    "<script>window.__xss=4</script>",
    "&lt;b&gt;",
]

#: A hash of the main canvas's pixels (changes when anything drawn changes).
PIXELS = """() => {
  const c = document.querySelector('.attnw-imageview .attnw-image-canvas');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let h = 0, colours = new Set();
  for (let i = 0; i < d.length; i += 4) {
    h = (Math.imul(h, 31) + d[i] * 65536 + d[i + 1] * 256 + d[i + 2]) | 0;
    colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
  }
  return [h, colours.size];
}"""

#: Markup that could only have come from a name (the view draws none of these).
INJECTED = """() => ({
  xss: window.__xss ?? null,
  elements: document.querySelectorAll(
    '.attnw-frame img, .attnw-frame script, .attnw-frame svg, .attnw-frame iframe').length,
  handlers: [...document.querySelectorAll('*')].filter(e =>
    [...e.attributes].some(a => /^on/i.test(a.name))).length,
})"""


def patch_spot(page: Any, row: int, col: int, grid: tuple[int, int]) -> dict[str, float]:
    """Where patch (row, col) lies on the main canvas, for click(position=...)."""
    box = page.locator(f"{ROOT} .attnw-image-canvas").bounding_box()
    return {"x": (col + 0.5) * box["width"] / grid[1], "y": (row + 0.5) * box["height"] / grid[0]}


def root_data(page: Any) -> dict[str, str]:
    return page.locator(ROOT).evaluate("e => ({...e.dataset})")


def wait_data(page: Any, **expected: str) -> None:
    selector = ROOT + "".join(f'[data-{k}="{v}"]' for k, v in expected.items())
    page.locator(selector).wait_for(timeout=10000)


def half(values: np.ndarray) -> np.ndarray:
    """What the page holds of query-map values: float16 on the wire."""
    return np.asarray(values, np.float16).astype(np.float32)


def query_range_text(view: ImageView) -> str:
    """The legend of a one-head query map: 0 … its max over every patch but the query."""
    values = half(view.query_map()).ravel()
    if view.selected_patch >= 0:
        values = np.delete(values, view.selected_patch)
    return f"0 … {format_number(float(values.max()))}"


def test_clicks_hover_and_python_changes_round_trip(
    page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    exp = made_explanation(3, 4, layers=2, heads=2)
    view = ImageView(exp)
    display(view)
    page = page_session
    page.locator(READY).wait_for(timeout=15000)
    canvas = page.locator(f"{ROOT} .attnw-image-canvas")
    assert root_data(page)["method"] == "positive"
    first, colours = page.evaluate(PIXELS)
    assert colours > 50  # the image and a smooth map, not a flat fill

    # Click in the page -> Python; clicking the selected patch again clears it.
    canvas.click(position=patch_spot(page, 1, 2, (3, 4)))
    wait_until(lambda: view.selected_patch == 1 * view.grid[1] + 2)
    wait_data(page, selected="1,2")
    canvas.click(position=patch_spot(page, 1, 2, (3, 4)))
    wait_until(lambda: view.selected_patch == -1)
    view.selected_patch = 3  # row 0, col 3  # Python -> the page outlines it
    wait_data(page, selected="0,3")
    assert view.selection["label"] == "(0,3)"
    page.locator(ROOT).focus()  # the keyboard moves the selection; Esc clears it
    page.keyboard.press("ArrowDown")
    wait_until(lambda: view.selected_patch == 1 * view.grid[1] + 3)
    page.keyboard.press("Escape")
    wait_until(lambda: view.selected_patch == -1)
    view.selected_patch = 3  # row 0, col 3
    wait_data(page, selected="0,3")

    # Hover: the patch and its score, formatted as Python formats it.
    canvas.hover(position=patch_spot(page, 2, 1, (3, 4)))
    tip = page.locator(f"{ROOT} .attnw-tip")
    tip.wait_for()
    score = float(exp.patch_scores("positive")[2, 1])
    assert tip.text_content() == f"patch (2, 1)\npositive {format_number(score)}"

    # Python picks another method -> the page redraws: attribute, legend, pixels.
    view.selected_method = "signed_demo"
    wait_data(page, method="signed_demo", state="ready")
    top = float(np.abs(exp.patch_scores("signed_demo")).max())
    legend = page.locator(f"{ROOT} .attnw-image-legend .attnw-range")
    assert legend.text_content() == f"{format_number(-top)} … 0 … {format_number(top)}"
    assert page.evaluate(PIXELS)[0] != first
    # ... and the small multiples mark it; clicking another one picks that one.
    assert page.locator(f"{ROOT} .attnw-image-thumb.attnw-active").get_attribute("data-method") == (
        "signed_demo"
    )
    page.locator(f'{ROOT} .attnw-image-thumb[data-method="positive"]').click()
    wait_until(lambda: view.selected_method == "positive")

    # The selected patch's attention at a layer and head set from Python.
    view.selected_method, view.layer, view.head = "query_attention", 0, 1
    wait_data(page, method="query_attention", layer="0", head="1", state="ready")
    assert legend.text_content() == query_range_text(view)
    value = half(view.query_map())[2, 1]
    canvas.hover(position=patch_spot(page, 2, 0, (3, 4)))
    canvas.hover(position=patch_spot(page, 2, 1, (3, 4)))
    assert tip.text_content() == (
        f"patch (2, 1)\nattention (layer 0, head 1) {format_number(float(value))}"
    )
    before = page.evaluate(PIXELS)[0]
    view.layer = 1
    wait_data(page, layer="1", state="ready")
    assert legend.text_content() == query_range_text(view)
    assert page.evaluate(PIXELS)[0] != before

    # The page's pickers and slider -> Python.
    page.locator(f"{ROOT} select.attnw-head").select_option("-1")
    wait_until(lambda: view.head == -1)
    page.locator(f"{ROOT} select.attnw-image-method").select_option("query_rollout")
    wait_until(lambda: view.selected_method == "query_rollout")
    wait_data(page, method="query_rollout", state="ready")
    page.locator(f"{ROOT} input.attnw-opacity").fill("0.2")
    wait_until(lambda: abs(view.opacity - 0.2) < 1e-9)
    view.opacity = 0.9
    wait_data(page, opacity="0.9")
    assert page.locator(f"{ROOT} .attnw-opacity-value").text_content() == "90%"
    page_watch.assert_clean()


def test_layers_beyond_the_state_come_from_the_kernel(
    page_watch: Any, solara_test: Any, page_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = made_explanation(4, 4, layers=3, heads=2, seed=3)
    monkeypatch.setattr(image_module, "PRELOAD_BYTES", 0)  # nothing preloaded
    view = ImageView(exp, selected_method="query_attention", head=0, selected_patch=1 * 4 + 1)
    assert view.preload_index == []
    display(view)
    page = page_session
    page.locator(READY).wait_for(timeout=15000)  # layer 2 arrived on request
    legend = page.locator(f"{ROOT} .attnw-image-legend .attnw-range")
    assert legend.text_content() == query_range_text(view)
    page.locator(f"{ROOT} select.attnw-layer").select_option("0")
    wait_until(lambda: view.layer == 0)
    wait_data(page, layer="0", state="ready")
    assert legend.text_content() == query_range_text(view)
    page_watch.assert_clean()


def hostile_explanation() -> Explanation:
    exp = made_explanation(
        2, 2, specials=HOSTILE[:2], labels=[HOSTILE[2], HOSTILE[3], "ok", HOSTILE[4]]
    )
    exp.target = HOSTILE[0]
    return exp


def check_names_are_text(page: Any, watch: Any) -> None:
    page.locator(READY).wait_for(timeout=15000)
    specials = page.locator(f"{ROOT} .attnw-image-specials").text_content()
    assert HOSTILE[0] in specials and HOSTILE[1] in specials
    assert HOSTILE[0] in page.locator(f"{ROOT} .attnw-image-caption").text_content()  # the target
    canvas = page.locator(f"{ROOT} .attnw-image-canvas")
    for (row, col), label in (((0, 0), HOSTILE[2]), ((0, 1), HOSTILE[3]), ((1, 1), HOSTILE[4])):
        quoted = label.replace('"', '\\"')  # names are quoted as JSON strings
        canvas.hover(position=patch_spot(page, row, col, (2, 2)))
        assert quoted in page.locator(f"{ROOT} .attnw-tip").text_content()
        canvas.click(position=patch_spot(page, row, col, (2, 2)))
        wait_data(page, selected=f"{row},{col}")
        assert quoted in page.locator(f"{ROOT} .attnw-status").text_content()
    page.locator(f"{ROOT} select.attnw-image-method").select_option("query_attention")
    wait_data(page, method="query_attention", state="ready")
    assert HOSTILE[4] in page.locator(f"{ROOT} .attnw-image-caption").text_content()
    settle_injected(page, watch)  # an injected handler would have fired by now
    assert page.evaluate(INJECTED) == {"xss": None, "elements": 0, "handlers": 0}


def test_names_are_text_live(page_watch: Any, solara_test: Any, page_session: Any) -> None:
    display(ImageView(hostile_explanation()))
    check_names_are_text(page_session, page_watch)
    page_watch.assert_clean()


def test_names_are_text_in_a_saved_page_without_its_policy(tmp_path: Path, open_page: Any) -> None:
    page_text = ImageView(hostile_explanation()).to_html()
    start = page_text.index('<meta http-equiv="Content-Security-Policy"')
    page_text = page_text[:start] + page_text[page_text.index(">", start) + 1 :]
    assert "Content-Security-Policy" not in page_text  # the escaping itself is tested
    path = tmp_path / "hostile.html"
    path.write_text(page_text, encoding="utf-8")
    watch = open_page(path)
    check_names_are_text(watch.page, watch)
    watch.assert_clean()


def test_saved_page_draws_answers_and_downloads_offline(
    tmp_path: Path, open_page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = made_explanation(3, 4, layers=3, heads=2, seed=5)
    layer_bytes = (2 + 1) * 13 * 12 * 2  # attention and rollout of one layer
    monkeypatch.setattr(image_module, "PRELOAD_BYTES", layer_bytes)  # the shown layer only
    view = ImageView(exp, selected_patch=2 * 4 + 2)  # row 2, col 2
    path = tmp_path / "image.html"
    view.to_html(path)
    watch = open_page(path)
    page = watch.page
    page.locator(READY).wait_for(timeout=15000)
    assert root_data(page)["selected"] == "2,2"
    assert page.evaluate(PIXELS)[1] > 50

    # A click works in the file; another layer comes from the recorded replies.
    canvas = page.locator(f"{ROOT} .attnw-image-canvas")
    canvas.click(position=patch_spot(page, 0, 1, (3, 4)))
    wait_data(page, selected="0,1")
    page.locator(f"{ROOT} select.attnw-image-method").select_option("query_attention")
    page.locator(f"{ROOT} select.attnw-head").select_option("1")
    page.locator(f"{ROOT} select.attnw-layer").select_option("0")
    wait_data(page, method="query_attention", layer="0", head="1", state="ready")
    view.selected_method, view.layer, view.head, view.selected_patch = "query_attention", 0, 1, 1
    legend = page.locator(f"{ROOT} .attnw-image-legend .attnw-range")
    assert legend.text_content() == query_range_text(view)

    with page.expect_download() as svg_download:
        page.locator('.attnw-toolbar button[data-format="svg"]').click()
    assert svg_download.value.suggested_filename == "attnwidget-image.svg"
    root = ET.fromstring(Path(svg_download.value.path()).read_bytes())
    images = [e for e in root.iter("{http://www.w3.org/1999/xhtml}img")]
    # The main canvas, its overlay and one small multiple per method, as pixels.
    assert len(images) == 2 + 2
    assert all(e.get("src", "").startswith("data:image/png;base64,") for e in images)
    assert not [e for e in root.iter() if e.tag.endswith("}script")]
    with page.expect_download() as png_download:
        page.locator('.attnw-toolbar button[data-format="png"]').click()
    width, height, pixels = png_size_and_pixels(Path(png_download.value.path()).read_bytes())
    assert width > 400 and height > 300 and len(set(pixels)) > 64
    assert page.locator(".attnw-toolbar-message").text_content() == ""
    watch.assert_clean()


def test_a_saved_page_says_which_layers_it_left_out(
    tmp_path: Path, open_page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(image_module, "PRELOAD_BYTES", 0)
    view = ImageView(made_explanation(3, 4, layers=2, heads=2), selected_method="query_rollout")
    path = tmp_path / "partial.html"
    view.to_html(path, embed_bytes=13 * 12 * 2)  # one rollout layer: the shown one
    watch = open_page(path)
    page = watch.page
    page.locator(READY).wait_for(timeout=15000)
    page.locator(f"{ROOT} select.attnw-layer").select_option("0")
    page.locator(f"{ROOT}[data-state=error][data-layer='0']").wait_for(timeout=5000)
    assert "embed_bytes" in page.locator(f"{ROOT} .attnw-status").text_content()
    page.locator(f"{ROOT} select.attnw-layer").select_option("1")  # still usable
    wait_data(page, layer="1", state="ready")
    watch.assert_clean()
