"""How far explanation methods agree on one input: the "disagreement problem".

Krishna et al. (2022, "The Disagreement Problem in Explainable Machine
Learning") compare the attributions of several methods for the same
prediction by rank correlation and by the overlap of their top-k features.
Here, for the token scores of several methods on one input:

* :func:`top_k_overlap`: |top_k(a) ∩ top_k(b)| / k, the share of one method's k
  top-ranked tokens the other also ranks in its top k (Krishna et al.'s
  "feature agreement"); ties go to the earlier position, as in
  :func:`attnwidget.metrics.top_k_mask`.
* :func:`normalised_ranks`: each token's rank in [0, 1] (0 = ranked first,
  highest score; ties share their mean rank).
* :func:`rank_spread`: per token, the standard deviation over methods of its
  normalised rank: 0 where every method puts the token at the same place, up
  to 0.5 where half the methods rank it first and half last.

Spearman's ρ and Kendall's τ-b are :func:`attnwidget.metrics.rank_agreement`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnwidget.errors import InputError
from attnwidget.metrics import _checks
from attnwidget.metrics.agreement import rank_agreement
from attnwidget.metrics.faithfulness import rationale_size

#: The top-k overlaps :func:`pair_agreement` reports, by name.
TOP_K: dict[str, int | str] = {"top1": 1, "top3": 3, "top5": 5, "top20%": "20%"}
#: Every figure of :func:`pair_agreement`, in display order.
AGREEMENT_METRICS: tuple[str, ...] = ("spearman", "kendall", *TOP_K)


def top_k_size(k: int | str, count: int) -> int:
    """How many tokens ``k`` means among ``count``: an int (at most ``count``), or a
    share such as ``"20%"`` (``⌈0.2·count⌉``, at least 1)."""
    if isinstance(k, str):
        text = k.strip()
        try:
            share = float(text[:-1]) / 100 if text.endswith("%") else float("nan")
        except ValueError:
            share = float("nan")
        if not 0 < share <= 1:
            raise InputError(f"k={k!r}: pass a token count (an int ≥ 1) or a share like '20%'.")
        return max(1, rationale_size(share, count))
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k={k!r}: pass a token count (an int ≥ 1) or a share like '20%'.")
    return min(int(k), count)


def _top(values: np.ndarray, size: int) -> set[int]:
    return {int(i) for i in np.argsort(-values, kind="stable")[:size]}


def top_k_overlap(scores_a: Any, scores_b: Any, k: int | str) -> float:
    """The share of ``a``'s top-k tokens that are also in ``b``'s top k (symmetric).

    ``k`` is a count (capped at the number of tokens) or a share (``"20%"``).
    """
    a = _checks.vector(scores_a, "scores_a", min_size=1)
    b = _checks.vector(scores_b, "scores_b")
    _checks.same_length(a, b, ("scores_a", "scores_b"))
    size = top_k_size(k, a.size)
    return len(_top(a, size) & _top(b, size)) / size


def pair_agreement(scores_a: Any, scores_b: Any) -> dict[str, float]:
    """Every agreement figure of two methods' scores on the same tokens.

    ``spearman`` and ``kendall`` (τ-b; NaN when either side is constant,
    :func:`attnwidget.metrics.rank_agreement`) and the top-k overlaps of
    :data:`TOP_K`.
    """
    ranks = rank_agreement(scores_a, scores_b)
    out = {"spearman": ranks.spearman, "kendall": ranks.kendall}
    for name, k in TOP_K.items():
        out[name] = top_k_overlap(scores_a, scores_b, k)
    return out


def normalised_ranks(scores: Any) -> np.ndarray:
    """float (n,): each token's rank by score, highest first, scaled to [0, 1].

    Ties share their mean rank (scipy's ``rankdata(method="average")``); one
    token alone has rank 0.
    """
    values = _checks.vector(scores, "scores", min_size=1)
    if values.size == 1:
        return np.zeros(1)
    from scipy import stats

    return (stats.rankdata(-values, method="average") - 1) / (values.size - 1)


def rank_spread(scores: Any) -> np.ndarray:
    """float (n,): per token, the standard deviation (over methods) of its normalised rank.

    ``scores`` is (methods, n), one row per method.
    """
    table = np.asarray(scores, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] < 1 or table.shape[1] < 1:
        raise InputError(
            f"scores must be (methods, tokens) with at least one of each; got shape {table.shape}."
        )
    ranks = np.stack([normalised_ranks(row) for row in table])
    return ranks.std(axis=0)
