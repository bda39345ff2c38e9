"""Effective attention (Brunner et al., 2020, "On Identifiability in Transformers")."""

from __future__ import annotations

from typing import Any

import numpy as np

from attnwidget._arrays import AttentionLike, as_layer_stack
from attnwidget.methods.graph import as_attention_array
from attnwidget.methods.options import Option, head_fusion_option, layer_option
from attnwidget.methods.raw import raw_attention
from attnwidget.methods.registry import ScoreContext, register

#: Relative rank tolerance: singular values of T below ``max(n, d_v)·ε·σ_max``
#: count as zero, with ε of float32 (the precision the model computed T in).
RANK_EPS = float(np.finfo(np.float32).eps)


def check_values(attentions: np.ndarray, head_values: AttentionLike) -> np.ndarray:
    """``head_values`` as float64 (L, H, n, d_v), checked against (L, H, n, n) attention."""
    values = as_layer_stack(head_values, name="head_values", square=False, dtype=np.float64)
    if values.shape[:3] != attentions.shape[:3]:
        raise ValueError(
            f"head_values has shape {values.shape}; expected (L, H, n, d_v) = "
            f"({', '.join(map(str, attentions.shape[:3]))}, d_v) to match the attention."
        )
    return values


def _column_projector(values: np.ndarray, rank_rtol: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Projectors onto the column spaces of a stack of (m, d_v) matrices, and their ranks."""
    u, s, _ = np.linalg.svd(values, full_matrices=False)
    m, d_v = values.shape[-2:]
    rtol = max(m, d_v) * RANK_EPS if rank_rtol is None else rank_rtol
    kept = s > rtol * s[..., :1]  # s is sorted; a zero T keeps nothing
    u = u * kept[..., None, :]
    return u @ np.swapaxes(u, -1, -2), kept.sum(axis=-1)


def effective_attention(
    attentions: AttentionLike,
    head_values: AttentionLike,
    *,
    causal: bool | None = None,
    rank_rtol: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each head's attention without its part in the left null space of the values.

    Brunner et al. (2020): a head's output is ``A T`` with ``T`` its value
    matrix (n × d_v: the value projection of the n tokens, bias included). Any
    ``A + N`` whose rows lie in the left null space of ``T`` (``N T = 0``)
    gives the same output, so that part of ``A`` cannot be identified from it.
    Effective attention keeps what the output depends on: every row ``a`` is
    replaced by its orthogonal projection onto the column space of ``T``,
    ``a_eff = a − proj_{null(Tᵀ)} a = T T⁺ a``.

    When ``rank T = n`` (which needs n ≤ d_v) the null space is trivial and
    effective attention equals attention. It is lower than n when n > d_v,
    and also when value rows coincide (e.g. a repeated token in a model whose
    values carry no position, such as a Llama-style first layer).

    Properties (all tested): ``a_eff T = a T``; ``‖a_eff‖ ≤ ‖a‖``; entries
    can be negative; a row sums to 1 only when the all-ones vector lies in
    the column space of ``T`` (always when ``rank T = n``, generally not
    when n > d_v, although ``T = X W_V + 1 b_Vᵀ`` has a bias column term).

    Causal attention (nothing above the diagonal, or ``causal=True``): row i
    mixes only keys 0 … i, so its value matrix is ``T``'s first i + 1 rows and
    its projection is onto their column space; what row i puts on later keys
    stays 0. Brunner et al. analyse bidirectional BERT, where every row uses
    the whole ``T``.

    Args:
        attentions: (L, H, n, n) post-softmax attention (or the HF tuple).
        head_values: (L, H, n, d_v) each head's values, kv heads repeated for
            grouped-query attention.
        causal: None detects it from the weights.
        rank_rtol: singular values of ``T`` below ``rank_rtol · σ_max`` count
            as zero; None: ``max(n, d_v) · ε_float32``.

    Returns:
        ``(maps, null_dims)``: float64 (L, H, n, n) effective attention and
        int (L, H, n), the dimension of each row's null space (0: the row is
        unchanged).
    """
    array = as_attention_array(attentions)
    values = check_values(array, head_values)
    n = array.shape[-1]
    if causal is None:
        causal = n > 1 and not np.triu(array, k=1).any()
    if not causal:
        projector, rank = _column_projector(values, rank_rtol)
        maps = array @ projector  # rows a → (P a)ᵀ = aᵀ P, P symmetric
        return maps, np.broadcast_to((n - rank)[..., None], array.shape[:3]).copy()
    return _causal_rows(array, values, rank_rtol)


def _causal_rows(
    array: np.ndarray, values: np.ndarray, rank_rtol: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """Row i projected onto the column space of ``T_{≤i}``, one row at a time.

    ``P a = T G⁺ Tᵀ a`` with the Gram matrix ``G = T_{≤i}ᵀ T_{≤i}`` (d_v × d_v),
    updated row by row; its eigenvalues are the squared singular values of
    ``T_{≤i}``, so the rank cut-off is the same as with an SVD. Adding a row
    never lowers an eigenvalue and ``λ_max ≤ trace G``: once the smallest
    eigenvalue found clears ``rtol² · trace G`` in every head, G has full rank
    and a linear solve replaces the eigendecomposition (about 15× cheaper).
    """
    n, d_v = array.shape[-1], values.shape[-1]
    maps = np.zeros_like(array)
    null_dims = np.zeros(array.shape[:3], dtype=np.int64)
    gram = np.zeros((*array.shape[:2], d_v, d_v))
    trace = np.zeros(array.shape[:2])
    smallest = np.zeros(array.shape[:2])  # a lower bound of G's smallest eigenvalue
    for i in range(n):
        keys = i + 1
        row = values[:, :, i]
        gram += row[..., :, None] * row[..., None, :]
        trace += (row**2).sum(axis=-1)
        rtol = max(keys, d_v) * RANK_EPS if rank_rtol is None else rank_rtol
        t = values[:, :, :keys]
        projected = np.einsum("lhkv,lhk->lhv", t, array[:, :, i, :keys])  # Tᵀ a
        if keys >= d_v and (smallest > rtol**2 * trace).all():
            weights = np.linalg.solve(gram, projected[..., None])[..., 0]  # G⁻¹ Tᵀ a
            null_dims[:, :, i] = keys - d_v
        else:
            eigenvalues, vectors = np.linalg.eigh(gram)  # ascending
            smallest = np.maximum(eigenvalues[..., 0], 0.0)
            kept = eigenvalues > rtol**2 * eigenvalues[..., -1:]
            inverse = np.where(kept, 1.0 / np.where(kept, eigenvalues, 1.0), 0.0)
            coefficients = np.einsum("lhvr,lhv->lhr", vectors, projected) * inverse
            weights = np.einsum("lhvr,lhr->lhv", vectors, coefficients)  # G⁺ Tᵀ a
            null_dims[:, :, i] = keys - kept.sum(axis=-1)
        maps[:, :, i, :keys] = np.einsum("lhkv,lhv->lhk", t, weights)
    return maps, null_dims


def score_maps(context: ScoreContext, name: str, maps: np.ndarray) -> np.ndarray:
    """The query row of one layer's map, a head or the heads fused (as ``raw``)."""
    options = context.options_for(name)
    fused = raw_attention(
        maps, layer=options["layer"], head=options["head"], head_fusion=options["head_fusion"]
    )
    return context.query_row(fused)


def map_options() -> tuple[Option, ...]:
    """The options ``raw`` has: layer, head_fusion, head."""
    return (
        layer_option("the layer read (negative counts from the end)"),
        head_fusion_option(),
        Option("head", (int, type(None)), None, "one head instead of fusing them; None fuses"),
    )


@register(
    "effective_attention",
    needs={"attentions", "head_values"},
    summary="Attention without its part in the left null space of each head's values.",
    reference="Brunner et al. (2020), On Identifiability in Transformers (ICLR; arXiv 2019).",
    signed=True,
    options=(
        *map_options(),
        Option(
            "rank_rtol",
            (float, type(None)),
            None,
            "relative singular-value cut-off for rank T; None: max(n, d_v)·ε_float32",
        ),
    ),
)
def _score_effective_attention(context: ScoreContext) -> tuple[np.ndarray, dict[str, Any]]:
    rtol = context.options_for("effective_attention")["rank_rtol"]
    # compute_scores checked the method's needs (keep="all" for "head_values")
    assert context.attentions is not None and context.head_values is not None
    maps, null_dims = effective_attention(context.attentions, context.head_values, rank_rtol=rtol)
    details = {"maps": maps.astype(np.float32), "null_dims": null_dims}
    return score_maps(context, "effective_attention", maps), details
