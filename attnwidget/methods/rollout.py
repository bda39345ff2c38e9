"""Attention rollout (Abnar & Zuidema, 2020)."""

from __future__ import annotations

import numpy as np

from attnwidget._arrays import AttentionLike
from attnwidget.methods.graph import (
    HeadFusion,
    add_residual,
    as_attention_array,
    check_row_sums,
    fuse_heads,
    resolve_layer,
)
from attnwidget.methods.options import Option, head_fusion_option, layer_option
from attnwidget.methods.registry import ScoreContext, register


def rollout(
    attentions: AttentionLike,
    *,
    head_fusion: HeadFusion = "mean",
    residual: bool = True,
    discard_ratio: float = 0.0,
    keep_columns: tuple[int, ...] = (0,),
) -> np.ndarray:
    """Attention rollout of Abnar & Zuidema (ACL 2020), every layer's cumulative map.

    Heads are fused (``W_l``), the residual is added (``Â_l = 0.5·W_l + 0.5·I``,
    rows re-normalised) and the layers multiplied with the later layer on the
    left: ``R_1 = Â_1``, ``R_l = Â_l · R_{l-1}``. ``R_l[i, j]`` is how much of
    input token j reaches node i of layer l; every row sums to 1.

    Args:
        attentions: (L, H, n, n) array or the HF tuple of (1, H, n, n) tensors.
        head_fusion: "mean" (the paper), "max" or "min" (vit-explain).
        residual: add the 0.5·I residual (the paper); False only re-normalises.
        discard_ratio: fraction of the smallest links of each fused map to drop
            before the residual, as in vit-explain (Gildenblat, 2020); the
            columns in ``keep_columns`` (default the CLS column) are never dropped.
        keep_columns: columns exempt from ``discard_ratio``.

    Returns:
        float64 array of shape (L, n, n): ``out[l]`` is the rollout up to layer l+1.
    """
    array = as_attention_array(attentions)
    check_row_sums(array, method="rollout")
    if not 0.0 <= discard_ratio < 1.0:
        raise ValueError(f"discard_ratio={discard_ratio} must be in [0, 1).")
    fused = fuse_heads(array, head_fusion)
    if discard_ratio > 0:
        fused = _discard_lowest(fused, discard_ratio, keep_columns)
    adjusted = add_residual(fused, residual=residual)
    out = np.empty_like(adjusted)
    out[0] = adjusted[0]
    for layer in range(1, adjusted.shape[0]):
        out[layer] = adjusted[layer] @ out[layer - 1]
    return out


def _discard_lowest(fused: np.ndarray, ratio: float, keep_columns: tuple[int, ...]) -> np.ndarray:
    """Zero the ``ratio`` smallest entries of each (n, n) map, sparing ``keep_columns``."""
    out = fused.copy()
    n = fused.shape[-1]
    protected = np.zeros((n, n), dtype=bool)
    protected[:, list(keep_columns)] = True
    for layer in range(out.shape[0]):
        candidates = np.flatnonzero(~protected)
        k = int(candidates.size * ratio)
        if k == 0:
            continue
        values = out[layer].ravel()
        drop = candidates[np.argsort(values[candidates], kind="stable")[:k]]
        values[drop] = 0.0
    return out


@register(
    "rollout",
    needs={"attentions"},
    summary="How much of each input token reaches the query row through all layers.",
    reference="Abnar & Zuidema (2020), Quantifying Attention Flow in Transformers.",
    options=(
        layer_option("rollout up to this layer (negative counts from the end)"),
        head_fusion_option(),
        Option("residual", bool, True, "add the 0.5·I residual (the paper)"),
        Option(
            "discard_ratio",
            float,
            0.0,
            "fraction of each fused map's smallest links dropped (vit-explain)",
            check=lambda v: 0.0 <= v < 1.0,
            requirement="in [0, 1)",
        ),
        Option(
            "keep_columns",
            tuple,
            (0,),
            "columns never dropped by discard_ratio",
            items=int,
        ),
    ),
)
def _score_rollout(context: ScoreContext) -> np.ndarray:
    options = context.options_for("rollout")
    if context.attentions is None:  # keep="fused"/"rows"
        return _rollout_from_kept(context, options)
    array = as_attention_array(context.attentions)
    check_row_sums(array, method="rollout")
    return _rollout_query_row(context, fuse_heads(array, options["head_fusion"]), options)


def _rollout_from_kept(context: ScoreContext, options: dict) -> np.ndarray:
    """The query row of rollout from what keep="fused"/"rows" kept.

    Without ``discard_ratio`` the row was propagated during the backward pass
    (``rollout_rows``). With it, the fused maps are read layer by layer from
    the top: ``v ← v·Â_l`` for l = layer … 1, n² work per layer.
    """
    rows, fused = context.attention_rows, context.fused_attentions
    assert rows is not None  # kept by "fused" and "rows"
    layers = rows.shape[0]
    top = resolve_layer(options["layer"], layers)
    if options["discard_ratio"] == 0.0:
        assert context.rollout_rows is not None  # kept by "fused" and "rows"
        return context.rollout_rows[0 if options["residual"] else 1, top].astype(np.float64)
    assert fused is not None  # discard_ratio needs keep="fused" (check_keep_for)
    return _rollout_query_row(context, fused, options)


def _rollout_query_row(context: ScoreContext, fused: np.ndarray, options: dict) -> np.ndarray:
    """The query row of :func:`rollout` up to ``options["layer"]`` from fused maps (L, n, n).

    ``R_k = Â_k ⋯ Â_1``, so ``q·R_k`` is ``v ← v·Â_l`` for l = k … 1: n² work
    per layer instead of the n³ of forming every ``R_l``.
    """
    top = resolve_layer(options["layer"], fused.shape[0])
    vector = context.start_vector()
    for layer in range(top, -1, -1):
        kept = _discard_lowest(
            fused[layer : layer + 1].astype(np.float64),
            options["discard_ratio"],
            options["keep_columns"],
        )
        vector = vector @ add_residual(kept, residual=options["residual"])[0]
    return vector
