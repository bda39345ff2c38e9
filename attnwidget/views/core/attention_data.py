"""The attention HeadView and ModelView show: matrices, their checks, and
the chunks they travel in (wire format: :mod:`attnwidget.views.attention._shared`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnwidget._arrays import non_finite_summary
from attnwidget.errors import AttentionShapeError, NonFiniteError
from attnwidget.methods.sinks import ignored_keys_note
from attnwidget.results.explanation import Explanation
from attnwidget.views.core.buffers import (
    ATTENTION_HINT,
    DTYPES,
    check_float16,
    decode_float16,
    encode_attention,
)
from attnwidget.views.core.message_size import MESSAGE_CAP
from attnwidget.views.core.method_maps import METHOD_MATRICES, method_maps, shown_methods
from attnwidget.views.core.tokens import raw_tokens_of

#: The wire dtype of attention weights: IEEE half, little-endian (see _buffers).
WIRE_DTYPE = DTYPES["float16"]
#: Relative precision of the wire format for weights >= 2**-14 (half's epsilon / 2).
WIRE_RTOL = 2.0**-11
#: Absolute precision below 2**-14 (half's subnormal spacing / 2).
WIRE_ATOL = 2.0**-25

#: Largest binary payload of one kernel -> page message: the cap every view's
#: messages are checked against (views/core/message_size.py) less room for the
#: message's JSON part, so a payload of exactly this size is still sent.
MAX_MESSAGE_BYTES = MESSAGE_CAP - 256 * 2**10
#: Inputs whose attention is at most this many bytes (float16) ship whole in
#: the initial state, so they need no round trip and work in exported HTML.
PRELOAD_BYTES = 4 * 2**20

#: Attention an exported HTML page embeds at most (float16 bytes; base64 adds a third).
EXPORT_BYTES = 32 * 2**20

#: The pair filters of a sentence pair (bertviz's "Sentence A -> Sentence B" etc.).
PAIR_FILTERS: tuple[str, ...] = ("all", "A->A", "B->B", "A->B", "B->A")
#: Themes: "auto" follows the host (JupyterLab's --jp-* variables).
THEMES: tuple[str, ...] = ("auto", "light", "dark")


#: Kept under its old name: attention as float16 bytes (``_buffers.encode_attention``).
encode_float16 = encode_attention

__all__ = ["decode_float16", "encode_float16"]


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
    #: Said beside the matrix in the page, e.g. which keys were left out ("": nothing).
    note: str = ""

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return tuple(int(d) for d in self.weights.shape)  # type: ignore[return-value]

    def describe(self) -> dict[str, Any]:
        """The JSON description the page gets (the ``matrices`` trait)."""
        note = {"note": self.note} if self.note else {}
        return {
            "key": self.key,
            "label": self.label,
            "rows": self.rows,
            "cols": self.cols,
            "shape": list(self.shape),
            "layer_ids": list(self.layer_ids),
            "head_ids": list(self.head_ids),
            "causal": self.causal,
            **note,
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
    #: The tokenizer's strings of ``tokens`` (shown on hover), [] when unknown.
    raw_tokens: list[str] = field(default_factory=list)

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
        explanation.require_attentions("HeadView/ModelView")  # keep="fused"/"rows": no heads
        tokens = [str(t) for t in explanation.tokens]
        decoder = [str(t) for t in explanation.decoder_tokens or []]
        # A causal LM is causal by construction; otherwise look at the weights.
        causal = True if explanation.kind == "causal-lm" else None
        if explanation.decoder_tokens is None:
            # With ignored keys: the rows the methods read (the methods' maps come from them).
            note = ignored_keys_note(explanation.ignored_keys, tokens)
            weights = explanation.renormalised_attentions
            matrices = [make_matrix("self", weights, tokens, tokens, causal, note=note)]
            # Methods that replace each head's attention by another map (_method_maps).
            for name in shown_methods(explanation):
                maps = method_maps(explanation, name)
                masked = matrices[0].causal
                matrices.append(make_matrix(name, maps, tokens, tokens, masked, note=note))
        else:
            matrices = [make_matrix("encoder", explanation.attentions, tokens, tokens)]
            if explanation.decoder_attentions is not None:
                matrices.append(
                    make_matrix("decoder", explanation.decoder_attentions, decoder, decoder, True)
                )
            if explanation.cross_attentions is not None:
                matrices.append(make_matrix("cross", explanation.cross_attentions, decoder, tokens))
        raw = raw_tokens_of(explanation, len(tokens))
        return cls(tokens, decoder, matrices, explanation.sentence_b_start, raw).checked()

    def checked(self) -> AttentionSet:
        """Validate shapes against tokens; raise with a clear message."""
        if not self.matrices:
            raise AttentionShapeError("there is no attention to show (no matrix given).")
        for m in self.matrices:
            rows, cols = len(self.token_list(m.rows)), len(self.token_list(m.cols))
            if m.weights.ndim != 4 or m.weights.shape[-2:] != (rows, cols):
                raise AttentionShapeError(
                    f"{m.label} attention has shape {tuple(m.weights.shape)} but there are "
                    f"{rows} query and {cols} key tokens (rows: {m.rows}, columns: {m.cols}); "
                    f"expected (layers, heads, {rows}, {cols})."
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


_LABELS = {
    "self": "Self-attention",
    "encoder": "Encoder",
    "decoder": "Decoder",
    "cross": "Cross",
    **METHOD_MATRICES,
}


def make_matrix(
    key: str,
    weights: Any,
    row_tokens: Sequence[str],
    col_tokens: Sequence[str],
    causal: bool | None = None,
    *,
    layer_ids: Sequence[int] | None = None,
    head_ids: Sequence[int] | None = None,
    note: str = "",
) -> AttentionMatrix:
    """An :class:`AttentionMatrix` from an (L, H, rows, cols) array.

    ``causal`` None: detected (square and nothing above the diagonal). ``note``:
    a line the page shows beside it (which keys were left out).
    """
    array = np.asarray(weights, dtype=np.float32)
    label = _LABELS[key]
    if array.ndim != 4:
        raise AttentionShapeError(
            f"{label} attention has shape {tuple(array.shape)}; expected 4 dimensions "
            "(layers, heads, query tokens, key tokens)."
        )
    if array.size and not np.isfinite(array).all():
        what = label if key == "self" else f"{label} attention"
        raise NonFiniteError(
            f"{what} contains {non_finite_summary(array, ids=(layer_ids, head_ids))}; expected "
            "finite weights (run the model in float32, or leave out padding positions)."
        )
    # Refused here, before any view changes, rather than sent as float16 infinity.
    largest = np.abs(array).max(initial=0.0)
    check_float16(largest, f"{label} attention", underflow="allow", hint=ATTENTION_HINT)
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
        note=note,
    )


def _is_causal(array: np.ndarray) -> bool:
    """True when no query attends to a later key (a causal mask), n > 1."""
    n = array.shape[-1]
    if n < 2 or array.size == 0:
        return False
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    # One layer at a time: a full (L, H, n, n) mask copy would double memory.
    return all(not np.any(layer[:, upper]) for layer in array)
