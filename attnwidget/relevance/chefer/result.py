"""One pass of the paper's rules for one captured example: :func:`run_chefer_relevance`."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attnwidget.capture.state import capture_ready
from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.chefer.engine import CheferRecorder, chefer_rules


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


def check_runs(
    model: Any,
    length: int = 3,
    rules: Callable[[Any], AbstractContextManager[Any]] = chefer_rules,
) -> None:
    """Raise what a chefer2021 pass on ``model`` would raise, from one short forward.

    ``rules(model)`` runs its static checks first (for :func:`.chefer_rules`:
    transformers version, not encoder-decoder, a paper rule for every leaf
    module); then one forward pass on ``length`` token ids with the rules
    installed, whose path check refuses operations without a rule (e.g.
    parallel residual streams). No backward pass; the model is restored as
    after any pass (:func:`attnwidget.capture.capture_ready`). Any rules
    context whose refusals come from the forward works the same way
    (:func:`attnwidget.relevance.lrp.lrp_rules`).

    Raises:
        ModelNotSupportedError: the reason, as a pass would give it.
    """
    embeddings = model.get_input_embeddings()
    with capture_ready(model), rules(model):
        ids = torch.arange(1, length + 1, device=embeddings.weight.device)[None]
        with torch.no_grad():
            # the relevance path starts at embeddings that need a gradient, as in a pass
            embeds = embeddings(ids).detach()
        model(
            inputs_embeds=embeds.requires_grad_(True),
            attention_mask=torch.ones_like(ids),
            return_dict=True,
        )
