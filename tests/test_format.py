"""attnwidget.views.core.format: numbers as the views show them (js/src/core/format.ts agrees)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnwidget.views.core.format import MINUS, format_number, format_percent, format_range

# Worked out by hand from the rules in _format.py (the JS tests check the same strings).
CASES = [
    (0.41894618, "0.419"),
    (1.0000008, "1"),
    (1.8924047e-9, "1.89e-9"),
    (0.09724, "0.0972"),
    (0.049329925, "0.0493"),
    (0.0, "0"),
    (-0.0, "0"),
    (-0.5, f"{MINUS}0.5"),
    (-2.5e-7, f"{MINUS}2.5e-7"),
    (math.nan, "NaN"),
    (math.inf, "∞"),
    (-math.inf, f"{MINUS}∞"),
    (2.5, "2.5"),
    (120.0, "120"),
    (123.456, "123"),
    (1234.0, "1,234"),
    (123456.7, "123,457"),
    (0.001, "0.001"),
    (0.000999, "9.99e-4"),
    (0.00099996, "0.001"),
    (999999.7, "1e6"),
    (2.5e6, "2.5e6"),
    (9.996, "10"),
    (1.125, "1.13"),  # exact tie: half away from zero, as JS (format() would give 1.12)
    (-1.125, f"{MINUS}1.13"),
    (1.005, "1"),  # 1.00499999... in binary
    (1.7976931348623157e308, "1.8e308"),
    (5e-324, "4.94e-324"),
]


@pytest.mark.parametrize(("value", "text"), CASES)
def test_format_number(value: float, text: str) -> None:
    assert format_number(value) == text


def test_numpy_scalars_and_digits() -> None:
    assert format_number(np.float32(0.41894618)) == "0.419"
    assert format_number(np.float32(1.0000008)) == "1"
    assert format_number(math.pi, digits=1) == "3"
    assert format_number(math.pi, digits=6) == "3.14159"
    for bad in (0, 16, 2.5, True):
        with pytest.raises(ValueError, match=r"digits must be an int 1\.\.15, got"):
            format_number(1.0, digits=bad)


def test_range_and_percent() -> None:
    assert format_range(0.0, 0.41894618) == "0 … 0.419"
    assert format_range(-0.3, 0.3, middle=0.0) == f"{MINUS}0.3 … 0 … 0.3"
    assert format_percent(0.1234) == "12.3%"
    assert format_percent(1.0) == "100%"


def test_view_strings_use_the_formatter() -> None:
    """Numbers Python puts in a view's text read like the page's own."""
    from attnwidget.results.explanation import Explanation
    from attnwidget.views import FlowView, HeadView

    rng = np.random.default_rng(0)
    weights = rng.random((2, 2, 4, 4)).astype(np.float32)
    exp = Explanation.from_attentions(weights / weights.sum(-1, keepdims=True), list("abcd"))
    exp.target, exp.target_id = "rare", 1
    exp.probabilities = np.array([0.99998766, 1.2345e-5], np.float32)
    assert "(p = 1.23e-5)" in FlowView(exp).caption  # not 1.23e-05
    message = HeadView._not_saved(int(1.5 * 2**20))["message"]
    assert "the first 1.5 MiB of the attention" in message


def test_explorer_strings_use_the_formatter() -> None:
    """The Explorer's target choices and status line read like the views' numbers."""
    from attnwidget import demo
    from attnwidget.views import Explorer

    model, tokenizer = demo.load("sva-causal")
    explorer = Explorer(model, tokenizer, "the keys to the cabinet")
    probs = np.asarray(explorer.explanation.probabilities)
    tokens = [(label, v) for label, v in explorer.target_picker.options if isinstance(v, int)]
    assert tokens, "the causal LM offers its top next tokens"
    for label, token_id in tokens:
        assert label.endswith(f"(p = {format_number(probs[token_id])})"), label
    p = probs[explorer.explanation.target_id]
    assert f"(p = {format_number(p)}):" in explorer.status.value
