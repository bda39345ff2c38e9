"""What one forward+backward pass captures for one input (the attention record)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class AttentionRecord:
    """One input's captured arrays (float32 numpy, padding never included).

    Shapes: ``attentions``/``attention_grads`` (L, H, n, n); ``embeddings``/
    ``embedding_grads`` (n, d); ``logits`` (C,) for classifiers or (V,) for
    language models, at the query position; encoder–decoder models add
    ``decoder_attentions`` (L, H, m, m) and ``cross_attentions`` (L, H, m, n).
    ``query_weights`` (n,) is set for encoder–decoder models only: the
    decoder query's cross-attention over the encoder tokens (see
    :class:`attnwidget.methods.ScoreContext`).
    """

    kind: str
    input_ids: np.ndarray
    raw_tokens: list[str]
    tokens: list[str]
    special_mask: np.ndarray
    attentions: np.ndarray
    attention_grads: np.ndarray
    embeddings: np.ndarray
    embedding_grads: np.ndarray
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
    target_score: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
    target_probability: Callable[[np.ndarray], np.ndarray] | None = None
