"""Each view's display data: the live widget, a self-contained fallback, Colab's metadata.

What the kernel sends when a view is displayed (``_repr_mimebundle_``):
the widget-view output live front ends draw, plus a fallback for hosts with
no widget manager (attnwidget/views/core/fallback.py): the view's standalone
page in a sandboxed ``iframe srcdoc`` under a size limit, the live state
alone above it, a note above that; a PNG drawn in headless Chromium when
``ATTNWIDGET_SNAPSHOT_PNG`` asks. Also: the bundle those pages carry needs
no URL, and anywidget's Colab metadata survives our override.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnwidget
from attnwidget import demo
from attnwidget.views.core import fallback
from attnwidget.views.core.base import BUNDLE
from attnwidget.views.core.standalone import STATE_ATTRIBUTE

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def exp() -> Any:
    model, tokenizer = demo.load("sva-encoder")
    example = demo.sentences(1, seed=3)[0]
    return attnwidget.explain(model, tokenizer, example.text, methods=["raw", "rollout"])


@pytest.fixture(autouse=True)
def plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ATTNWIDGET_STATIC",
        fallback.FALLBACK_ENV,
        fallback.MAX_BYTES_ENV,
        fallback.SNAPSHOT_ENV,
    ):
        monkeypatch.delenv(name, raising=False)


def srcdoc(frame: str) -> str:
    """The page inside a fallback iframe, unescaped as the browser reads the attribute."""
    match = re.search(r' srcdoc="([^"]*)"', frame)
    assert match, frame[:300]
    return html.unescape(match.group(1))


def payload(page: str) -> dict[str, Any]:
    match = re.search(rf"<script [^>]*{STATE_ATTRIBUTE}>(.*?)</script>", page, re.DOTALL)
    assert match
    return json.loads(match.group(1))


def test_every_view_carries_its_framed_page(exp: Any) -> None:
    views = [
        attnwidget.HeadView(exp),
        attnwidget.ModelView(exp),
        attnwidget.FlowView(exp, selected_method="rollout"),
        attnwidget.SaliencyView(exp),
        attnwidget.AttentionMatrixView(exp),
    ]
    for view in views:
        data, _ = view._repr_mimebundle_()
        name = type(view).__name__
        assert data[WIDGET_VIEW]["model_id"] == view.model_id, name
        assert "text/plain" in data, name
        frame = data["text/html"]
        assert frame.startswith('<iframe class="attnw-fallback"'), name
        # Scripts run, but in an opaque origin: no same-origin access to the notebook page.
        assert 'sandbox="allow-scripts allow-downloads"' in frame, name
        assert "allow-same-origin" not in frame, name
        assert len(frame.encode()) <= fallback.DEFAULT_MAX_BYTES, name
        page = srcdoc(frame)
        assert page.startswith("<!DOCTYPE html>") and "data-attnwidget-frame" in page, name
        assert "Content-Security-Policy" in page and "default-src 'none'" in page, name
        assert payload(page)["model_id"] == view.model_id, name
        assert payload(page)["state"]["_view"] == view._view, name
        # The bundle inside is the one the widget runs, whole.
        assert view._esm.strip()[-200:] in page, name


def test_over_the_limit_a_note(exp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    view = attnwidget.HeadView(exp)
    full = view._repr_mimebundle_()[0]["text/html"]
    size = len(full.encode())
    monkeypatch.setenv(fallback.MAX_BYTES_ENV, str(size))  # the limit is inclusive
    assert view._repr_mimebundle_()[0]["text/html"] == full
    monkeypatch.setenv(fallback.MAX_BYTES_ENV, str(size - 1))
    note = view._repr_mimebundle_()[0]["text/html"]
    assert "<iframe" not in note and "<script" not in note
    assert f"{size - 1:,}-byte limit" in note and f"({size:,} bytes)" in note
    assert fallback.SNAPSHOT_ENV in note and "to_html" in note
    monkeypatch.setenv(fallback.MAX_BYTES_ENV, "lots")  # not a number: the default, logged
    assert view._repr_mimebundle_()[0]["text/html"] == full


def test_the_fallback_can_be_left_out(exp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    view = attnwidget.SaliencyView(exp)
    monkeypatch.setenv(fallback.FALLBACK_ENV, "0")
    data, _ = view._repr_mimebundle_()
    assert "text/html" not in data and "image/png" not in data
    assert data[WIDGET_VIEW]["model_id"] == view.model_id


#: Colab's module as anywidget reads it (anywidget/_util.py: in_colab,
#: get_repr_metadata): a stand-in for the one host we cannot run here, so the
#: test checks our side, that the metadata anywidget adds reaches the display.
COLAB_PROBE = """
import sys, types, json
calls = []
output = types.ModuleType("google.colab.output")
output.enable_custom_widget_manager = lambda: calls.append("enabled")
output._widgets = types.SimpleNamespace(_installed_url="https://colab.example/widgets.js")
sys.modules["google.colab.output"] = output
import numpy as np
from attnwidget import Explanation, SaliencyView
exp = Explanation(tokens=["a", "b"], attentions=np.full((1, 1, 2, 2), 0.5, np.float32),
                  scores={"raw": np.array([0.2, 0.8], np.float32)})
