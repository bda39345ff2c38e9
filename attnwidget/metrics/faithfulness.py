"""ERASER's faithfulness metrics (DeYoung et al., 2020, ACL): comprehensiveness,
sufficiency and their AOPC over rationale sizes.

With ``m(x)_j`` the model's probability of the explained class ``j`` on input
``x`` and ``r`` a rationale (a set of tokens):

* **comprehensiveness** ``m(x)_j − m(x \\ r)_j``: how far the probability falls
  when the rationale is taken out. Higher: the model needed those tokens.
* **sufficiency** ``m(x)_j − m(r)_j``: how far it falls when only the rationale
  is kept. Lower (it may be negative): the rationale alone is enough.
* **AOPC** (area over the perturbation curve): a soft score gives a rationale
  per bin, its top 1, 5, 10, 20 and 50 % of tokens (:data:`AOPC_BINS`); AOPC is
  the mean of the comprehensiveness (or sufficiency) over the bins. ERASER
  averages over the bins only; Samek et al. (2017) also count the unperturbed
  step, which adds a zero term and divides by one more.

**Rationale size.** A bin ``f`` over ``N`` candidate tokens keeps the top
``⌈f·N⌉`` of them (:func:`top_k_mask`). ERASER's paper names the bins but not
the rounding; the ceiling keeps every bin non-empty (the 1 % bin holds one
token until N exceeds 100), and it is what the released code of ERASER's
soft-score baselines that we read computes (``ceil(threshold × number of
removable tokens)``). ferret's percentage rationales take ``int(f·N)`` (the
floor) instead and skip the bins that come out empty. ``f·N`` is rounded to 9
decimals before the ceiling, so that ``0.07 × 100`` (``7.000000000000001`` in
floating point) keeps 7 tokens, not 8. Ties in the scores go to the earlier
position.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.errors import InputError
from attnwidget.metrics import _checks

#: ERASER's rationale sizes for AOPC: the top 1, 5, 10, 20 and 50 % of the tokens.
AOPC_BINS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.2, 0.5)

#: ``probability_fn`` for :func:`erasure_curves`: token ids → the class's probability.
ProbabilityFn = Callable[[Any], Any]


def _difference(full: Any, other: Any, names: tuple[str, str]) -> float | np.ndarray:
    a = _checks.probabilities(full, names[0])
    b = _checks.probabilities(other, names[1])
    if a.shape != b.shape:
        raise InputError(
            f"{names[0]} has shape {a.shape} and {names[1]} {b.shape}; pass one number each, "
            "or arrays of the same shape (one per example)."
        )
    delta = a - b
    return float(delta) if delta.ndim == 0 else delta


def comprehensiveness(full_prob: Any, without_rationale_prob: Any) -> float | np.ndarray:
    """ERASER's comprehensiveness ``m(x)_j − m(x \\ r)_j`` (higher: more faithful).

    Args:
        full_prob: the class's probability on the whole input, a number or an
            array (one per example).
        without_rationale_prob: the same with the rationale removed; the same shape.

    Returns:
        A float for numbers, else an array of the inputs' shape.
    """
    return _difference(full_prob, without_rationale_prob, ("full_prob", "without_rationale_prob"))


def sufficiency(full_prob: Any, only_rationale_prob: Any) -> float | np.ndarray:
    """ERASER's sufficiency ``m(x)_j − m(r)_j`` (lower: more faithful; may be negative).

    Args:
        full_prob: the class's probability on the whole input, a number or an array.
        only_rationale_prob: the same on the rationale alone; the same shape.
    """
    return _difference(full_prob, only_rationale_prob, ("full_prob", "only_rationale_prob"))


def rationale_size(fraction: float, count: int) -> int:
    """``⌈fraction·count⌉`` with ``fraction·count`` rounded to 9 decimals first."""
    return math.ceil(round(fraction * count, 9))


def top_k_mask(scores: Any, fraction: float, *, candidates: Any = None) -> np.ndarray:
    """bool (n,): the top ``⌈fraction·N⌉`` of the ``N`` candidate tokens by score.

    Args:
        scores: (n,) one score per token; only the candidates' are read (the
            others may be NaN, e.g. special tokens a method does not score).
        fraction: in [0, 1] (0: an empty rationale).
        candidates: the tokens that may enter the rationale: None (all), a bool
            mask (n,) or integer positions.

    Ties go to the earlier position (a stable sort).
    """
    fraction = _checks.fraction(fraction, "fraction")
    values = _checks.vector(scores, "scores", finite=False, min_size=1)
    positions = _checks.candidate_positions(candidates, values.size)
    chosen = values[positions]
    if not np.isfinite(chosen).all():
        raise InputError(
            f"scores hold NaN/inf at candidate position(s) "
            f"{positions[~np.isfinite(chosen)].tolist()[:5]}; candidates need finite scores."
        )
    order = positions[np.argsort(-chosen, kind="stable")]
    out = np.zeros(values.size, dtype=bool)
    out[order[: rationale_size(fraction, positions.size)]] = True
    return out


def aopc(curve: Any) -> float:
    """ERASER's AOPC: the mean over the bins of a comprehensiveness (or sufficiency) curve.

    Args:
        curve: (bins,) one example's values per bin, or (examples, bins); the
            mean over everything is the same as the mean over examples of each
            example's AOPC when every example has every bin.
    """
    try:
        array = None if isinstance(curve, str) else np.asarray(curve, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim not in (1, 2) or array.size == 0:
        raise InputError(
            f"curve must be (bins,) or (examples, bins) and non-empty; got "
            f"{_checks.describe(curve)}."
        )
    if not np.isfinite(array).all():
        raise InputError("curve holds NaN/inf; AOPC needs a finite value for every bin.")
    return float(array.mean())


@dataclass(frozen=True)
class ErasureCurves:
    """One example's ERASER curves (see :func:`erasure_curves`)."""

    bins: tuple[float, ...]
    #: Tokens in the rationale at each bin (``⌈f·N⌉``).
    sizes: tuple[int, ...]
    full_probability: float
    comprehensiveness: np.ndarray
    sufficiency: np.ndarray
    aopc_comprehensiveness: float
    aopc_sufficiency: float


