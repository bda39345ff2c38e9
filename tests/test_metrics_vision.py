"""Segmentation and perturbation metrics on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidget.metrics import (
    FRACTIONS,
    area_under_curve,
    average_precision,
    removal_order,
    segmentation_scores,
    threshold_at_mean,
)


def test_average_precision_by_hand() -> None:
    # ranks: hit, miss, hit, miss → precision 1 at recall ½, ⅔ at recall 1
    assert average_precision(np.array([0.9, 0.8, 0.7, 0.6]), np.array([1, 0, 1, 0])) == (
        pytest.approx(0.5 * 1 + 0.5 * 2 / 3)
    )
    # a tie enters together: {0.5, 0.5} gives precision ½ at recall ½
    assert average_precision(np.array([0.5, 0.5, 0.2]), np.array([1, 0, 1])) == pytest.approx(
        0.5 * 0.5 + 0.5 * 2 / 3
    )
    assert average_precision(np.array([0.1, 0.2]), np.array([0, 0])) == 0.0
    with pytest.raises(ValueError, match="3 scores for 2 labels"):
        average_precision(np.zeros(3), np.zeros(2))


def test_threshold_and_segmentation_totals_by_hand() -> None:
    heat = np.array([[0.0, 1.0], [2.0, 3.0]])  # normalised 0, ⅓, ⅔, 1; mean ½
    assert threshold_at_mean(heat).tolist() == [[False, False], [True, True]]
    assert not threshold_at_mean(np.ones((2, 2))).any()
    mask = np.array([[False, True], [True, True]])
    one = segmentation_scores([heat], [mask])
    assert one.pixel_accuracy == pytest.approx(3 / 4)
    # foreground: inter 2, union 3; background: inter 1, union 2
    assert one.miou == pytest.approx((2 / 3 + 1 / 2) / 2)
    # AP: ranks 3 (hit), 2 (hit), 1 (hit), 0 (miss) → 1
    assert one.mean_ap == pytest.approx(1.0)
    # A second image: all wrong. Totals are summed before dividing.
    two = segmentation_scores([heat, heat], [mask, ~np.array([[False, False], [True, True]])])
    assert two.pixel_accuracy == pytest.approx(3 / 8)
    inter_fg, union_fg = 2 + 0, 3 + 4
    inter_bg, union_bg = 1 + 0, 2 + 4
    assert two.miou == pytest.approx((inter_fg / union_fg + inter_bg / union_bg) / 2)
    with pytest.raises(ValueError, match="one map per mask"):
        segmentation_scores([heat], [])


def test_removal_order_and_area() -> None:
    scores = np.array([0.2, 0.9, 0.2, -1.0])
    assert removal_order(scores, positive=True).tolist() == [1, 0, 2, 3]
    assert removal_order(scores, positive=False).tolist() == [3, 0, 2, 1]
    assert FRACTIONS[0] == 0.0 and FRACTIONS[-1] == 0.9 and len(FRACTIONS) == 10
    assert area_under_curve(np.ones(10)) == pytest.approx(90.0)
    # accuracy 1 − x is linear, so the trapezoid is exact: ∫₀^0.9 (1 − x) dx = 0.495
    assert area_under_curve(1 - np.array(FRACTIONS)) == pytest.approx(49.5)
    with pytest.raises(ValueError, match="one value per removed fraction"):
        area_under_curve(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        removal_order(np.array([np.nan]), positive=True)
