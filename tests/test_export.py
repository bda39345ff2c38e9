"""Self-contained HTML export (``to_html``) and the SVG/PNG download buttons.

Python tests read the page as text; browser tests open the written file in
headless Chromium with every non-local request aborted (tests/offline_browser.py)
and check it draws, reacts to clicks, runs no injected markup, logs no error,
and that both downloads produce an image of the right type.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import traitlets
from browser_events import settle_injected

from attnwidget.results.explanation import Explanation
from attnwidget.views import SaliencyView
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.core.format import format_number

XSS_TOKENS = ["<img src=x onerror=window.__xss=1>", "</script><script>window.__xss=2</script>"]
TOKENS = ["[CLS]", "the", "keys", "to", "the", "cabinet", "[SEP]"]


def make_view(tokens: list[str], **kwargs: Any) -> SaliencyView:
    n = len(tokens)
    rng = np.random.default_rng(0)
    weights = rng.random((2, 2, n, n)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    scores = {
        "rollout": rng.random(n).astype(np.float32),
        "signed_demo": np.linspace(-1.5, 0.75, n, dtype=np.float32),
    }
    return SaliencyView(Explanation(tokens=tokens, attentions=weights, scores=scores), **kwargs)


class _Scripts(HTMLParser):
    """The <script> elements of a page as the HTML parser sees them: (attrs, text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._open is not None:
            self.scripts.append((self._open, "".join(self._text)))
            self._open = None


def scripts_of(page: str) -> list[tuple[dict[str, str | None], str]]:
    parser = _Scripts()
    parser.feed(page)
    parser.close()
    return parser.scripts


def state_payloads(page: str) -> list[dict[str, Any]]:
    return [
        json.loads(text)
        for attrs, text in scripts_of(page)
        if attrs.get("type") == "application/json" and "data-attnwidget-state" in attrs
    ]


# ---------------------------------------------------------------- Python side


def test_page_carries_the_bundle_and_the_state(tmp_path: Path) -> None:
    view = make_view(TOKENS, selected_token=2)
    out = tmp_path / "view.html"
    page = view.to_html(out)
    assert out.read_text(encoding="utf-8") == page

    scripts = scripts_of(page)
    modules = [text for attrs, text in scripts if attrs.get("type") == "module"]
    assert len(modules) == 1
    assert modules[0].strip() == str(view._esm).strip()  # the widget's own bundle, whole

    (payload,) = state_payloads(page)
    state = payload["state"]
    assert state["_view"] == "saliency"
    assert state["tokens"] == TOKENS
    assert state["methods"] == ["rollout", "signed_demo"]
    assert state["selected_token"] == 2
    assert "_esm" not in state and "layout" not in state  # machinery stays out
    buffers = {tuple(b["path"]): b for b in payload["buffers"]}
    # The scores, and the (empty: no similarity pair here) second text's scores.
    assert set(buffers) == {("scores",), ("pair_scores",)}
    assert base64.b64decode(buffers[("pair_scores",)]["data"]) == b""
    buffer = buffers[("scores",)]
    scores = np.frombuffer(base64.b64decode(buffer["data"]), dtype="<f4").reshape(state["shape"])
    np.testing.assert_array_equal(scores, view.score_matrix())

    # Nothing in the page can load anything.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)


def test_script_breaking_tokens_are_escaped() -> None:
    view = make_view(["[CLS]", *XSS_TOKENS, "a & b", "\u2028", "[SEP]"])
    page = view.to_html()
    # The raw token text never appears: it would end the JSON <script> early.
    assert XSS_TOKENS[1] not in page
    assert "<img src=x" not in page
    # Exactly the two real scripts, and the tokens read back unchanged.
    assert len(scripts_of(page)) == 2
    assert page.lower().count("</script") == 2
    (payload,) = state_payloads(page)
    assert payload["state"]["tokens"] == ["[CLS]", *XSS_TOKENS, "a & b", "\u2028", "[SEP]"]


def test_page_policy_allows_only_its_own_bundle() -> None:
    page = make_view(TOKENS).to_html(title="<b>keys</b> & co")
    (csp,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert "default-src 'none'" in csp
    bundle = next(text for attrs, text in scripts_of(page) if attrs.get("type") == "module")
    digest = base64.b64encode(hashlib.sha256(bundle.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp
    assert "<title>&lt;b&gt;keys&lt;/b&gt; &amp; co</title>" in page


class _Probe(_AttnWidget):
    """A view the bundle does not know, with other kinds of traits."""

    _view = traitlets.Unicode("probe").tag(sync=True)
    values = traitlets.List(traitlets.Float()).tag(sync=True)
    blob = traitlets.Bytes(b"").tag(sync=True)
    label = traitlets.Unicode("").tag(sync=True)
    hidden = traitlets.Int(7)  # not synced: not exported


def test_export_is_generic_over_views() -> None:
    probe = _Probe(values=[0.5, -1.0], blob=b"\x00\x01\xff", label="</script>")
    (payload,) = state_payloads(probe.to_html())
    assert payload["state"] == {"_view": "probe", "values": [0.5, -1.0], "label": "</script>"}
    assert [b["path"] for b in payload["buffers"]] == [["blob"]]
    assert base64.b64decode(payload["buffers"][0]["data"]) == b"\x00\x01\xff"

    probe.values = [float("nan")]
    with pytest.raises(ValueError, match="bytes traits"):
        probe.to_html()


def test_static_mode_adds_a_standalone_html_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    view = make_view(TOKENS)
    monkeypatch.delenv("ATTNWIDGET_STATIC", raising=False)
    data, _ = view._repr_mimebundle_()
    # Not static: the framed page fallback (tests/test_mimebundle.py), not the fragment.
    assert data["text/html"].startswith("<iframe")
    assert "application/vnd.jupyter.widget-view+json" in data

    monkeypatch.setenv("ATTNWIDGET_STATIC", "1")
    data, _ = view._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == view.model_id
    html = data["text/html"]
    (payload,) = state_payloads(html)
    assert payload["model_id"] == view.model_id
    assert payload["state"]["tokens"] == TOKENS
    assert '<script type="module" async data-attnwidget-bundle>' in html

    monkeypatch.setenv("ATTNWIDGET_STATIC", "0")
    assert view._repr_mimebundle_()[0]["text/html"].startswith("<iframe")


# --------------------------------------------------------------- browser side


@pytest.mark.browser
def test_exported_file_renders_and_reacts_offline(tmp_path: Path, open_page: Any) -> None:
    view = make_view(TOKENS, selected_token=5)
    path = tmp_path / "view.html"
    view.to_html(path)
    watch = open_page(path)
    page = watch.page

    row = page.locator('.attnw-tok[data-method="rollout"]')
    row.first.wait_for()
    assert row.all_text_contents() == TOKENS
    # The state's selection shows on load.
    selected = page.locator(".attnw-tok.attnw-selected")
    assert {c.get_attribute("data-index") for c in selected.all()} == {"5"}

    # A click selects another column, all in the page.
    page.locator('.attnw-tok[data-method="signed_demo"][data-index="2"]').click()
    assert selected.count() == 2
    assert {c.get_attribute("data-index") for c in selected.all()} == {"2"}
    status = page.locator(".attnw-saliency .attnw-status")
    assert status.text_content().startswith('Selected #2 "keys"')
    # Hover shows the exact score.
    page.locator('.attnw-tok[data-method="rollout"][data-index="3"]').hover()
    score = view.explanation.scores["rollout"][3]
    assert f"score {format_number(score)}" in status.text_content()  # as the views show numbers

    watch.assert_clean()


@pytest.mark.browser
def test_saved_pages_answer_their_own_requests(tmp_path: Path, open_page: Any) -> None:
    """Attention beyond the live state is recorded in the page and served on request;
    what an export left out says so at once, and the page stays usable."""
    from attnwidget.views import HeadView, ModelView

    n, layers, heads = 200, 12, 12  # 11.5 MB of float16: more than the live state holds
    rng = np.random.default_rng(1)
    weights = rng.random((layers, heads, n, n), dtype=np.float32)
    weights /= weights.sum(-1, keepdims=True)
    weights = 0.5 * weights + 0.5 * np.eye(n, dtype=np.float32)  # a strong line per token
    explanation = Explanation(tokens=[f"w{i}" for i in range(n)], attentions=weights)
    layer_bytes = heads * n * n * 2

    head = HeadView(explanation, layer=3)
    head.to_html(tmp_path / "head.html", embed_bytes=2 * layer_bytes)  # layer 3, then layer 0
    watch = open_page(tmp_path / "head.html")
    page = watch.page
    root = page.locator(".attnw-headview")
    page.locator(".attnw-headview[data-state=ready][data-layer='3']").wait_for()
    page.locator(".attnw-headview select.attnw-layer").select_option("0")  # recorded
    page.locator(".attnw-headview[data-state=ready][data-layer='0']").wait_for()
    page.wait_for_function(  # lines are drawn in the frame after the data arrives
        "() => Number(document.querySelector('.attnw-headview .attnw-lines')"
        "?.getAttribute('data-lines')) > 0"
    )
    page.locator(".attnw-headview select.attnw-layer").select_option("7")  # left out
    page.locator(".attnw-headview[data-state=error][data-layer='7']").wait_for(timeout=5000)
    assert "embed_bytes" in root.locator(".attnw-status").text_content()
    page.locator(".attnw-headview select.attnw-layer").select_option("3")  # still usable
    page.locator(".attnw-headview[data-state=ready][data-layer='3']").wait_for()
    watch.assert_clean()

    model = ModelView(explanation)
    model.to_html(tmp_path / "model.html")
    watch = open_page(tmp_path / "model.html")
    page = watch.page
    page.locator(".attnw-modelview[data-state=ready]").wait_for()
    # Enlarge layer 2, head 5 (model_view.ts geometry): its head is a recorded reply.
    label_width, label_height, cell, gap = 34, 18, 72, 6
    spot = {
        "x": label_width + 5 * (cell + gap) + cell / 2,
        "y": label_height + 2 * (cell + gap) + cell / 2,
    }
    page.locator(".attnw-modelview canvas.attnw-thumbs").click(position=spot)
    page.locator(".attnw-modelview[data-state=ready][data-layer='2'][data-head='5']").wait_for()
    page.wait_for_function(
        "() => Number(document.querySelector('.attnw-modelview .attnw-detail .attnw-lines')"
        "?.getAttribute('data-lines')) > 0"
    )
    watch.assert_clean()


@pytest.mark.browser
def test_exported_tokens_are_text_not_markup(tmp_path: Path, open_page: Any) -> None:
    tokens = ["[CLS]", *XSS_TOKENS, "ok", "[SEP]"]
    path = tmp_path / "xss.html"
    make_view(tokens).to_html(path)
    watch = open_page(path)
    page = watch.page
    row = page.locator('.attnw-tok[data-method="rollout"]')
    row.first.wait_for()
    assert row.all_text_contents() == tokens
    settle_injected(page, watch)  # an injected handler would have fired by now (it must not)
    assert page.evaluate("window.__xss") is None
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 2  # the state block and the bundle
    row.nth(2).click()
    assert page.evaluate("window.__xss") is None
    watch.assert_clean()


def png_size_and_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the decompressed (still filtered) pixel rows of a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, width, height, idat = 8, 0, 0, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


@pytest.mark.browser
def test_svg_and_png_downloads(tmp_path: Path, open_page: Any) -> None:
    tokens = ["[CLS]", "the", XSS_TOKENS[1], "keys", "[SEP]"]
    path = tmp_path / "view.html"
    make_view(tokens).to_html(path)
    watch = open_page(path)
    page = watch.page
    page.locator(".attnw-saliency .attnw-tok").first.wait_for()
    box = page.locator(".attnw-view").bounding_box()

    with page.expect_download() as svg_download:
        page.locator('.attnw-toolbar button[data-format="svg"]').click()
    download = svg_download.value
    assert download.suggested_filename == "attnwidget-saliency.svg"
    svg = Path(download.path()).read_bytes()
    assert svg
    root = ET.fromstring(svg)  # well-formed XML
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert int(root.get("width")) == pytest.approx(box["width"], abs=1)
    xhtml = "{http://www.w3.org/1999/xhtml}"
    cells = [e for e in root.iter(f"{xhtml}span") if "attnw-tok" in (e.get("class") or "").split()]
    # Every token of both rows, as text (one column per token: its two cells).
    assert [c.text for c in cells] == [t for t in tokens for _ in range(2)]
    assert not [e for e in root.iter() if e.tag.endswith("}script")]
    assert all(e.get("style") for e in cells)  # styles are inline: no stylesheet needed
    assert "attnw-toolbar" not in svg.decode()  # the buttons are not in the picture

    with page.expect_download() as png_download:
        page.locator('.attnw-toolbar button[data-format="png"]').click()
    download = png_download.value
    assert download.suggested_filename == "attnwidget-saliency.png"
    width, height, pixels = png_size_and_pixels(Path(download.path()).read_bytes())
    # Drawn at 2x; a blank or tainted canvas would be one flat colour.
    assert (width, height) == (2 * int(root.get("width")), 2 * int(root.get("height")))
    assert len(set(pixels)) > 32

    assert page.locator(".attnw-toolbar-message").text_content() == ""
    watch.assert_clean()


@pytest.mark.browser
def test_svg_shows_a_long_wrapped_input_whole(tmp_path: Path, open_page: Any) -> None:
    tokens = [f"token{i}" for i in range(80)]
    path = tmp_path / "long.html"
    make_view(tokens).to_html(path)
    watch = open_page(path)
    page = watch.page
    page.set_viewport_size({"width": 600, "height": 400})
    page.locator(".attnw-saliency .attnw-tok").first.wait_for()
    # SaliencyView wraps long inputs into lines (taller than the window) instead of scrolling.
    assert int(page.locator(".attnw-saliency .attnw-lines").get_attribute("data-lines")) > 3
    box = page.locator(".attnw-view").bounding_box()
    assert box["height"] > 400

    with page.expect_download() as svg_download:
        page.locator('.attnw-toolbar button[data-format="svg"]').click()
    root = ET.fromstring(Path(svg_download.value.path()).read_bytes())
    xhtml = "{http://www.w3.org/1999/xhtml}"
    cells = [e for e in root.iter(f"{xhtml}span") if "attnw-tok" in (e.get("class") or "")]
    assert [c.text for c in cells] == [t for t in tokens for _ in range(2)]
    # The picture is the whole view, not the part the window shows.
    assert int(root.get("width")) == pytest.approx(box["width"], abs=1)
    assert int(root.get("height")) == pytest.approx(box["height"], abs=2)
    watch.assert_clean()


@pytest.mark.browser
def test_downloads_work_in_a_live_widget(solara_test: Any, page_session: Any) -> None:
    """The same buttons on a widget shown by a real widget manager (solara's page)."""
    from IPython.display import display

    display(make_view(TOKENS))
    page = page_session
    page.locator(".attnw-saliency .attnw-tok").first.wait_for()
    with page.expect_download() as svg_download:
        page.locator('.attnw-toolbar button[data-format="svg"]').click()
    root = ET.fromstring(Path(svg_download.value.path()).read_bytes())
    texts = [e.text for e in root.iter("{http://www.w3.org/1999/xhtml}span")]
    assert all(token in texts for token in TOKENS)
    with page.expect_download() as png_download:
        page.locator('.attnw-toolbar button[data-format="png"]').click()
    width, height, pixels = png_size_and_pixels(Path(png_download.value.path()).read_bytes())
    assert width > 100 and height > 40 and len(set(pixels)) > 32
    assert page.locator(".attnw-toolbar-message").text_content() == ""


# ------------------------------------------- html_action="return": embedded in a page

#: A host page standing in for the notebook: the output lands in its <body>.
HOST_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>host</title></head>
<body><div id="output">{output}</div></body></html>
"""

#: How JupyterLab shows a trusted text/html output: innerHTML, then each script
#: re-created so that it runs.
INSERT_LIKE_JUPYTER = """(html) => {
  const out = document.getElementById('output');
  out.innerHTML = html;
  for (const old of Array.from(out.querySelectorAll('script'))) {
    const s = document.createElement('script');
    for (const a of Array.from(old.attributes)) s.setAttribute(a.name, a.value);
    s.textContent = old.textContent;
    old.replaceWith(s);
  }
}"""


def _csp_errors(watch: Any) -> list[str]:
    return [e for e in watch.console_errors if "Content Security Policy" in e]


@pytest.mark.browser
@pytest.mark.parametrize("insert", ["parsed", "innerHTML"])
def test_returned_html_embeds_without_a_misplaced_csp_meta(
    tmp_path: Path, open_page: Any, insert: str
) -> None:
    """head_view(..., html_action="return") is shown inside another page: it must
    carry no CSP <meta> (outside <head> the browser rejects it with a console
    error) and still draw its view and answer clicks, offline."""
    from attnwidget import head_view

    n = len(TOKENS)
    rng = np.random.default_rng(3)
    weights = rng.random((2, 2, n, n)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    returned = head_view(tuple(w[None] for w in weights), TOKENS, html_action="return").data
    assert "Content-Security-Policy" not in returned and "<html" not in returned
    # The control: the complete page (to_html) embedded the same way is rejected,
    # so this check sees the error when it is there.
    full_page = make_view(TOKENS).to_html()
    for output, expect_error in ((full_page, True), (returned, False)):
        path = tmp_path / f"host-{insert}-{expect_error}.html"
        path.write_text(HOST_PAGE.format(output="" if insert == "innerHTML" else output))
        watch = open_page(path)
        page = watch.page
        if insert == "innerHTML" and expect_error:
            with page.expect_console_message(
                lambda m: "Content Security Policy" in m.text, timeout=5000
            ):
                page.evaluate(INSERT_LIKE_JUPYTER, output)
        elif insert == "innerHTML":
            page.evaluate(INSERT_LIKE_JUPYTER, output)
        view = page.locator("#output .attnw").first
        view.wait_for()
        if expect_error:
            # Parsed: logged while the page was parsed, before its load event
            # (which open_page waited for); inserted: the message was waited for.
            assert _csp_errors(watch), "the misplaced CSP <meta> logged no error"
            continue
        assert page.evaluate("document.querySelectorAll('body meta[http-equiv]').length") == 0
        page.locator("#output .attnw-headview[data-state=ready]").wait_for()
        # It reacts: clicking a token pins it in the page.
        page.locator("#output .attnw-headview .attnw-col-left .attnw-token").nth(2).click()
        page.locator('#output .attnw-col-left .attnw-pinned[data-index="2"]').wait_for()
        assert not _csp_errors(watch)
        watch.assert_clean()


def test_saved_page_keeps_its_csp_in_head() -> None:
    """to_html() stays a complete document whose policy sits in <head>."""
    page = make_view(TOKENS).to_html()
    head = page[page.index("<head>") : page.index("</head>")]
    assert 'http-equiv="Content-Security-Policy"' in head
    assert page.count("Content-Security-Policy") == 1


_RETURN_NOTEBOOK_CELLS = [
    "import numpy as np\n"
    "import attnwidget\n"
    "rng = np.random.default_rng(0)\n"
    'w = rng.random((2, 2, 5, 5)).astype("float32")\n'
    "w /= w.sum(-1, keepdims=True)\n"
    "attention = tuple(layer[None] for layer in w)\n"
    'tokens = ["[CLS]", "the", "keys", "are", "[SEP]"]',
    'attnwidget.head_view(attention, tokens, html_action="return")',
]


@pytest.mark.browser
@pytest.mark.slow
def test_returned_html_in_jupyterlab_logs_no_csp_error(
    tmp_path_factory: pytest.TempPathFactory, browser: Any
) -> None:
    """The real host: a notebook cell ending in head_view(..., html_action="return")
    in JupyterLab draws the view, reacts, and the page logs no error; the old
    output (the complete page, HTML(view.to_html())) run the same way logs the
    CSP error, so this check would see it."""
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (the notebook extra)")
    from jupyter_ui import jupyter_server, watch_page

    with jupyter_server("lab", tmp_path_factory.mktemp("jupyterlab-return")) as lab:
        cells = [
            {"cell_type": "code", "metadata": {}, "source": source, "outputs": []}
            for source in _RETURN_NOTEBOOK_CELLS
        ]
        kernel = {"display_name": "Python 3", "language": "python", "name": "python3"}
        notebook = {
            "cells": cells,
            "metadata": {"kernelspec": kernel},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (lab.root / "return.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        watch = watch_page(context, page)
        try:
            page.goto(f"{lab.url}/lab/tree/return.ipynb?token={lab.token}")
            page.locator(".jp-Notebook").first.wait_for(timeout=30000)
            page.wait_for_function(
                """() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
                     .map(e => e.textContent)
                     .some(t => /\\|\\s*Idle/.test(t) && !/No Kernel/.test(t))""",
                timeout=30000,
            )
            page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt").click()
            for _ in _RETURN_NOTEBOOK_CELLS:
                page.keyboard.press("Shift+Enter")
            # Shift+Enter on the last cell adds an empty one: wait for the first n.
            page.wait_for_function(
                """n => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                     .slice(0, n).every(p => /\\[\\d+\\]/.test(p.textContent))""",
                arg=len(cells),
                timeout=90000,
            )
            output = page.locator(".jp-OutputArea-output .attnw-headview")
            page.locator(".jp-OutputArea-output .attnw-headview[data-state=ready]").wait_for()
            assert output.count() == 1
            output.locator(".attnw-col-left .attnw-token").nth(2).click()
            output.locator('.attnw-col-left .attnw-pinned[data-index="2"]').wait_for()
            settle_injected(page, watch)  # a load's error event and a frame after the click
            watch.assert_clean()

            # The control: the complete page as the output logs the CSP error.
            last_cell = page.locator(".jp-Notebook .jp-Cell").last
            last_cell.locator(".jp-InputPrompt").click()
            page.keyboard.press("Escape")
            page.keyboard.press("b")
            page.keyboard.press("Enter")
            page.keyboard.insert_text(
                "from IPython.display import HTML\n"
                "HTML(attnwidget.HeadView(attnwidget.Explanation.from_attentions(w, tokens))"
                ".to_html())"
            )
            csp = "Content Security Policy"
            with page.expect_console_message(
                lambda m: m.type == "error" and csp in m.text, timeout=30000
            ):
                page.keyboard.press("Shift+Enter")
            page.wait_for_function(
                "() => document.querySelectorAll('.jp-OutputArea-output .attnw-headview')"
                ".length === 2",
                timeout=30000,
            )
            assert any(csp in e for e in watch.console_errors)
        finally:
            context.close()
