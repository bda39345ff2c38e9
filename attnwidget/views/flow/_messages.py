"""FlowView's custom messages (anywidget ``model.send`` / ``widget.send``):
their schemas as ``TypedDict``s, the ``paths`` reply's encoding, and the
view's side of the exchange (``_FlowMessages``, a base of FlowView), with
what a saved page (``to_html``) embeds since no kernel answers it there. The
page's side is ``js/src/flow/flow_messages.ts``; the golden fixtures
(tests/test_fixtures_js.py) hold a reply exactly as sent here, and the JS
tests decode it.

- page → kernel ``{"type": "compute", "id": int, "version": int, "method":
  str, "layer": int, "token": int}``; kernel → page, while it works,
  ``{"type": "progress", "id", "done", "total"}`` (at most ~7 a second), then
  ``{"type": "paths", "id", "version", "method", "layer", "token", "shape":
  [L, n], "counts": [L ints], "signed", "note", "floor", "dropped",
  "per_selection"}`` with
  four buffers: ``nodes`` float32 (L+1, n); edge ``index`` uint32 (E,) (``i·n +
  j`` of the edge ``(l, i) → (l−1, j)``, grouped by edge layer l = 1 … L as
  ``counts`` says); edge ``value`` float32 (E,); ``totals`` float32 (L,) the
  sum of |contribution| of each edge layer (of all edges, also those left
  out). Edges below ``floor`` × their layer's total are left out (``dropped``
  counts them) so that no reply exceeds :data:`MAX_MESSAGE_BYTES`.
  ``per_selection`` is false for methods whose paths are the same for every
  selected node (:data:`SELECTION_FREE`): the page's status line then says
  so instead of describing paths from the selection.
- page → kernel ``{"type": "request", "version", "layer": l}`` (0-based
  attention layer); kernel → page ``{"type": "layer", "version", "layer": l}``
  with the float32 (n, n) ``W`` of that layer as its buffer.
- kernel → page ``{"type": "stale", "id", "version"}``: a ``compute`` for an
  older ``version`` (the explanation or stack changed meanwhile): the page
  drops it and asks for its current selection. A stale ``request`` gets no
  reply (the page asks for the new data's layers itself).
- kernel → page ``{"type": "error", "id"?, "message"}``: the page shows it.

Every buffer is encoded by :func:`attnwidget.views.core.buffers.encode_array`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypedDict

import numpy as np

from attnwidget.views.attention._shared import MAX_MESSAGE_BYTES
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.core.buffers import decode_array, encode_array, encode_float32
from attnwidget.views.flow._paths import PathResult

log = logging.getLogger(__name__)

#: Path edges whose |contribution| is at most this share of their layer's total
#: are not sent (invisible at any threshold the slider offers).
EDGE_FLOOR = 1e-6
#: At most this many path edges per reply (8 bytes each).
MAX_PATH_EDGES = (MAX_MESSAGE_BYTES - 2**20) // 8
#: Path methods whose paths do not depend on the selected node: lrp explains the
#: target (AttnLRP's relevance of every attention weight), whichever node is
#: selected (attnwidget.views.flow._paths, "lrp"). tests/test_flow_view.py checks
#: that exactly these give the same paths at every node.
SELECTION_FREE: frozenset[str] = frozenset({"lrp"})
#: Seconds between two progress messages.
PROGRESS_INTERVAL = 0.15
#: The bytes of attention a saved page (``to_html``) embeds at most.
EXPORT_BYTES = 64 * 2**20


class ComputeRequest(TypedDict):
    """page → kernel: the paths of ``method`` for node (layer, token)."""

    type: Literal["compute"]
    id: int
    version: int
    method: str
    layer: int
    token: int


class LayerRequest(TypedDict):
    """page → kernel: one attention layer (0-based) that ``fused`` lacks."""

    type: Literal["request"]
    version: int
    layer: int


class ProgressReply(TypedDict):
    type: Literal["progress"]
    id: int | None
    done: int
    total: int


class PathsMeta(TypedDict):
    """What :func:`encode_paths` writes of a ``paths`` reply (all but type, id, version)."""

    method: str
    layer: int
    token: int
    shape: list[int]
    counts: list[int]
    signed: bool
    note: str
    floor: float
    dropped: int
    dtype: str
    per_selection: bool


class PathsReply(PathsMeta):
    """kernel → page: paths, with four buffers (nodes, edge index, edge value, totals)."""

    type: Literal["paths"]
    id: int | None
    version: int


class LayerReply(TypedDict):
    """kernel → page: one layer's float32 (n, n) ``W`` as the single buffer."""

    type: Literal["layer"]
    version: int
    layer: int


