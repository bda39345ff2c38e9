"""What HeadView and ModelView share: the attention matrices, their wire format,
lazy loading, and the synced traits both views have.

Wire format
-----------
Attention weights travel as **float16** (IEEE half, little-endian, C order) in
binary buffers, never as JSON. Precision: weights in [0, 1] come back within
a relative error of 2**-11 (about 0.05 %) of the float32 value, and within an
absolute error of 2**-25 below 2**-14 (half's subnormal range); so
``|decoded - weight| <= max(2**-11 * |weight|, 2**-25)``. That is far finer
than the 8-bit alpha a line is drawn with, and halves the bytes of float32.
Range (:mod:`attnwidget.views.core.buffers`): weights above float16's 65504 are
refused with :class:`~attnwidget.errors.InputError` when the view is made
(never sent as infinity); nonzero weights below 2**-24 (about 6e-8) are sent
as 0, a deliberate choice for probabilities: no line is drawn for them either
way. The code lives in ``_attention_data`` (matrices) and ``_attention_wire``
(chunks, preload, thumbnails); this module keeps the shared view class.

A *chunk* is a block of one attention matrix: one layer, a contiguous range
of heads and a contiguous range of query rows, all key columns. It is
described by JSON (positions, not layer/head ids: ``layer`` indexes the
matrix's ``layer_ids``, ``heads`` its ``head_ids``)::

    {"matrix": "self", "layer": 3, "heads": [h0, h1], "rows": [r0, r1]}

and its values are ``(h1 - h0) * (r1 - r0) * cols`` float16 numbers, head-major.

Lazy loading
------------
Small inputs (everything under :data:`PRELOAD_BYTES`) ship inside the widget's
initial state (``preload`` bytes + ``preload_index`` descriptors with
``offset``/``nbytes`` into them). Larger ones ship what is shown first, and the
page asks for the rest as the user navigates, with anywidget custom messages:

- page -> kernel: ``{"type": "request", "matrix": key, "layer": l}`` (all
  heads of layer position ``l``) or with ``"head": h`` (one head);
- kernel -> page: one message per chunk, ``{"type": "attention", **chunk,
  "dtype": "float16"}`` with the chunk's bytes as its single buffer, each at
  most :data:`MAX_MESSAGE_BYTES` (the Jupyter server drops websocket messages
  over 10 MiB by default); ``{"type": "error", "message": ...}`` for a
  request that cannot be served (the page shows it and stays usable).

A saved page (``to_html``) has no kernel: it carries these same replies,
recorded per request (``_export_replies``; the page format is in
:mod:`attnwidget.views.core.standalone`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import traitlets

from attnwidget.results.explanation import Explanation
from attnwidget.views.attention._messages import _AttentionMessages
from attnwidget.views.attention._wire import (
    MAX_THUMB_BINS,
    THUMB_BYTES,
    _describe_ids,
    _position,
    _preload,
    _put_chunk,
    bin_edges,
    pool,
    thumbnail_bins,
    thumbnails,
)
from attnwidget.views.core.attention_data import (
    EXPORT_BYTES,
    MAX_MESSAGE_BYTES,
    PAIR_FILTERS,
    PRELOAD_BYTES,
    THEMES,
    WIRE_ATOL,
    WIRE_DTYPE,
    WIRE_RTOL,
    AttentionMatrix,
    AttentionSet,
    decode_float16,
    encode_float16,
    make_matrix,
)
from attnwidget.views.core.base import _AttnWidget

log = logging.getLogger(__name__)

#: Names other modules and tests import from here (the data and wire modules hold them).
__all__ = [
    "EXPORT_BYTES",
    "MAX_MESSAGE_BYTES",
    "MAX_THUMB_BINS",
    "PAIR_FILTERS",
    "PRELOAD_BYTES",
    "THEMES",
    "THUMB_BYTES",
    "WIRE_ATOL",
    "WIRE_DTYPE",
    "WIRE_RTOL",
    "AttentionMatrix",
    "AttentionSet",
    "_AttentionView",
    "_describe_ids",
    "_position",
    "_put_chunk",
    "bin_edges",
    "decode_float16",
    "encode_float16",
    "make_matrix",
    "pool",
    "thumbnail_bins",
    "thumbnails",
]


class _AttentionView(_AttentionMessages, _AttnWidget):
    """Traits and message handling shared by HeadView and ModelView.

    Read-only traits describe the data; ``matrix``, ``pair_filter``,
    ``layer`` and ``selected_token`` are synced both ways and validated (a bad
    value raises :class:`traitlets.TraitError` and leaves the view as it was).

    The pinned token (``selected_token``) is a query row of the current
    matrix: an input token for self/encoder attention, a decoder token for
    decoder and cross attention. Switching to a matrix whose queries are
    another token list (encoder <-> decoder/cross) unpins it, since the same
    index would name another token; between matrices with the same queries
    (decoder <-> cross) it stays.
    """

    tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    decoder_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    #: The tokenizer's own strings of ``tokens`` (``##ing``), shown on hover; [] if unknown.
    raw_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    matrices = traitlets.List(traitlets.Dict(), read_only=True).tag(sync=True)
    sentence_b_start = traitlets.Int(-1, read_only=True).tag(sync=True)
    preload = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    preload_index = traitlets.List(traitlets.Dict(), read_only=True).tag(sync=True)
    #: Bumped by ``set_explanation``: tells the page that the attention it has
    #: loaded belongs to the previous explanation (other traits may not change).
    _generation = traitlets.Int(0, read_only=True).tag(sync=True)

    matrix = traitlets.Unicode("self").tag(sync=True)
    """Which attention is shown: "self", or "encoder"/"decoder"/"cross"."""
    pair_filter = traitlets.Unicode("all").tag(sync=True)
    """Sentence-pair filter: "all", "A->A", "B->B", "A->B" or "B->A"."""
    theme = traitlets.Unicode("auto").tag(sync=True)
    """"auto" follows the notebook's theme; "light" or "dark" force one."""
    selected_token = traitlets.Int(-1).tag(sync=True)
    """The pinned query token (a row of the current matrix), -1 for none."""

    def __init__(self, **kwargs: Any) -> None:
        self._attention: AttentionSet | None = None
        self._explanation: Explanation | None = None
        self._export_budget = 0
        #: Matrices the page gets whole by other means (ModelView's exact
        #: thumbnails): never preloaded or exported a second time.
        self._covered: frozenset[str] = frozenset()
        super().__init__(**kwargs)
        self.on_msg(self._on_message)

    # -- data ---------------------------------------------------------------

    def _attention_of(self, explanation: Explanation | AttentionSet) -> AttentionSet:
        """The validated attention of ``explanation`` (raises before anything changes)."""
        if isinstance(explanation, AttentionSet):
            return explanation.checked()
        return AttentionSet.from_explanation(explanation)

    def _first_attention(
        self, explanation: Explanation | AttentionSet, matrix: str | None
    ) -> tuple[AttentionSet, AttentionMatrix]:
        """A constructor's start: the validated attention and the matrix shown first."""
        attention = self._attention_of(explanation)
        self._explanation = explanation if isinstance(explanation, Explanation) else None
        return attention, self._requested_matrix(attention, matrix)

    def _requested_matrix(self, attention: AttentionSet, matrix: str | None) -> AttentionMatrix:
        """The matrix a constructor asked for (default: the first), or a clear error."""
        key = matrix or attention.matrices[0].key
        if key not in [m.key for m in attention.matrices]:
            keys = ", ".join(repr(m.key) for m in attention.matrices)
            raise ValueError(f"matrix={key!r} is not available; this input has: {keys}.")
        return attention.matrix(key)

    def _kept_matrix(self, attention: AttentionSet) -> AttentionMatrix:
        """The matrix shown after a swap: the current one if ``attention`` has it
        (as ``_set_attention`` decides), else its first."""
        keys = [m.key for m in attention.matrices]
        return attention.matrix(self.matrix if self.matrix in keys else keys[0])

    def _swapped(self, explanation: Explanation | AttentionSet) -> None:
        """Record the new explanation and tell the page its loaded attention is stale."""
        self._explanation = explanation if isinstance(explanation, Explanation) else None
        self.set_trait("_generation", self._generation + 1)

    @property
    def explanation(self) -> Explanation | None:
        """The explanation shown (None when the view was given bare attention)."""
        return self._explanation

    def _set_attention(
        self,
        attention: AttentionSet,
        first: tuple[int, int | None],
        budget: int = MAX_MESSAGE_BYTES,
        covered: frozenset[str] = frozenset(),
    ) -> None:
        """Install ``attention``; ``first`` = (layer pos, head pos or None) to preload,
        within ``budget`` bytes; ``covered``: matrix keys the page already gets whole."""
        self._attention = attention
        self._covered = covered
        if self.matrix not in [m.key for m in attention.matrices]:
            self.set_trait("matrix", attention.matrices[0].key)
        if not attention.pair_split_applies(self.matrix) and attention.sentence_b_start is None:
            self.set_trait("pair_filter", "all")
        data, index = _preload(attention, attention.matrix(self.matrix), *first, budget, covered)
        self.set_trait("tokens", list(attention.tokens))
        self.set_trait("decoder_tokens", list(attention.decoder_tokens))
        self.set_trait("raw_tokens", list(attention.raw_tokens))
        self.set_trait("matrices", [m.describe() for m in attention.matrices])
        b = attention.sentence_b_start
        self.set_trait("sentence_b_start", -1 if b is None else int(b))
        self.set_trait("preload", data)
        self.set_trait("preload_index", index)

    @property
    def attention(self) -> AttentionSet:
        """The attention shown (tokens and matrices, float32, exact)."""
        assert self._attention is not None
        return self._attention

    def current_matrix(self) -> AttentionMatrix:
        return self.attention.matrix(self.matrix)

    def pair_blocks(self, key: str | None = None) -> tuple[slice, slice]:
        """(rows, cols) slices of the current pair filter (bertviz's A->B blocks)."""
        key = key or self.matrix
        m = self.attention.matrix(key)
        rows = len(self.attention.token_list(m.rows))
        cols = len(self.attention.token_list(m.cols))
        if self.pair_filter == "all" or not self.attention.pair_split_applies(key):
            return slice(0, rows), slice(0, cols)
        b = int(self.attention.sentence_b_start or 0)
        a_part, b_part = slice(0, b), slice(b, rows)
        query, key_side = self.pair_filter.split("->")
        return (a_part if query == "A" else b_part), (a_part if key_side == "A" else b_part)

    def shown_attention(self) -> np.ndarray:
        """float32 (layers, heads, rows, cols) of the current matrix and pair filter,
        exactly the values the page draws (before float16 rounding)."""
        rows, cols = self.pair_blocks()
        return self.current_matrix().weights[:, :, rows, cols]

    def wire_attention(self, key: str | None = None) -> np.ndarray:
        """The whole matrix as the page receives it: float16 chunks decoded to float32.

        Assembled from the same chunks the page gets (preloaded or requested),
        so tests can compare it with the exact weights within the wire precision.
        """
        m = self.attention.matrix(key or self.matrix)
        out = np.zeros(m.shape, dtype=np.float32)
        for layer in range(m.shape[0]):
            for descriptor, data in m.chunks(layer):
                _put_chunk(out, descriptor, data)
        return out

    # -- validation -----------------------------------------------------------

    @traitlets.validate("matrix")
    def _validate_matrix(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        keys = [m.key for m in self._attention.matrices] if self._attention else [value]
        if value not in keys:
            raise traitlets.TraitError(
                f"matrix={value!r} is not available; this view has: {', '.join(map(repr, keys))}."
            )
        return str(value)

    @traitlets.validate("pair_filter")
    def _validate_pair_filter(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value not in PAIR_FILTERS:
            raise traitlets.TraitError(
                f"pair_filter={value!r} is not one of {', '.join(map(repr, PAIR_FILTERS))}."
            )
        if value != "all" and self._attention and self._attention.sentence_b_start is None:
            raise traitlets.TraitError(
                f"pair_filter={value!r} needs a sentence pair, but this input has no "
                "sentence_b_start; only 'all' applies."
            )
        return str(value)

    @traitlets.validate("theme")
    def _validate_theme(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value not in THEMES:
            raise traitlets.TraitError(
                f"theme={value!r} is not one of {', '.join(map(repr, THEMES))}."
            )
        return str(value)

    @traitlets.validate("selected_token")
    def _validate_selected_token(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise traitlets.TraitError(f"selected_token must be an int, not {value!r}.")
        if self._attention is None or value == -1:
            return int(value)
        self._check_pin_allowed(int(value))
        rows = self.current_matrix().rows
        n = len(self.attention.token_list(rows))
        if 0 <= value < n:
            return int(value)
        kind = "decoder tokens" if rows == "decoder_tokens" else "tokens"
        raise traitlets.TraitError(
            f"selected_token={value} is out of range: use -1 for none or a query token "
            f"index 0..{n - 1} ({n} {kind})."
        )

    def _check_pin_allowed(self, value: int) -> None:
        """Raise :class:`traitlets.TraitError` when no token can be pinned now
        (a subclass hook: ModelView pins only in an enlarged head)."""

    @traitlets.observe("matrix")
    def _unpin_other_queries(self, change: dict[str, Any]) -> None:
        # A matrix whose queries are another token list (encoder <-> decoder or
        # cross): the same row index would be another token, so unpin.
        if self._attention is None or self.selected_token == -1:
            return
        keys = [m.key for m in self.attention.matrices]
        old = self.attention.matrix(change["old"]) if change["old"] in keys else None
        if old is None or old.rows != self.current_matrix().rows:
            self.selected_token = -1

    def _layer_position(self, value: Any, *, allow_none: bool, name: str = "layer") -> int:
        """Validate a layer id of the current matrix (``-1``: none, when allowed)."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise traitlets.TraitError(f"{name} must be an int, not {value!r}.")
        if self._attention is None:
            return int(value)
        ids = self.current_matrix().layer_ids
        if allow_none and value == -1:
            return -1
        if int(value) not in ids:
            none = "-1 for none or " if allow_none else ""
            raise traitlets.TraitError(
                f"{name}={value} is out of range: use {none}one of the layers shown "
                f"({_describe_ids(ids)})."
            )
        return int(value)
