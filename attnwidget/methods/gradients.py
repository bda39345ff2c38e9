"""Gradient baselines: input × gradient and integrated gradients."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import InputError, NonFiniteError
from .registry import ScoreContext, register

#: ``value_and_grad(points (B, n, d)) -> (values (B,), gradients (B, n, d))``.
ValueAndGrad = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


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
    steps: int = 32,
    batch_size: int = 16,
) -> tuple[np.ndarray, dict[str, float]]:
    """Integrated gradients (Sundararajan, Taly & Yan, ICML 2017).

    ``IG_j = Σ_d (e - e')_{j,d} · ∫_0^1 ∂y/∂e_{j,d}(e' + α(e - e')) dα``, the
    integral taken by the trapezoid rule on ``steps`` equal intervals.

    Args:
        value_and_grad: maps a batch of embeddings (B, n, d) to the target
            score (B,) and its gradient (B, n, d).
        embeddings: (n, d) input embeddings.
        baseline: (n, d) baseline embeddings; zeros by default.
        steps: number of intervals of the path (≥ 1).

    Returns:
        ``(scores (n,), info)`` where ``info`` has ``completeness_gap`` =
        Σ_j IG_j − (y(e) − y(e')), ``target_delta`` = y(e) − y(e') and
        ``steps``. Completeness (the axiom) says the gap is 0; a large gap
        means more steps are needed.
    """
    if steps < 1:
        raise InputError(f"steps={steps} must be at least 1.")
    embeddings = np.asarray(embeddings, dtype=np.float64)
    base = np.zeros_like(embeddings) if baseline is None else np.asarray(baseline, np.float64)
    if base.shape != embeddings.shape:
        raise InputError(f"baseline {base.shape} must match embeddings {embeddings.shape}.")
    alphas = np.linspace(0.0, 1.0, steps + 1)
    weights = np.full(steps + 1, 1.0 / steps)
    weights[[0, -1]] = 0.5 / steps
    delta = embeddings - base
    grad_sum = np.zeros_like(embeddings)
    values = np.empty(steps + 1)
    for start in range(0, steps + 1, batch_size):
        chunk = alphas[start : start + batch_size]
        points = base[None] + chunk[:, None, None] * delta[None]
        chunk_values, chunk_grads = value_and_grad(points)
        chunk_grads = np.asarray(chunk_grads, dtype=np.float64)
        _check_finite(chunk_grads, "integrated-gradients path gradients")
        values[start : start + len(chunk)] = np.asarray(chunk_values, dtype=np.float64)
        grad_sum += np.tensordot(weights[start : start + len(chunk)], chunk_grads, axes=1)
    scores = (delta * grad_sum).sum(axis=-1)
    target_delta = float(values[-1] - values[0])
    info = {
        "completeness_gap": float(scores.sum() - target_delta),
        "target_delta": target_delta,
        "steps": float(steps),
    }
    return scores, info


def _check_finite(array: np.ndarray, what: str) -> None:
    if not np.isfinite(array).all():
        raise NonFiniteError(
            f"{what} contain NaN/inf; run the model in float32 (half precision "
            "overflows easily) or check the input for padding-only rows."
        )


@register(
    "input_x_gradient",
    needs={"embedding_grads"},
    summary="Embedding × gradient of the target, summed over the embedding.",
    reference="Shrikumar et al. (2017); Denil et al. (2014).",
    signed=True,
)
def _score_input_x_gradient(context: ScoreContext) -> np.ndarray:
    return input_x_gradient(context.embeddings, context.embedding_grads)


@register(
    "integrated_gradients",
    needs={"target_score"},
    summary="Gradients integrated along a path from a baseline embedding.",
    reference="Sundararajan, Taly & Yan (2017), Axiomatic Attribution for Deep Networks.",
    signed=True,
)
def _score_integrated_gradients(context: ScoreContext) -> tuple[np.ndarray, dict[str, float]]:
    options = dict(context.options.get("integrated_gradients", {}))
    return integrated_gradients(context.target_score, context.embeddings, **options)
