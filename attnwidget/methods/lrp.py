"""AttnLRP relevance of the input tokens and of every attention map: the "lrp" method.

The model-driving part (rules, the pass, :class:`LRPResult`) lives in
:mod:`attnwidget.relevance.lrp`; this module only turns its result into scores.
To run it on a model and text in one call: :func:`attnwidget.explain_lrp`
(in :mod:`attnwidget.pipeline.lrp`, above the methods).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from attnwidget.methods.options import Option
from attnwidget.methods.registry import ScoreContext, register
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
