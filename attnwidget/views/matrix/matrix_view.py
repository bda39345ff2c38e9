"""AttentionMatrixView: one attention matrix as a zoomable heat map, for long inputs.

A layer's head, or the mean over its heads, as an n × n heat map (query rows,
key columns) drawn on a canvas from tiles that the page asks for as it pans
and zooms: the pyramid and tiles of :mod:`attnwidget.views.matrix._tiles`.
Only what is in view travels, at the resolution it is drawn at, so a
4,096-token matrix (16.8 M weights) opens with an 8 KB overview and never
sends a message over 8 MiB.

Message schema (traits synced with ``js/src/matrix/matrix_types.ts``
``MatrixTraits``). n tokens, L layers, H heads (0 when only the head mean is
kept):

==================  ===========  ==============================================
trait               type         meaning
==================  ===========  ==============================================
``_view``           str          ``"matrix"``
``tokens``          list[str]    n tokens (rows = queries, columns = keys; text)
``shape``           list[int]    ``[L, H, n]``
``kept``            str          "attentions" or "fused_attentions": what the
                                 matrices are read from
``tile_size``       int          cells per tile side (128)
``levels``          list[list]   ``[rows, cols]`` of each level, level 0 first
``version``         int          bumps when the drawn matrix changes; tile
                                 requests and replies carry it, stale ones are
                                 dropped
``overview``        bytes        the coarsest level, float16 (see ``overview_meta``)
``overview_meta``   dict         its wire meta ``dtype``, ``shape``, [``scale``]
``value_range``     list[float]  ``[lo, hi]`` of the drawn weights (0 … the largest)
``color_map``       dict         the colour scale in use, fitted to the drawn
                                 matrix (``_colors.py``): ``asked``,
                                 ``scale`` ("linear" or "log"), ``lo``,
                                 ``hi``, ``clipped``, ``above``, ``label``
                                 (the legend's line)
``caption``         str          what is drawn (text)
``notice``          str          why a HeadView/ModelView/FlowView of a long
                                 input shows this view instead ("" for none)
``layer``           int          the drawn layer (synced both ways)
``head``            int          the drawn head, -1 for the mean over heads
                                 (synced both ways)
``pool``            str          "max" or "mean": how coarse levels pool
``color_scale``     str          "auto", "linear" or "log" (synced both ways)
``selected_token``  int          the pinned query row (a token index), -1 for
                                 none (synced; a click on a cell pins its row)
==================  ===========  ==============================================

Custom messages: page -> kernel ``{"type": "tiles", "version", "level",
"tiles": [[i, j], ...]}``; kernel -> page ``{"type": "tiles", "version",
"level", "tiles": [{"i", "j", "dtype", "shape", ["scale"]}, ...]}`` with one
float16 buffer per tile (at most 8 MiB per message), or ``{"type": "error",
"message"}``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import traitlets

from attnwidget.views.core.base import RecordedReply, _AttnWidget
from attnwidget.views.core.selection import NONE, Head, renamed_keyword, renamed_trait
from attnwidget.views.matrix._colors import COLOR_SCALES, WeightStats, fit, weight_stats
from attnwidget.views.matrix._source import MEAN, MatrixSource, source_of

if TYPE_CHECKING:
    from attnwidget.results.explanation import Explanation
from attnwidget.views.matrix._tiles import (
    MAX_TILES_PER_REQUEST,
    POOLS,
    TILE,
    encode_tile,
    level_sizes,
    pyramid,
    tile_replies,
    value_range,
)

log = logging.getLogger(__name__)

#: Pyramids kept (one per layer, head and pool; 4,096 tokens: ~21 MB each beyond level 0).
CACHE_SIZE = 2


class AttentionMatrixView(_AttnWidget):
    """One attention matrix as a zoomable heat map: rows are queries, columns keys.

    Built for long inputs (thousands of tokens) where lines between tokens
    cannot be read. Drag to pan, scroll (or the + / − buttons) to zoom, "fit"
    to see it all; the minimap shows where the view is. Hover a cell for its
    query and key tokens and its weight (zoomed out, a cell is a block of
    tokens: its largest weight with ``pool="max"``, else their mean); click a
    cell to pin its query row (:attr:`selected_token`; again or Esc to unpin).
    Pick the layer and head (or the mean over heads) in the page or from
    Python (:attr:`layer`, :attr:`head`).

    Args:
        explanation: an :class:`~attnwidget.Explanation`. Its ``attentions``
            (every head) or, when only those are kept (``explain(...,
            keep="fused")``), its ``fused_attentions`` (each layer's head mean).
        layer: the drawn layer (default: the last).
        head: a head index, or -1 (default) for the mean over heads.
        selected_token: the pinned query row, a token index (-1: none;
            ``selected_row=`` is its deprecated name).
        pool: "max" (default: a single strong weight stays visible zoomed out)
            or "mean".
        color_scale: "auto" (default), "linear" or "log", fitted to the
            drawn matrix: linear 0 … the largest weight, or up to the 99.9th
            percentile when a few cells (attention sinks, a causal model's
            first query) stand far above it; log from a decade below the
            1st percentile of the positive weights. "auto" takes linear
            unless most weights would be dark on it. The legend names the
            scale and range (:attr:`color_map`).

    Example::

        view = AttentionMatrixView(exp, layer=3)   # head=-1: the mean over heads
        view.head = 2                  # redraws with head 2
        view.selected_token            # the row clicked in the page
        view.selection["weights"]      # that row's weights, float32 (n,)
    """

    _renamed_keywords: ClassVar[dict[str, str]] = {"selected_row": "selected_token"}

    _view = traitlets.Unicode("matrix").tag(sync=True)

    tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    shape = traitlets.List(traitlets.Int(), read_only=True).tag(sync=True)
    kept = traitlets.Unicode("attentions", read_only=True).tag(sync=True)
    tile_size = traitlets.Int(TILE, read_only=True).tag(sync=True)
    levels = traitlets.List(traitlets.List(traitlets.Int()), read_only=True).tag(sync=True)
    version = traitlets.Int(0, read_only=True).tag(sync=True)
    overview = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    overview_meta = traitlets.Dict(read_only=True).tag(sync=True)
    value_range = traitlets.List(traitlets.Float(), read_only=True).tag(sync=True)
    color_map = traitlets.Dict(read_only=True).tag(sync=True)
    """The colour scale drawn: ``{"asked", "scale", "lo", "hi", "clipped",
    "above", "label"}`` (``label`` is the legend's line)."""
    caption = traitlets.Unicode("", read_only=True).tag(sync=True)
    notice = traitlets.Unicode("", read_only=True).tag(sync=True)

    layer = traitlets.Int(0).tag(sync=True)
    """The drawn layer, 0 … L-1."""
    head = Head(NONE).tag(sync=True)
    """The drawn head (0 … H-1), or -1 for the mean over the layer's heads
    (``"mean"``, its old name, is taken with a DeprecationWarning)."""
    pool = traitlets.Unicode("max").tag(sync=True)
    """How zoomed-out cells pool the weights they cover: "max" or "mean"."""
    color_scale = traitlets.Unicode("auto").tag(sync=True)
    """"auto", "linear" or "log" colours, fitted to the drawn matrix."""
    selected_token = traitlets.Int(NONE).tag(sync=True)
    """The pinned query row (a token index), -1 for none."""
    selected_row = renamed_trait("selected_row", "selected_token")

    def __init__(
        self,
        explanation: Explanation,
        *,
        layer: int | None = None,
        head: int = NONE,
        selected_token: int | None = None,
        pool: str = "max",
        color_scale: str = "auto",
        notice: str = "",
        **kwargs: Any,
    ) -> None:
        self._source: MatrixSource = source_of(explanation)
        self._explanation = explanation
        self._pyramids: OrderedDict[tuple[int, int | str, str], list[np.ndarray]] = OrderedDict()
        self._stats: WeightStats | None = None
        self._ready = False
        owner = type(self).__name__
        token = renamed_keyword(kwargs, "selected_row", "selected_token", owner, selected_token)
        super().__init__(**kwargs)
        src = self._source
        with self.hold_sync():
            self._describe_source()
            self.set_trait("notice", str(notice))
            self.layer = src.num_layers - 1 if layer is None else layer
            self.head = head
            self.pool = pool
            self.color_scale = color_scale
            self.selected_token = NONE if token is None else token
            self._ready = True
            self._redraw()
        self.on_msg(self._on_message)

    def set_explanation(self, explanation: Any) -> None:
        """Show another explanation: the layer and head are kept where it has
        them (else the last layer, the mean over heads), the pinned row is
        reset. A bad explanation raises and leaves the view as it was."""
        source = source_of(explanation)
        layer = self.layer if self.layer < source.num_layers else source.num_layers - 1
        head = self.head if self.head < source.num_heads else NONE
        self._ready = False
        with self.hold_sync():
            self._source = source
            self._explanation = explanation
            self._pyramids.clear()
            self.selected_token = NONE
            self._describe_source()
            self.layer = layer
            self.head = head
            self._ready = True
            self._redraw()

    def _describe_source(self) -> None:
        src = self._source
        self.set_trait("tokens", list(src.tokens))
        self.set_trait("shape", [src.num_layers, src.num_heads, src.n])
        self.set_trait("kept", src.kept)
        self.set_trait("levels", [list(s) for s in level_sizes(src.n, src.n)])

    # -- data -----------------------------------------------------------------

    @property
    def explanation(self) -> Any:
        """The explanation shown."""
        return self._explanation

    def current_matrix(self) -> np.ndarray:
        """The drawn matrix: float32 (n, n), exact (before float16 rounding)."""
        return self._source.matrix(self.layer, MEAN if self.head == NONE else self.head)

    def levels_of(self) -> list[np.ndarray]:
        """The pyramid of the drawn matrix (float32), level 0 first."""
        key = (self.layer, self.head, self.pool)
        levels = self._pyramids.get(key)
        if levels is None:
            levels = pyramid(self.current_matrix(), self.pool)  # type: ignore[arg-type]
            self._pyramids[key] = levels
            while len(self._pyramids) > CACHE_SIZE:
                self._pyramids.popitem(last=False)
        else:
            self._pyramids.move_to_end(key)
        return levels

    @property
    def selection(self) -> dict[str, Any] | None:
        """The pinned row: ``{"row", "token", "layer", "head", "weights"}`` or None.

        ``weights``: float32 (n,), what that query attends to in the drawn matrix.
        """
        row = self.selected_token
        if row == NONE:
            return None
        return {
            "row": row,
            "token": self._source.tokens[row],
            "layer": self.layer,
            "head": self.head,
            "weights": np.array(self.current_matrix()[row], dtype=np.float32),
        }

    def tiles(
        self, level: int, tiles: list[tuple[int, int]]
    ) -> list[tuple[dict[str, Any], list[bytes]]]:
        """The messages answering a page request for ``tiles`` of ``level``."""
        levels = self.levels_of()
        if not 0 <= level < len(levels):
            raise ValueError(f"level {level} out of range 0..{len(levels) - 1}")
        header = {"type": "tiles", "version": self.version}
        return list(tile_replies(levels, level, tiles, header))

    def _redraw(self) -> None:
        """New matrix drawn (layer, head or pool changed): the overview and range."""
        levels = self.levels_of()
        data, meta = encode_tile(levels[-1], "the overview")
        lo, hi = value_range(levels[0])
        self._stats = weight_stats(levels[0])
        head = "mean over heads" if self.head == NONE else f"head {self.head}"
        n = self._source.n
        with self.hold_sync():
            self.set_trait("version", self.version + 1)
            self.set_trait("overview", data)
            self.set_trait("overview_meta", meta)
            self.set_trait("value_range", [lo, hi])
            self._fit_colors()
            note = f"; {self._source.note}" if self._source.note else ""
            self.set_trait("caption", f"layer {self.layer}, {head} ({n:,} × {n:,} tokens){note}")

    @traitlets.observe("layer", "head", "pool")
    def _on_matrix(self, _change: dict[str, Any]) -> None:
        if self._ready:
            self._redraw()

    @traitlets.observe("color_scale")
    def _fit_colors(self, _change: dict[str, Any] | None = None) -> None:
        if self._stats is not None:
            self.set_trait("color_map", fit(self._stats, self.color_scale).to_json())

    # -- validation -------------------------------------------------------------

    @traitlets.validate("layer")
    def _validate_layer(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        layers = self._source.num_layers
        if isinstance(value, bool) or not 0 <= value < layers:
            raise traitlets.TraitError(f"layer={value!r} is out of range 0..{layers - 1}.")
        return int(value)

    @traitlets.validate("head")
    def _validate_head(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        heads = self._source.num_heads
        if value == NONE or (not isinstance(value, bool) and 0 <= value < heads):
            return int(value)
        if heads == 0:
            raise traitlets.TraitError(
                f"head={value!r}: this explanation keeps only each layer's mean over heads "
                "(fused_attentions), so only head=-1 (the mean) can be drawn; explain with "
                "keep='all' to see single heads."
            )
        raise traitlets.TraitError(
            f"head={value!r} must be -1 (the mean over heads) or a head 0..{heads - 1}."
        )

    @traitlets.validate("pool")
    def _validate_pool(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in POOLS:
            raise traitlets.TraitError(f"pool={proposal['value']!r} is not one of {POOLS}.")
        return str(proposal["value"])

    @traitlets.validate("color_scale")
    def _validate_color_scale(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in COLOR_SCALES:
            raise traitlets.TraitError(
                f"color_scale={proposal['value']!r} is not one of {COLOR_SCALES}: "
                "'auto' fits the scale to the drawn weights, 'linear' and 'log' choose one."
            )
        return str(proposal["value"])

    @traitlets.validate("selected_token")
    def _validate_selected_token(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        n = self._source.n
        if isinstance(value, bool) or not -1 <= value < n:
            raise traitlets.TraitError(
                f"selected_token={value!r} is out of range: -1 (none) or a query row 0..{n - 1}."
            )
        return int(value)

    # -- messages ---------------------------------------------------------------

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """Serve the page's requests for tiles; never raise into the comm."""
        if not isinstance(content, dict) or content.get("type") != "tiles":
            return
        if content.get("version") != self.version:
            return  # asked for a matrix no longer drawn: the page dropped it too
        try:
            level, tiles = _parse_request(content)
            replies = self.tiles(level, tiles)
        except (KeyError, TypeError, ValueError) as error:
            log.warning("attnwidget: bad tile request from the page %r: %s", content, error)
            self.send({"type": "error", "message": str(error)})
            return
        for reply, buffers in replies:
            self.send(reply, buffers=[memoryview(b) for b in buffers])

    def _export_replies(self) -> tuple[list[RecordedReply], dict[str, Any] | None]:
        # A saved page holds the overview only; finer tiles need the kernel.
        why = (
            "this saved page holds the overview only; zoom in live in the notebook to see "
            "every cell"
        )
        return [], {"type": "error", "message": why}

    def __repr__(self) -> str:
        layers, heads, n = self.shape
        return (
            f"AttentionMatrixView(n={n}, layers={layers}, heads={heads}, layer={self.layer}, "
            f"head={self.head}, selected_token={self.selected_token})"
        )


def _parse_request(content: dict[str, Any]) -> tuple[int, list[tuple[int, int]]]:
    level = content["level"]
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"level must be an int, got {level!r}")
    raw = content["tiles"]
    if not isinstance(raw, list) or len(raw) > MAX_TILES_PER_REQUEST:
        raise ValueError(f"tiles must be a list of at most {MAX_TILES_PER_REQUEST} [i, j] pairs")
    tiles: list[tuple[int, int]] = []
    for pair in raw:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
        ):
            raise ValueError(f"a tile must be [i, j] (two ints), got {pair!r}")
        tiles.append((pair[0], pair[1]))
    return level, tiles
