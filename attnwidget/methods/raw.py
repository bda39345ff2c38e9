"""Raw attention: the attention weights themselves, per head or fused."""

from __future__ import annotations

import numpy as np

from ._graph import HeadFusion, as_attention_array, fuse_heads, resolve_layer
from .options import Option, head_fusion_option, layer_option
from .registry import ScoreContext, register


def raw_attention(
    attentions: object,
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
    maps = raw_attention(
        context.attentions,
        layer=options["layer"],
        head=options["head"],
        head_fusion=options["head_fusion"],
    )
    return context.query_row(maps)
