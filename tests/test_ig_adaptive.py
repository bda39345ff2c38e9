"""Adaptive integrated gradients (Sundararajan, Taly & Yan, 2017): the step count
doubles until the completeness gap is within tolerance, reusing every point.

References are computed here independently: a closed-form integral for a toy
function, and a trapezoid integral of the shipped causal demo model's
gradients taken with torch directly.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import attnwidget
from attnwidget import demo
from attnwidget.errors import ConvergenceWarning

X = np.array([[1.3, -2.1, 0.4], [2.8, 0.9, -1.7]])


class SineSum:
    """f(x) = Σ sin(3x): from a zero baseline, token j's IG is exactly
    Σ_d sin(3x_{j,d}) (x·∫_0^1 3cos(3αx) dα = sin(3x)). Counts the points it sees."""

    def __init__(self) -> None:
        self.points: list[float] = []

    def __call__(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        alphas = points[:, 0, 0] / X[0, 0]
        self.points.extend(alphas.tolist())
        return np.sin(3 * points).sum(axis=(1, 2)), 3 * np.cos(3 * points)


def test_adaptive_steps_double_until_the_gap_is_within_tolerance() -> None:
    f = SineSum()
    scores, info = attnwidget.integrated_gradients(f, X, batch_size=7)
    exact = np.sin(3 * X).sum(-1)
    target = np.sin(3 * X).sum()
    assert info["adaptive"] and info["converged"]
    assert info["target_value"] == pytest.approx(target) and info["baseline_value"] == 0.0
    assert abs(info["completeness_gap"]) <= 0.01 * abs(target)
    assert info["completeness_gap"] == pytest.approx(scores.sum() - target)
    steps = [s for s, _ in info["gap_history"]]
    assert steps == [16 * 2**k for k in range(len(steps))] and steps[-1] == info["steps"]
    assert len(steps) > 1  # this function needs more than the first round
    # every earlier round missed the tolerance, the last one met it
    assert all(abs(g) > 0.01 * abs(target) for _, g in info["gap_history"][:-1])
    # each point evaluated once: steps + 1 in all, exactly the final trapezoid's nodes
    assert len(f.points) == info["steps"] + 1
    assert np.allclose(np.sort(f.points), np.linspace(0, 1, info["steps"] + 1))
    assert np.allclose(scores, exact, atol=0.02 * abs(target))


def test_the_cap_warns_and_reports_not_converged() -> None:
    f = SineSum()
    with pytest.warns(ConvergenceWarning, match=r"after 32 steps.*max_steps"):
        _, info = attnwidget.integrated_gradients(f, X, max_steps=40, tolerance=1e-12)
    assert info["steps"] == 32 and not info["converged"] and len(f.points) == 33
    small = SineSum()
    with pytest.warns(ConvergenceWarning):
        _, info = attnwidget.integrated_gradients(small, X, max_steps=8, tolerance=1e-12)
    assert info["steps"] == 8 and len(small.points) == 9


def test_fixed_steps_disable_the_search_and_do_not_warn() -> None:
    f = SineSum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores, info = attnwidget.integrated_gradients(f, X, steps=5)
    assert info["steps"] == 5 and not info["adaptive"] and len(f.points) == 6
    assert info["gap_history"] == [(5, info["completeness_gap"])]
    # trapezoid on 5 intervals of the exact integrand, by hand
    alphas = np.linspace(0, 1, 6)
    weights = np.full(6, 0.2)
    weights[[0, -1]] = 0.1
    integrand = 3 * np.cos(3 * alphas[:, None, None] * X[None]) * X[None]
    assert np.allclose(scores, np.tensordot(weights, integrand, axes=1).sum(-1))


# ---- the shipped causal demo model ------------------------------------------------


@pytest.fixture(scope="module")
def causal() -> tuple[object, object]:
    return demo.load("sva-causal")


def trapezoid_ig(model, input_ids: np.ndarray, target: int, steps: int) -> np.ndarray:
    """IG of the last position's ``target`` logit, zero token-embedding baseline,
    trapezoid rule on ``steps`` intervals, straight from torch."""
    ids = torch.tensor(input_ids)[None]
    with torch.no_grad():
        embeds = model.get_input_embeddings()(ids)[0].double()
    alphas = torch.linspace(0, 1, steps + 1, dtype=torch.float64)
    weights = torch.full((steps + 1,), 1.0 / steps, dtype=torch.float64)
    weights[[0, -1]] = 0.5 / steps
    total = torch.zeros_like(embeds)
    for start in range(0, steps + 1, 64):
        a = alphas[start : start + 64]
        points = (a[:, None, None] * embeds[None]).float().requires_grad_(True)
        mask = torch.ones(points.shape[:2], dtype=torch.long)
        logits = model(inputs_embeds=points, attention_mask=mask).logits[:, -1, target]
        (grads,) = torch.autograd.grad(logits.sum(), [points])
        total += torch.tensordot(weights[start : start + 64], grads.double(), dims=1)
    return (embeds * total).sum(-1).numpy()


def test_adaptive_ig_converges_on_the_causal_demo_model(causal) -> None:
    model, tokenizer = causal
    texts = [e.text for e in demo.sentences(4, seed=0, model="sva-causal")]
    exps = attnwidget.explain(model, tokenizer, texts, methods=["integrated_gradients"])
    old = attnwidget.explain(
        model,
        tokenizer,
        texts,
        methods=["integrated_gradients"],
        method_options={"integrated_gradients": {"steps": 32}},
    )
    worst_old = 0.0
    for exp, fixed in zip(exps, old, strict=True):
        info = exp.details["integrated_gradients"]
        logit = float(exp.logits[exp.target_id])
        scale = max(abs(logit), abs(info["target_delta"]))
        assert info["converged"] and abs(info["completeness_gap"]) <= 0.01 * scale
        assert info["target_value"] == pytest.approx(logit, abs=1e-4)
        assert exp.method_options["integrated_gradients"]["tolerance"] == 0.01
        gap = fixed.details["integrated_gradients"]["completeness_gap"]
        worst_old = max(worst_old, abs(gap) / scale)
    # The old fixed default (32 steps) missed 1 % on some of these sentences.
    assert worst_old > 0.01


def test_adaptive_ig_equals_an_independent_trapezoid_integral(causal) -> None:
    model, tokenizer = causal
    text = demo.sentences(6, seed=0, model="sva-causal")[1].text
    exp = attnwidget.explain(model, tokenizer, text, methods=["integrated_gradients"])
    info = exp.details["integrated_gradients"]
    scores = exp.scores["integrated_gradients"]
    # The same step count: the reused points give exactly the plain trapezoid.
    same = trapezoid_ig(model, exp.input_ids, exp.target_id, info["steps"])
    assert np.allclose(scores, same, atol=1e-4 * np.abs(same).max())
    # Many steps (8× as many here): the adaptive scores are within the
    # tolerance of the integral (the fixed 32-step default was off by up to 29 %).
    fine = trapezoid_ig(model, exp.input_ids, exp.target_id, 8 * info["steps"])
    scale = max(abs(info["target_value"]), abs(info["target_delta"]))
    assert abs(scores.sum() - fine.sum()) <= 0.011 * scale
    assert np.abs(scores - fine).max() <= 0.01 * scale


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"steps": 0}, r"steps=0 must be at least 1 \(or None"),
        ({"max_steps": 0}, r"max_steps=0 .* must be at least 1"),
        ({"tolerance": 0.0}, r"tolerance=0.0 positive"),
        ({"batch_size": 0}, r"batch_size=0 must be at least 1"),
        ({"baseline": np.zeros((1, 3))}, r"baseline \(1, 3\) must match embeddings \(2, 3\)"),
    ],
)
def test_bad_arguments_are_refused_before_any_evaluation(kwargs: dict, pattern: str) -> None:
    f = SineSum()
    with pytest.raises(attnwidget.InputError, match=pattern):
        attnwidget.integrated_gradients(f, X, **kwargs)
    assert f.points == []
