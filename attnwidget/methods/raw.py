"""Raw attention: the attention weights themselves, per head or fused."""

from __future__ import annotations

import numpy as np

from attnwidget._arrays import AttentionLike
from attnwidget.errors import InputError
from attnwidget.methods.graph import HeadFusion, as_attention_array, fuse_heads, resolve_layer
from attnwidget.methods.options import Option, head_fusion_option, layer_option
from attnwidget.methods.registry import ScoreContext, register


def raw_attention(
    attentions: AttentionLike,
    *,
    layer: int | None = None,
    head: int | None = None,
    head_fusion: HeadFusion = "mean",
) -> np.ndarray:
    """Raw attention maps, per head or fused over heads.

    Args:
        attentions: (L, H, n, n) array or the HF tuple of (1, H, n, n) tensors.
        layer: one layer (negative counts from the end); None keeps all layers.
        head: one head; None fuses the heads with ``head_fusion``.
        head_fusion: "mean" (default), "max" or "min" over heads.

    Returns:
        (L, n, n), or (n, n) when ``layer`` is given. Row i is what token i
        attends to.
    """
    _check_index("head", head, "None to fuse the heads with head_fusion")
    _check_index("layer", layer, "None to keep every layer")
    array = as_attention_array(attentions)
    if head is None:
        maps = fuse_heads(array, head_fusion)
    else:
        if not -array.shape[1] <= head < array.shape[1]:
            raise IndexError(f"head={head} out of range for {array.shape[1]} heads.")
        maps = array[:, head]
    if layer is not None:
        maps = maps[resolve_layer(layer, maps.shape[0])]
    return maps


def _check_index(name: str, value: object, none: str) -> None:
    """An int index or None; a str or bool would fail later as a bare comparison error."""
    if value is None or (isinstance(value, (int, np.integer)) and not isinstance(value, bool)):
        return
    raise InputError(
        f"{name}={value!r} is a {type(value).__name__}; pass an int {name} index (negative "
        f"counts from the end), or {none}."
    )


@register(
    "raw",
    needs={"attentions"},
    summary="Last layer's attention from the query row, mean over heads.",
    reference="Attention weights as read by e.g. Clark et al. (2019); see Jain & Wallace (2019).",
    options=(
        layer_option("the layer read (negative counts from the end)"),
        head_fusion_option(),
        Option("head", (int, type(None)), None, "one head instead of fusing them; None fuses"),
    ),
)
def _score_raw(context: ScoreContext) -> np.ndarray:
    options = context.options_for("raw")
    if context.attentions is None:  # keep="fused"/"rows": the query rows (L, H, n)
        return _raw_from_rows(context, options)
    maps = raw_attention(
        context.attentions,
        layer=options["layer"],
        head=options["head"],
        head_fusion=options["head_fusion"],
    )
    return context.query_row(maps)


def _raw_from_rows(context: ScoreContext, options: dict) -> np.ndarray:
    """Raw attention from the kept query rows: fusing rows equals the fused map's row."""
    rows = np.asarray(context.attention_rows, dtype=np.float64)  # (L, H, n)
    head, fusion = options["head"], options["head_fusion"]
    if head is None and fusion != "mean" and context.query_weights is not None:
        # max/min do not commute with the decoder query's weighted sum of rows.
        raise InputError(
            f"raw with head_fusion={fusion!r} on an encoder–decoder model needs keep='all' "
            "(the decoder query weighs every encoder row); pass keep='all' or use 'mean'."
        )
    if head is None:
        maps = fuse_heads(rows[:, :, None, :], fusion)[:, 0]
    else:
        if not -rows.shape[1] <= head < rows.shape[1]:
            raise IndexError(f"head={head} out of range for {rows.shape[1]} heads.")
        maps = rows[:, head]
    return maps[resolve_layer(options["layer"], maps.shape[0])]
