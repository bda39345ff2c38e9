"""Blank-out ablation (Abnar & Zuidema, 2020)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attnwidget.errors import InputError
from attnwidget.methods.options import AT_LEAST_ONE, Option
from attnwidget.methods.registry import ScoreContext, register

#: ``probability(input_ids (B, n)) -> target probability (B,)``.
ProbabilityFn = Callable[[np.ndarray], np.ndarray]


def blank_out(
    probability: ProbabilityFn,
    input_ids: np.ndarray,
    *,
    blank_id: int,
    positions: np.ndarray | None = None,
    batch_size: int = 64,
) -> np.ndarray:
    """Drop in target probability when each token is replaced by a blank token.

    Abnar & Zuidema (2020) use this as the importance ground truth: token j's
    score is ``p(x) − p(x with token j replaced by UNK/MASK)``.

    Args:
        probability: maps input ids (B, n) to the target's probability (B,).
        input_ids: (n,) token ids.
        blank_id: the id that replaces each token (UNK or MASK).
        positions: (n,) bool mask of the positions to blank (default: all);
            the others score 0 (special tokens are usually left alone).

    Returns:
        (n,) signed scores (positive = the token supported the target).
    """
    ids = np.asarray(input_ids, dtype=np.int64)
    if ids.ndim != 1 or ids.size == 0:
        raise InputError(f"input_ids must be a non-empty (n,) array, got shape {ids.shape}.")
    mask = np.ones(ids.size, bool) if positions is None else np.asarray(positions, bool)
    targets = np.flatnonzero(mask)
    base = float(np.asarray(probability(ids[None]))[0])
    scores = np.zeros(ids.size)
    for start in range(0, targets.size, batch_size):
        chunk = targets[start : start + batch_size]
        variants = np.repeat(ids[None], chunk.size, axis=0)
        variants[np.arange(chunk.size), chunk] = blank_id
        scores[chunk] = base - np.asarray(probability(variants), dtype=np.float64)
    return scores


@register(
    "blank_out",
    needs={"target_probability"},
    summary="Drop in target probability when the token is replaced by UNK/MASK.",
    reference="Abnar & Zuidema (2020), Quantifying Attention Flow in Transformers.",
    signed=True,
    options=(
        Option("batch_size", int, 64, "blanked variants per model call", **AT_LEAST_ONE),
        Option(
            "baseline",
            (str, type(None)),
            None,
            "images only: what replaces each patch, 'mean' (None: the image's mean "
            "colour), 'black' or 'blurred'; text tokens are replaced by UNK/MASK",
            check=lambda v: v in ("black", "blurred", "mean"),
            requirement="'black', 'blurred' or 'mean'",
        ),
    ),
)
def _score_blank_out(context: ScoreContext) -> np.ndarray:
    options = context.options_for("blank_out")
    assert context.target_probability is not None  # compute_scores checked the method's needs
    if context.pixels is not None:  # occlusion: one patch at a time
        from attnwidget.methods.pixels import patch_occlusion, pixel_baseline

        assert context.patch_size is not None  # images carry their patch size

        kind = options["baseline"] or "mean"
        baseline = pixel_baseline(context.pixels, kind, black=context.black_pixels)
        patches = patch_occlusion(
            context.target_probability,
            context.pixels,
            baseline,
            int(context.patch_size),
            batch_size=options["batch_size"],
        )
        return context.patch_token_scores(patches)
    if options["baseline"] is not None:
        raise InputError(
            f"blank_out baseline={options['baseline']!r} is for images; text tokens are "
            "replaced by the tokenizer's UNK (or MASK) token."
        )
    if context.input_ids is None or context.blank_token_id is None:
        raise InputError("blank_out needs input ids and a blank (UNK/MASK) token id.")
    return blank_out(
        context.target_probability,
        context.input_ids,
        blank_id=context.blank_token_id,
        positions=context.keep_mask,
        batch_size=options["batch_size"],
    )
