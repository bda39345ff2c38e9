"""Norm-based attention (Kobayashi et al., 2020, "Attention is Not Only a Weight")."""

from __future__ import annotations

from typing import Any

import numpy as np

from attnwidget._arrays import AttentionLike, as_layer_stack
from attnwidget.methods.effective_attention import check_values, map_options, score_maps
from attnwidget.methods.graph import as_attention_array, resolve_layer
from attnwidget.methods.options import Option
from attnwidget.methods.registry import ScoreContext, register


def transformed_vectors(
    head_values: AttentionLike, head_output_weights: AttentionLike
) -> np.ndarray:
    """``f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h``: float64 (L, H, n, d).

    ``head_values`` (L, H, n, d_v) are the heads' values (bias included),
    ``head_output_weights`` (L, H, d_v, d) each head's rows of the output
    projection ``W_O``; the bias of ``W_O`` is not part of f, as in the paper.
    """
    values = as_layer_stack(head_values, name="head_values", square=False, dtype=np.float64)
    weights = np.asarray(head_output_weights, dtype=np.float64)
    if weights.ndim != 4 or weights.shape[:3] != (*values.shape[:2], values.shape[-1]):
        raise ValueError(
            f"head_output_weights has shape {weights.shape}; expected (L, H, d_v, d) with "
            f"(L, H, d_v) = {(*values.shape[:2], values.shape[-1])} from head_values."
        )
    return values @ weights


def attention_norm(
    attentions: AttentionLike, head_values: AttentionLike, head_output_weights: AttentionLike
) -> np.ndarray:
    """Kobayashi et al. (2020)'s norm of each weighted vector, ``‖α_ij f(x_j)‖``.

    A head's output for token i is ``Σ_j α_ij f(x_j)`` with ``f(x_j) = (x_j
    W_V + b_V) W_O`` restricted to the head (its slice of the output
    projection, whose bias is left out as in the paper). The weight ``α_ij``
    alone ignores how large the vector it scales is; the norm of the product
    measures what token j actually contributes. Since ``α_ij ≥ 0`` it is
    ``α_ij · ‖f(x_j)‖``.

    Args:
        attentions: (L, H, n, n) post-softmax attention (or the HF tuple).
        head_values: (L, H, n, d_v) each head's values (bias included), kv
            heads repeated for grouped-query attention.
        head_output_weights: (L, H, d_v, d) each head's rows of ``W_O`` in
            ``x @ W`` orientation.

    Returns:
        float64 (L, H, n, n), ≥ 0; rows do not sum to 1 (the scale is that of
        the model's hidden states).
    """
    array = as_attention_array(attentions)
    check_values(array, head_values)
    norms = np.linalg.norm(transformed_vectors(head_values, head_output_weights), axis=-1)
    return array * norms[:, :, None, :]


def combined_norm(
    attentions: AttentionLike,
    head_values: AttentionLike,
    head_output_weights: AttentionLike,
    row: int,
) -> np.ndarray:
    """``‖Σ_h α^h_ij f_h(x_j)‖`` for query row ``row``: float64 (L, n).

    Kobayashi et al. (2020) also analyse a whole multi-head layer: what token
    j adds to token i's output summed over the heads before the norm (heads
    can cancel each other, so this is not the sum of the per-head norms).
    """
    array = as_attention_array(attentions)
    check_values(array, head_values)
    vectors = transformed_vectors(head_values, head_output_weights)  # (L, H, n, d)
    weighted = array[:, :, row, :, None] * vectors  # (L, H, n, d)
    return np.linalg.norm(weighted.sum(axis=1), axis=-1)


@register(
    "attention_norm",
    needs={"attentions", "head_values"},
    summary="Norm of each attention-weighted transformed vector, ‖α_ij f(x_j)‖.",
    reference="Kobayashi et al. (2020), Attention is Not Only a Weight (EMNLP).",
    options=(
        *map_options(),
        Option(
            "heads_combined",
            bool,
            False,
            "score ‖Σ_h α^h f_h(x)‖ of the whole layer (the heads' vectors summed before "
            "the norm) instead of fusing the per-head norms",
        ),
    ),
)
def _score_attention_norm(context: ScoreContext) -> tuple[np.ndarray, dict[str, Any]]:
    options = context.options_for("attention_norm")
    attentions, values = context.attentions, context.head_values
    weights = context.head_output_weights
    # compute_scores checked the method's needs (keep="all" for "head_values")
    assert attentions is not None and values is not None and weights is not None
    maps = attention_norm(attentions, values, weights)
    details = {"maps": maps.astype(np.float32)}
    if not options["heads_combined"]:
        return score_maps(context, "attention_norm", maps), details
    layer = resolve_layer(options["layer"], maps.shape[0])
    combined = combined_norm(attentions, values, weights, context.query_index)
    return combined[layer], details
