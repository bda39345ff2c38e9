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
:mod:`attnwidget.views._standalone`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import traitlets

from ..errors import AttentionShapeError, NonFiniteError
from ..explanation import Explanation
from ._base import RecordedReply, _AttnWidget

log = logging.getLogger(__name__)

#: The wire dtype of attention weights: IEEE half, little-endian.
WIRE_DTYPE = np.dtype("<f2")
#: Relative precision of the wire format for weights >= 2**-14 (half's epsilon / 2).
WIRE_RTOL = 2.0**-11
#: Absolute precision below 2**-14 (half's subnormal spacing / 2).
WIRE_ATOL = 2.0**-25

#: Largest binary payload of one kernel -> page message. The Jupyter server's
#: default websocket limit is 10 MiB (tornado's max_message_size); the margin
#: leaves room for the JSON part and the framing.
MAX_MESSAGE_BYTES = 8 * 2**20
#: Inputs whose attention is at most this many bytes (float16) ship whole in
#: the initial state, so they need no round trip and work in exported HTML.
PRELOAD_BYTES = 4 * 2**20

#: Attention an exported HTML page embeds at most (float16 bytes; base64 adds a third).
EXPORT_BYTES = 32 * 2**20

#: The pair filters of a sentence pair (bertviz's "Sentence A -> Sentence B" etc.).
PAIR_FILTERS: tuple[str, ...] = ("all", "A->A", "B->B", "A->B", "B->A")
#: Themes: "auto" follows the host (JupyterLab's --jp-* variables).
THEMES: tuple[str, ...] = ("auto", "light", "dark")


def encode_float16(array: Any) -> bytes:
    """The bytes of ``array`` as float16, little-endian, C order."""
    return np.ascontiguousarray(np.asarray(array, dtype=WIRE_DTYPE)).tobytes(order="C")


def decode_float16(data: bytes | bytearray | memoryview, shape: Sequence[int]) -> np.ndarray:
    """The inverse of :func:`encode_float16`, as float32."""
    flat = np.frombuffer(data, dtype=WIRE_DTYPE)
    if flat.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"{flat.size} float16 values do not fill shape {tuple(shape)}")
    return flat.reshape(tuple(shape)).astype(np.float32)


