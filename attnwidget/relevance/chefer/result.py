"""One pass of the paper's rules for one captured example: :func:`run_chefer_relevance`."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ModelNotSupportedError
from .engine import CheferRecorder, chefer_rules


@dataclass
class CheferRelevance:
    """Relevance of Chefer, Gur & Wolf (CVPR 2021) for one input and target.

    The pass starts from a one-hot relevance at the target logit (1 there, not
    the logit's value), as the authors' code does; every array is a share of
    that 1 (float64).

    Attributes:
        attention_relevance: (L, H, n, n) ``R^{A_l}``, the halved relevance of
            each attention weight after the ``A V`` split (their "cam").
        block_relevance: (L, n) relevance of each block's input, summed over
            features; the rules conserve it, so every row sums to ≈ 1.
        target_score: the target logit (for reference; not the start value).
    """

    attention_relevance: np.ndarray
    block_relevance: np.ndarray
    target_score: float


def run_chefer_relevance(target_score: Any) -> CheferRelevance:
    """Run one pass of the paper's rules for a captured example (cached per example).

    Args:
        target_score: the ``target_score`` of an :class:`AttentionRecord` or
            :class:`ScoreContext` from :func:`attnwidget.explain` (a
            :class:`~attnwidget.relevance.rerun.TargetScore`).

    Raises:
        ModelNotSupportedError: without a model, or for a structure the
            paper's rules do not cover (the message names it).
    """
    rerun = getattr(target_score, "rerun", None)
    if rerun is None:
        raise ModelNotSupportedError(
            "chefer2021 re-runs the model with the paper's rules installed, so it needs a "
            "model: use attnwidget.explain(model, tokenizer, text, methods=['chefer2021'])."
        )
    cached = _CACHE.get(target_score)
    if cached is None:
        run = rerun(chefer_rules)
        recorder: CheferRecorder = run.state
        n = run.attentions.shape[-1]
        blocks = [
            np.zeros(n) if r is None else r.detach().double().cpu().numpy()[0]
            for r in recorder.block_relevance
        ]
        cached = CheferRelevance(
            # The gradient at each returned attention map is its relevance.
            attention_relevance=run.attention_grads.astype(np.float64),
            block_relevance=np.stack(blocks),
            target_score=run.value,
        )
        _CACHE[target_score] = cached
    return cached


_CACHE: weakref.WeakKeyDictionary[Any, CheferRelevance] = weakref.WeakKeyDictionary()
