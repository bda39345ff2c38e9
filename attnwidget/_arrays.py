"""Array coercion shared by every layer: attention from tensors, tuples or arrays.

One place decides what attention layouts are accepted, so the methods
(:func:`attnwidget.methods._graph.as_attention_array`) and the
bertviz-compatible views (:mod:`attnwidget.views.compat`) cannot drift apart.
Nothing here imports torch: a tensor is recognised by its ``detach`` method.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import AttentionShapeError, NonFiniteError


def to_numpy(value: Any) -> np.ndarray:
    """A numpy array from a numpy-like value or a torch tensor (any device or dtype).

    Tensors are detached and converted to float32 first, so bfloat16 and GPU
    tensors work.
    """
    detach = getattr(value, "detach", None)
    if detach is not None:
        return detach().float().cpu().numpy()
    return np.asarray(value)


def as_layer_stack(
    attention: Any,
    *,
    name: str = "attentions",
    square: bool = True,
    dtype: Any = np.float64,
    finite: bool = True,
) -> np.ndarray:
    """Attention as one (L, H, rows, cols) array of ``dtype``, validated.

    Accepts the Hugging Face / bertviz tuple of per-layer tensors, each
    (1, H, rows, cols) or (H, rows, cols), or one array or tensor of shape
    (L, H, rows, cols), (L, 1, H, rows, cols) or (H, rows, cols) (one layer).
    ``square`` requires rows == cols (self-attention); ``finite`` refuses
    NaN/inf. Raises :class:`AttentionShapeError` (a ``ValueError``) naming
    the shape that was given and the one expected.
    """
    if isinstance(attention, (tuple, list)):
        if len(attention) == 0:
            raise AttentionShapeError(
                f"{name} is empty: pass one attention tensor per layer, "
                "each of shape (1, H, n, n) or (H, n, n)."
            )
        layers = []
        for index, layer in enumerate(attention):
            array = to_numpy(layer)
            if array.ndim == 4:
                if array.shape[0] != 1:
                    raise AttentionShapeError(
                        f"{name}[{index}] has shape {tuple(array.shape)}: the batch size must "
                        "be 1 (explain one input at a time)."
                    )
                array = array[0]
            if array.ndim != 3:
                raise AttentionShapeError(
                    f"{name}[{index}] has shape {tuple(array.shape)}; expected (1, H, n, n). "
                    "Make sure the model was run with output_attentions=True."
                )
            layers.append(array)
        shapes = sorted({a.shape for a in layers})
        if len(shapes) != 1:
            raise AttentionShapeError(
                f"{name} layers have shapes {shapes}; every layer must be (1, H, n, n) or "
                "(H, n, n) with the same H and n (batch size 1)."
            )
        stack = np.stack(layers)
    else:
        stack = to_numpy(attention)
        if stack.ndim == 5 and stack.shape[1] == 1:
            stack = stack[:, 0]
        elif stack.ndim == 3:
            stack = stack[None]
    if stack.ndim != 4:
        raise AttentionShapeError(
            f"{name} has shape {tuple(stack.shape)}; expected (L, H, n, n), or a tuple of "
            "(1, H, n, n) tensors, one per layer (output_attentions=True)."
        )
    if square and stack.shape[-1] != stack.shape[-2]:
        raise AttentionShapeError(
            f"{name} has shape {tuple(stack.shape)}; expected (L, H, n, n) with "
            "square per-head maps (rows = queries, columns = keys)."
        )
    if stack.size == 0:
        raise AttentionShapeError(f"{name} has shape {tuple(stack.shape)}: it holds no values.")
    stack = stack.astype(dtype, copy=False)
    if finite and not np.isfinite(stack).all():
        bad = int((~np.isfinite(stack)).sum())
        raise NonFiniteError(
            f"{name} contains {bad} NaN/inf value(s); check the model in float32 "
            "or remove the padding positions before explaining."
        )
    return stack
