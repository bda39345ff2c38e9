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

**ERASER's own code.** Where our definition differs from ERASER's code
(jayded/eraserbenchmark, ``rationale_benchmark/metrics.py``), the function
takes ``convention="eraser"`` to reproduce theirs, for comparing with
published numbers: :func:`iou_f1` (how predicted spans are counted) and
:func:`auprc` / :func:`mean_auprc` (which documents the data-set mean skips).
"""

from __future__ import annotations

import math
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


#: ``convention``: "standard" (our definition) or "eraser" (ERASER's code).
CONVENTIONS = ("standard", "eraser")


def _convention(value: Any) -> str:
    if value not in CONVENTIONS:
        raise InputError(
            f"convention={value!r} is not known; use 'standard' (the default) or 'eraser' "
            "(ERASER's code, to compare with its published numbers)."
        )
    return str(value)


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


def iou_f1(
    predicted_spans: Any, human_spans: Any, *, threshold: float = 0.5, convention: str = "standard"
) -> PRF:
    """Span precision / recall / F1: a predicted span matches a human one at IOU ≥ ``threshold``.

    Spans are ``(start, end)`` token positions, end exclusive (ERASER's
    ``start_token`` / ``end_token``); a repeated span counts once.

    **Matching.** Each human span is matched at most once and each predicted
    span at most once (a maximum one-to-one matching over the pairs at or
    above the threshold); precision = matches / predicted spans, recall =
    matches / human spans. Empty sets as in the module's docstring.

    ``convention="eraser"``: as ERASER's ``partial_match_score`` (for one
    document its micro and macro figures are the same): every predicted span
    whose best IOU with any human span reaches the threshold counts as a hit,
    for precision and for recall alike, however many predicted spans reach
    the same human span. The two differ whenever two predicted spans reach
    one human span, which overlapping predictions do easily: (0, 3) and
    (1, 4) against (0, 4) both have IOU ¾, so ERASER scores 2 hits, recall
    2/1 = 2 (above 1), precision 1; ours 1 match, recall 1, precision ½.
    ERASER's empty cases: both empty or either empty give 0, 0, 0, and F1 is
    0 when precision or recall is 0.
    """
    threshold = _checks.fraction(threshold, "threshold", low_open=True)
    convention = _convention(convention)
    predicted = _spans(predicted_spans, "predicted_spans")
    human = _spans(human_spans, "human_spans")
    if convention == "eraser":
        if not predicted or not human:
            return PRF(0.0, 0.0, 0.0)
        pairs = _eligible(predicted, human, threshold)
        hits = len({p for p, _ in pairs})
        precision, recall = hits / len(predicted), hits / len(human)
        f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
        return PRF(precision, recall, f1)
    if not predicted or not human:
        return _prf(0, len(predicted), len(human))
    return _prf(_max_matching(_eligible(predicted, human, threshold)), len(predicted), len(human))


def _eligible(
    predicted: list[tuple[int, int]], human: list[tuple[int, int]], threshold: float
) -> list[tuple[int, int]]:
    """The (predicted, human) index pairs whose IOU (:func:`span_iou`) reaches ``threshold``.

    Only overlapping spans can reach a positive threshold, so each predicted
    span is compared with all human spans at once in numpy: linear in the
    pairs, not a Python call per pair (pooled spans of thousands of items).
    """
    spans = np.asarray(human, dtype=np.int64)
    starts, ends = spans[:, 0], spans[:, 1]
    out: list[tuple[int, int]] = []
    for index, (a, b) in enumerate(predicted):
        overlap = np.minimum(ends, b) - np.maximum(starts, a)
        near = np.flatnonzero(overlap > 0)
        iou = overlap[near] / ((b - a) + (ends[near] - starts[near]) - overlap[near])
        out.extend((index, int(h)) for h in near[iou >= threshold])
    return out


def _max_matching(pairs: list[tuple[int, int]]) -> int:
    """The size of a maximum one-to-one matching over the eligible ``pairs``.

    The matching of a bipartite graph is the sum of its connected components'
    matchings, and eligible spans overlap, so components are small: each is
    solved with scipy's assignment on its own (one matrix over all spans
    would be cubic in their number).
    """
    if not pairs:
        return 0
    from scipy.optimize import linear_sum_assignment

    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def root(node: tuple[str, int]) -> tuple[str, int]:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for p, h in pairs:
        parent[root(("p", p))] = root(("h", h))
    groups: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for p, h in pairs:
        groups.setdefault(root(("p", p)), []).append((p, h))
    total = 0
    for group in groups.values():
        rows = sorted({p for p, _ in group})
        cols = sorted({h for _, h in group})
        matrix = np.zeros((len(rows), len(cols)))
        for p, h in group:
            matrix[rows.index(p), cols.index(h)] = 1.0
        chosen_rows, chosen_cols = linear_sum_assignment(matrix, maximize=True)
        total += int(matrix[chosen_rows, chosen_cols].sum())
    return total


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


def auprc(scores: Any, human: Any, *, convention: str = "standard") -> float:
    """Average precision of soft ``scores`` (n,) ranking the ``human`` tokens (bool (n,)).

    ``AP = Σ_k (R_k − R_{k−1}) P_k`` over one threshold per distinct score,
    from the highest down: tokens with equal scores enter together (a tie
    is one step, with the precision of the whole group), so the result does
    not depend on the tokens' order. This is scikit-learn's
    ``average_precision_score`` and ERASER's ``average_precision`` entry; ERASER's
    ``auprc`` entry is instead the trapezoid area under the precision–recall
    curve, which interpolates linearly and reads higher.

    No human token: NaN (recall is undefined; ERASER leaves such documents
    out of its average precision). All tokens human: 1 (every threshold has
    precision 1), so :func:`mean_auprc` counts such a document as 1.

    ``convention="eraser"``: ERASER's data-set ``average_precision`` skips
    every single-class document (``discard_single_class_answers``), those
    whose every token is in the rationale too, so such a document gives NaN
    here and :func:`mean_auprc` leaves it out.
    """
    convention = _convention(convention)
    values = _checks.vector(scores, "scores")
    labels = _checks.mask(human, "human", size=values.size)
    if not labels.any() or (convention == "eraser" and labels.all()):
        return float("nan")
    return average_precision(values, labels)


def mean_auprc(
    scores: Sequence[Any], humans: Sequence[Any], *, convention: str = "standard"
) -> float:
    """The data-set mean of :func:`auprc` over documents (``scores[i]``, ``humans[i]``).

    Documents whose :func:`auprc` is NaN are left out (no human token; with
    ``convention="eraser"`` also every token human, as ERASER's
    ``average_precision`` does). NaN when no document is left.
    """
    convention = _convention(convention)
    if len(scores) != len(humans):
        raise InputError(
            f"mean_auprc got {len(scores)} score vectors but {len(humans)} human masks; "
            "pass one of each per document, in the same order."
        )
    values = [auprc(s, h, convention=convention) for s, h in zip(scores, humans, strict=True)]
    kept = [v for v in values if not math.isnan(v)]
    return float(np.mean(kept)) if kept else float("nan")


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
