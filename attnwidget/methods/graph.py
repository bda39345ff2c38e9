"""Shared array helpers for the attention-graph methods (raw, rollout, flow).

All functions take attention as a numpy array of shape (L, H, n, n): L layers,
H heads, row ``i`` of ``A[l, h]`` is what token ``i`` attends to. They never
modify their input.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

from attnwidget._arrays import as_layer_stack
from attnwidget.errors import AttentionRowSumWarning

HeadFusion = Literal["mean", "max", "min"]
HEAD_FUSIONS: tuple[str, ...] = ("mean", "max", "min")

#: Rows whose sum differs from 1 by more than this trigger a warning.
ROW_SUM_TOLERANCE = 1e-3


def as_attention_array(attentions: object, *, name: str = "attentions") -> np.ndarray:
    """Convert attention to a float64 array of shape (L, H, n, n) and validate it.

    Accepts an (L, H, n, n) array or tensor, an (H, n, n) array (one layer),
    or the Hugging Face / bertviz tuple of per-layer tensors of shape
    (1, H, n, n) (see :func:`attnwidget._arrays.as_layer_stack`). Raises
    :class:`AttentionShapeError` for any other shape and
    :class:`NonFiniteError` for NaN/inf values. Takes any object (it is the
    check of what a caller passed; the array functions type it ``AttentionLike``).
    """
    return as_layer_stack(attentions, name=name, square=True, dtype=np.float64)


def check_row_sums(attentions: np.ndarray, *, method: str) -> None:
    """Warn when some attention rows do not sum to 1.

    Rollout and flow re-normalise rows after adding the residual, so their
    results stay defined, but the user should know the input was unusual.
    """
    sums = attentions.sum(axis=-1)
    worst = float(np.abs(sums - 1.0).max())
    if worst > ROW_SUM_TOLERANCE:
        warnings.warn(
            f"attention rows do not sum to 1 (largest deviation {worst:.3g}); "
            f"{method} re-normalises each row after adding the residual. Pass "
            "post-softmax attention (not logits or masked/truncated rows) to "
            "get the paper's definition.",
            AttentionRowSumWarning,
            stacklevel=3,
        )


def fuse_heads(attentions: np.ndarray, how: HeadFusion = "mean") -> np.ndarray:
    """Fuse the head axis: (L, H, n, n) -> (L, n, n) by mean, max or min."""
    if how == "mean":
        return attentions.mean(axis=1)
    if how == "max":
        return attentions.max(axis=1)
    if how == "min":
        return attentions.min(axis=1)
    raise ValueError(f"head_fusion={how!r} is not one of {HEAD_FUSIONS}.")


def add_residual(fused: np.ndarray, *, residual: bool = True) -> np.ndarray:
    """Abnar & Zuidema (2020) residual adjustment of fused attention.

    ``Â = 0.5·W + 0.5·I`` followed by row re-normalisation (which changes
    nothing for row-stochastic ``W`` but keeps the result stochastic when the
    rows of ``W`` do not sum to 1). Shape (L, n, n) -> (L, n, n). With
    ``residual=False`` only the rows are normalised.
    """
    n = fused.shape[-1]
    adjusted = 0.5 * fused + 0.5 * np.eye(n) if residual else fused.copy()
    sums = adjusted.sum(axis=-1, keepdims=True)
    # A row of zeros (fully masked) stays zero rather than becoming NaN.
    return np.divide(adjusted, sums, out=np.zeros_like(adjusted), where=sums > 0)


def resolve_rows(rows: object, n: int) -> np.ndarray:
    """Turn ``rows`` (None = all, an int, or a sequence of ints) into an index array."""
    if rows is None:
        return np.arange(n)
    idx = np.atleast_1d(np.asarray(rows))
    if idx.dtype.kind not in "iu":
        raise TypeError(f"rows must be integers (token positions), got {idx.dtype}.")
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"rows {idx.tolist()} out of range for {n} tokens (valid: 0..{n - 1}).")
    return idx % n


def resolve_layer(layer: int, num_layers: int) -> int:
    """Normalise a layer index (negative counts from the end) to 0..L-1."""
    if not -num_layers <= layer < num_layers:
        raise IndexError(
            f"layer={layer} out of range for {num_layers} layers "
            f"(valid: {-num_layers}..{num_layers - 1})."
        )
    return layer % num_layers
