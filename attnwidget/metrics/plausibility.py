"""Plausibility: how well an explanation matches the tokens people marked, as in
ERASER (DeYoung et al., 2020, ACL) and ferret (Attanasio et al., 2023).

* :func:`token_prf`: precision, recall and F1 of a hard rationale's tokens.
* :func:`iou_f1`: the same over spans, a predicted span counting as found when
  its token IOU with a human span is at least 0.5.
* :func:`auprc`: average precision of soft scores against the human tokens.
* :func:`discretize`: a hard rationale from soft scores, the top-k positive
  tokens (ferret takes k = the mean length of the human rationales).

**Empty sets.** When one side is empty a ratio can be 0/0. Here: when both the
prediction and the human rationale are empty, precision = recall = F1 = 1
(nothing was to be found and nothing was claimed: they agree); when only one
is empty, all three are 0 (0/0 is read as 0, as ERASER's instance scores do).
F1 is 0 whenever precision + recall is 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from attnwidget.errors import InputError
from attnwidget.metrics import _checks
from attnwidget.metrics.segmentation import average_precision


class PRF(NamedTuple):
    """Precision, recall and F1 in [0, 1]."""

    precision: float
    recall: float
    f1: float


def _prf(hits: int, predicted: int, human: int) -> PRF:
    if predicted == 0 and human == 0:
        return PRF(1.0, 1.0, 1.0)
    precision = hits / predicted if predicted else 0.0
    recall = hits / human if human else 0.0
    total = precision + recall
    return PRF(precision, recall, 2 * precision * recall / total if total else 0.0)


def token_prf(predicted: Any, human: Any) -> PRF:
    """Token precision / recall / F1 of ``predicted`` (bool (n,)) against ``human`` (bool (n,)).

    precision = |P ∩ H| / |P|, recall = |P ∩ H| / |H|, F1 their harmonic mean;
    empty sets as in the module's docstring.
    """
    p = _checks.mask(predicted, "predicted")
    h = _checks.mask(human, "human", size=p.size)
    return _prf(int((p & h).sum()), int(p.sum()), int(h.sum()))


def _spans(value: Any, name: str) -> list[tuple[int, int]]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise InputError(
            f"{name} must be a sequence of (start, end) token spans; got {_checks.describe(value)}."
        )
    out: list[tuple[int, int]] = []
    for span in value:
        if (
            not isinstance(span, (Sequence, np.ndarray))
            or len(span) != 2
            or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in span)
        ):
            raise InputError(f"each of {name} must be (start, end) integers; got {span!r}.")
        start, end = int(span[0]), int(span[1])
        if not 0 <= start < end:
            raise InputError(
                f"{name} holds ({start}, {end}); a span needs 0 ≤ start < end (end exclusive)."
            )
        if (start, end) not in out:  # a set of spans, as ERASER keeps them
            out.append((start, end))
    return out


def span_iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Token IOU of two spans ``(start, end)`` (end exclusive): overlap / union."""
    overlap = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    return overlap / ((a[1] - a[0]) + (b[1] - b[0]) - overlap)


def iou_f1(predicted_spans: Any, human_spans: Any, *, threshold: float = 0.5) -> PRF:
    """Span precision / recall / F1: a predicted span matches a human one at IOU ≥ ``threshold``.

    Spans are ``(start, end)`` token positions, end exclusive (ERASER's
    ``start_token`` / ``end_token``); a repeated span counts once.

    **Matching.** Each human span is matched at most once and each predicted
    span at most once (a maximum one-to-one matching over the pairs at or
    above the threshold); precision = matches / predicted spans, recall =
    matches / human spans. ERASER's code instead counts every predicted span
    whose best IOU reaches the threshold, for precision and for recall alike;
    the two agree unless two predicted spans reach the same human span, which
    at 0.5 takes two halves of it exactly (ERASER's recall can then pass 1).
    Empty sets as in the module's docstring.
    """
    threshold = _checks.fraction(threshold, "threshold", low_open=True)
    predicted = _spans(predicted_spans, "predicted_spans")
    human = _spans(human_spans, "human_spans")
    if not predicted or not human:
        return _prf(0, len(predicted), len(human))
    eligible = np.array([[span_iou(p, h) >= threshold for h in human] for p in predicted])
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(eligible.astype(np.float64), maximize=True)
    return _prf(int(eligible[rows, cols].sum()), len(predicted), len(human))


def mask_spans(mask: Any) -> list[tuple[int, int]]:
    """The runs of True in a bool mask as ``(start, end)`` spans (end exclusive)."""
    values = _checks.mask(mask, "mask")
    edges = np.diff(np.r_[0, values.astype(np.int8), 0])
    return list(
        zip(
            np.flatnonzero(edges == 1).tolist(),
            np.flatnonzero(edges == -1).tolist(),
            strict=True,
        )
    )


def auprc(scores: Any, human: Any) -> float:
    """Average precision of soft ``scores`` (n,) ranking the ``human`` tokens (bool (n,)).

    ``AP = Σ_k (R_k − R_{k−1}) P_k`` over one threshold per distinct score,
    from the highest down: tokens with equal scores enter together (a tie
    is one step, with the precision of the whole group), so the result does
    not depend on the tokens' order. This is scikit-learn's
    ``average_precision_score`` and ERASER's ``average_precision`` entry; ERASER's
    ``auprc`` entry is instead the trapezoid area under the precision–recall
    curve, which interpolates linearly and reads higher.

    No human token: NaN (recall is undefined; ERASER leaves such documents
    out of its average precision). All tokens human: 1.
    """
    values = _checks.vector(scores, "scores")
    labels = _checks.mask(human, "human", size=values.size)
    if not labels.any():
        return float("nan")
    return average_precision(values, labels)


def discretize(scores: Any, k: int) -> np.ndarray:
    """bool (n,): the ``k`` highest-scored tokens among those scored above 0.

    Fewer than ``k`` are chosen when fewer than ``k`` scores are positive
    (ferret's top-k *positive* rationale); ties go to the earlier position.
    ferret sets ``k`` to the mean length of the human rationales, e.g.
    ``round(np.mean([h.sum() for h in human_masks]))``.
    """
    values = _checks.vector(scores, "scores")
    k = _checks.integer(k, "k", minimum=0)
    order = np.argsort(-values, kind="stable")[:k]
    out = np.zeros(values.size, dtype=bool)
    out[order[values[order] > 0]] = True
    return out
