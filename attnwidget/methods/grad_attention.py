"""Gradient-weighted attention (Chefer, Gur & Wolf, ICCV 2021)."""

from __future__ import annotations

import numpy as np

from attnwidget._arrays import AttentionLike
from attnwidget.errors import AttentionShapeError
from attnwidget.methods.graph import as_attention_array
from attnwidget.methods.options import Option
from attnwidget.methods.registry import ScoreContext, register


def grad_attention(
    attentions: AttentionLike, gradients: AttentionLike, *, start_layer: int = 0
) -> np.ndarray:
    """Chefer et al. (ICCV 2021) "generic" relevance for self-attention.

    Per layer ``Ā_l = E_h[(∇A_l ⊙ A_l)^+]`` (the positive part of gradient
    times attention, averaged over heads); relevance starts at ``R = I`` and
    is updated from the first layer up with ``R ← R + Ā_l · R``.

    Args:
        attentions: (L, H, n, n) post-softmax attention (or the HF tuple).
        gradients: (L, H, n, n) gradient of the target score with respect to
            each attention map (same layout).
        start_layer: first layer to include (0 = all layers).

    Returns:
        (n, n) relevance matrix R; row i is the relevance of each input token
        for the representation at position i (the query row is the score).
    """
    attn, grad = _checked(attentions, gradients, start_layer)
    n = attn.shape[-1]
    relevance = np.eye(n)
    for layer in range(start_layer, attn.shape[0]):
        weighted = np.clip(grad[layer] * attn[layer], 0.0, None).mean(axis=0)
        relevance = relevance + weighted @ relevance
    return relevance


@register(
    "grad_attention",
    needs={"attentions", "attention_grads"},
    summary="Positive gradient×attention, accumulated through the layers.",
    reference="Chefer, Gur & Wolf (2021), Generic Attention-model Explainability, ICCV.",
    options=(
        Option(
            "start_layer",
            int,
            0,
            "first layer included (0 = all layers)",
            check=lambda v: v >= 0,
            requirement="≥ 0",
        ),
    ),
)
def _score_grad_attention(context: ScoreContext) -> np.ndarray:
    options = context.options_for("grad_attention")
    if context.attentions is None:  # keep="fused"/"rows": propagated during backward
        rows = context.grad_attention_rows
        assert rows is not None  # kept by "fused" and "rows"
        _check_start_layer(options["start_layer"], rows.shape[0])
        return rows[options["start_layer"]].astype(np.float64)
    assert context.attention_grads is not None  # compute_scores checked the method's needs
    return grad_attention_row(
        context.attentions,
        context.attention_grads,
        context.start_vector(),
        start_layer=options["start_layer"],
    )


def grad_attention_row(
    attentions: AttentionLike, gradients: AttentionLike, query: np.ndarray, *, start_layer: int = 0
) -> np.ndarray:
    """``query @ R`` for :func:`grad_attention`'s R, without forming R.

    ``R = (I + Ā_L) ⋯ (I + Ā_s)``, so from the top layer down ``v ← v + v·Ā_l``:
    n² work per layer instead of n³. ``query`` (n,) is the query as a
    distribution over positions (one-hot at the query row).
    """
    attn, grad = _checked(attentions, gradients, start_layer)
    vector = np.asarray(query, dtype=np.float64)
    for layer in range(attn.shape[0] - 1, start_layer - 1, -1):
        weighted = np.clip(grad[layer] * attn[layer], 0.0, None).mean(axis=0)
        vector = vector + vector @ weighted
    return vector


def _checked(
    attentions: AttentionLike, gradients: AttentionLike, start_layer: int
) -> tuple[np.ndarray, np.ndarray]:
    """The attention and its gradient as (L, H, n, n) arrays of one layout, and a valid start."""
    attn = as_attention_array(attentions)
    grad = as_attention_array(gradients, name="gradients")
    if grad.shape != attn.shape:
        raise AttentionShapeError(
            f"gradients have shape {grad.shape} but attentions {attn.shape}; pass the "
            "gradient of the target with respect to each attention map, same layout."
        )
    _check_start_layer(start_layer, attn.shape[0])
    return attn, grad


def _check_start_layer(start_layer: int, layers: int) -> None:
    if not 0 <= start_layer < layers:
        raise IndexError(f"start_layer={start_layer} out of range for {layers} layers.")
