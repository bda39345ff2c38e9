""":func:`explain_lrp`: run a model on a text and explain it with AttnLRP, in one call.

The registered method (``"lrp"``, its options and scorer) lives in
:mod:`attnwidget.methods.lrp` with the other methods, which take arrays; this
function drives a model, so it lives here with :func:`attnwidget.explain`.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

from attnwidget._keywords import unknown_keywords_message
from attnwidget.methods import get_method
from attnwidget.pipeline.explain import explain
from attnwidget.results.explanation import Explanation

#: Keywords :func:`explain_lrp` sets itself, so a caller may not pass them.
_FIXED = ("methods", "method_options")


def explain_lrp(
    model: Any,
    tokenizer: Any,
    text: Any,
    *,
    epsilon: float | None = None,
    embeddings: str | None = None,
    **kwargs: Any,
) -> Explanation | list[Explanation]:
    """AttnLRP token relevance for one text (or a list): ``explain(..., methods=["lrp"])``.

    AttnLRP: Achtibat et al. (2024), ICML, after the LRP of Bach et al. (2015).

    Args:
        model, tokenizer, text: as for :func:`attnwidget.explain`.
        epsilon: ε of the ε-rule on linear layers and norms (None: the
            method's default, 1e-6; 0 is LRP-0).
        embeddings: ``"token"`` (None, the default: the token embedding's
            share) or ``"input"`` (token + position + segment embeddings).
        **kwargs: the other keywords of :func:`attnwidget.explain`
            (``target``, ``query_index``, ``text_pair``, …).

    The scores are in ``exp.scores["lrp"]``; ``exp.details["lrp"]`` holds the
    relevance of every attention map (L, H, n, n), the per-layer residual
    relevance (L+1, n) and the conservation terms (see
    :class:`~attnwidget.relevance.lrp.LRPResult`).

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
    _check_keywords(kwargs)
    given = {"epsilon": epsilon, "embeddings": embeddings}
    options = {name: value for name, value in given.items() if value is not None}
    names = {option.name for option in get_method("lrp").options}
    assert set(given) == names, "explain_lrp's options must be the lrp method's"
    return explain(
        model, tokenizer, text, methods=["lrp"], method_options={"lrp": options}, **kwargs
    )


def _check_keywords(kwargs: dict[str, Any]) -> None:
    fixed = [name for name in _FIXED if name in kwargs]
    if fixed:
        raise TypeError(
            f"explain_lrp() computes only lrp and takes its options as keywords "
            f"(epsilon=, embeddings=); drop {', '.join(f'{n}=' for n in fixed)}, or call "
            "attnwidget.explain(..., methods=[...], method_options=...) for other methods."
        )
    valid = ["epsilon", "embeddings"] + [
        name
        for name in inspect.signature(explain).parameters
        if name not in ("model", "tokenizer", "text", *_FIXED)
    ]
    unknown = [name for name in kwargs if name not in valid]
    if unknown:
        raise TypeError(unknown_keywords_message("explain_lrp", unknown, valid))


def lrp(model: Any, tokenizer: Any, text: Any, **kwargs: Any) -> Explanation | list[Explanation]:
    """Deprecated name of :func:`explain_lrp` (removed in the next release)."""
    warnings.warn(
        "attnwidget.lrp() is deprecated: use attnwidget.explain_lrp() (the same arguments); "
        "the old name is removed in the next release.",
        DeprecationWarning,
        stacklevel=2,
    )
    return explain_lrp(model, tokenizer, text, **kwargs)