@dataclass(frozen=True)
class AttentionMatrix:
    """One kind of attention of a model (self, encoder, decoder or cross).

    ``weights[l, h, i, j]``: how much query token ``i`` (a row, labelled by
    the ``rows`` token list) attends to key token ``j`` (a column, ``cols``),
    in layer ``layer_ids[l]``, head ``head_ids[h]``.
    """

    key: str
    label: str
    weights: np.ndarray
    rows: str  # "tokens" or "decoder_tokens": which token list labels the rows
    cols: str
    layer_ids: tuple[int, ...]
    head_ids: tuple[int, ...]
    causal: bool

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return tuple(int(d) for d in self.weights.shape)  # type: ignore[return-value]

    def describe(self) -> dict[str, Any]:
        """The JSON description the page gets (the ``matrices`` trait)."""
        return {
            "key": self.key,
            "label": self.label,
            "rows": self.rows,
            "cols": self.cols,
            "shape": list(self.shape),
            "layer_ids": list(self.layer_ids),
            "head_ids": list(self.head_ids),
            "causal": self.causal,
        }

    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * WIRE_DTYPE.itemsize

    def chunks(
        self, layer: int, heads: Sequence[int] | None = None, limit: int = MAX_MESSAGE_BYTES
    ) -> Iterator[tuple[dict[str, Any], bytes]]:
        """(descriptor, float16 bytes) blocks of one layer, each at most ``limit`` bytes.

        ``heads`` is a contiguous (start, stop) range of head positions (all by
        default). Blocks hold as many whole heads as fit, and split a head by
        rows only when one head alone is over the limit (n > ~2000).
        """
        _, num_heads, rows, cols = self.shape
        h_start, h_stop = (0, num_heads) if heads is None else (int(heads[0]), int(heads[1]))
        head_bytes = rows * cols * WIRE_DTYPE.itemsize
        if head_bytes <= limit:
            step = max(1, limit // max(head_bytes, 1))
            for h0 in range(h_start, h_stop, step):
                h1 = min(h_stop, h0 + step)
                block = self.weights[layer, h0:h1]
                yield self._descriptor(layer, h0, h1, 0, rows), encode_float16(block)
            return
        row_step = max(1, limit // max(cols * WIRE_DTYPE.itemsize, 1))
        for h in range(h_start, h_stop):
            for r0 in range(0, rows, row_step):
                r1 = min(rows, r0 + row_step)
                block = self.weights[layer, h : h + 1, r0:r1]
                yield self._descriptor(layer, h, h + 1, r0, r1), encode_float16(block)

    def _descriptor(self, layer: int, h0: int, h1: int, r0: int, r1: int) -> dict[str, Any]:
        return {"matrix": self.key, "layer": layer, "heads": [h0, h1], "rows": [r0, r1]}


@dataclass(frozen=True)
class AttentionSet:
    """Everything a head or model view shows: tokens and attention matrices."""

    tokens: list[str]
    decoder_tokens: list[str]
    matrices: list[AttentionMatrix]
    sentence_b_start: int | None = None

    def matrix(self, key: str) -> AttentionMatrix:
        for m in self.matrices:
            if m.key == key:
                return m
        raise KeyError(key)

    def token_list(self, name: str) -> list[str]:
        return self.tokens if name == "tokens" else self.decoder_tokens

    def pair_split_applies(self, key: str) -> bool:
        """Sentence-pair filters apply to attention among the input tokens only."""
        m = self.matrix(key)
        return self.sentence_b_start is not None and m.rows == m.cols == "tokens"

    @classmethod
    def from_explanation(cls, explanation: Explanation) -> AttentionSet:
        if not isinstance(explanation, Explanation):
            raise TypeError(
                "expected an attnwidget.Explanation, got "
                f"{type(explanation).__name__}; make one with attnwidget.explain(...) or "
                "Explanation.from_attentions(attentions, tokens). For bertviz-style "
                "arguments use attnwidget.head_view / attnwidget.model_view."
            )
        tokens = [str(t) for t in explanation.tokens]
        decoder = [str(t) for t in explanation.decoder_tokens or []]
        # A causal LM is causal by construction; otherwise look at the weights.
        causal = True if explanation.kind == "causal-lm" else None
        if explanation.decoder_tokens is None:
            matrices = [make_matrix("self", explanation.attentions, tokens, tokens, causal)]
        else:
            matrices = [make_matrix("encoder", explanation.attentions, tokens, tokens)]
            if explanation.decoder_attentions is not None:
                matrices.append(
                    make_matrix("decoder", explanation.decoder_attentions, decoder, decoder, True)
                )
            if explanation.cross_attentions is not None:
                matrices.append(make_matrix("cross", explanation.cross_attentions, decoder, tokens))
        return cls(tokens, decoder, matrices, explanation.sentence_b_start).checked()

    def checked(self) -> AttentionSet:
        """Validate shapes against tokens; raise with a clear message."""
        if not self.matrices:
            raise AttentionShapeError("there is no attention to show (no matrix given).")
        for m in self.matrices:
            rows, cols = len(self.token_list(m.rows)), len(self.token_list(m.cols))
            if m.weights.ndim != 4 or m.weights.shape[-2:] != (rows, cols):
                raise AttentionShapeError(
                    f"{m.label} attention has shape {tuple(m.weights.shape)} but there are "
                    f"{rows} query and {cols} key tokens; expected (layers, heads, {rows}, {cols})."
                )
            if m.weights.size == 0:
                raise AttentionShapeError(
                    f"{m.label} attention has shape {tuple(m.weights.shape)}: it holds no values."
                )
            if len(m.layer_ids) != m.shape[0] or len(m.head_ids) != m.shape[1]:
                raise ValueError(f"{m.label}: layer/head ids do not match the attention's shape.")
        b = self.sentence_b_start
        if b is not None and not 0 < b < len(self.tokens):
            raise ValueError(
                f"sentence_b_start={b} is out of range: the second sentence must start after "
                f"the first token and before the end (1..{len(self.tokens) - 1})."
            )
        return self


_LABELS = {"self": "Self-attention", "encoder": "Encoder", "decoder": "Decoder", "cross": "Cross"}


def make_matrix(
    key: str,
    weights: Any,
    row_tokens: Sequence[str],
    col_tokens: Sequence[str],
    causal: bool | None = None,
    *,
    layer_ids: Sequence[int] | None = None,
    head_ids: Sequence[int] | None = None,
) -> AttentionMatrix:
    """An :class:`AttentionMatrix` from an (L, H, rows, cols) array.

    ``causal`` None: detected (square and nothing above the diagonal).
    """
    array = np.asarray(weights, dtype=np.float32)
    label = _LABELS[key]
    if array.ndim != 4:
        raise AttentionShapeError(
            f"{label} attention has shape {tuple(array.shape)}; expected 4 dimensions "
            "(layers, heads, query tokens, key tokens)."
        )
    if array.size and not np.isfinite(array).all():
        raise NonFiniteError(f"{label} attention contains NaN or infinite values.")
    square = array.shape[-1] == array.shape[-2]
    rows_are_cols = row_tokens is col_tokens or list(row_tokens) == list(col_tokens)
    if causal is None or (causal and not square):
        causal = bool(square and rows_are_cols and _is_causal(array))
    return AttentionMatrix(
        key=key,
        label=label,
        weights=array,
        rows="decoder_tokens" if key in ("decoder", "cross") else "tokens",
        cols="decoder_tokens" if key == "decoder" else "tokens",
        layer_ids=tuple(int(i) for i in (layer_ids or range(array.shape[0]))),
        head_ids=tuple(int(i) for i in (head_ids or range(array.shape[1]))),
        causal=bool(causal),
    )


def _is_causal(array: np.ndarray) -> bool:
    """True when no query attends to a later key (a causal mask), n > 1."""
    n = array.shape[-1]
    if n < 2 or array.size == 0:
        return False
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    # One layer at a time: a full (L, H, n, n) mask copy would double memory.
    return all(not np.any(layer[:, upper]) for layer in array)


# -- thumbnails (ModelView) ---------------------------------------------------

#: Thumbnails show attention pooled to at most this many bins per side.
MAX_THUMB_BINS = 48
#: Float16 bytes of one matrix's thumbnails, at most.
THUMB_BYTES = 2**20


def bin_edges(n: int, bins: int, split: int | None = None) -> np.ndarray:
    """Edges of at most ``bins`` contiguous token bins; ``split`` is always an edge.

    Keeping the sentence-B start as an edge lets the page apply the pair
    filters to pooled thumbnails exactly (no bin straddles both sentences).
    """
    if n <= bins:
        return np.arange(n + 1)
    if split is None or not 0 < split < n:
        return np.unique(np.linspace(0, n, bins + 1).round().astype(np.int64))
    first = min(bins - 1, max(1, round(bins * split / n)))
    a = np.linspace(0, split, first + 1).round().astype(np.int64)
    b = np.linspace(split, n, bins - first + 1).round().astype(np.int64)
    return np.unique(np.concatenate([a, b]))


def pool(weights: np.ndarray, row_edges: np.ndarray, col_edges: np.ndarray) -> np.ndarray:
    """Block-pool (..., rows, cols): mean over the rows of a bin, sum over its columns.

    So each pooled row still sums to 1 (a query bin's average attention to
    each key bin), and an exact copy comes back when every bin is one token.
    """
    summed = np.add.reduceat(weights, row_edges[:-1], axis=-2)
    summed = np.add.reduceat(summed, col_edges[:-1], axis=-1)
    counts = np.diff(row_edges).astype(np.float32)
    return (summed / counts[:, None]).astype(np.float32)


def thumbnail_bins(matrix: AttentionMatrix) -> int:
    layers, heads = matrix.shape[:2]
    fit = int(np.sqrt(THUMB_BYTES / (layers * heads * WIRE_DTYPE.itemsize)))
    return max(4, min(MAX_THUMB_BINS, fit))


def thumbnails(attention: AttentionSet) -> tuple[bytes, list[dict[str, Any]]]:
    """Pooled float16 thumbnails of every matrix: (bytes, index)."""
    parts: list[bytes] = []
    index: list[dict[str, Any]] = []
    offset = 0
    for m in attention.matrices:
        layers, _, rows, cols = m.shape
        bins = thumbnail_bins(m)
        split = attention.sentence_b_start if attention.pair_split_applies(m.key) else None
        row_edges = bin_edges(rows, bins, split)
        col_edges = bin_edges(cols, bins, split)
        data = b"".join(
            encode_float16(pool(m.weights[layer], row_edges, col_edges)) for layer in range(layers)
        )
        index.append(
            {
                "matrix": m.key,
                "row_edges": [int(e) for e in row_edges],
                "col_edges": [int(e) for e in col_edges],
                "offset": offset,
                "nbytes": len(data),
            }
        )
        parts.append(data)
        offset += len(data)
    return b"".join(parts), index


# -- the views' shared base ------------------------------------------------------


class _AttentionView(_AttnWidget):
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
        self.set_trait("matrices", [m.describe() for m in attention.matrices])
        b = attention.sentence_b_start
        self.set_trait("sentence_b_start", -1 if b is None else int(b))
        self.set_trait("preload", data)
        self.set_trait("preload_index", index)

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
                f"this saved page holds the first {budget / 2**20:.1f} MiB of the attention "
                "(to_html(embed_bytes=...)); this part was left out. Save the view again "
                "with a larger embed_bytes, or rerun the notebook to explore it"
            )
        return {"type": "error", "message": why}

    def _shown_layer(self) -> int:
        """Position of the layer the page shows first (-1: none)."""
        layer = getattr(self, "layer", -1)
        ids = self.current_matrix().layer_ids
        return ids.index(layer) if layer in ids else -1

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


def _describe_ids(ids: Sequence[int]) -> str:
    ids = list(ids)
    if ids == list(range(len(ids))):
        return f"0..{len(ids) - 1}"
    return ", ".join(map(str, ids))


def _position(ids: Sequence[int], value: int, name: str) -> int:
    """Position of a layer/head id among those shown (a clear error otherwise)."""
    if isinstance(value, bool) or int(value) not in ids:
        raise ValueError(f"{name}={value!r} is not one of those shown ({_describe_ids(ids)}).")
    return list(ids).index(int(value))


def _put_chunk(out: np.ndarray, descriptor: dict[str, Any], data: bytes) -> None:
    h0, h1 = descriptor["heads"]
    r0, r1 = descriptor["rows"]
    cols = out.shape[-1]
    out[descriptor["layer"], h0:h1, r0:r1] = decode_float16(data, (h1 - h0, r1 - r0, cols))


def _pack(
    wanted: Iterator[tuple[AttentionMatrix, int, tuple[int, int] | None]], budget: int
) -> tuple[bytes, list[dict[str, Any]]]:
    """Chunks of the wanted (matrix, layer, heads) blocks, in order, until ``budget`` bytes."""
    parts: list[bytes] = []
    index: list[dict[str, Any]] = []
    offset = 0
    seen: set[tuple[str, int]] = set()
    for m, layer, heads in wanted:
        if (m.key, layer) in seen:
            continue
        if heads is None:
            seen.add((m.key, layer))
        for descriptor, data in m.chunks(layer, heads):
            if offset + len(data) > budget:
                return b"".join(parts), index  # the page asks for the rest
            index.append({**descriptor, "offset": offset, "nbytes": len(data)})
            parts.append(data)
            offset += len(data)
    return b"".join(parts), index


def _everything(
    attention: AttentionSet, covered: frozenset[str] = frozenset()
) -> Iterator[tuple[AttentionMatrix, int, None]]:
    for m in attention.matrices:
        if m.key in covered:
            continue
        for layer in range(m.shape[0]):
            yield m, layer, None


def _preload(
    attention: AttentionSet,
    first: AttentionMatrix,
    layer: int,
    head: int | None,
    budget: int = MAX_MESSAGE_BYTES,
    covered: frozenset[str] = frozenset(),
) -> tuple[bytes, list[dict[str, Any]]]:
    """The initial state's attention: all of it when small, else what is shown first.

    ``budget`` bounds the bytes (the whole initial state is one message);
    matrices in ``covered`` are left out (the page has them already).
    """
    total = sum(m.nbytes() for m in attention.matrices if m.key not in covered)
    if total <= min(PRELOAD_BYTES, budget):
        return _pack(_everything(attention, covered), budget)
    if layer < 0 or first.key in covered:
        return b"", []
    heads = None if head is None else (head, head + 1)
    return _pack(iter([(first, layer, heads)]), budget)


def _export_order(
    attention: AttentionSet, first: AttentionMatrix, layer: int
) -> Iterator[tuple[AttentionMatrix, int]]:
    """What a saved page records, in order: the shown layer, then every layer of every matrix."""
    if layer >= 0:
        yield first, layer
    for m in attention.matrices:
        for other in range(m.shape[0]):
            if (m.key, other) != (first.key, layer):
                yield m, other


def _attention_messages(
    m: AttentionMatrix, layer: int, heads: tuple[int, int]
) -> Iterator[tuple[dict[str, Any], bytes]]:
    """The kernel's reply to a request for ``heads`` of ``layer``: (content, float16 bytes)."""
    for descriptor, data in m.chunks(layer, heads):
        yield {"type": "attention", **descriptor, "dtype": "float16"}, data
