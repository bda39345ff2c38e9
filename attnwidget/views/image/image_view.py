"""ImageView: a Vision Transformer's explanation drawn over its image.

Message schema (traits synced with ``js/src/image/image_types.ts`` ``ImageTraits``;
tests/test_fixtures_js.py and the JS tests check that both name the same
traits). m methods, a (rows, cols) patch grid of P patches, L layers, H heads;
the query maps and their chunks are described in
:mod:`attnwidget.views.image._wire`:

===================  ===========  ==============================================
trait                type         meaning
===================  ===========  ==============================================
``_view``            str          ``"image"``: the JS view that renders it
``image``            bytes        the image as PNG (RGB; downscaled to at most
                                  1024 pixels on its longer side)
``image_size``       list[int]    ``[height, width]`` of that PNG
``grid``             list[int]    ``[rows, cols]``: the patch grid
``patch_size``       int          patch side in pixels of the model's input
``labels``           list[str]    P patch token names, row-major (text, never
                                  HTML)
``special_tokens``   list[str]    names of the special tokens (CLS, ...)
``ignored_keys``     list[str]    the keys ``ignore_keys`` left out of every
                                  attention row (``#0 '[CLS]'``), [] for none
``query_token``      str          name of the explanation's query token: the
                                  query of the maps while no patch is selected
``target``           str          the explained target ("" if none)
``methods``          list[str]    m score methods, one map each
``summaries``        list[str]    m one-line method descriptions ("" if none)
``signed``           list[bool]   m flags: True -> diverging colours centred at 0
``scores``           bytes        float32 little-endian C order (m, rows, cols)
``shape``            list[int]    ``[m, rows, cols]``
``num_layers``       int          L
``num_heads``        int          H
``preload``          bytes        float16 chunks of the query maps (see
                                  ``_image_wire``), as many whole layers as fit
``preload_index``    list[dict]   per chunk: ``map``, ``layer``, ``heads``,
                                  ``rows``, ``offset``, ``nbytes``
``selected_method``  str          the map drawn: a score method, or
                                  ``"query_attention"`` / ``"query_rollout"``
                                  (the query's row at ``layer``) (synced)
``layer``            int          layer of the query maps, 0..L-1 (synced)
``head``             int          head of ``"query_attention"``, -1: mean over
                                  heads (synced)
``selected_patch``   int          the selected patch's row-major index
                                  ``row * cols + col`` (the query of the query
                                  maps), -1 for none; set by clicks in the page
                                  and from Python
``opacity``          float        opacity of the map over the image, 0..1
                                  (synced with the page's slider)
===================  ===========  ==============================================
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import traitlets

from attnwidget.errors import UnknownMethodError
from attnwidget.results.explanation import Explanation
from attnwidget.views.core.attention_data import EXPORT_BYTES
from attnwidget.views.core.base import RecordedReply, _AttnWidget
from attnwidget.views.core.buffers import decode_float32, encode_float32
from attnwidget.views.core.selection import NONE, renamed_keyword, renamed_trait
from attnwidget.views.image._patch import PatchIndex, patch_of
from attnwidget.views.image._wire import (
    PRELOAD_BYTES,
    STATE_BYTES,
    QueryMaps,
    display_image,
    encode_png,
    export_replies,
    preload,
    request_reply,
)
from attnwidget.views.saliency.saliency_view import _choose_methods, _is_signed, _summary

log = logging.getLogger(__name__)

#: The query maps :attr:`ImageView.selected_method` may name besides the score methods.
QUERY_ATTENTION = "query_attention"
QUERY_ROLLOUT = "query_rollout"
QUERY_MODES = (QUERY_ATTENTION, QUERY_ROLLOUT)
#: The patch maps a view opening on a score map holds at most in its state
#: (ViT-B/16: the shown layer's rollout; its attention comes on the first click).
SCORE_VIEW_PRELOAD_BYTES = 2**17
#: Which wire map each query mode draws.
_MODE_MAPS = {QUERY_ATTENTION: "attention", QUERY_ROLLOUT: "rollout"}


class ImageView(_AttnWidget):
    """The image with a method's patch scores over it, and each patch's attention.

    The chosen map is drawn over the image, smoothed between patch centres
    (bilinear, as :meth:`~attnwidget.Explanation.heatmap`), at
    :attr:`opacity`; beside it every method's map as a small picture (click
    one to show it). Signed methods use the diverging purple–orange map
    centred at 0, the others viridis from 0 to the map's max; the legend gives
    the range. Hovering a patch shows its row, column and value (3 significant
    digits; full precision in :attr:`selection`). Clicking a patch selects it
    (:attr:`selected_patch`; click it again or Esc to clear, arrow keys move
    it) and makes it the query of the two query maps: ``"query_attention"``,
    its attention over the patches at :attr:`layer` and :attr:`head` (-1:
    the mean over heads), and ``"query_rollout"``, its attention rollout up to
    :attr:`layer`. With no patch selected their query is the explanation's
    own (CLS). The selected patch is outlined; in the query maps it is left
    out of the colour range (its attention to itself dwarfs the rest).

    Args:
        explanation: an image :class:`~attnwidget.Explanation` (from
            ``attnwidget.explain(model, processor, image)``).
        methods: the score methods to show, in order (default: every method
            whose scores the explanation holds).
        selected_method: the map shown first (default: the first method). Named
            ``method`` before (still accepted for one release, with a
            DeprecationWarning, as is the attribute ``view.method``).
        layer: the layer of the query maps (default: the last; negative
            counts from the end).
        head: the head of ``"query_attention"`` (default -1: mean over heads).
        selected_patch: the initially selected patch, its index ``row * cols + col``
            (-1: none; ``(row, col)`` still works for one release, with a
            DeprecationWarning).
        opacity: of the map over the image, 0..1 (default 0.5).

    Example::

        view = ImageView(attnwidget.explain(model, processor, image))
        view                      # displays in Jupyter; click a patch, then
        view.selected_patch       # index of the clicked patch (-1 for none)
        view.selection            # {"patch", "index", "label", "scores"}
        view.selected_method = "query_attention"; view.layer = 3; view.head = 0
    """

    _renamed_keywords: ClassVar[dict[str, str]] = {"method": "selected_method"}

    _view = traitlets.Unicode("image").tag(sync=True)

    image = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    image_size = traitlets.List(traitlets.Int(), read_only=True).tag(sync=True)
    grid = traitlets.List(traitlets.Int(), read_only=True).tag(sync=True)
    patch_size = traitlets.Int(0, read_only=True).tag(sync=True)
    labels = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    special_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    ignored_keys = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    query_token = traitlets.Unicode("", read_only=True).tag(sync=True)
    target = traitlets.Unicode("", read_only=True).tag(sync=True)
    methods = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    summaries = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    signed = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    scores = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    shape = traitlets.List(traitlets.Int(), read_only=True).tag(sync=True)
    num_layers = traitlets.Int(0, read_only=True).tag(sync=True)
    num_heads = traitlets.Int(0, read_only=True).tag(sync=True)
    preload = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    preload_index = traitlets.List(traitlets.Dict(), read_only=True).tag(sync=True)

    selected_method = traitlets.Unicode("").tag(sync=True)
    """The map drawn: a score method, "query_attention" or "query_rollout"."""
    method = renamed_trait("method", "selected_method")

    layer = traitlets.Int(0).tag(sync=True)
    """Layer of the query maps (0..num_layers-1; negative counts from the end)."""

    head = traitlets.Int(-1).tag(sync=True)
    """Head of "query_attention", or -1 for the mean over heads."""

    selected_patch = PatchIndex(NONE).tag(sync=True)
    """The selected patch's index ``row * cols + col``, -1 for none (synced with the page)."""

    opacity = traitlets.Float(0.5).tag(sync=True)
    """Opacity of the map over the image, 0..1 (synced with the page's slider)."""

    def __init__(
        self,
        explanation: Explanation,
        *,
        methods: str | Sequence[str] | None = None,
        selected_method: str | None = None,
        layer: int | None = None,
        head: int = -1,
        selected_patch: int | Sequence[int] | None = NONE,
        opacity: float = 0.5,
        **kwargs: Any,
    ) -> None:
        selected_method = renamed_keyword(
            kwargs, "method", "selected_method", "ImageView", selected_method
        )
        super().__init__(**kwargs)
        self._explanation = _check_image(explanation)
        # No scores at all (attention only): the query maps are still there to show.
        names = _choose_methods(explanation, methods) if methods or explanation.scores else []
        clash = [name for name in names if name in QUERY_MODES]
        if clash:
            raise ValueError(
                f"a score method is named {clash[0]!r}, which ImageView uses for the clicked "
                "patch's map; rename those scores in the explanation."
            )
        if selected_method is not None and selected_method not in (*names, *QUERY_MODES):
            raise UnknownMethodError(_unknown_method(selected_method, names))
        self._maps = QueryMaps(explanation)
        layers = self._maps.layers
        shown = layers - 1 if layer is None else _layer_index(layer, layers)
        grid, image, patch_size = explanation.patch_grid, explanation.image, explanation.patch_size
        # An image explanation (_check_image) has its grid, image and patch size.
        assert grid is not None and image is not None and patch_size is not None
        rows, cols = grid
        matrix = np.stack([explanation.patch_scores(n) for n in names]) if names else None
        data, shape = encode_float32(matrix if names else np.zeros((0, rows, cols)))
        pixels = display_image(image)
        png = encode_png(pixels)
        special = [str(explanation.tokens[i]) for i in explanation.special_tokens]
        opening = selected_method or (names[0] if names else QUERY_ATTENTION)
        # A view opening on a score map draws no patch-to-patch map until a
        # click, so its state carries a smaller share of them: the saved or
        # first-sent state is what the page parses before its first frame.
        wanted = PRELOAD_BYTES if opening in QUERY_MODES else SCORE_VIEW_PRELOAD_BYTES
        budget = min(PRELOAD_BYTES, wanted, STATE_BYTES - len(png) - len(data))
        self._preloaded = preload(self._maps, shown, max(0, budget))
        with self.hold_sync():
            self.set_trait("image", png)
            self.set_trait("image_size", [int(d) for d in pixels.shape[:2]])
            self.set_trait("grid", [int(rows), int(cols)])
            self.set_trait("patch_size", int(patch_size))
            self.set_trait("labels", [str(explanation.tokens[i]) for i in self._maps.columns])
            self.set_trait("special_tokens", special)
            self.set_trait(
                "ignored_keys",
                [f"#{k} {explanation.tokens[k]!r}" for k in explanation.ignored_keys],
            )
            self.set_trait("query_token", str(explanation.tokens[explanation.query_index]))
            target = explanation.target
            self.set_trait("target", "" if target is None else str(target))
            self.set_trait("methods", names)
            self.set_trait("summaries", [_summary(n) for n in names])
            signed = (
                [_is_signed(n, row) for n, row in zip(names, matrix, strict=True)]
                if matrix is not None  # None exactly when names is empty
                else []
            )
            self.set_trait("signed", signed)
            self.set_trait("scores", data)
            self.set_trait("shape", shape)
            self.set_trait("num_layers", layers)
            self.set_trait("num_heads", self._maps.heads)
            self.set_trait("preload", self._preloaded[0])
            self.set_trait("preload_index", self._preloaded[1])
            self.selected_method = opening
            self.layer = shown
            self.head = head
            self.selected_patch = NONE if selected_patch is None else selected_patch
            self.opacity = opacity
        self._export_budget = 0
        self.on_msg(self._on_message)

    @property
    def explanation(self) -> Explanation:
        """The explanation shown."""
        return self._explanation

    def score_matrix(self) -> np.ndarray:
        """The float32 (methods, rows, cols) patch scores exactly as sent to the page."""
        return decode_float32(self.scores, self.shape)

    def query_map(self, layer: int | None = None, head: int | None = None) -> np.ndarray:
        """float32 (rows, cols): the map ``self.selected_method`` draws for the selected patch (or
        the explanation's query), as the page computes it from the float32 maps
        (the page's own values are float16 on the wire)."""
        name = _MODE_MAPS.get(self.selected_method)
        if name is None:
            return self.score_matrix()[self.methods.index(self.selected_method)]
        layer = self.layer if layer is None else _layer_index(layer, self.num_layers)
        head = self.head if head is None else head
        values = self._maps.layer(name, layer)
        row = 0 if self.selected_patch == NONE else 1 + self.selected_patch
        rows = (
            values[:, row] if not (name == "attention" and head >= 0) else values[head, row][None]
        )
        return rows.mean(axis=0).reshape(self.grid)

    @property
    def selection(self) -> dict[str, Any] | None:
        """The selected patch as ``{"patch": [row, col], "index", "label",
        "scores": {method: score}}`` (``index``: its token index), or None."""
        k = self.selected_patch
        if k == NONE:
            return None
        row, col = patch_of(k, self.grid[1])
        matrix = self.score_matrix()
        return {
            "patch": [row, col],
            "index": int(self._maps.columns[k]),
            "label": self.labels[k],
            "scores": {name: float(matrix[i, row, col]) for i, name in enumerate(self.methods)},
        }

    # -- validation -----------------------------------------------------------

    @traitlets.validate("selected_method")
    def _validate_method(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value in self.methods or value in QUERY_MODES:
            return str(value)
        raise traitlets.TraitError(_unknown_method(value, self.methods))

    @traitlets.validate("layer")
    def _validate_layer(self, proposal: dict[str, Any]) -> int:
        try:
            return _layer_index(proposal["value"], self.num_layers)
        except ValueError as error:
            raise traitlets.TraitError(str(error)) from None

    @traitlets.validate("head")
    def _validate_head(self, proposal: dict[str, Any]) -> int:
        value, heads = proposal["value"], self.num_heads
        if isinstance(value, bool) or not -1 <= value < heads:
            raise traitlets.TraitError(
                f"head={value!r} is out of range: use -1 for the mean over heads or a head "
                f"0..{heads - 1} ({heads} heads)."
            )
        return int(value)

    @traitlets.validate("selected_patch")
    def _validate_selected_patch(self, proposal: dict[str, Any]) -> int:
        value = int(proposal["value"])
        rows, cols = self.grid
        if NONE <= value < rows * cols:
            return value
        raise traitlets.TraitError(
            f"selected_patch={value!r} is not a patch: use -1 for none or the index "
            f"row * cols + col, 0..{rows * cols - 1} (a {rows}×{cols} patch grid)."
        )

    @traitlets.validate("opacity")
    def _validate_opacity(self, proposal: dict[str, Any]) -> float:
        value = float(proposal["value"])
        if not 0.0 <= value <= 1.0:  # NaN fails too
            raise traitlets.TraitError(
                f"opacity={proposal['value']!r} is out of range: use 0 (image only) to 1 "
                "(map only)."
            )
        return value

    # -- the page's requests and saved pages -------------------------------------

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """Serve the page's requests for query-map layers it has not got."""
        if not isinstance(content, dict) or content.get("type") != "request":
            return
        chunks, why = request_reply(self._maps, content)
        if why:  # never raise into the comm: the page shows it and stays usable
            log.warning("attnwidget: bad request from the page %r: %s", content, why)
            self.send({"type": "error", "message": why, "request": content})
        for reply, data in chunks:
            self.send(reply, buffers=[memoryview(data)])

    def to_html(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        title: str | None = None,
        embed_bytes: int = EXPORT_BYTES,
    ) -> str:
        """This view as one self-contained HTML page (see ``_AttnWidget.to_html``).

        The page has no kernel to ask for the query maps of other layers, so it
        records them: up to ``embed_bytes`` of float16 beyond the live state
        (the shown layer first, then the others' rollout, then their
        attention); a layer beyond that says it was not saved.
        """
        self._export_budget = int(embed_bytes)
        try:
            return super().to_html(path, title=title)
        finally:
            self._export_budget = 0

    def _export_replies(self) -> tuple[list[RecordedReply], dict[str, Any] | None]:
        return export_replies(self._maps, self._preloaded[2], self.layer, self._export_budget)

    def __repr__(self) -> str:
        rows, cols = self.grid
        return (
            f"ImageView(grid={rows}x{cols}, methods={list(self.methods)}, "
            f"selected_method={self.selected_method!r}, "
            f"layer={self.layer}, head={self.head}, selected_patch={self.selected_patch})"
        )


def _check_image(explanation: Any) -> Explanation:
    if not isinstance(explanation, Explanation):
        raise TypeError(
            f"ImageView needs an attnwidget.Explanation, got {type(explanation).__name__}; make "
            "one with attnwidget.explain(model, processor, image)."
        )
    if explanation.kind != "image":
        raise ValueError(
            f"ImageView shows image explanations; this one is {explanation.kind!r}, of tokens "
            "without an image. Explain an image with attnwidget.explain(model, processor, "
            "image), or show this explanation with SaliencyView, HeadView or FlowView."
        )
    return explanation


def _layer_index(value: Any, layers: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"layer must be an int, not {value!r}.")
    if -layers <= value < layers:
        return int(value) % layers
    raise ValueError(
        f"layer={value} is out of range: use 0..{layers - 1} ({layers} layers; negative "
        "counts from the end)."
    )


def _unknown_method(value: Any, methods: Sequence[str]) -> str:
    shown = ", ".join(map(repr, [*methods, *QUERY_MODES]))
    return (
        f"selected_method={value!r} is not shown in this view; use one of {shown} (a score method "
        "must be among the view's methods: compute it with attnwidget.explain(..., "
        "methods=[...]) and pass it in methods=)."
    )
