"""Attention steps that overflow float64 are refused, naming the step (issue 20).

float64 holds magnitudes up to about 1.8e308: q = 1e308 makes its dot score
infinite and a tiny temperature makes the scaled scores infinite. Both used to
come out as NaN weights with no error. (The output, a weighted mean of v's
rows, cannot overflow.)
"""

from __future__ import annotations

import numpy as np
import pytest

from attnwidget.errors import InputError
from attnwidget.teach import attention, attention_scores
from attnwidget.views.teach.calculator import AttentionCalculator

BIG = 1e308
SMALL = [[1.0, 2.0], [0.5, 1.0]]


def test_scores_that_overflow_are_refused_naming_the_step() -> None:
    q = [[BIG, 1.0], [1.0, 2.0]]
    with pytest.raises(InputError, match=r"step 'scores' overflowed") as caught:
        attention_scores(q, q, "dot")
    assert "query 0" in str(caught.value) and "key 0" in str(caught.value)
    assert "scale" in str(caught.value)  # says how to fix it
    with pytest.raises(InputError, match=r"step 'scores' overflowed"):
        attention(q, q, q, "dot")


def test_softmax_input_that_overflows_is_refused() -> None:
    q = [[1.0e300, 1.0], [1.0, 2.0]]
    # The scores are finite (1e300 · 1e300 is not, so use one large and one small factor).
    k = [[1.0, 0.0], [0.0, 1.0]]
    assert np.isfinite(attention_scores(q, k, "dot")).all()
    with pytest.raises(InputError, match=r"step 'softmax' overflowed") as caught:
        attention(q, k, k, "dot", temperature=1e-10)
    assert "temperature" in str(caught.value)


def test_output_of_the_largest_values_stays_finite() -> None:
    # The output is a weighted mean of v's rows (weights >= 0 summing to <= 1), so it
    # cannot leave float64's range: the 'output' check is a guard, never reached here.
    top = np.finfo(np.float64).max
    steps = attention([[0.0, 0.0]], SMALL, [[top, -top], [top, -top]], "dot")
    np.testing.assert_array_equal(steps.output, [[top, -top]])


def test_finite_extremes_still_work() -> None:
    # Large but representable values stay allowed: only a real overflow is refused.
    steps = attention([[1e150, 0.0]], [[1e150, 0.0], [0.0, 1.0]], SMALL, "dot")
    assert np.isfinite(steps.weights).all() and np.isfinite(steps.output).all()
    np.testing.assert_allclose(steps.weights.sum(axis=1), 1.0)


def test_calculator_refuses_q_1e308_at_construction_and_from_the_page() -> None:
    with pytest.raises(InputError, match="step 'scores' overflowed"):
        AttentionCalculator(q=[[BIG, 1.0], [1.0, 2.0]], score_kind="dot")
    calc = AttentionCalculator()
    good = np.array(calc.weights)
    calc.set_inputs(q=np.full_like(np.asarray(calc.q), BIG))
    assert "overflowed" in calc.error
    assert np.isfinite(calc.weights).all()
    np.testing.assert_array_equal(calc.weights, good)  # the last good steps stay shown
