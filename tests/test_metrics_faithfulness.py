"""ERASER's comprehensiveness / sufficiency / AOPC and Chefer et al.'s token
perturbation curve, on cases computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidget.errors import InputError
from attnwidget.metrics import (
    AOPC_BINS,
    FRACTIONS,
    aopc,
    comprehensiveness,
    erasure_curves,
    perturbation_curve_tokens,
    sufficiency,
    top_k_mask,
)

NAN = float("nan")


def test_comprehensiveness_and_sufficiency_by_hand() -> None:
    # 0.9 − 0.3 = 0.6; 0.9 − 0.95 = −0.05 (the rationale alone is more confident)
    assert comprehensiveness(0.9, 0.3) == pytest.approx(0.6)
    assert sufficiency(0.9, 0.95) == pytest.approx(-0.05)
    assert isinstance(comprehensiveness(0.9, 0.3), float)
    # per example: [0.9 − 0.2, 0.5 − 0.5] = [0.7, 0]
    np.testing.assert_allclose(comprehensiveness([0.9, 0.5], [0.2, 0.5]), [0.7, 0.0])
    np.testing.assert_allclose(sufficiency(np.array([1.0, 0.0]), [0.25, 0.0]), [0.75, 0.0])


@pytest.mark.parametrize(
    ("full", "other", "match"),
    [
        (1.2, 0.3, r"full_prob must be probabilities in \[0, 1\]; got values from 1.2"),
        (0.5, -0.1, "without_rationale_prob must be probabilities"),
        (0.5, NAN, "NaN"),
        ([0.5, 0.4], [0.1], r"shape \(2,\) and without_rationale_prob \(1,\)"),
        ("high", 0.1, "full_prob must be probabilities"),
    ],
)
def test_comprehensiveness_refuses_bad_probabilities(full, other, match) -> None:
    with pytest.raises(InputError, match=match):
        comprehensiveness(full, other)


def test_top_k_mask_takes_the_ceiling_and_breaks_ties_by_position() -> None:
    scores = np.array([0.1, 0.5, 0.5, 0.9, -1.0])
    # N = 5: ⌈0.5·5⌉ = ⌈2.5⌉ = 3 → 0.9 (pos 3) and the tied 0.5s (pos 1, 2)
    assert top_k_mask(scores, 0.5).tolist() == [False, True, True, True, False]
    # ⌈0.3·5⌉ = ⌈1.5⌉ = 2 → pos 3, then of the tied 0.5s the earlier (pos 1)
    assert top_k_mask(scores, 0.3).tolist() == [False, True, False, True, False]
    # ⌈0.01·5⌉ = ⌈0.05⌉ = 1: the 1 % bin still holds one token
    assert top_k_mask(scores, 0.01).tolist() == [False, False, False, True, False]
    assert not top_k_mask(scores, 0.0).any()
    assert top_k_mask(scores, 1.0).all()


def test_top_k_mask_counts_only_candidates() -> None:
    scores = np.array([0.1, 0.5, 0.4, 0.9, -1.0])
    # pos 3 is not a candidate: N = 4, ⌈0.5·4⌉ = 2 → 0.5 (pos 1), 0.4 (pos 2)
    candidates = np.array([True, True, True, False, True])
    assert top_k_mask(scores, 0.5, candidates=candidates).tolist() == [
        False,
        True,
        True,
        False,
        False,
    ]
    # positions [0, 4]; the others' scores are never read, so NaN is fine
    partly = np.array([0.1, NAN, NAN, NAN, -1.0])
    assert top_k_mask(partly, 0.5, candidates=[0, 4]).tolist() == [True] + [False] * 4
    assert top_k_mask(partly, 1.0, candidates=[4, 0]).tolist() == [True, False, False, False, True]


def test_top_k_mask_rounds_away_floating_point_noise() -> None:
    # 0.07·100 is 7.000000000000001 in floating point; the ceiling of that would be 8
    scores = np.arange(100, dtype=float)
    chosen = top_k_mask(scores, 0.07)
    assert chosen.sum() == 7
    assert np.flatnonzero(chosen).tolist() == [93, 94, 95, 96, 97, 98, 99]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scores": [0.1, 0.2], "fraction": 1.5}, r"fraction must be in \[0, 1\]; got 1.5"),
        ({"scores": [0.1, 0.2], "fraction": "half"}, "fraction must be a number"),
        ({"scores": [[0.1, 0.2]], "fraction": 0.5}, r"scores must be 1-D.*shape \(1, 2\)"),
        ({"scores": [0.1, NAN], "fraction": 0.5}, r"NaN/inf at candidate position\(s\) \[1\]"),
        (
            {"scores": [0.1, 0.2], "fraction": 0.5, "candidates": [0, 2]},
            r"positions 0…2, outside 0…1",
        ),
        (
            {"scores": [0.1, 0.2], "fraction": 0.5, "candidates": [1, 1]},
            "more than once",
        ),
        (
            {"scores": [0.1, 0.2], "fraction": 0.5, "candidates": [True]},
            r"one entry per token \(2\)",
        ),
    ],
)
def test_top_k_mask_refuses_bad_input(kwargs, match) -> None:
    with pytest.raises(InputError, match=match):
        top_k_mask(kwargs.pop("scores"), kwargs.pop("fraction"), **kwargs)


def test_aopc_is_the_mean_over_bins() -> None:
    # (0.1 + 0.2 + 0.3 + 0.4 + 0.5) / 5 = 0.3
    assert aopc([0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx(0.3)
    # two examples × two bins: (0 + 1 + 1 + 2) / 4 = 1
    assert aopc([[0.0, 1.0], [1.0, 2.0]]) == pytest.approx(1.0)
    assert AOPC_BINS == (0.01, 0.05, 0.1, 0.2, 0.5)
    for bad, match in (
        ([], "non-empty"),
        ([0.1, NAN], "NaN"),
        (np.zeros((1, 1, 1)), "bins"),
        ([[1.0, 2.0], [3.0]], "bins"),
    ):
        with pytest.raises(InputError, match=match):
            aopc(bad)


# A "model" whose probability is a sum over which words are present:
# base 0.1, token 5: +0.4, token 7: +0.2, token 6: +0.1, token 8: +0.1.
WEIGHTS = {5: 0.4, 7: 0.2, 6: 0.1, 8: 0.1}
IDS = np.array([101, 5, 6, 7, 8, 102])  # [CLS] w w w w [SEP]
SCORES = np.array([NAN, 0.9, 0.1, 0.5, 0.3, NAN])  # ranks: pos 1, 3, 4, 2
WORDS = [1, 2, 3, 4]


class Recorder:
    """probability_fn that remembers what it was given."""

    def __init__(self) -> None:
        self.calls: list = []

    def __call__(self, ids):
        self.calls.append(ids)
        return np.array([0.1 + sum(WEIGHTS.get(int(t), 0.0) for t in row) for row in ids])


def test_erasure_curves_by_hand_with_a_replacement_token() -> None:
    fn = Recorder()
    out = erasure_curves(fn, IDS, SCORES, replacement_id=0, candidates=WORDS)
    # N = 4: ⌈0.04⌉ = ⌈0.2⌉ = ⌈0.4⌉ = ⌈0.8⌉ = 1, ⌈0.5·4⌉ = 2
    assert out.sizes == (1, 1, 1, 1, 2)
    # full: 0.1 + 0.4 + 0.1 + 0.2 + 0.1 = 0.9
    assert out.full_probability == pytest.approx(0.9)
    # comprehensiveness: without token 5: 0.9 − 0.5 = 0.4; without 5 and 7: 0.9 − 0.3 = 0.6
    np.testing.assert_allclose(out.comprehensiveness, [0.4, 0.4, 0.4, 0.4, 0.6])
    # sufficiency: only token 5: 0.9 − 0.5 = 0.4; only 5 and 7: 0.9 − 0.7 = 0.2
    np.testing.assert_allclose(out.sufficiency, [0.4, 0.4, 0.4, 0.4, 0.2])
    assert out.aopc_comprehensiveness == pytest.approx((4 * 0.4 + 0.6) / 5)  # 0.44
    assert out.aopc_sufficiency == pytest.approx((4 * 0.4 + 0.2) / 5)  # 0.36
    # one call, 1 + 2·5 rows of the full length; special tokens always kept
    (rows,) = fn.calls
    assert rows.shape == (11, 6)
    assert rows[0].tolist() == IDS.tolist()
    assert rows[1].tolist() == [101, 0, 6, 7, 8, 102]  # x \ r at 1 %
    assert rows[5].tolist() == [101, 0, 6, 0, 8, 102]  # x \ r at 50 %
    assert rows[6].tolist() == [101, 5, 0, 0, 0, 102]  # r at 1 %
    assert rows[10].tolist() == [101, 5, 0, 7, 0, 102]  # r at 50 %


def test_erasure_curves_by_hand_with_deletion_and_own_bins() -> None:
    fn = Recorder()
    out = erasure_curves(fn, IDS, SCORES, replacement_id=None, candidates=WORDS, bins=(0.25, 1.0))
    # ⌈0.25·4⌉ = 1, ⌈1·4⌉ = 4
    assert out.sizes == (1, 4)
    # removing every word leaves the base 0.1: 0.9 − 0.1 = 0.8; keeping all: 0
    np.testing.assert_allclose(out.comprehensiveness, [0.4, 0.8])
    np.testing.assert_allclose(out.sufficiency, [0.4, 0.0])
    (rows,) = fn.calls
    assert isinstance(rows, list) and len(rows) == 5
    assert [r.tolist() for r in rows] == [
        [101, 5, 6, 7, 8, 102],
        [101, 6, 7, 8, 102],
        [101, 102],
        [101, 5, 102],
        [101, 5, 6, 7, 8, 102],
    ]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"scores": SCORES[:4]}, "4 scores for 6 tokens"),
        ({"candidates": []}, "select no token"),
        ({"replacement_id": 0.5}, "replacement_id must be a token id"),
        ({"replacement_id": True}, "replacement_id must be a token id"),
        ({"bins": ()}, "bins must be a non-empty sequence"),
        ({"bins": 0.5}, "bins must be a non-empty sequence"),
        ({"bins": (0.0, 0.5)}, r"each bin must be in \(0, 1\]; got 0.0"),
        ({"input_ids": IDS.astype(float)}, "integer token ids"),
        ({"input_ids": IDS[None]}, r"one sequence.*shape \(1, 6\)"),
        ({"probability_fn": lambda ids: np.ones(2)}, r"returned shape \(2,\) for 11 sequences"),
        ({"probability_fn": lambda ids: np.full(len(ids), 2.0)}, "probabilities in"),
        ({"probability_fn": lambda ids: np.ones((len(ids), 2))}, "one probability per sequence"),
        ({"probability_fn": "model"}, "must be a callable"),
    ],
)
def test_erasure_curves_refuses_bad_input(change, match) -> None:
    args = {
        "probability_fn": Recorder(),
        "input_ids": IDS,
        "scores": SCORES,
        "replacement_id": 0,
        "candidates": WORDS,
    }
    args.update(change)
    with pytest.raises(InputError, match=match):
        erasure_curves(
            args.pop("probability_fn"), args.pop("input_ids"), args.pop("scores"), **args
        )


# Chefer et al.'s curve on 5 words: [CLS] 5 6 7 8 9 [SEP]
TEXT = np.array([101, 5, 6, 7, 8, 9, 102])
# words' scores 0.2, 0.9, 0.2, −1, 0.5 → most relevant first: pos 2, 5, 1, 3 (tie: earlier), 4
TEXT_SCORES = np.array([NAN, 0.2, 0.9, 0.2, -1.0, 0.5, NAN])


def two_columns(ids: np.ndarray) -> np.ndarray:
    """(B, 2): "right" while token 5 is there; the share of the 5 words left."""
    right = [float(5 in row) for row in ids]
    share = [np.isin(row, [5, 6, 7, 8, 9]).sum() / 5 for row in ids]
    return np.stack([right, share], axis=1)


def test_perturbation_curve_tokens_by_hand() -> None:
    out = perturbation_curve_tokens(
        two_columns, TEXT, TEXT_SCORES, replacement_id=0, candidates=[1, 2, 3, 4, 5]
    )
    # round(f·5) for f = 0, 0.1, …, 0.9: 0, 0.5→0, 1, 1.5→2, 2, 2.5→2, 3, 3.5→4, 4, 4.5→4
    # (Python's round: halves to even)
    assert out.counts == (0, 0, 1, 2, 2, 2, 3, 4, 4, 4)
    assert out.fractions == FRACTIONS
    # token 5 (pos 1) is the third removed: gone from count 3 on
    np.testing.assert_allclose(out.values[:, 0], [1, 1, 1, 1, 1, 1, 0, 0, 0, 0])
    np.testing.assert_allclose(out.values[:, 1], 1 - np.array(out.counts) / 5)
    # trapezoids of width 0.1: five of height 1, one of (1 + 0)/2 → 0.55 → ×100
    # share: (1 + .9 + .7 + .6 + .6 + .5 + .3 + .2 + .2) · 0.1 = 0.5 → ×100
    np.testing.assert_allclose(out.auc, [55.0, 50.0])


def test_perturbation_curve_tokens_negative_order_and_one_column() -> None:
    out = perturbation_curve_tokens(
        lambda ids: two_columns(ids)[:, 0],
        TEXT,
        TEXT_SCORES,
        replacement_id=0,
        candidates=np.array([False, True, True, True, True, True, False]),
        positive=False,
    )
    # least relevant first: pos 4 (−1), 1 (0.2), 3 (0.2), 5, 2 → token 5 is the second removed
    np.testing.assert_allclose(out.values, [1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
    # 1 + 1 + ½ = 2.5 trapezoids of width 0.1 → 25
    assert out.auc == pytest.approx(25.0)


def test_perturbation_curve_tokens_explicit_order_with_deletion() -> None:
    seen: list = []

    def fn(ids):
        seen.append(ids)
        return two_columns(ids)[:, 1]

    out = perturbation_curve_tokens(
        fn, TEXT, order=[5, 4, 3, 2, 1], replacement_id=None, fractions=(0.0, 0.5, 1.0)
    )
    # round(0·5) = 0, round(2.5) = 2, round(5) = 5 → pos 5 and 4 go first, then all
    assert out.counts == (0, 2, 5)
    (rows,) = seen
    assert [r.tolist() for r in rows] == [TEXT.tolist(), [101, 5, 6, 7, 102], [101, 102]]
    np.testing.assert_allclose(out.values, [1.0, 0.6, 0.0])
    # (1 + 0.6)/2·0.5 + (0.6 + 0)/2·0.5 = 0.4 + 0.15 = 0.55 → 55
    assert out.auc == pytest.approx(55.0)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"scores": None}, "either scores"),
        ({"order": [1, 2]}, "either scores"),
        ({"scores": None, "order": [1, 2], "candidates": [1, 2]}, "order already names"),
        ({"scores": None, "order": [True, False], "candidates": None}, "not a mask"),
        ({"scores": None, "order": [1, 9], "candidates": None}, r"positions 1…9, outside 0…6"),
        ({"scores": TEXT_SCORES[:3]}, "3 scores for 7 tokens"),
        ({"candidates": None}, "NaN/inf at candidate positions"),
        ({"fractions": (0.0, 0.5, 0.5)}, "fractions must increase"),
        ({"fractions": (0.0,)}, "at least two steps"),
        ({"fractions": 0.5}, "at least two steps"),
        ({"fractions": (0.0, 1.5)}, r"each fraction must be in \[0, 1\]"),
        ({"score_fn": lambda ids: np.ones((2, 2, 2))}, "one value per sequence"),
    ],
)
def test_perturbation_curve_tokens_refuses_bad_input(change, match) -> None:
    args = {
        "score_fn": two_columns,
        "input_ids": TEXT,
        "scores": TEXT_SCORES,
        "replacement_id": 0,
        "candidates": [1, 2, 3, 4, 5],
    }
    args.update(change)
    with pytest.raises(InputError, match=match):
        perturbation_curve_tokens(
            args.pop("score_fn"), args.pop("input_ids"), args.pop("scores"), **args
        )
