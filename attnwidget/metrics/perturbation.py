"""The perturbation test of Chefer, Gur & Wolf (2021, CVPR): remove what a map ranks
first (positive) or last (negative) in steps of 10 %, and track the accuracy.

A faithful map makes accuracy fall fast when its most relevant units go first
(positive: lower area is better) and slowly when its least relevant go first
(negative: higher is better). The area is the trapezoid rule over the removed
fractions 0, 0.1, …, 0.9 (x in fractions) times 100, as in their tables, so a
curve that stays at 1 gives 90.

:func:`perturbation_curve_tokens` runs the test on one text through any
callable; :func:`attnwidget.evaluation.vision.perturbation_curve` on images.
At fraction ``f`` of ``m`` candidate tokens, ``round(f·m)`` are removed:
Python's ``round``, which rounds halves to even (``0.5·5 = 2.5`` removes 2),
as the image test counts patches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.errors import InputError
from attnwidget.metrics import _checks

#: Fractions of the units removed at each step (0 %: the unperturbed input).
FRACTIONS: tuple[float, ...] = tuple(round(0.1 * k, 1) for k in range(10))


def removal_order(scores: np.ndarray, *, positive: bool) -> np.ndarray:
    """Indices of ``scores`` in removal order: highest first (positive) or lowest first.

    Ties keep their index order (a stable sort), so the order is reproducible.
    """
    values = np.asarray(scores, dtype=np.float64).ravel()
    if not np.isfinite(values).all():
        raise InputError("scores contain NaN/inf; a removal order needs finite scores.")
    return np.argsort(-values if positive else values, kind="stable")


def area_under_curve(values: np.ndarray, fractions: tuple[float, ...] = FRACTIONS) -> float:
    """Trapezoid area under ``values`` (e.g. accuracy in [0, 1]) over ``fractions``, ×100."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (len(fractions),):
        raise InputError(
            f"{values.shape[0] if values.ndim else 0} values for {len(fractions)} fractions; "
            "pass one value per removed fraction."
        )
    x = np.asarray(fractions, dtype=np.float64)
    return float(np.sum((values[1:] + values[:-1]) * np.diff(x)) / 2 * 100)


@dataclass(frozen=True)
class PerturbationCurve:
    """One text's perturbation curve (see :func:`perturbation_curve_tokens`)."""

    fractions: tuple[float, ...]
    #: Tokens removed at each fraction (``round(f·m)``).
    counts: tuple[int, ...]
    #: (fractions,) or (fractions, k): what ``score_fn`` returned at each step.
    values: np.ndarray
    #: :func:`area_under_curve` of ``values``: a float, or (k,) one per column.
    auc: float | np.ndarray


def _check_fractions(fractions: Sequence[float]) -> tuple[float, ...]:
    if isinstance(fractions, (str, bytes)) or np.ndim(fractions) != 1 or len(fractions) < 2:
        raise InputError(f"fractions must hold at least two steps; got {fractions!r}.")
    out = tuple(_checks.fraction(f, "each fraction") for f in fractions)
    if np.any(np.diff(out) <= 0):
        raise InputError(f"fractions must increase; got {out}.")
    return out


def perturbation_curve_tokens(
    score_fn: Callable[[Any], Any],
    input_ids: Any,
    scores: Any = None,
    *,
    replacement_id: int | None,
    candidates: Any = None,
    positive: bool = True,
    order: Any = None,
    fractions: Sequence[float] = FRACTIONS,
) -> PerturbationCurve:
    """Chefer et al.'s perturbation curve and AUC for one text.

    The candidate tokens are removed in the order of ``scores`` (most relevant
    first when ``positive``, least relevant first otherwise; ties by position,
    :func:`removal_order`), ``round(f·m)`` of the ``m`` candidates at each
    fraction ``f``. Tokens that are not candidates are never removed.

    Args:
        score_fn: called once with every perturbed input: ``ids`` → ``(B,)``
            one value in [0, 1] per input (the target probability, or whether
            the prediction is right), or ``(B, k)`` several (e.g. both, from one
            forward pass). ``ids`` is a (B, n) integer array when tokens are
            replaced, a list of B 1-D arrays when they are deleted. Row 0 is
            the unchanged input when ``fractions`` starts at 0.
        input_ids: (n,) the text's token ids.
        scores: (n,) one score per token (only the candidates' are read).
        replacement_id: the id put in a removed token's place (positions and
            length stay, as Chefer et al. blank patches), or None to delete the
            removed tokens (shorter inputs).
        candidates: the tokens that may be removed: None (all), a bool mask
            (n,) or positions.
        positive: most relevant first (True) or least relevant first.
        order: instead of ``scores`` (and ``candidates``), the removal order
            itself as positions, e.g. a random permutation for the random
            baseline; ``positive`` is then not read.
        fractions: increasing fractions in [0, 1] (:data:`FRACTIONS`).
    """
    ids = _checks.token_ids(input_ids)
    replacement_id = _checks.replacement(replacement_id)
    fractions = _check_fractions(fractions)
    if (scores is None) == (order is None):
        raise InputError("pass either scores (and candidates) or an explicit order, not both.")
    if order is not None:
        if candidates is not None:
            raise InputError("order already names the candidates; leave candidates as None.")
        ranked = np.asarray(order)
        if ranked.dtype == bool:
            raise InputError("order must be positions (integers) in removal order, not a mask.")
        positions = _checks.candidate_positions(ranked, ids.size)  # checks range and repeats
        ranked = ranked.astype(np.intp)
    else:
        values = _checks.vector(scores, "scores", finite=False)
        if values.size != ids.size:
            raise InputError(
                f"{values.size} scores for {ids.size} tokens; pass one score per token."
            )
        positions = _checks.candidate_positions(candidates, ids.size)
        if not np.isfinite(values[positions]).all():
            raise InputError("scores hold NaN/inf at candidate positions; they need finite scores.")
        ranked = positions[removal_order(values[positions], positive=bool(positive))]
    counts = tuple(round(f * positions.size) for f in fractions)
    removed = []
    for count in counts:
        gone = np.zeros(ids.size, dtype=bool)
        gone[ranked[:count]] = True
        removed.append(gone)
    curve = _checks.call_scorer(
        score_fn, _checks.perturbed(ids, removed, replacement_id), "score_fn"
    )
    if curve.ndim == 1:
        auc: float | np.ndarray = area_under_curve(curve, fractions)
    else:
        auc = np.array([area_under_curve(column, fractions) for column in curve.T])
    return PerturbationCurve(fractions=fractions, counts=counts, values=curve, auc=auc)
