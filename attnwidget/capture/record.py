"""What one forward+backward pass captures for one input (the attention record)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class SimilarityTarget:
    """The target of a sentence-embedding explanation: cosine similarity to a fixed vector.

    ``other`` is the other text's pooled embedding, a detached torch tensor
    (d,) on the model's device; ``pooling`` ("mean" or "cls") how this
    text's last hidden states become its embedding
    (:func:`attnwidget.capture.similarity.pool`).
    """

    other: Any
    pooling: str


@dataclass
class ModelCall:
    """How to run one captured example again: the model, its inputs and target.

    ``kwargs`` are the model's keyword inputs other than the embeddings, for a
    batch of one; ``row`` is the query position whose logits are read and
    ``target_id`` the explained class or token. :mod:`attnwidget.relevance`
    re-runs it (integrated gradients, blank-out, LRP). ``similarity`` is set
    for a bare encoder explained by the cosine similarity of its pooled
    embedding to another text's (``row`` and ``target_id`` are then 0 and
    unused): :class:`SimilarityTarget`.
    """

    model: Any
    kind: str
    kwargs: dict[str, Any]
    row: int
    target_id: int
    input_ids: Sequence[int]
    similarity: SimilarityTarget | None = None


@dataclass
class AttentionRecord:
    """One input's captured arrays (float32 numpy, padding never included).

    Shapes: ``attentions``/``attention_grads`` (L, H, n, n); ``embeddings``/
    ``embedding_grads`` (n, d); ``logits`` (C,) for classifiers or (V,) for
    language models, at the query position; encoder–decoder models add
    ``decoder_attentions`` (L, H, m, m) and ``cross_attentions`` (L, H, m, n).
    ``query_weights`` (n,) is set for encoder–decoder models only: the
    decoder query's cross-attention over the encoder tokens (see
    :class:`attnwidget.methods.ScoreContext`). Images (``kind="image"``) have
    no ``input_ids`` (empty) and carry the image and its patch grid.
    ``head_values`` (L, H, n, d_v) and ``head_output_weights`` (L, H, d_v, d)
    are each head's value vectors and output-projection slice, captured only
    when a method needs them (:mod:`attnwidget.capture.values`).

    ``keep`` says what of the attention was kept (:mod:`attnwidget.capture.keep`):
    with "fused" or "rows", ``attentions`` and ``attention_grads`` are None and
    ``attention_rows`` (L, H, n) holds each layer's and head's query row,
    ``grad_attention_rows`` (L, n) row l the query row of
    ``(I + Ā_L) ⋯ (I + Ā_l)`` (gradient-weighted attention from start layer l),
    ``rollout_rows`` (2, L, n) [0 with the residual, 1 without] row k the query
    row of ``Â_k ⋯ Â_1`` (rollout up to layer k), and for "fused"
    ``fused_attentions`` (L, n, n) the head mean of each layer.
    ``default_query_index`` is the row the model's prediction is read from
    (:func:`attnwidget.capture.run.default_query`), None for a masked LM given
    ``query_index``.
    """

    kind: str
    input_ids: np.ndarray
    raw_tokens: list[str]
    tokens: list[str]
    special_mask: np.ndarray
    attentions: np.ndarray | None
    attention_grads: np.ndarray | None
    embeddings: np.ndarray
    embedding_grads: np.ndarray | None  # None for an attention-only similarity record
    logits: np.ndarray
    target_id: int
    target_label: Any
    query_index: int
    sentence_b_start: int | None = None
    blank_token_id: int | None = None
    decoder_tokens: list[str] | None = None
    decoder_attentions: np.ndarray | None = None
    cross_attentions: np.ndarray | None = None
    query_weights: np.ndarray | None = None
    call: ModelCall | None = None
    # Images (kind "image") only: see :class:`attnwidget.Explanation`.
    image: np.ndarray | None = None
    patch_grid: tuple[int, int] | None = None
    patch_size: int | None = None
    special_tokens: list[int] | None = None
    black_pixels: np.ndarray | None = None  # (3, H, W): a black image as the model reads it
    head_values: np.ndarray | None = None
    head_output_weights: np.ndarray | None = None
    keep: str = "all"
    fused_attentions: np.ndarray | None = None
    attention_rows: np.ndarray | None = None
    grad_attention_rows: np.ndarray | None = None
    rollout_rows: np.ndarray | None = None
    default_query_index: int | None = None
