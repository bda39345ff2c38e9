"""Views as self-contained HTML: no kernel, no network.

A page holds three things:

- the widget's synced state as JSON, in ``<script type="application/json"
  data-attnwidget-state>``: the ``payload`` below, with every binary buffer
  (``bytes`` traits such as scores) base64-encoded beside the path where it
  belongs in the state;
- the front-end bundle, inlined once as ``<script type="module" async
  data-attnwidget-bundle>``;
- for views that load data lazily (HeadView, ModelView), the kernel's replies
  to the requests the page may make, recorded at export time, each in
  ``<script type="application/json" data-attnwidget-reply="<model_id>"
  data-match="{request keys}">`` *after* the bundle;
- nothing else: when the bundle loads it draws a view after each state block
  on an in-page model (``js/src/core/standalone.ts``), through the same ``render``
  Jupyter uses, so clicks and hovers work in the file. A request the page
  sends is answered from the recorded replies (``js/src/core/replies.ts``) as the
  kernel would have answered it.

Why the replies come last and the bundle is ``async``: an inline module runs
as soon as it is parsed when ``async``, so the view draws from the (small)
live state while the browser still reads the recorded attention, which can
be tens of MB. A reply block is parsed and base64-decoded only when its
request comes, so opening the page never pays for the attention it does not
show.

The payload layout (``format`` = :data:`PAYLOAD_FORMAT`) is read by
``js/src/core/localmodel.ts``; keep both in sync::

    {"format": "attnwidget-state/1", "model_id": "...",
     "state": {trait: json value, ...},
     "buffers": [{"path": ["scores"], "data": "<base64>"}, ...],
     "unanswered": {custom message} | absent}

``unanswered`` is what the page gets for a request no recorded reply
matches (e.g. an error saying the export did not keep that layer). A reply
block holds ``{"content": {custom message}, "buffers": ["<base64>", ...]}``;
it answers every request whose keys include all of ``data-match``'s.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnwidget.views.core.base import RecordedReply, _AttnWidget

#: Identifier of the payload layout (js/src/core/localmodel.ts PAYLOAD_FORMAT).
PAYLOAD_FORMAT = "attnwidget-state/1"
#: Attribute marking a state block (js/src/core/standalone.ts STATE_ATTRIBUTE).
STATE_ATTRIBUTE = "data-attnwidget-state"
#: Attribute marking the inlined bundle, so a page can carry it only once.
BUNDLE_ATTRIBUTE = "data-attnwidget-bundle"
#: The opening tag of the inlined bundle (scripts/run_notebook.py finds it by this).
BUNDLE_OPEN_TAG = f'<script type="module" async {BUNDLE_ATTRIBUTE}>'
#: Attribute marking a recorded reply; its value is the widget's model id
#: (js/src/core/replies.ts REPLY_ATTRIBUTE).
REPLY_ATTRIBUTE = "data-attnwidget-reply"
#: Environment variable: when set (not "" or "0"), views add a ``text/html``
#: standalone rendering to their display data (for static notebook exports).
STATIC_ENV = "ATTNWIDGET_STATIC"

#: Synced traits that belong to the widget machinery (anywidget/ipywidgets),
#: not to a view: not exported. ``_esm`` is the bundle, inlined separately.
_MACHINERY = frozenset(
    {
        "_esm",
        "_css",
        "_anywidget_id",
        "_dom_classes",
        "_model_module",
        "_model_module_version",
        "_model_name",
        "_view_count",
        "_view_module",
        "_view_module_version",
        "_view_name",
        "layout",
        "tabbable",
        "tooltip",
    }
)


def static_mode() -> bool:
    """Whether :data:`STATIC_ENV` asks views for a standalone ``text/html`` rendering."""
    return os.environ.get(STATIC_ENV, "").strip() not in {"", "0"}


def state_keys(widget: _AttnWidget) -> list[str]:
    """The synced traits a view needs to draw: every one but the machinery's."""
    return sorted(k for k in widget.keys if k not in _MACHINERY)


