"""AttnLRP relevance of the input tokens and of every attention map: the "lrp" method.

The model-driving part (rules, the pass, :class:`LRPResult`) lives in
:mod:`attnwidget.relevance.lrp`; this module only turns its result into scores.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from attnwidget.methods.options import Option
from attnwidget.methods.registry import ScoreContext, get_method, register
from attnwidget.relevance.lrp import DEFAULT_EPSILON, run_lrp

Embeddings = Literal["token", "input"]


@register(
    "lrp",
    needs={"target_score"},
    summary="AttnLRP: the target logit redistributed to the tokens, layer by layer.",
    reference=(
        "Bach et al. (2015), LRP, PLOS ONE; Achtibat et al. (2024), AttnLRP: "
        "Attention-Aware Layer-Wise Relevance Propagation for Transformers, ICML."
    ),
    signed=True,
    options=(
        Option(
            "epsilon",
            float,
            DEFAULT_EPSILON,
            "ε of the ε-rule on linear layers and norms (0 is LRP-0)",
            check=lambda v: v >= 0,
            requirement="≥ 0",
        ),
        Option(
            "embeddings",
            str,
            "token",
            "score the token embedding's share, or token + position + segment ('input')",
            choices=("token", "input"),
        ),
    ),
)
def _score_lrp(context: ScoreContext) -> tuple[np.ndarray, dict[str, Any]]:
    """Signed token relevance; details hold the attention-map relevance for paths.

    Options: ``epsilon`` (default 1e-6) and ``embeddings``: "token" (default,
    the token embedding's share) or "input" (token + position + segment
    embeddings at each position).
    """
    options = context.options_for("lrp")
    embeddings: Embeddings = options["embeddings"]
    result = run_lrp(context.target_score, epsilon=options["epsilon"])
    scores = result.token_relevance if embeddings == "token" else result.input_relevance
    return scores, result.details()


def lrp(model: Any, tokenizer: Any, text: Any, **kwargs: Any) -> Any:
    """AttnLRP token relevance for one text (or a list): ``explain(..., methods=["lrp"])``.

    Keyword options of the method (``epsilon``, ``embeddings``) are taken
    here directly; everything else (``target``, ``query_index``,
    ``text_pair``, …) goes to :func:`attnwidget.explain`. The scores are in
    ``exp.scores["lrp"]``; ``exp.details["lrp"]`` holds the relevance of every
    attention map (L, H, n, n), the per-layer residual relevance (L+1, n) and
    the conservation terms (see :class:`LRPResult`).

    What the score means: ``score_j`` is the share of the target logit that
    the AttnLRP rules assign to token j's embedding; positive supports the
    target, negative speaks against it, and the scores add up to the logit
    minus what biases, position embeddings and the softmax rule absorbed
    (``details["unexplained"]``, ``details["position_relevance"]``).

    Where it can mislead: the rules are a choice (attention and gating
    products split relevance half and half whatever the factors' roles); the
    softmax rule is not conservative and can absorb a large share of the logit
    (on the shipped demo models, median 55 % for the encoder and 34 % for the
    causal LM, so the token scores cover only 42 % / 57 % of it), which
    ``details["softmax_absorbed"]`` shows per layer; relevance explains the
    logit, not the probability, so it says nothing about competing classes;
    and, like every gradient-based score, it describes the model at this one
    input, not what would happen if a token were removed.
    """
    from attnwidget.pipeline.explain import explain

    names = [option.name for option in get_method("lrp").options]
    options = {k: kwargs.pop(k) for k in names if k in kwargs}
    return explain(
        model, tokenizer, text, methods=["lrp"], method_options={"lrp": options}, **kwargs
    )