view = SaliencyView(exp)
data, metadata = view._repr_mimebundle_()
print(json.dumps({"metadata": metadata, "mimes": sorted(data), "calls": calls}))
"""


def test_colab_metadata_reaches_the_display() -> None:
    done = subprocess.run(
        [sys.executable, "-c", COLAB_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=ROOT,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["metadata"] == {
        WIDGET_VIEW: {
            "colab": {"custom_widget_manager": {"url": "https://colab.example/widgets.js"}}
        }
    }
    assert result["calls"] == ["enabled"]  # once, however many views
    assert WIDGET_VIEW in result["mimes"] and "text/html" in result["mimes"]


#: URLs that are XML namespace names (createElementNS, the SVG export), never fetched.
NAMESPACES = {
    "http://www.w3.org/2000/svg",
    "http://www.w3.org/1999/xhtml",
    "http://www.w3.org/1998/Math/MathML",
    "http://www.w3.org/1999/xlink",
    "http://www.w3.org/2000/xmlns/",
}
#: What would fetch or connect at run time.
NETWORK_CALLS = re.compile(
    r"\bfetch\s*\(|XMLHttpRequest|WebSocket|EventSource|importScripts|sendBeacon"
    r"|new\s+(?:Shared)?Worker\b|\bimport\s*\(|\bfrom\s*[\"']https?:|\bimport\s*[\"']https?:"
)


def test_the_bundle_needs_no_url() -> None:
    bundle = BUNDLE.read_text(encoding="utf-8")
    urls = set(re.findall(r"https?://[^\s\"'`)<>]+", bundle))
    assert urls <= NAMESPACES, (
        f"URLs in widget.js that are not namespace names: {urls - NAMESPACES}"
    )
    assert not NETWORK_CALLS.findall(bundle), NETWORK_CALLS.findall(bundle)
    # Not vacuous: the bundle is the real one and does create SVG by namespace.
    assert "http://www.w3.org/2000/svg" in urls and "createElementNS" in bundle


@pytest.mark.browser
def test_snapshot_png_is_the_drawn_view(exp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from PIL import Image

    monkeypatch.setenv(fallback.SNAPSHOT_ENV, "1")
    view = attnwidget.SaliencyView(exp)
    start = time.perf_counter()
    data, _ = view._repr_mimebundle_()
    seconds = time.perf_counter() - start
    assert "text/html" not in data  # a host preferring HTML would show a stripped frame
    image = Image.open(io.BytesIO(base64.b64decode(data["image/png"])))
    assert image.format == "PNG" and image.width >= 300 and image.height >= 40, image.size
    pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
    colours = {tuple(p) for p in pixels[:: max(1, len(pixels) // 20000)]}
    # Tokens on tinted backgrounds: many colours, not a blank or one-colour box.
    assert len(colours) > 20, len(colours)
    print(f"PNG snapshot of a SaliencyView: {seconds:.2f} s, {image.size}")