def _b64(buffer: Any) -> str:
    return base64.b64encode(bytes(buffer)).decode("ascii")


def widget_payload(
    widget: _AttnWidget, *, unanswered: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The widget's synced state as the JSON-ready payload the page embeds."""
    # Trait serializers (to_json) apply as for the live comm; buffers are then
    # split out exactly as ipywidgets does before sending state to a front end.
    from ipywidgets.widgets.widget import _remove_buffers

    state, paths, buffers = _remove_buffers(widget.get_state(state_keys(widget)))
    payload: dict[str, Any] = {
        "format": PAYLOAD_FORMAT,
        "model_id": widget.model_id,
        "state": state,
        "buffers": [
            {"path": list(path), "data": _b64(buffer)}
            for path, buffer in zip(paths, buffers, strict=True)
        ],
    }
    if unanswered is not None:
        payload["unanswered"] = unanswered
    return payload


def reply_block(model_id: str, reply: RecordedReply) -> str:
    """One recorded reply as its ``<script type="application/json">`` block."""
    match = html.escape(json.dumps(reply.match, separators=(",", ":"), sort_keys=True), quote=True)
    body = script_json({"content": reply.content, "buffers": [_b64(b) for b in reply.buffers]})
    owner = html.escape(model_id, quote=True)
    return (
        f'<script type="application/json" {REPLY_ATTRIBUTE}="{owner}" data-match="{match}">'
        f"{body}</script>"
    )


def script_json(value: Any) -> str:
    """JSON that is safe as the text of a ``<script>`` element.

    Inside ``<script>`` the HTML parser ends the element at the first
    ``</script`` whatever the JSON means, and ``<!--`` changes how it looks for
    that end; so ``<``, ``>`` and ``&`` are written as ``\\u003c`` etc. (still
    the same JSON for ``JSON.parse``): a token ``</script><script>...`` stays
    a string.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError as error:  # NaN/Infinity: not JSON, JSON.parse would fail in the page
        raise ValueError(
            f"the widget state cannot be exported as JSON: {error}. Float arrays belong in "
            "bytes traits (binary buffers), which carry NaN and infinities."
        ) from None
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        # Legal in JSON strings but line terminators in older JS parsers.
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def bundle_script(bundle: str) -> str:
    """The bundle as an inline ES module ``<script>`` element."""
    # esbuild already writes "</script" in strings as "<\/script"; make sure no
    # such sequence (nor "<!--") can end or derail the element early. In JS a
    # backslash before "/" or "!" inside a string or regex changes nothing.
    safe = re.sub(r"</(script)", r"<\\/\1", bundle, flags=re.IGNORECASE).replace("<!--", "<\\!--")
    return f"{BUNDLE_OPEN_TAG}\n{safe}\n</script>"


def widget_bundle(widget: _AttnWidget) -> str:
    """The front-end code the widget runs (its ``_esm`` trait)."""
    return str(widget._esm)


def state_block(payload: dict[str, Any]) -> str:
    """A payload as its ``<script type="application/json">`` state block."""
    return f'<script type="application/json" {STATE_ATTRIBUTE}>{script_json(payload)}</script>'


def fragment(widget: _AttnWidget, *, include_bundle: bool = True) -> str:
    """The view as an HTML fragment: its live state block (and the bundle, unless told not to).

    No recorded replies: a notebook's static rendering shows what the live
    view had, as ``to_html(embed_bytes=0)`` would.
    """
    parts = [view_block(widget, widget_payload(widget))]
    if include_bundle:
        parts.append(bundle_script(widget_bundle(widget)))
    return "\n".join(parts)


def exported(widget: _AttnWidget) -> tuple[str, list[str]]:
    """A saved page's parts for ``widget``: (its view and state, its recorded reply blocks)."""
    replies, unanswered = widget._export_replies()
    head = view_block(widget, widget_payload(widget, unanswered=unanswered))
    return head, [reply_block(widget.model_id, r) for r in replies]


def embeddable(widget: _AttnWidget) -> str:
    """The view as an HTML fragment to embed in another page (a notebook output,
    ``IPython.display.HTML``): its state, the bundle and its recorded replies,
    like :func:`page` but with no document around it.

    No Content-Security-Policy ``<meta>``: a policy given by ``<meta>`` counts
    only inside the document's ``<head>``; anywhere else the browser ignores it
    and logs an error, and an embedded fragment always lands in the host's
    ``<body>``. The host page's own policy applies to it instead. Saved as a
    file by itself the fragment still opens (the browser supplies ``<html>``,
    ``<head>`` and ``<body>``); :func:`page` is the complete, locked-down
    document.
    """
    view, replies = exported(widget)
    bundle = bundle_script(widget_bundle(widget))
    return "\n".join(['<div class="attnw-embedded">', view, bundle, *replies, "</div>"])


def view_block(widget: _AttnWidget, payload: dict[str, Any]) -> str:
    """The element a view is drawn in: its state block and a no-script notice."""
    view = html.escape(str(getattr(widget, "_view", "")), quote=True)
    return "\n".join(
        [
            f'<div class="attnw-standalone" data-attnwidget-view="{view}">',
            state_block(payload),
            "<noscript>This attnwidget view needs JavaScript.</noscript>",
            "</div>",
        ]
    )


def script_hash(script_element: str) -> str:
    """The CSP source (``'sha256-...'``) that allows exactly this inline script."""
    start = script_element.index(">") + 1
    end = script_element.rindex("</script>")
    digest = hashlib.sha256(script_element[start:end].encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


#: Page styles: readable defaults where no notebook theme defines the colours.
_PAGE_CSS = """
:root { color-scheme: light; }
body { margin: 24px; font-family: system-ui, -apple-system, "Segoe UI", sans-serif;
       color: #1f1f1f; background: #fff; }
h1 { font-size: 1.1rem; font-weight: 600; margin: 0 0 12px 0; }
""".strip()


def page(widget: _AttnWidget, *, title: str | None = None, frame: bool = False) -> str:
    """A complete HTML document that shows the widget with no kernel and no network.

    ``frame``: the page goes in an iframe (a notebook's fallback, fallback.py)
    and reports its height to the host page.
    """
    name = title if title is not None else f"attnwidget {type(widget).__name__}"
    view, answers = exported(widget)
    heading = f"<h1>{html.escape(name)}</h1>" if title is not None else ""
    bundle = bundle_script(widget_bundle(widget))
    css = _FRAME_CSS if frame else ""
    return document(name, [heading, view], bundle, answers, css=css, frame=frame)


#: A framed page: no margin of its own, the host's cell gives it room.
_FRAME_CSS = "body { margin: 0; padding: 4px 0; }"
#: Attribute on ``<html>`` of a framed page (js/src/core/standalone.ts FRAME_ATTRIBUTE).
FRAME_ATTRIBUTE = "data-attnwidget-frame"


def document(
    title: str,
    body: list[str],
    bundle: str,
    replies: list[str],
    *,
    css: str = "",
    frame: bool = False,
) -> str:
    """The locked-down page around ``body`` (views' blocks), the bundle, then the replies."""
    # The page may run only its own bundle (by hash) and load nothing at all:
    # even if some text slipped through as markup it could neither run nor fetch.
    policy = "; ".join(
        [
            "default-src 'none'",
            f"script-src {script_hash(bundle)}",
            "style-src 'unsafe-inline'",
            "img-src data: blob:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="en" {FRAME_ATTRIBUTE}>' if frame else '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{_PAGE_CSS}{css}</style>",
            "</head>",
            "<body>",
            *body,
            bundle,
            *replies,
            "</body>",
            "</html>",
            "",
        ]
    )
