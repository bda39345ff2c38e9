"""One attention step with every intermediate kept, for the calculator.

scores → masked scores (−∞ where masked, as the teaching notes ask, rather
than −1e9) → weights = softmax(masked scores / T) over the keys → output =
weights @ v. For Luong et al.'s (2015) local-p the softmax weights are then
multiplied by the Gaussian exp(−(s − p_t)² / (2σ²)) and, as in the paper,
not renormalised; the output uses those multiplied weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from attnwidget.errors import InputError
from attnwidget.teach._checks import as_bool_mask, as_matrix, as_scalar, refuse_overflow
from attnwidget.teach.masks import LocalPAlignment
from attnwidget.teach.scores import attention_scores


@dataclass(frozen=True, eq=False)
class AttentionSteps:
    """Every intermediate of :func:`attention` (arrays are float64, read-only).

    - ``kind``, ``temperature``: what was asked for.
    - ``scores`` (m, n): :func:`attention_scores`.
    - ``mask`` (m, n) bool: the mask used (True = may attend; all True when
      none was given; the local-p window included).
    - ``masked_scores`` (m, n): the scores, −∞ where masked.
    - ``weights`` (m, n): softmax(masked_scores / temperature) along each row;
      every row sums to 1, masked entries are exactly 0.
    - ``gaussian`` (m, n) or None: local-p's exp(−(s − p_t)² / (2σ²)).
    - ``local_weights`` (m, n) or None: weights × gaussian (local-p only; rows
      sum to less than 1: Luong et al. 2015 do not renormalise).
    - ``positions`` (m,) or None: local-p's aligned positions p_t.
    - ``output`` (m, d_v): ``final_weights @ v``.
    """

    kind: str
    temperature: float
    scores: np.ndarray
    mask: np.ndarray
    masked_scores: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    gaussian: np.ndarray | None = None
    local_weights: np.ndarray | None = None
    positions: np.ndarray | None = None

    @property
    def final_weights(self) -> np.ndarray:
        """The weights the output is made of: ``local_weights`` for local-p, else ``weights``."""
        return self.weights if self.local_weights is None else self.local_weights


def _check_temperature(temperature: Any) -> float:
    t = as_scalar("temperature", temperature)
    if t <= 0:
        raise InputError(
            f"temperature must be > 0; got {t:g} (it divides the scores: small T sharpens "
            "the softmax towards the largest score, large T flattens it towards uniform)."
        )
    return t


def masked_softmax(masked_scores: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Row-wise softmax of ``masked_scores / temperature`` (−∞ entries get weight 0).

    A row whose every entry is −∞ (every key masked) raises
    :class:`~attnwidget.errors.InputError` naming the rows.
    """
    empty = np.flatnonzero(np.isneginf(masked_scores).all(axis=1))
    if empty.size:
        rows = ", ".join(str(int(i)) for i in empty[:10])
        raise InputError(
            f"the mask hides every key from query row(s) {rows}: softmax over no keys is "
            "undefined; let each query attend to at least one key (drop padded query rows)."
        )
    with np.errstate(over="ignore"):  # a small T can overflow: refused, naming the step
        scaled = masked_scores / temperature
    refuse_overflow(
        "softmax",
        scaled,
        np.isneginf(masked_scores),
        f"the scores divided by the temperature T = {temperature:g} exceed it: raise T "
        "or scale q and k down.",
    )
    shifted = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


@overload
def _frozen(array: np.ndarray) -> np.ndarray: ...
@overload
def _frozen(array: None) -> None: ...
def _frozen(array: np.ndarray | None) -> np.ndarray | None:
    if array is not None:
        array.setflags(write=False)
    return array


def attention(
    q: Any,
    k: Any,
    v: Any,
    kind: str = "scaled_dot",
    mask: Any = None,
    temperature: float = 1.0,
    *,
    alignment: LocalPAlignment | None = None,
    **params: Any,
) -> AttentionSteps:
    """Attention of queries ``q`` (m, d) over keys ``k`` (n, d) and values ``v`` (n, d_v).

    ``kind`` and ``params`` choose the score function (see
    :func:`attention_scores`; the additive vector is ``v_a`` here). ``mask``: a
    boolean (m, n) array, True = may attend (see :func:`attention_mask`).
    ``temperature`` > 0 divides the masked scores before the softmax.
    ``alignment``: the result of :func:`local_p_alignment` for Luong et al.'s
    (2015) local-p attention: its window is and-ed into the mask and the
    softmax weights are multiplied by its Gaussian (no renormalisation).

    Returns an :class:`AttentionSteps` with every intermediate. A query row
    with every key masked raises :class:`~attnwidget.errors.InputError`.
    """
    t = _check_temperature(temperature)
    scores = attention_scores(q, k, kind, **params)
    m, n = scores.shape
    values = as_matrix("v", v, (("n", n), ("d_v", None)), "one value row per key, n from k")
    keep = np.ones((m, n), dtype=bool) if mask is None else as_bool_mask("mask", mask, (m, n))
    gaussian = positions = None
    if alignment is not None:
        if not isinstance(alignment, LocalPAlignment):
            raise InputError(
                f"alignment must come from local_p_alignment(); got {type(alignment).__name__}."
            )
        if alignment.mask.shape != (m, n):
            raise InputError(
                f"alignment is for {alignment.mask.shape[0]} queries × {alignment.mask.shape[1]} "
                f"keys, but q and k give (m, n) = ({m}, {n})."
            )
        keep = keep & alignment.mask
        gaussian, positions = alignment.gaussian.copy(), alignment.positions.copy()
    masked = np.where(keep, scores, -np.inf)
    weights = masked_softmax(masked, t)
    local = None if gaussian is None else weights * gaussian
    final = weights if local is None else local
    # A weighted mean of v's rows (weights >= 0, summing to <= 1) stays within v's
    # range; the check guards the step anyway, so no NaN can ever reach the page.
    with np.errstate(over="ignore", invalid="ignore"):
        output = final @ values
    refuse_overflow("output", output, None, "scale the values v down and try again.")
    return AttentionSteps(
        kind=kind,
        temperature=t,
        scores=_frozen(scores),
        mask=_frozen(keep.copy()),
        masked_scores=_frozen(masked),
        weights=_frozen(weights),
        output=_frozen(output),
        gaussian=_frozen(gaussian),
        local_weights=_frozen(local),
        positions=_frozen(positions),
    )
