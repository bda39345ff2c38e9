"""Array coercion shared by every layer: attention from tensors, tuples or arrays.

One place decides what attention layouts are accepted, so the methods
(:func:`attnwidget.methods.graph.as_attention_array`) and the
bertviz-compatible views (:mod:`attnwidget.views.attention.compat`) cannot drift apart.
Nothing here imports torch: a tensor is recognised by its ``detach`` method.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from attnwidget.errors import AttentionShapeError, NonFiniteError

if TYPE_CHECKING:  # torch is not imported for a type
    import numpy.typing as npt
    import torch

#: What the array functions take as attention maps (or their gradients,
#: relevances, value vectors): a numpy array, a torch tensor (any device or
#: dtype), nested lists, or the Hugging Face / bertviz tuple of per-layer tensors.
AttentionLike: TypeAlias = "npt.ArrayLike | torch.Tensor | Sequence[torch.Tensor]"


def to_numpy(value: Any) -> np.ndarray:
    """A numpy array from a numpy-like value or a torch tensor (any device or dtype).

    Tensors are detached and converted to float32 first, so bfloat16 and GPU
    tensors work.
    """
    detach = getattr(value, "detach", None)
    if detach is not None:
        return detach().float().cpu().numpy()
    return np.asarray(value)


def describe_input(attention: Any) -> str:
    """What was given, in words, for error messages: "shape (6, 12, 58)" or
    "a tuple of 2 layers of shape (1, 12, 7, 7)" (as passed, before any reshaping)."""
    if isinstance(attention, (tuple, list)):
        kind = type(attention).__name__
        shapes = sorted({tuple(np.shape(to_numpy(layer))) for layer in attention}, key=str)
        if not shapes:
            return f"an empty {kind}"
        of = f"shape {shapes[0]}" if len(shapes) == 1 else f"shapes {', '.join(map(str, shapes))}"
        word = "layer" if len(attention) == 1 else "layers"
        return f"a {kind} of {len(attention)} {word} of {of}"
    if isinstance(attention, (str, bytes)):
        return f"a {type(attention).__name__} ({attention[:20]!r})"
    shape = tuple(np.shape(to_numpy(attention)))
    if len(shape) == 3:  # as_layer_stack reads it as one layer
        return f"shape {shape} (read as one layer: {shape[0]} heads of {shape[1]} × {shape[2]})"
    if len(shape) == 5 and shape[1] == 1:
        return f"shape {shape} (read as (L, 1, H, rows, cols))"
    return f"shape {shape}"


def non_finite_summary(
    array: np.ndarray,
    axes: tuple[str, ...] = ("layer", "head", "query", "key"),
    ids: tuple[Sequence[int] | None, ...] = (),
) -> str:
    """Where an array's NaN/inf values are: how many, and the first one's position.

    E.g. "2 NaN/inf values of 784; the first, NaN, at layer 1, head 0, query 3,
    key 5 (0-based)". ``axes`` names the trailing dimensions; ``ids`` may give,
    per leading axis, the model's numbers of the positions held (e.g. the
    layers that ``include_layers`` kept), so the message names the model's
    layer, not its place in the selection. "" when every value is finite.
    """
    bad = ~np.isfinite(array)
    count = int(bad.sum())
    if count == 0:
        return ""
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    value = float(array[first])
    kind = "NaN" if np.isnan(value) else ("+inf" if value > 0 else "-inf")
    names = ("index",) * (len(first) - len(axes)) + axes[-len(first) :]
    shown = [
        int(ids[k][i]) if k < len(ids) and ids[k] is not None else i  # type: ignore[index]
        for k, i in enumerate(first)
    ]
    where = ", ".join(f"{name} {i}" for name, i in zip(names, shown, strict=True))
    values = "value" if count == 1 else "values"
    return f"{count} NaN/inf {values} of {array.size}; the first, {kind}, at {where} (0-based)"


def as_token_list(tokens: Any, *, name: str = "tokens", expected: int | None = None) -> list[str]:
    """``tokens`` as a list of strings; a single string or a non-sequence is refused.

    A string is a sequence of characters, so without this check
    ``tokens="the keys"`` would be read as 8 one-character tokens.
    ``expected`` (the attention's positions) only enters the message.
    """
    want = (
        f"one per attention position ({expected})" if expected is not None else "one per position"
    )
    if isinstance(tokens, (str, bytes)):
        raise TypeError(
            f"{name} is one {type(tokens).__name__} ({_clip(tokens)}); pass a list of token "
            f"strings, {want}, e.g. tokenizer.convert_ids_to_tokens(inputs['input_ids'][0])."
        )
    try:
        return [str(t) for t in tokens]
    except TypeError:
        raise TypeError(
            f"{name} is a {type(tokens).__name__}; pass a list of token strings, {want}."
        ) from None


def _clip(text: str | bytes, limit: int = 40) -> str:
    shown = repr(text[:limit])
    return shown[:-1] + "…" + shown[-1] if len(text) > limit else shown


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
    what was given (as passed, before any reshaping), what was expected, and
    :class:`NonFiniteError` naming how many values are not finite and where
    the first one is (layer, head, query, key).
    """
    if isinstance(attention, (str, bytes)):
        raise AttentionShapeError(
            f"{name} is a {type(attention).__name__}; expected attention weights: an (L, H, n, "
            "n) array or a tuple of (1, H, n, n) tensors, one per layer."
        )
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
                    f"{name}[{index}] has shape {tuple(array.shape)}; expected (1, H, n, n) or "
                    "(H, n, n). Make sure the model was run with output_attentions=True."
                )
            layers.append(array)
        shapes = sorted({a.shape for a in layers})
        if len(shapes) != 1:
            raise AttentionShapeError(
                f"{name} is {describe_input(attention)}; every layer must be (1, H, n, n) or "
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
            f"{name} has {describe_input(attention)}; expected (L, H, n, n), or a tuple of "
            "(1, H, n, n) tensors, one per layer (output_attentions=True)."
        )
    if square and stack.shape[-1] != stack.shape[-2]:
        rows, cols = stack.shape[-2:]
        raise AttentionShapeError(
            f"{name} has {describe_input(attention)}: each head's map is {rows} × "
            f"{cols}; expected (L, H, n, n) with square per-head maps (n queries × n keys, "
            "one row and column per token)."
        )
    if stack.size == 0:
        raise AttentionShapeError(f"{name} has {describe_input(attention)}: it holds no values.")
    stack = stack.astype(dtype, copy=False)
    if finite and not np.isfinite(stack).all():
        raise NonFiniteError(
            f"{name} contains {non_finite_summary(stack)}; check the model in float32 "
            "or remove the padding positions before explaining."
        )
    return stack
