"""Plausibility against human rationales (token P/R/F1, IOU-F1, AUPRC, top-k
rationales), on cases computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnwidget.errors import InputError
from attnwidget.metrics import PRF, auprc, discretize, iou_f1, mask_spans, span_iou, token_prf


def approx(*values: float):
    return pytest.approx(PRF(*values))


def test_token_prf_by_hand() -> None:
    # predicted {0, 1, 4}, human {0, 2, 4}: overlap {0, 4} → P = 2/3, R = 2/3, F1 = 2/3
    assert token_prf([1, 1, 0, 0, 1], [1, 0, 1, 0, 1]) == approx(2 / 3, 2 / 3, 2 / 3)
    # predicted {0}, human {0, 1}: P = 1, R = ½, F1 = 2·1·½ / (1 + ½) = 2/3
    assert token_prf(np.array([True, False, False]), np.array([True, True, False])) == approx(
        1.0, 0.5, 2 / 3
    )
    # disjoint: P = R = 0, and F1 = 0 (not 0/0)
    assert token_prf([1, 0], [0, 1]) == approx(0.0, 0.0, 0.0)


def test_token_prf_empty_sets() -> None:
    # both empty: they agree → 1, 1, 1
    assert token_prf([0, 0, 0], [0, 0, 0]) == approx(1.0, 1.0, 1.0)
    # nothing predicted, something to find: P = 0/0 read as 0, R = 0/2 = 0
    assert token_prf([0, 0, 0], [1, 1, 0]) == approx(0.0, 0.0, 0.0)
    # something predicted, nothing to find: P = 0/1 = 0, R = 0/0 read as 0
    assert token_prf([1, 0, 0], [0, 0, 0]) == approx(0.0, 0.0, 0.0)
    # no tokens at all is the both-empty case
    assert token_prf([], []) == approx(1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    ("predicted", "human", "match"),
    [
        ([1, 0, 1], [1, 0], "human has 2 entries for 3 tokens"),
        ([1, 2, 0], [1, 0, 0], "predicted must be a bool mask.*values other than 0 and 1"),
        ([[1, 0]], [1, 0], r"predicted must be a 1-D bool mask.*shape \(1, 2\)"),
        (["a", "b"], [1, 0], "predicted must be a bool mask"),
    ],
)
def test_token_prf_refuses_bad_masks(predicted, human, match) -> None:
    with pytest.raises(InputError, match=match):
        token_prf(predicted, human)


def test_span_iou_by_hand() -> None:
    # (0, 4) = {0,1,2,3}, (1, 4) = {1,2,3}: 3 / 4
    assert span_iou((0, 4), (1, 4)) == pytest.approx(0.75)
    # (1, 5) and (2, 6): overlap {2,3,4} = 3, union {1..5} = 5
    assert span_iou((1, 5), (2, 6)) == pytest.approx(0.6)
    assert span_iou((0, 2), (2, 4)) == 0.0


def test_iou_f1_by_hand() -> None:
    # (0,4)–(1,4): IOU 3/4 ≥ ½, a match; (6,8) overlaps nothing → 1 match of 2 and 2
    assert iou_f1([(0, 4), (6, 8)], [(1, 4), (10, 12)]) == approx(0.5, 0.5, 0.5)
    # at threshold 0.8, 3/4 is not enough
    assert iou_f1([(0, 4), (6, 8)], [(1, 4), (10, 12)], threshold=0.8) == approx(0, 0, 0)
    # a repeated predicted span counts once: 1 of 1
    assert iou_f1([(0, 4), (0, 4)], [(0, 4)]) == approx(1.0, 1.0, 1.0)


def test_iou_f1_matches_each_human_span_once() -> None:
    # Two halves of (0, 4): each has IOU 2/4 = 0.5 with it, but the human span is
    # matched once: 1 match → P = ½, R = 1, F1 = 2·½·1 / 1.5 = 2/3.
    # (ERASER's code would count both: P = 1, R = 2/1 = 2.)
    assert iou_f1([(0, 2), (2, 4)], [(0, 4)]) == approx(0.5, 1.0, 2 / 3)


def test_iou_f1_finds_the_largest_matching() -> None:
    # (1,5) reaches both human spans (IOU 3/5 with (0,4) and with (2,6)); (0,3)
    # reaches only (0,4) (IOU 3/4; with (2,6): 1/6). Pairing (1,5) with (0,4)
    # first would leave one match; the largest matching pairs (0,3)–(0,4) and
    # (1,5)–(2,6): 2 of 2 → 1, 1, 1.
    assert iou_f1([(1, 5), (0, 3)], [(0, 4), (2, 6)]) == approx(1.0, 1.0, 1.0)


def test_iou_f1_empty_sets() -> None:
    assert iou_f1([], []) == approx(1.0, 1.0, 1.0)
    assert iou_f1([], [(0, 2)]) == approx(0.0, 0.0, 0.0)
    assert iou_f1([(0, 2)], []) == approx(0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("predicted", "kwargs", "match"),
    [
        ([(3, 3)], {}, r"holds \(3, 3\); a span needs 0 ≤ start < end"),
        ([(-1, 2)], {}, r"holds \(-1, 2\)"),
        ([(4, 2)], {}, r"holds \(4, 2\)"),
        ([(0.0, 2.0)], {}, r"must be \(start, end\) integers; got \(0.0, 2.0\)"),
        ([(0, 1, 2)], {}, r"must be \(start, end\) integers"),
        ("0-2", {}, "predicted_spans must be a sequence of \\(start, end\\) token spans"),
        ([(0, 2)], {"threshold": 0.0}, r"threshold must be in \(0, 1\]"),
    ],
)
def test_iou_f1_refuses_bad_spans(predicted, kwargs, match) -> None:
    with pytest.raises(InputError, match=match):
        iou_f1(predicted, [(0, 2)], **kwargs)


def test_mask_spans() -> None:
    assert mask_spans([0, 1, 1, 0, 1]) == [(1, 3), (4, 5)]
    assert mask_spans([True, True]) == [(0, 2)]
    assert mask_spans([False, False]) == []


def test_auprc_by_hand() -> None:
    # ranks: hit, miss, hit, miss → precision 1 at recall ½, 2/3 at recall 1
    # AP = ½·1 + ½·2/3 = 5/6
    assert auprc([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0]) == pytest.approx(5 / 6)
    # the best ranking: precision 1 at each step → 1
    assert auprc([0.1, 0.9, 0.8], [0, 1, 1]) == pytest.approx(1.0)


def test_auprc_ties_enter_together() -> None:
    # {0.5, 0.5} is one step: 1 hit of 2 → precision ½ at recall ½;
    # then 0.2: 2 of 3 → precision 2/3 at recall 1. AP = ½·½ + ½·2/3 = 7/12,
    # whichever of the tied tokens is the human one.
    assert auprc([0.5, 0.5, 0.2], [0, 1, 1]) == pytest.approx(7 / 12)
    assert auprc([0.5, 0.5, 0.2], [1, 0, 1]) == pytest.approx(7 / 12)
    # all tied: one step at precision 2/4 and recall 1 → ½
    assert auprc([0.3, 0.3, 0.3, 0.3], [1, 0, 0, 1]) == pytest.approx(0.5)


def test_auprc_edge_cases_and_bad_input() -> None:
    assert math.isnan(auprc([0.2, 0.1], [0, 0]))  # no human token: undefined
    assert auprc([0.2, 0.1], [1, 1]) == pytest.approx(1.0)  # all human: precision 1 throughout
    with pytest.raises(InputError, match="human has 2 entries for 3 tokens"):
        auprc([0.1, 0.2, 0.3], [1, 0])
    with pytest.raises(
        InputError, match=r"scores holds 1 NaN/inf value\(s\) \(the first at index 1\)"
    ):
        auprc([0.1, float("nan")], [1, 0])


def test_discretize_takes_the_top_k_positive_tokens() -> None:
    scores = [0.3, -0.2, 0.9, 0.3, 0.0]
    # k = 2: 0.9 (pos 2), then of the tied 0.3s the earlier (pos 0)
    assert discretize(scores, 2).tolist() == [True, False, True, False, False]
    # k = 4: only three scores are positive (0.0 is not) → pos 2, 0, 3
    assert discretize(scores, 4).tolist() == [True, False, True, True, False]
    assert discretize(scores, 10).tolist() == [True, False, True, True, False]
    assert not discretize(scores, 0).any()
    assert not discretize([-1.0, -2.0], 1).any()


@pytest.mark.parametrize(
    ("k", "match"), [(-1, "k must be ≥ 0; got -1"), (1.5, "k must be an integer"), (True, "k must")]
)
def test_discretize_refuses_bad_k(k, match) -> None:
    with pytest.raises(InputError, match=match):
        discretize([0.1, 0.2], k)
