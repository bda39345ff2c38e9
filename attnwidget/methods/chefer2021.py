"""Relevance × gradient rollout (Chefer, Gur & Wolf, CVPR 2021): "chefer2021".

The name means the paper's method with the paper's relevance: ``R^{A_l}``
comes from the authors' own LRP rules (:mod:`attnwidget.relevance.chefer`),
checked against an independent re-implementation of their algorithm
(``tests/test_chefer2021_reference.py``). ``relevance="attnlrp"`` swaps in
AttnLRP's relevance (Achtibat et al., ICML 2024), the relevance of "lrp".

Row normalisation follows the authors' code per modality: their BERT code
divides each ``I + Ā_l`` by its row sums, their ViT code
(``baselines/ViT/ViT_LRP.py``, ``compute_rollout_attention``) has that line
commented out and multiplies the un-normalised ``I + Ā_l``. So text is
normalised and images are not by default; ``row_normalise`` picks the other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnwidget._arrays import AttentionLike
from attnwidget.errors import AttentionShapeError, InputError
from attnwidget.methods.graph import as_attention_array
from attnwidget.methods.options import Option
from attnwidget.methods.registry import ScoreContext, register
from attnwidget.relevance.chefer import run_chefer_relevance
from attnwidget.relevance.lrp import run_lrp

#: Default first layer: 0, all layers (see :func:`chefer2021` for the authors' choices).
DEFAULT_START_LAYER = 0


def chefer2021(
    gradients: AttentionLike,
    relevances: AttentionLike,
    *,
    start_layer: int = DEFAULT_START_LAYER,
    row_normalise: bool = True,
) -> np.ndarray:
    """Chefer, Gur & Wolf (CVPR 2021), "Transformer interpretability beyond
    attention visualization": relevance × gradient, rolled out over the layers.

    Per layer ``Ā_l = I + E_h[(∇A_l ⊙ R^{A_l})^+]``, each row divided by its
    sum (as in the authors' BERT code; ``row_normalise=False``: not, as in
    their ViT code), then ``C = Ā_L ⋯ Ā_s`` with later layers on
    the left (s = ``start_layer``; the layers below s are left out, as in the
    authors' rollout). Row i of C says how much each input token contributes
    to position i's representation; the query row is the score.

    Args:
        gradients: (L, H, n, n) plain gradient of the target logit with respect
            to each attention map (or the HF tuple layout).
        relevances: (L, H, n, n) LRP relevance of each attention map, for a
            unit relevance at the target (the authors start their relevance
            propagation from a one-hot vector, so its scale is that of 1).
        start_layer: first layer included, 0-based; negative counts from the
            end. Default 0, all layers: the rollout as the paper writes it.
            The authors' own choices differ per model: their BERT example
            uses only the last layer (``start_layer=11`` of 12, here ``-1``),
            their ViT code all layers from ``start_layer=1`` (the first
            layer's map left out). On the shipped demo models
            (``bench/faithfulness.py``, 200 held-out sentences, measured with
            AttnLRP's relevance before the paper's rules became the default)
            all layers did best for the BERT-style encoder (subject top-1
            79 % vs 24 % with ``-1``; positive-perturbation AUC 45 vs 55,
            random 67), while for the GPT-2-style LM only the last layer gave
            a useful map (62 % vs 1 %; AUC 38 vs 55, random 53): there, the
            lower layers' attention to the first token dominates the
            product. Try ``start_layer=-1`` on decoders.
        row_normalise: divide each ``Ā_l``'s rows by their sums (default, the
            authors' BERT code). False multiplies ``I + E_h[…]`` as it is, as
            the authors' ViT code does (its normalising line is commented
            out); the method "chefer2021" picks False for images.

    Returns:
        (n, n) float64 matrix C; with ``row_normalise`` every row sums to 1,
        without it every row sums to at least 1.

    Where it can mislead: the positive part keeps only evidence *for* the
    target, so the score cannot show tokens that speak against it; the
    identity added per layer gives the query's own position a large share in
    every row (the authors' BERT demo overwrote C[0, 0] with the row minimum
    for display; we do not).
    """
    maps = chefer2021_maps(
        gradients, relevances, start_layer=start_layer, row_normalise=row_normalise
    )
    result = np.eye(maps.shape[-1])
    for layer_map in maps:
        result = layer_map @ result
    return result


def chefer2021_maps(
    gradients: AttentionLike,
    relevances: AttentionLike,
    *,
    start_layer: int = DEFAULT_START_LAYER,
    row_normalise: bool = True,
) -> np.ndarray:
    """The per-layer factors of :func:`chefer2021`: (L, n, n), ``Ā_l`` (rows
    normalised unless ``row_normalise`` is False).

    Layers below ``start_layer`` are the identity, so the product of the
    factors (later layers on the left) is :func:`chefer2021`'s matrix, the
    same as the authors' product that starts at ``Ā_s``; the flow view draws
    its paths from them.
    """
    grad = as_attention_array(gradients, name="gradients")
    rel = as_attention_array(relevances, name="relevances")
    if grad.shape != rel.shape:
        raise AttentionShapeError(
            f"gradients have shape {grad.shape} but relevances {rel.shape}; pass both per "
            "layer and head in the same (L, H, n, n) layout."
        )
    layers, n = grad.shape[0], grad.shape[-1]
    start = start_layer + layers if start_layer < 0 else start_layer
    if not 0 <= start < layers:
        raise IndexError(f"start_layer={start_layer} out of range for {layers} layers.")
    maps = np.broadcast_to(np.eye(n), (layers, n, n)).copy()
    for layer in range(start, layers):
        product = np.multiply(grad[layer], rel[layer])
        weighted = np.clip(product, 0.0, None, out=product).mean(axis=0)
        weighted[np.diag_indices(n)] += 1.0
        maps[layer] = weighted / weighted.sum(axis=-1, keepdims=True) if row_normalise else weighted
    return maps


#: Where ``R^{A_l}`` comes from: "paper" (the authors' own LRP rules, default)
#: or "attnlrp" (AttnLRP's, the relevance of the "lrp" method).
RELEVANCES = ("paper", "attnlrp")
DEFAULT_RELEVANCE = "paper"


def row_normalised_by_default(image: bool) -> bool:
    """The authors' choice per modality: rows normalised for text (their BERT
    code), not for images (their ViT code comments the normalisation out)."""
    return not image


@register(
    "chefer2021",
    needs={"attention_grads", "target_score"},
    summary=(
        "Relevance × gradient of every attention map, rolled out over the layers; "
        "relevance by the paper's LRP rules (relevance='attnlrp': AttnLRP's)."
    ),
    reference=(
        "Chefer, Gur & Wolf (2021), Transformer Interpretability Beyond Attention "
        "Visualization, CVPR; option relevance='attnlrp': AttnLRP (Achtibat et al., 2024, ICML)."
    ),
    options=(
        Option(
            "start_layer",
            int,
            DEFAULT_START_LAYER,
            "first layer of the rollout, 0-based, negative from the end (0: all layers; "
            "the authors' BERT demo: -1, the last layer; their ViT: from layer 1)",
        ),
        Option(
            "relevance",
            str,
            DEFAULT_RELEVANCE,
            "R^A from the paper's own LRP rules ('paper') or from AttnLRP ('attnlrp')",
            choices=RELEVANCES,
        ),
        Option(
            "epsilon",
            (float, type(None)),
            None,
            "ε of the AttnLRP pass, relevance='attnlrp' only (None: its default)",
            check=lambda v: v >= 0,
            requirement="≥ 0",
        ),
        Option(
            "row_normalise",
            (bool, type(None)),
            None,
            "divide each layer's I + Ā_l by its row sums (None: as the authors per modality, "
            "True for text as their BERT code, False for images as their ViT code)",
        ),
    ),
)
def _score_chefer2021(context: ScoreContext) -> tuple[np.ndarray, dict[str, Any]]:
    """Options: ``start_layer`` (default 0, all layers), ``relevance`` ("paper",
    default, or "attnlrp"), with "attnlrp" only ``epsilon`` of its pass, and
    ``row_normalise`` (None: True for text, False for images, as the authors).

    ``relevance="paper"``: ``R^{A_l}`` from one pass of the authors' rules
    (:func:`attnwidget.relevance.chefer.run_chefer_relevance`: α1β0 on linear
    layers, LayerNorm/GELU/softmax passed unchanged, residual additions split
    and re-normalised, attention matmuls halved), started from a one-hot at
    the target as in their code. ``relevance="attnlrp"``: from the AttnLRP
    pass (the same one as "lrp"), divided by the target logit so that it is
    the relevance of a unit target. ``∇A_l`` is the capture's plain gradient.

    Details: ``start_layer``, ``relevance`` (which one was used),
    ``row_normalise`` (the one used),
    ``layer_maps`` (L, n, n), the factors ``Ā_l`` (identity below
    ``start_layer``; the flow view draws its paths from them) and
    ``attention_relevance`` (L, H, n, n), the ``R^{A_l}`` used.
    """
    options = context.options_for("chefer2021")
    start_layer, relevance, epsilon = (
        options["start_layer"],
        options["relevance"],
        options["epsilon"],
    )
    if relevance == "paper":
        if epsilon is not None:
            raise InputError(
                "method_options['chefer2021']['epsilon'] is an option of the AttnLRP pass; "
                "add 'relevance': 'attnlrp' to use it (the paper's rules have no ε)."
            )
        unit = run_chefer_relevance(context.target_score).attention_relevance
    else:
        extra = {} if epsilon is None else {"epsilon": epsilon}
        result = run_lrp(context.target_score, **extra)
        y = result.target_score
        unit = result.attention_relevance / (y if abs(y) > 1e-12 else np.copysign(1e-12, y))
    assert context.attention_grads is not None  # compute_scores checked the method's needs
    normalise = options["row_normalise"]
    if normalise is None:  # images: their ViT code; text: their BERT code
        normalise = row_normalised_by_default(image=context.pixels is not None)
    maps = chefer2021_maps(
        context.attention_grads, unit, start_layer=start_layer, row_normalise=normalise
    )
    matrix = np.eye(maps.shape[-1])
    for layer_map in maps:
        matrix = layer_map @ matrix
    # The factors travel in details so the flow view can draw chefer2021 paths.
    details = {
        "start_layer": start_layer,
        "relevance": relevance,
        "row_normalise": normalise,
        "layer_maps": maps,
        "attention_relevance": unit.astype(np.float32),  # R^{A_l} for a unit target
    }
    return context.query_row(matrix), details
