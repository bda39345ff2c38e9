"""Agreement between annotators (κ, α, pairwise token F1) and between methods
(rank correlations), and the bootstrap interval, on cases computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnwidget.errors import InputError
from attnwidget.metrics import (
    bootstrap_ci,
    cohen_kappa,
    krippendorff_alpha,
    pairwise_token_f1,
    rank_agreement,
)

NAN = float("nan")


def test_cohen_kappa_by_hand() -> None:
    a = ["pos", "pos", "neg", "neg", "pos"]
    b = ["pos", "neg", "neg", "neg", "pos"]
    # p_o = 4/5; shares a: pos 3/5, neg 2/5; b: pos 2/5, neg 3/5
    # p_e = 3/5·2/5 + 2/5·3/5 = 12/25 = 0.48; κ = (0.8 − 0.48) / 0.52 = 8/13
    assert cohen_kappa(a, b) == pytest.approx(8 / 13)
    # a label only one annotator uses: p_o = 2/3, p_e = 2/3·2/3 + 1/3·0 = 4/9
    # κ = (2/3 − 4/9) / (5/9) = 2/5
    assert cohen_kappa([1, 1, 2], np.array([1, 1, 3])) == pytest.approx(0.4)
    # any hashable labels: p_o = 1, p_e = ½ → 1
    assert cohen_kappa([("a", 1), None], [("a", 1), None]) == pytest.approx(1.0)
    # systematic disagreement: p_o = 0, p_e = ½ → −1
    assert cohen_kappa(["x", "y"], ["y", "x"]) == pytest.approx(-1.0)


def test_cohen_kappa_is_nan_when_chance_agreement_is_perfect() -> None:
    # one label for everything on both sides: p_e = 1 → κ = 0/0
    assert math.isnan(cohen_kappa(["x", "x", "x"], ["x", "x", "x"]))


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        ([1, 2, 3], [1, 2], "a has 3 labels and b 2"),
        ([], [], "at least one item"),
        ([1, NAN], [1, 2], r"a\[1\] is NaN"),
        ([[1], [2]], [1, 2], r"a\[0\] is \[1\]; labels must be hashable"),
        (np.zeros((2, 2)), [1, 2], r"a must be 1-D.*shape \(2, 2\)"),
        ("ab", "ab", "a must be a sequence of labels.*a str"),
    ],
)
def test_cohen_kappa_refuses_bad_labels(a, b, match) -> None:
    with pytest.raises(InputError, match=match):
        cohen_kappa(a, b)


def test_krippendorff_alpha_nominal_by_hand() -> None:
    # Two annotators, four units: (1,1) (1,2) (2,2) (2,2).
    # Coincidences: o_11 = 2, o_12 = o_21 = 1, o_22 = 4; n_1 = 3, n_2 = 5, n = 8.
    # α = 1 − (n − 1)·(o_12 + o_21) / (n_1·n_2 + n_2·n_1) = 1 − 7·2/30 = 8/15
    two = np.array([[1, 1, 2, 2], [1, 2, 2, 2]], dtype=float)
    assert krippendorff_alpha(two) == pytest.approx(8 / 15)


def test_krippendorff_alpha_with_missing_values_by_hand() -> None:
    # Three annotators, NaN for missing; the last unit has one value (not pairable).
    # unit 1 {1,1} (m=2): o_11 += 2
    # unit 2 {1,2,1} (m=3, each ordered pair weighs 1/(m−1) = ½): o_11 += 1, o_12 += 1, o_21 += 1
    # unit 3 {2,2,2} (m=3): 6 ordered pairs · ½ → o_22 += 3
    # unit 4 {2,2} (m=2): o_22 += 2
    # o_11 = 3, o_12 = o_21 = 1, o_22 = 5; n_1 = 4, n_2 = 6, n = 10
    # α = 1 − 9·2 / (2·4·6) = 1 − 18/48 = 0.625
    matrix = np.array(
        [
            [1, 1, 2, NAN, 1],
            [1, 2, 2, 2, NAN],
            [NAN, 1, 2, 2, NAN],
        ]
    )
    assert krippendorff_alpha(matrix, level="nominal") == pytest.approx(0.625)


def test_krippendorff_alpha_interval_by_hand() -> None:
    # units (1,1) (2,2) (3,4); δ² = (c − k)². o: o_11 = 2, o_22 = 2, o_34 = o_43 = 1;
    # n_1 = n_2 = 2, n_3 = n_4 = 1, n = 6. Σ o·δ² = 1 + 1 = 2.
    # Σ_{c≠k} n_c n_k δ² = 2·(4·1 + 2·4 + 2·9 + 2·1 + 2·4 + 1·1) = 82
    # α = 1 − (n − 1)·2/82 = 1 − 10/82 = 36/41
    matrix = [[1, 2, 3], [1, 2, 4]]
    assert krippendorff_alpha(matrix, level="interval") == pytest.approx(36 / 41)


def test_krippendorff_alpha_edge_cases() -> None:
    # every pairable value is the same: D_e = 0 → NaN
    assert math.isnan(krippendorff_alpha([[1, 1, 2], [1, 1, NAN]]))
    with pytest.raises(InputError, match="no unit has values from at least two annotators"):
        krippendorff_alpha([[1, NAN], [NAN, 2]])
    with pytest.raises(InputError, match=r"at least two annotators; got shape \(1, 3\)"):
        krippendorff_alpha([[1, 2, 3]])
    with pytest.raises(InputError, match="level must be one of nominal, ordinal"):
        krippendorff_alpha([[1, 2], [1, 2]], level="categorical")
    with pytest.raises(InputError, match="inf"):
        krippendorff_alpha([[1, np.inf], [1, 2]])
    with pytest.raises(InputError, match="code labels as numbers"):
        krippendorff_alpha([["a", "b"], ["a", "a"]])


def test_pairwise_token_f1_by_hand() -> None:
    r1, r2, r3 = [1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 1]
    # F1(r1, r2) = 2·1 / (2 + 1) = 2/3; F1(r1, r3) = F1(r2, r3) = 0 → mean 2/9
    assert pairwise_token_f1([r1, r2, r3]) == pytest.approx(2 / 9)
    assert pairwise_token_f1(np.array([r1, r1], dtype=bool)) == pytest.approx(1.0)
    # two annotators who marked nothing agree (F1 of two empty sets is 1)
    assert pairwise_token_f1([[0, 0], [0, 0]]) == pytest.approx(1.0)
    with pytest.raises(InputError, match="at least two annotators; got 1"):
        pairwise_token_f1([r1])
    with pytest.raises(InputError, match=r"\[2, 4\] tokens"):
        pairwise_token_f1([r1, [1, 0]])


def test_rank_agreement_by_hand() -> None:
    # ranks [1,2,3,4] and [1,3,2,4]: Σd² = 2 → ρ = 1 − 6·2 / (4·15) = 0.8;
    # of 6 pairs one is discordant → τ = (5 − 1)/6 = 2/3
    rho, tau = rank_agreement([0.1, 0.2, 0.3, 0.4], [1.0, 3.0, 2.0, 4.0])
    assert rho == pytest.approx(0.8)
    assert tau == pytest.approx(2 / 3)


def test_rank_agreement_with_ties_by_hand() -> None:
    # a = [1, 1, 2] ranks [1.5, 1.5, 3]; b = [1, 2, 3]. Pearson of the ranks:
    # deviations [−½, −½, 1] and [−1, 0, 1]: 1.5 / √(1.5·2) = √3/2
    # τ-b: 2 concordant, 0 discordant, one pair tied in a:
    # (2 − 0) / √((3 − 1)·(3 − 0)) = 2/√6
    out = rank_agreement([1, 1, 2], [1, 2, 3])
    assert out.spearman == pytest.approx(math.sqrt(3) / 2)
    assert out.kendall == pytest.approx(2 / math.sqrt(6))


def test_rank_agreement_is_nan_for_constant_scores_and_checks_input() -> None:
    out = rank_agreement([0.5, 0.5, 0.5], [1, 2, 3])
    assert math.isnan(out.spearman) and math.isnan(out.kendall)
    with pytest.raises(InputError, match="scores_a needs at least 2 value"):
        rank_agreement([1.0], [2.0])
    with pytest.raises(InputError, match="scores_a has 3 values and scores_b 2"):
        rank_agreement([1, 2, 3], [1, 2])
    with pytest.raises(InputError, match="scores_b holds 1 NaN/inf"):
        rank_agreement([1, 2, 3], [1, NAN, 2])


def test_bootstrap_ci_by_hand() -> None:
    # constant values: every resample's mean is 2
    assert tuple(bootstrap_ci([2.0, 2.0, 2.0])) == (2.0, 2.0, 2.0, 3, 0)
    # [0, 1]: a resample's mean is 0 (p = ¼), ½ (p = ½) or 1 (p = ¼); of 1000
    # resamples far more than 2.5 % are 0 and far more than 2.5 % are 1, so the
    # 95 % interval is [0, 1]; the mean is the data's, ½. Two NaNs are dropped.
    out = bootstrap_ci([NAN, 0.0, 1.0, NAN])
    assert (out.mean, out.low, out.high, out.count, out.dropped) == (0.5, 0.0, 1.0, 2, 2)
    # one value: nothing to resample but itself
    assert tuple(bootstrap_ci([0.3])) == pytest.approx((0.3, 0.3, 0.3, 1, 0))


def test_bootstrap_ci_follows_its_documented_resampling() -> None:
    values = np.array([1.0, 2.0, 4.0])
    # the documented draw, written out: seed 3, 5 resamples of 3 indices, one call each
    rng = np.random.default_rng(3)
    draws = [rng.integers(0, 3, 3) for _ in range(5)]
    means = sorted(sum(values[i] for i in row) / 3 for row in draws)
    # linear quantiles of 5 sorted means: position q·(5 − 1); q = 0.1 → 0.4, q = 0.9 → 3.6
    low = means[0] + 0.4 * (means[1] - means[0])
    high = means[3] + 0.6 * (means[4] - means[3])
    out = bootstrap_ci(values, confidence=0.8, n_resamples=5, seed=3)
    assert out.mean == pytest.approx(7 / 3)
    assert (out.low, out.high) == pytest.approx((low, high))


def test_bootstrap_ci_all_nan_and_bad_input() -> None:
    out = bootstrap_ci([NAN, NAN])
    assert math.isnan(out.mean) and math.isnan(out.low) and math.isnan(out.high)
    assert (out.count, out.dropped) == (0, 2)
    for kwargs, match in (
        ({"confidence": 1.0}, r"confidence must be in \(0, 1\)"),
        ({"confidence": "95%"}, "confidence must be a number"),
        ({"n_resamples": 0}, "n_resamples must be ≥ 1"),
        ({"seed": -1}, "seed must be ≥ 0"),
        ({"seed": 1.5}, "seed must be an integer"),
    ):
        with pytest.raises(InputError, match=match):
            bootstrap_ci([1.0, 2.0], **kwargs)
    with pytest.raises(InputError, match="values hold inf"):
        bootstrap_ci([1.0, np.inf])
    with pytest.raises(InputError, match=r"values must be 1-D.*shape \(2, 1\)"):
        bootstrap_ci([[1.0], [2.0]])
