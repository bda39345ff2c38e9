"""An executed quickstart, converted with plain ``jupyter nbconvert --to html``, shows every view.

The notebook is executed the way a user's would be (nbclient, a fresh kernel,
no ATTNWIDGET_STATIC: what a view displays by default), saved without widget
state as JupyterLab saves it by default, and converted by nbconvert's own
command. Its page has no widget manager that could run
offline (the template's loads from a CDN are blocked here), so each view must
come from its fallback: its standalone page in a sandboxed iframe
(attnwidget/views/core/fallback.py). In Chromium with the network cut off,
each frame must hold a drawn view (a root with a size, canvases with ink or
SVG shapes or tokens), sized to its page, and the frames must request nothing
but their own data. The notebook's growth from the fallbacks is measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from offline_browser import LOCAL_SCHEMES, open_offline

import attnwidget.views
from attnwidget.views.core.fallback import FRAME_HEIGHT

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: Most the fallbacks may add to the executed quickstart (the issue: "a few MB").
MAX_GROWTH = 3_000_000

#: In a frame: the view drawn, with what it drew.
FRAME_JS = """() => {
  const root = document.querySelector('.attnw-frame .attnw-view > .attnw');
  if (!root) return null;
  const r = root.getBoundingClientRect();
  const inked = [...root.querySelectorAll('canvas')].filter(c => c.width && c.height &&
    c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some((v, i) => i % 4 === 3 && v));
  return { cls: String(root.className), size: [r.width, r.height], inked: inked.length,
           shapes: root.querySelectorAll('svg *').length,
           text: root.textContent.trim().length,
           height: Math.ceil(document.documentElement.getBoundingClientRect().height) };
}"""


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, nbformat.NotebookNode]:
    out = tmp_path_factory.mktemp("nbconvert")
    nb = nbformat.read(QUICKSTART, as_version=4)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    for name in ("ATTNWIDGET_STATIC", "ATTNWIDGET_FALLBACK", "ATTNWIDGET_SNAPSHOT_PNG"):
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        # As JupyterLab saves a notebook by default (its "save widget state"
        # setting is off): with the state saved, nbconvert prefers the
        # widget-view output, which needs its CDN widget manager (docs/hosts/static.md).
        store_widget_state=False,
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        resources={"metadata": {"path": str(QUICKSTART.parent)}},
    )
    client.execute(env=env)
    path = out / "quickstart.ipynb"
    nbformat.write(nb, path)
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(path)],
        check=True,
        capture_output=True,
        timeout=300,
        cwd=out,
    )
    return out / "quickstart.html", nb


def view_outputs(nb: nbformat.NotebookNode) -> list[dict[str, Any]]:
    """The attnwidget views' display data (by their text form; tqdm's bars are widgets too)."""
    names = tuple(f"{name}(" for name in attnwidget.views.__all__)
    return [
        output["data"]
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if WIDGET_VIEW in output.get("data", {})
        and str(output["data"].get("text/plain", "")).startswith(names)
    ]


def test_the_fallbacks_cost_a_few_mb(converted: tuple[Path, nbformat.NotebookNode]) -> None:
    _, nb = converted
    views = view_outputs(nb)
    assert len(views) >= 4, "the quickstart displays HeadView, ModelView, FlowView, SaliencyView"
    added = sum(len(data.get("text/html", "").encode()) for data in views)
    whole = len(json.dumps(nb, ensure_ascii=False).encode())
    print(f"{len(views)} views; fallbacks {added:,} bytes of an executed notebook of {whole:,}")
    assert all(data["text/html"].startswith("<iframe") for data in views)
    assert added <= MAX_GROWTH, f"the fallbacks add {added:,} bytes"


def test_every_view_is_drawn_offline(
    converted: tuple[Path, nbformat.NotebookNode], browser: Any
) -> None:
    path, nb = converted
    expected = len(view_outputs(nb))
    offline = open_offline(browser, path)
    frame_requests: list[str] = []
    frame_errors: list[str] = []
    page = offline.page
    page.on(
        "request",
        lambda r: frame_requests.append(r.url) if r.frame.url == "about:srcdoc" else None,
    )
    page.on(
        "console",
        lambda m: (
            frame_errors.append(m.text)
            if m.type == "error" and m.location.get("url", "") == "about:srcdoc"
            else None
        ),
    )
    try:
        page.set_viewport_size({"width": 1100, "height": 900})
        frames = page.locator("iframe.attnw-fallback")
        frames.first.wait_for(state="attached", timeout=20000)
        assert frames.count() == expected >= 4
        for k in range(expected):
            frames.nth(k).scroll_into_view_if_needed()
            frame = frames.nth(k).content_frame
            frame.locator(".attnw-frame .attnw-view > .attnw").wait_for(timeout=20000)
            page.wait_for_function(
                "([k, h]) => document.querySelectorAll('iframe.attnw-fallback')[k]"
                ".getBoundingClientRect().height !== h",
                arg=[k, FRAME_HEIGHT],
                timeout=20000,
            )
            inner = frames.nth(k).element_handle().content_frame()
            assert inner is not None
            drawn = inner.evaluate(FRAME_JS)
            assert drawn and min(drawn["size"]) > 0, (k, drawn)
            assert drawn["inked"] or drawn["shapes"] or drawn["text"], (k, drawn)
            # The host page sized the frame to the page inside (its script, its message).
            box = frames.nth(k).bounding_box()
            assert box and abs(box["height"] - drawn["height"]) <= 1, (k, box, drawn)
        outside = [u for u in frame_requests if u.split(":", 1)[0] not in LOCAL_SCHEMES]
        assert not outside, f"the framed views requested {outside}"
        assert not frame_errors, frame_errors
        assert not offline.page_errors, offline.page_errors
    finally:
        page.context.close()