class StaleReply(TypedDict):
    type: Literal["stale"]
    id: int | None
    version: int


class ErrorReply(TypedDict):
    type: Literal["error"]
    id: int | None
    message: str


#: Every message, by its ``type`` (the golden fixtures compare their keys with the TS schemas).
MESSAGES: dict[str, type] = {
    "compute": ComputeRequest,
    "request": LayerRequest,
    "progress": ProgressReply,
    "paths": PathsReply,
    "layer": LayerReply,
    "stale": StaleReply,
    "error": ErrorReply,
}


class _FlowMessages(_AttnWidget):
    """FlowView's answers to the page's requests, and what a saved page gets
    instead of a kernel (a base of FlowView, which holds the data)."""

    # Provided by FlowView.
    version: int
    methods: list[str]
    shape: list[int]
    _fused: np.ndarray
    send: Callable[..., None]
    _paths: Callable[..., PathResult]
    _check_layer: Callable[[Any], int]
    _check_token: Callable[[Any], int]
    _method_error: Callable[..., Exception]
    _explanation: Any
    _exporting: bool
    fused_layers: int

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind in ("compute", "request") and content.get("version", self.version) != self.version:
            # Asked before the explanation or stack changed: the page asks again.
            if kind == "compute":
                stale = StaleReply(type="stale", id=content.get("id"), version=self.version)
                self.send(stale)
            return
        try:
            if kind == "compute":
                progress = _throttled(
                    lambda done, total: self.send(
                        ProgressReply(type="progress", id=content.get("id"), done=done, total=total)
                    )
                )
                reply: PathsReply | LayerReply | ErrorReply
                reply, buffers = self._compute_reply(content, progress=progress)
            elif kind == "request":
                reply, buffers = self._layer_reply(content)
            else:
                return
        except Exception as error:  # never raise into the comm: the page shows it
            log.warning("attnwidget FlowView: cannot serve %r: %s", content, error)
            reply = ErrorReply(type="error", id=content.get("id"), message=str(error))
            buffers = []
        self.send(reply, buffers=[memoryview(b) for b in buffers])

    def _compute_reply(
        self, content: dict[str, Any], progress: Callable[[int, int], None] | None = None
    ) -> tuple[PathsReply, list[bytes]]:
        """Answer a :class:`ComputeRequest`: (reply JSON, its four buffers)."""
        version = content.get("version", self.version)
        if version != self.version:
            raise ValueError(
                f"the request is for data version {version}, the view shows {self.version}."
            )
        method = content.get("method")
        if not isinstance(method, str) or method not in self.methods:
            raise self._method_error(str(method), list(self.methods))
        layer = self._check_layer(_as_int(content.get("layer"), "layer"))
        token = self._check_token(_as_int(content.get("token"), "token"))
        if token < 0:
            raise ValueError("token must be a token index, not -1.")
        result = self._paths(method, layer, token, progress=progress)
        meta, buffers = encode_paths(result)
        reply = PathsReply(type="paths", id=content.get("id"), version=self.version, **meta)
        return reply, buffers

    def _layer_reply(self, content: dict[str, Any]) -> tuple[LayerReply, list[bytes]]:
        """Answer a ``request`` for a layer (:class:`LayerRequest`): (reply JSON, W's buffer)."""
        layer = _as_int(content.get("layer"), "layer")
        layers = self.shape[0]
        if not 0 <= layer < layers:
            raise ValueError(f"layer {layer} out of range 0..{layers - 1}")
        data, _shape = encode_float32(self._fused[layer])
        return LayerReply(type="layer", version=self.version, layer=layer), [data]

    # -- export ---------------------------------------------------------------

    def to_html(
        self, path: str | os.PathLike[str] | None = None, *, title: str | None = None
    ) -> str:
        """This view as one self-contained HTML page (see ``_AttnWidget.to_html``).

        The page embeds every layer's attention (up to :data:`EXPORT_BYTES`),
        so "raw" and "rollout" work in it; the kernel-computed methods do not.
        """
        self._exporting = True
        try:
            text = super().to_html(None, title=title)
        finally:
            self._exporting = False
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        state = super().get_state(key, drop_defaults)
        if self._exporting and "fused" in state and self._explanation is not None:
            n = self.shape[1]
            layers = max(1, min(self.shape[0], EXPORT_BYTES // max(1, n * n * 4)))
            state["fused"] = encode_float32(self._fused[:layers])[0]
            if "fused_layers" in state:
                state["fused_layers"] = layers
        return state


def encode_paths(
    result: PathResult, max_edges: int = MAX_PATH_EDGES
) -> tuple[PathsMeta, list[bytes]]:
    """A :class:`PathResult` as the ``paths`` reply: (JSON part, four buffers).

    Edges whose |contribution| is at most :data:`EDGE_FLOOR` × their layer's
    total are left out; if more than ``max_edges`` remain, the smallest shares
    are left out too (the reply's ``floor`` says below which share).
    """
    edges = result.edges
    layers, n = edges.shape[0], edges.shape[-1]
    magnitude = np.abs(edges).reshape(layers, -1)
    totals = magnitude.sum(axis=1)
    share = np.divide(
        magnitude, totals[:, None], out=np.zeros_like(magnitude), where=totals[:, None] > 0
    )
    keep = share > EDGE_FLOOR
    floor = EDGE_FLOOR
    if int(keep.sum()) > max_edges:
        floor = float(np.partition(share[keep], -max_edges)[-max_edges])
        keep &= share >= floor
        # Ties at the floor could still exceed the budget: cut them by position.
        over = int(keep.sum()) - max_edges
        if over > 0:
            ties = np.flatnonzero((share == floor).ravel() & keep.ravel())[:over]
            keep.ravel()[ties] = False
    counts = keep.sum(axis=1)
    layer_of, flat = np.nonzero(keep)
    values = edges.reshape(layers, -1)[layer_of, flat]
    meta: PathsMeta = {
        "method": result.method,
        "layer": result.layer,
        "token": result.token,
        "shape": [layers, n],
        "counts": [int(c) for c in counts],
        "signed": bool(result.signed),
        "note": result.note,
        "floor": floor,
        "dropped": int((magnitude > 0).sum() - counts.sum()),
        "dtype": "float32",
        "per_selection": result.method not in SELECTION_FREE,
    }
    buffers = [
        encode_array(result.nodes, "float32")[0],
        encode_array(flat, "uint32")[0],
        encode_array(values, "float32")[0],
        encode_array(totals, "float32")[0],
    ]
    return meta, buffers


def decode_paths(meta: dict[str, Any], buffers: list[Any]) -> dict[str, np.ndarray]:
    """The inverse of :func:`encode_paths`: ``nodes`` (L+1, n), dense ``edges``
    (L, n, n) and ``totals`` (L,)."""
    layers, n = meta["shape"]
    edge_count = int(sum(meta["counts"]))
    nodes = decode_array(bytes(buffers[0]), {"dtype": "float32", "shape": [layers + 1, n]})
    index = decode_array(bytes(buffers[1]), {"dtype": "uint32", "shape": [edge_count]})
    values = decode_array(bytes(buffers[2]), {"dtype": "float32", "shape": [edge_count]})
    totals = decode_array(bytes(buffers[3]), {"dtype": "float32", "shape": [layers]})
    edges = np.zeros((layers, n * n), dtype=np.float32)
    start = 0
    for layer, count in enumerate(meta["counts"]):
        edges[layer, index[start : start + count]] = values[start : start + count]
        start += count
    return {"nodes": nodes, "edges": edges.reshape(layers, n, n), "totals": totals}


def _as_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r}")
    return value


def _throttled(send: Callable[[int, int], None]) -> Callable[[int, int], None]:
    """Call ``send`` at most every :data:`PROGRESS_INTERVAL` seconds (and at the end)."""
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if done >= total or now - last[0] >= PROGRESS_INTERVAL:
            last[0] = now
            send(done, total)

    return progress