def _check_bins(bins: Sequence[float]) -> tuple[float, ...]:
    if isinstance(bins, (str, bytes)) or np.ndim(bins) != 1 or not len(bins):
        raise InputError(f"bins must be a non-empty sequence of fractions; got {bins!r}.")
    return tuple(_checks.fraction(b, "each bin", low_open=True) for b in bins)


def erasure_curves(
    probability_fn: ProbabilityFn,
    input_ids: Any,
    scores: Any,
    *,
    replacement_id: int | None,
    candidates: Any,
    bins: Sequence[float] = AOPC_BINS,
) -> ErasureCurves:
    """Comprehensiveness and sufficiency at each bin, and their AOPC, for one example.

    For each bin ``f`` the rationale is :func:`top_k_mask` ``(scores, f,
    candidates=candidates)``. *Comprehensiveness* removes the rationale;
    *sufficiency* removes the other candidates. Tokens that are not
    candidates (special tokens, the query) are kept in every input.

    Args:
        probability_fn: called once with every input: ``ids`` → ``(B,)`` the
            explained class's probability for each. With a ``replacement_id``
            ``ids`` is a (B, n) integer array (removed tokens replaced: length
            and positions stay); with ``replacement_id=None`` the removed tokens
            are deleted, the inputs have different lengths, and ``ids`` is a
            list of B 1-D arrays (which may be empty if every token was a
            candidate and all were removed). Row 0 is the unchanged input.
        input_ids: (n,) the example's token ids.
        scores: (n,) one score per token (only the candidates' are read).
        replacement_id: the id that replaces a removed token (e.g. the mask or
            unknown token), or None to delete removed tokens.
        candidates: the tokens that may be removed: None (all), a bool mask
            (n,) or positions.
        bins: rationale sizes as fractions in (0, 1] (:data:`AOPC_BINS`).
    """
    ids = _checks.token_ids(input_ids)
    values = _checks.vector(scores, "scores", finite=False)
    if values.size != ids.size:
        raise InputError(f"{values.size} scores for {ids.size} tokens; pass one score per token.")
    replacement_id = _checks.replacement(replacement_id)
    bins = _check_bins(bins)
    positions = _checks.candidate_positions(candidates, ids.size)
    if not positions.size:
        raise InputError("candidates select no token; a rationale needs at least one candidate.")
    is_candidate = np.zeros(ids.size, dtype=bool)
    is_candidate[positions] = True
    rationales = [top_k_mask(values, f, candidates=positions) for f in bins]
    removed = [
        np.zeros(ids.size, dtype=bool),
        *rationales,  # comprehensiveness: x \ r
        *(is_candidate & ~r for r in rationales),  # sufficiency: r (and the non-candidates)
    ]
    probs = _checks.call_scorer(
        probability_fn, _checks.perturbed(ids, removed, replacement_id), "probability_fn"
    )
    if probs.ndim != 1:
        raise InputError(
            f"probability_fn returned {probs.shape}; it must return one probability per sequence."
        )
    full, without, only = probs[0], probs[1 : 1 + len(bins)], probs[1 + len(bins) :]
    compr, suff = full - without, full - only
    return ErasureCurves(
        bins=bins,
        sizes=tuple(int(r.sum()) for r in rationales),
        full_probability=float(full),
        comprehensiveness=compr,
        sufficiency=suff,
        aopc_comprehensiveness=aopc(compr),
        aopc_sufficiency=aopc(suff),
    )
