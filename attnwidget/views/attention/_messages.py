"""HeadView's and ModelView's exchange with the page: serving its requests
for attention (``request`` -> ``attention`` chunks or ``error``) and, for a
saved page, recording those replies ahead (``to_html``). The wire format is
described in :mod:`attnwidget.views.attention._shared`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attnwidget.views.attention._wire import _attention_messages, _export_order
from attnwidget.views.core.attention_data import EXPORT_BYTES, AttentionMatrix, AttentionSet
from attnwidget.views.core.base import RecordedReply, _AttnWidget
from attnwidget.views.core.format import format_number

log = logging.getLogger(__name__)


class _AttentionMessages(_AttnWidget):
    """Requests and recorded replies (a base of ``_AttentionView``, which holds the data)."""

    # Provided by _AttentionView.
    _attention: AttentionSet | None
    _covered: frozenset[str]
    _export_budget: int
    matrix: str
    preload: bytes
    preload_index: list[dict[str, Any]]
    current_matrix: Callable[[], AttentionMatrix]

    if TYPE_CHECKING:  # a read-only property there

        @property
        def attention(self) -> AttentionSet: ...

    def to_html(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        title: str | None = None,
        embed_bytes: int = EXPORT_BYTES,
    ) -> str:
        """This view as one self-contained HTML page (see ``_AttnWidget.to_html``).

        A saved page has no kernel to ask for attention, so it records the
        kernel's replies to the page's requests: all the attention up to
        ``embed_bytes`` of float16 (the live state's, then the shown layer,
        then the others in order); a layer or head beyond that says it was not
        saved. The page draws before it has read the recorded attention, and
        decodes a layer (HeadView) or head (ModelView) only when it is shown.
        """
        self._export_budget = int(embed_bytes)
        try:
            return super().to_html(path, title=title)
        finally:
            self._export_budget = 0

    def _embeddable(self, embed_bytes: int = EXPORT_BYTES) -> str:
        """This view as an HTML fragment (``_standalone.embeddable``) holding the
        same recorded attention as :meth:`to_html` with ``embed_bytes``: the
        fragment has no kernel either, so without it every layer or head the
        page asks for would be missing."""
        from attnwidget.views.core.standalone import embeddable

        self._export_budget = int(embed_bytes)
        try:
            return embeddable(self)
        finally:
            self._export_budget = 0

    #: What one page request asks for: a whole "layer" (HeadView) or one "head" (ModelView).
    _request_unit = "layer"

    def _export_replies(self) -> tuple[list[RecordedReply], dict[str, Any] | None]:
        if self._attention is None:
            return [], None
        live = {
            (c["matrix"], c["layer"], h) for c in self.preload_index for h in range(*c["heads"])
        }
        budget = self._export_budget - len(self.preload)
        replies: list[RecordedReply] = []
        for m, layer in _export_order(self.attention, self.current_matrix(), self._shown_layer()):
            if m.key in self._covered:
                continue
            units = [None] if self._request_unit == "layer" else range(m.shape[1])
            for head in units:
                heads = (0, m.shape[1]) if head is None else (head, head + 1)
                if all((m.key, layer, h) in live for h in range(*heads)):
                    continue  # the live state has it already
                match = {"type": "request", "matrix": m.key, "layer": layer}
                if head is not None:
                    match["head"] = head
                messages = list(_attention_messages(m, layer, heads))
                size = sum(len(data) for _, data in messages)
                if size > budget:
                    return replies, self._not_saved(self._export_budget)
                budget -= size
                replies += [RecordedReply(match, content, [data]) for content, data in messages]
        return replies, self._not_saved(None)

    @staticmethod
    def _not_saved(budget: int | None) -> dict[str, Any]:
        """The saved page's answer to a request it holds no reply for."""
        if budget is None:
            why = "this saved page cannot load attention it was not given"
        else:
            why = (
                f"this saved page holds the first {format_number(budget / 2**20)} MiB of the "
                "attention "
                "(to_html(embed_bytes=...)); this part was left out. Save the view again "
                "with a larger embed_bytes, or rerun the notebook to explore it"
            )
        return {"type": "error", "message": why}

    def _shown_layer(self) -> int:
        """Position of the layer the page shows first (-1: none)."""
        layer = getattr(self, "layer", -1)
        ids = self.current_matrix().layer_ids
        return ids.index(layer) if layer in ids else -1

    # -- messages -----------------------------------------------------------

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """Serve the page's requests for attention it has not got yet."""
        if not isinstance(content, dict) or content.get("type") != "request":
            return
        try:
            m, layer, heads = self._parse_request(content)
        except (KeyError, TypeError, ValueError) as error:
            # Never raise into the comm: the page shows the error and stays usable.
            log.warning("attnwidget: bad request from the page %r: %s", content, error)
            self.send({"type": "error", "message": str(error), "request": content})
            return
        for content, data in _attention_messages(m, layer, heads):
            self.send(content, buffers=[memoryview(data)])

    def _parse_request(
        self, content: dict[str, Any]
    ) -> tuple[AttentionMatrix, int, tuple[int, int]]:
        if self._attention is None:
            raise ValueError("no attention loaded")
        key = str(content.get("matrix", self.matrix))
        try:
            m = self.attention.matrix(key)
        except KeyError:
            raise ValueError(f"no attention matrix {key!r}") from None
        layer = content.get("layer")
        layers, heads = m.shape[:2]
        if not isinstance(layer, int) or isinstance(layer, bool) or not 0 <= layer < layers:
            raise ValueError(f"layer position {layer!r} out of range 0..{layers - 1}")
        head = content.get("head")
        if head is None:
            return m, layer, (0, heads)
        if not isinstance(head, int) or isinstance(head, bool) or not 0 <= head < heads:
            raise ValueError(f"head position {head!r} out of range 0..{heads - 1}")
        return m, layer, (head, head + 1)
