"""Gradient baselines on arrays: input × gradient and integrated gradients.

Pure functions; their registered scorers (text and images) are in
:mod:`attnwidget.methods.gradient_methods`, which also reaches the pixel
versions in :mod:`attnwidget.methods.pixels`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from attnwidget.errors import ConvergenceWarning, InputError, NonFiniteError

#: ``value_and_grad(points (B, n, d)) -> (values (B,), gradients (B, n, d))``.
ValueAndGrad = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]

#: Intervals of the adaptive search's first round; each round doubles them.
START_STEPS = 16
#: Default cap of the adaptive search.
DEFAULT_MAX_STEPS = 512
#: Default relative completeness tolerance (1 %).
DEFAULT_TOLERANCE = 0.01


def input_x_gradient(embeddings: np.ndarray, gradients: np.ndarray) -> np.ndarray:
    """Input × gradient summed over the embedding dimension (Shrikumar et al., 2017).

    ``score_j = Σ_d e_{j,d} · ∂y/∂e_{j,d}``. Shapes: embeddings and gradients
    (n, d) -> scores (n,). Signed.
    """
    embeddings = np.asarray(embeddings, dtype=np.float64)
    gradients = np.asarray(gradients, dtype=np.float64)
    if embeddings.shape != gradients.shape or embeddings.ndim != 2:
        raise InputError(
            f"embeddings {embeddings.shape} and gradients {gradients.shape} must both be (n, d)."
        )
    _check_finite(gradients, "embedding gradients")
    return (embeddings * gradients).sum(axis=-1)


def integrated_gradients(
    value_and_grad: ValueAndGrad,
    embeddings: np.ndarray,
    *,
    baseline: np.ndarray | None = None,
    steps: int | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    tolerance: float = DEFAULT_TOLERANCE,
    batch_size: int = 16,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Integrated gradients (Sundararajan, Taly & Yan, ICML 2017), adaptive.

    ``IG_j = Σ_d (e - e')_{j,d} · ∫_0^1 ∂y/∂e_{j,d}(e' + α(e - e')) dα``, the
    integral taken by the trapezoid rule on equal intervals. Completeness (the
    paper's axiom) says ``Σ_j IG_j = y(e) − y(e')``; the difference left by
    the finite sum is the *completeness gap*.

    By default the number of intervals is chosen adaptively: it starts at
    16 and doubles until ``|gap| ≤ tolerance · max(|y(e)|, |y(e) − y(e')|)``
    (1 % of the target logit, or of the logit's change along the path if that
    is larger) or until doubling would pass ``max_steps``, which warns
    (:class:`ConvergenceWarning`). The points of n intervals are a subset of
    those of 2n, so each doubling evaluates only the n new midpoints: the
    whole search costs ``steps + 1`` evaluations, as one run at the final
    step count would.

    Args:
        value_and_grad: maps a batch of embeddings (B, n, d) to the target
            score (B,) and its gradient (B, n, d).
        embeddings: (n, d) input embeddings.
        baseline: (n, d) baseline embeddings; zeros by default.
        steps: a fixed number of intervals (≥ 1); disables the adaptive search.
        max_steps: cap of the adaptive search (≥ 1).
        tolerance: relative completeness tolerance of the search (> 0).
        batch_size: points per call of ``value_and_grad``.

    Returns:
        ``(scores (n,), info)``; ``info`` has ``steps`` (intervals used),
        ``completeness_gap`` = Σ_j IG_j − (y(e) − y(e')), ``target_delta`` =
        y(e) − y(e'), ``target_value`` y(e), ``baseline_value`` y(e'),
        ``tolerance``, ``converged`` (the gap is within tolerance),
        ``adaptive`` and ``gap_history`` ([(steps, gap), …], one per round).
    """
    if steps is not None and steps < 1:
        raise InputError(f"steps={steps} must be at least 1 (or None for the adaptive search).")
    if max_steps < 1 or not tolerance > 0 or batch_size < 1:
        raise InputError(
            f"max_steps={max_steps} and batch_size={batch_size} must be at least 1 and "
            f"tolerance={tolerance} positive."
        )
    embeddings = np.asarray(embeddings, dtype=np.float64)
    base = np.zeros_like(embeddings) if baseline is None else np.asarray(baseline, np.float64)
    if base.shape != embeddings.shape:
        raise InputError(f"baseline {base.shape} must match embeddings {embeddings.shape}.")
    delta = embeddings - base

    def evaluate(alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values at ``alphas`` and the sum of their gradients, end points halved."""
        values = np.empty(alphas.size)
        grad_sum = np.zeros_like(embeddings)
        for start in range(0, alphas.size, batch_size):
            chunk = alphas[start : start + batch_size]
            points = base[None] + chunk[:, None, None] * delta[None]
            chunk_values, chunk_grads = value_and_grad(points)
            chunk_grads = np.asarray(chunk_grads, dtype=np.float64)
            _check_finite(chunk_grads, "integrated-gradients path gradients")
            values[start : start + chunk.size] = np.asarray(chunk_values, dtype=np.float64)
            weights = np.where((chunk == 0.0) | (chunk == 1.0), 0.5, 1.0)
            grad_sum += np.tensordot(weights, chunk_grads, axes=1)
        return values, grad_sum

    adaptive = steps is None
    intervals = min(START_STEPS, max_steps) if steps is None else steps
    values, grad_sum = evaluate(np.linspace(0.0, 1.0, intervals + 1))
    # The path's end values are exact whatever the step count.
    target_value, baseline_value = float(values[-1]), float(values[0])
    target_delta = target_value - baseline_value
    allowed = tolerance * max(abs(target_value), abs(target_delta))
    history: list[tuple[int, float]] = []
    while True:
        scores = (delta * grad_sum).sum(axis=-1) / intervals
        gap = float(scores.sum() - target_delta)
        history.append((intervals, gap))
        if not adaptive or abs(gap) <= allowed or 2 * intervals > max_steps:
            break
        # Doubling adds only the midpoints of the current intervals (weight 1 each).
        midpoints = (2 * np.arange(intervals) + 1) / (2 * intervals)
        grad_sum += evaluate(midpoints)[1]
        intervals *= 2
    converged = abs(gap) <= allowed
    if adaptive and not converged:
        warnings.warn(
            f"integrated gradients did not converge: after {intervals} steps the completeness "
            f"gap is {gap:.4g}, more than tolerance={tolerance:g} × {allowed / tolerance:.4g}. "
            'Raise method_options={"integrated_gradients": {"max_steps": ...}} or the '
            "tolerance; the scores are reported as they are.",
            ConvergenceWarning,
            stacklevel=2,
        )
    info = {
        "steps": intervals,
        "completeness_gap": gap,
        "target_delta": target_delta,
        "target_value": target_value,
        "baseline_value": baseline_value,
        "tolerance": float(tolerance),
        "converged": converged,
        "adaptive": adaptive,
        "gap_history": history,
    }
    return scores, info


def _check_finite(array: np.ndarray, what: str) -> None:
    if not np.isfinite(array).all():
        raise NonFiniteError(
            f"{what} contain NaN/inf; run the model in float32 (half precision "
            "overflows easily) or check the input for padding-only rows."
        )
