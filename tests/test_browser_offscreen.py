"""Views created off screen draw when shown (VS Code's case), in headless Chromium.

VS Code's notebook renderer may run a widget's render code while the output
is not on screen (vscode-jupyter #17132): the element then has no size, and
a view that measured itself at render time or on a timer stays blank or
squeezed when scrolled into view. This test renders every view family inside
a ``display: none`` container, waits, then shows the container, and compares
each view with the same view drawn visible from the start (same page, same
width): the same element boxes, the same canvas pixels, and something drawn
(a root and every canvas with a non-zero size, canvases not blank, SVGs with
shapes). It is a page in Chromium, not VS Code: it checks the start-up the
views share (js/src/core/first_paint.ts), which is what that host needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from offline_browser import open_offline
from test_browser_views_together import BOXES_JS, ROOTS, WIDTH, every_view

from attnwidget.views.core.standalone import bundle_script, document, exported, widget_bundle

pytestmark = pytest.mark.browser

#: Per view root: its canvases (size and a digest of their pixels) and SVG shapes.
DRAWN_JS = f"""() => {ROOTS}.map(root => {{
  const canvases = [...root.querySelectorAll('canvas')].map(c => {{
    let ink = 0, digest = 0;
    if (c.width && c.height) {{
      const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (let i = 0; i < data.length; i += 4) {{
        if (data[i + 3]) ink++;
        digest = (digest * 31 + data[i] + 3 * data[i + 1] + 7 * data[i + 2] + data[i + 3]) >>> 0;
      }}
    }}
    const b = c.getBoundingClientRect();
    const box = [Math.round(b.width), Math.round(b.height)];
    return {{ size: [c.width, c.height], box, ink, digest }};
  }});
  const shapes = root.querySelectorAll('svg path, svg line, svg rect, svg circle, svg text').length;
  const r = root.getBoundingClientRect();
  return {{ cls: String(root.className), size: [r.width, r.height], canvases, shapes }};
}})"""

#: True once every view's root exists and those that report a state are ready.
READY_JS = f"""count => {{
  const roots = {ROOTS};
  return roots.length === count && roots.every(r => (r.dataset.state ?? 'ready') === 'ready');
}}"""

#: True once the bundle has rendered a view after every state block (standalone.ts).
MOUNTED_JS = """count => document.querySelectorAll('[data-attnwidget-mounted]').length === count"""

NEXT_FRAMES_JS = """() => new Promise(
  r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"""


def save(path: Path, views: list[Any], bundle: str, *, hidden: bool) -> Path:
    blocks, replies = [], []
    for view in views:
        block, answers = exported(view)
        blocks.append(block)
        replies.extend(answers)
    style = ' style="display: none"' if hidden else ""
    body = [f'<div id="host"{style}>', *blocks, "</div>"]
    css = f"body {{ margin: 8px; width: {WIDTH}px; }}"
    path.write_text(document(path.stem, body, bundle, replies, css=css), encoding="utf-8")
    return path


def drawn(browser: Any, path: Path, count: int, *, show_after_ms: int | None) -> tuple[Any, Any]:
    """(element boxes, drawn content) of every view, once shown and settled."""
    offline = open_offline(browser, path)
    try:
        page = offline.page
        page.set_viewport_size({"width": WIDTH + 40, "height": 900})
        page.wait_for_function(MOUNTED_JS, arg=count, timeout=20000)
        if show_after_ms is not None:
            # Long enough for any start-up timer or idle callback to have run
            # while hidden: a view that draws then has drawn into nothing.
            page.wait_for_timeout(show_after_ms)
            frames = page.evaluate(
                "() => [...document.querySelectorAll('.attnw-frame')]"
                ".map(f => f.getBoundingClientRect().width)"
            )
            assert frames == [0] * count, f"rendered while hidden, yet sized: {frames}"
            page.evaluate("() => { document.getElementById('host').style.display = ''; }")
        page.evaluate("() => document.fonts.ready")
        page.wait_for_function(NEXT_FRAMES_JS)
        page.wait_for_function(READY_JS, arg=count, timeout=20000)
        page.wait_for_function(NEXT_FRAMES_JS)
        boxes, content = page.evaluate(BOXES_JS), page.evaluate(DRAWN_JS)
        offline.assert_clean()
        return boxes, content
    finally:
        offline.page.context.close()


def test_every_view_rendered_hidden_draws_when_shown(tmp_path: Path, browser: Any) -> None:
    views = every_view(tmp_path)
    bundle = bundle_script(widget_bundle(views[0]))
    shown_boxes, shown = drawn(
        browser,
        save(tmp_path / "visible.html", views, bundle, hidden=False),
        len(views),
        show_after_ms=None,
    )
    late_boxes, late = drawn(
        browser,
        save(tmp_path / "hidden.html", views, bundle, hidden=True),
        len(views),
        show_after_ms=2500,
    )
    assert len(late) == len(views)
    problems = []
    for k, view in enumerate(views):
        name = type(view).__name__
        want, got = shown[k], late[k]
        if min(got["size"]) <= 0:
            problems.append(f"{name}: no size when shown ({got['size']})")
        for c, canvas in enumerate(got["canvases"]):
            if min(canvas["size"]) <= 0 or min(canvas["box"]) <= 0:
                problems.append(f"{name}: canvas {c} has no size when shown: {canvas}")
        # Some canvases stay empty until hovered (HeadView's side strips); one drawn each.
        if got["canvases"] and not any(c["ink"] for c in got["canvases"]):
            problems.append(f"{name}: every canvas blank when shown: {got['canvases']}")
        if got["canvases"] != want["canvases"]:
            problems.append(
                f"{name}: canvases differ from the view drawn visible: {got['canvases']} "
                f"vs {want['canvases']}"
            )
        if got["shapes"] != want["shapes"]:
            problems.append(f"{name}: {got['shapes']} SVG shapes, {want['shapes']} when visible")
        moved = [
            (a, b)
            for a, b in zip(late_boxes[k]["boxes"], shown_boxes[k]["boxes"], strict=False)
            if a != b
        ]
        if moved or len(late_boxes[k]["boxes"]) != len(shown_boxes[k]["boxes"]):
            problems.append(f"{name}: {len(moved)} elements laid out differently, e.g. {moved[:4]}")
    # Not vacuous: the views draw canvases and SVG in the first place.
    assert sum(len(v["canvases"]) for v in shown) >= 3, shown
    assert sum(v["shapes"] for v in shown) > 0, shown
    assert not problems, "\n".join(problems)
