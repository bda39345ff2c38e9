"""The perturbation test of Chefer, Gur & Wolf (2021, CVPR): remove what a map ranks
first (positive) or last (negative) in steps of 10 %, and track the accuracy.

A faithful map makes accuracy fall fast when its most relevant units go first
(positive: lower area is better) and slowly when its least relevant go first
(negative: higher is better). The area is the trapezoid rule over the removed
fractions 0, 0.1, …, 0.9 (x in fractions) times 100, as in their tables.
"""

from __future__ import annotations

import numpy as np

#: Fractions of the units removed at each step (0 %: the unperturbed input).
FRACTIONS: tuple[float, ...] = tuple(round(0.1 * k, 1) for k in range(10))


def removal_order(scores: np.ndarray, *, positive: bool) -> np.ndarray:
    """Indices of ``scores`` in removal order: highest first (positive) or lowest first.

    Ties keep their index order (a stable sort), so the order is reproducible.
    """
    values = np.asarray(scores, dtype=np.float64).ravel()
    if not np.isfinite(values).all():
        raise ValueError("scores contain NaN/inf; a removal order needs finite scores.")
    return np.argsort(-values if positive else values, kind="stable")


def area_under_curve(values: np.ndarray, fractions: tuple[float, ...] = FRACTIONS) -> float:
    """Trapezoid area under ``values`` (e.g. accuracy in [0, 1]) over ``fractions``, ×100."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (len(fractions),):
        raise ValueError(
            f"{values.shape[0] if values.ndim else 0} values for {len(fractions)} fractions; "
            "pass one value per removed fraction."
        )
    x = np.asarray(fractions, dtype=np.float64)
    return float(np.sum((values[1:] + values[:-1]) * np.diff(x)) / 2 * 100)
