"""What a view shows where no widget manager runs: converted and previewed notebooks.

A live front end (JupyterLab, Notebook 7, VS Code, Colab with its custom
widget manager) draws the widget-view output and ignores the rest of the
display data. ``jupyter nbconvert --to html`` and notebook previews have no
widget manager, so each view's display data also carries one of:

- ``text/html``: a sandboxed ``<iframe srcdoc>`` holding the view's own
  standalone page (:func:`attnwidget.views.core.standalone.page`, bundle and
  state inlined, nothing fetched) when that page fits in
  :data:`MAX_BYTES_ENV` (default :data:`DEFAULT_MAX_BYTES`), otherwise a
  short note saying the view was too large to embed and how to get a
  picture. The page holds the live state (what the live view has loaded),
  as ``to_html()`` with no extra ``embed_bytes``;
- ``image/png`` instead, when :data:`SNAPSHOT_ENV` is set: a picture of the
  view drawn by the bundle in headless Chromium (:mod:`.snapshot_png`), for
  hosts that strip scripts and iframes (GitHub's preview). No ``text/html``
  then: a host that prefers HTML would show an empty, stripped frame.

The fallback holds the state at display time; a trait set in a later cell
changes the live view, not this copy (scripts/run_notebook.py shows the
final state instead).
"""

from __future__ import annotations

import base64
import html
import logging
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnwidget.views.core.base import _AttnWidget

log = logging.getLogger(__name__)

#: "0" leaves the fallback out of the display data (smaller notebooks).
FALLBACK_ENV = "ATTNWIDGET_FALLBACK"
#: Largest embedded page, in bytes of the escaped ``srcdoc``.
MAX_BYTES_ENV = "ATTNWIDGET_FALLBACK_MAX_BYTES"
#: Room for the bundle (~230 kB, ~250 kB escaped) and a few hundred kB of state.
DEFAULT_MAX_BYTES = 1_000_000
#: Set (not "" or "0"): a PNG picture of each view instead of the frame.
SNAPSHOT_ENV = "ATTNWIDGET_SNAPSHOT_PNG"
#: Height of a frame before its page reports its own (scripts blocked: it stays).
FRAME_HEIGHT = 420
#: The message a framed page posts with its height (js/src/core/standalone.ts).
SIZE_MESSAGE = "attnwidget-frame-size"

#: Sizes the frame to the page inside it: only messages from that frame's window count.
_RESIZE_SCRIPT = (
    "<script>(function () {"
    " var frame = document.currentScript.previousElementSibling;"
    ' window.addEventListener("message", function (event) {'
    "  var d = event.data;"
    f'  if (event.source !== frame.contentWindow || !d || d.type !== "{SIZE_MESSAGE}") return;'
    '  if (typeof d.height === "number" && d.height > 0)'
    '   frame.style.height = Math.ceil(Math.min(d.height, 20000)) + "px";'
    " });"
    "})();</script>"
)


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip() not in {"", "0"}


def max_bytes() -> int:
    """The size limit of an embedded page (:data:`MAX_BYTES_ENV`, else the default)."""
    raw = os.environ.get(MAX_BYTES_ENV, "").strip()
    try:
        return int(raw) if raw else DEFAULT_MAX_BYTES
    except ValueError:
        log.warning(
            "attnwidget: %s=%r is not a whole number of bytes; using %d",
            MAX_BYTES_ENV,
            raw,
            DEFAULT_MAX_BYTES,
        )
        return DEFAULT_MAX_BYTES


def framed(page_html: str, title: str) -> str:
    """``page_html`` in a sandboxed iframe: its scripts run in an opaque origin, apart
    from the host page (no ``allow-same-origin``); downloads stay allowed for the
    view's SVG/PNG buttons."""
    srcdoc = html.escape(page_html, quote=True)
    return (
        f'<iframe class="attnw-fallback" title="{html.escape(title, quote=True)}"'
        ' sandbox="allow-scripts allow-downloads" loading="eager"'
        f' style="width: 100%; height: {FRAME_HEIGHT}px; border: 0" srcdoc="{srcdoc}"></iframe>'
        + _RESIZE_SCRIPT
    )


def note(widget: _AttnWidget, size: int, limit: int) -> str:
    """The text shown in place of a view too large to embed."""
    name = html.escape(type(widget).__name__)
    return (
        f'<div class="attnw-fallback-note"><b>attnwidget {name}</b>: this view needs a '
        f"widget front end (JupyterLab, Notebook 7, VS Code, Colab). Its page "
        f"({size:,} bytes) is over the {limit:,}-byte limit for embedding it here "
        f"(raise {MAX_BYTES_ENV}, save it with <code>view.to_html(path)</code>, or set "
        f"{SNAPSHOT_ENV}=1 for a picture).</div>"
    )


def frame_html(widget: _AttnWidget, limit: int | None = None) -> str:
    """The view's ``text/html`` fallback: its page in a frame if small enough, else a note."""
    from attnwidget.views.core.standalone import page

    limit = max_bytes() if limit is None else limit
    framed_page = framed(page(widget, frame=True), f"attnwidget {type(widget).__name__}")
    size = len(framed_page.encode("utf-8"))
    return framed_page if size <= limit else note(widget, size, limit)


def fallback_data(widget: _AttnWidget) -> dict[str, Any]:
    """The display data a view adds for hosts with no widget manager (maybe none)."""
    if os.environ.get(FALLBACK_ENV, "").strip() == "0":
        return {}
    if _flag(SNAPSHOT_ENV):
        from attnwidget.views.core.snapshot_png import SnapshotUnavailable, snapshot_png

        try:
            return {"image/png": base64.b64encode(snapshot_png(widget)).decode("ascii")}
        except SnapshotUnavailable as error:
            log.warning("attnwidget: no PNG snapshot of the view: %s", error)
            text = html.escape(str(error))
            return {"text/html": f'<div class="attnw-fallback-note">{text}</div>'}
    return {"text/html": frame_html(widget)}
