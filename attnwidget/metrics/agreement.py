"""Agreement: between annotators (Cohen's κ, Krippendorff's α, pairwise token F1),
between methods (rank correlations), and a bootstrap interval for any mean.

* Cohen (1960): κ = (p_o − p_e) / (1 − p_e) for two annotators.
* Krippendorff (2004/2011): α = 1 − D_o / D_e for any number of annotators with
  missing values, computed by the ``krippendorff`` package (Castro, PyPI),
  installed with ``attnwidget[evaluate]``.
* Spearman's ρ and Kendall's τ (scipy.stats; τ-b, which corrects for ties) of
  two methods' scores on one example, as Jain & Wallace (2019) compare
  attention with gradients and leave-one-out.
* Efron & Tibshirani (1993): the percentile bootstrap.

**Undefined values are NaN**, not errors, so a table over many examples keeps
going and :func:`bootstrap_ci` drops them and says how many: κ when
``1 − p_e = 0``, α when every pairable value is the same, ρ and τ when
either method's scores are constant.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from attnwidget.errors import InputError
from attnwidget.metrics import _checks
from attnwidget.metrics.plausibility import token_prf

LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _labels(values: Any, name: str) -> list[Hashable]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise InputError(
            f"{name} must be a sequence of labels (one per item); got {_checks.describe(values)}."
        )
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise InputError(
            f"{name} must be 1-D (one label per item); got {_checks.describe(values)}."
        )
    out = list(values.tolist() if isinstance(values, np.ndarray) else values)
    for index, label in enumerate(out):
        if not isinstance(label, Hashable):
            raise InputError(f"{name}[{index}] is {label!r}; labels must be hashable.")
        if isinstance(label, float) and label != label:
            raise InputError(
                f"{name}[{index}] is NaN; drop the items an annotator left out "
                "(or use krippendorff_alpha, which takes missing values)."
            )
    return out


def cohen_kappa(a: Any, b: Any) -> float:
    """Cohen's κ of two annotators' labels (any hashable labels, one per item).

    p_o is the share of items with the same label, p_e = Σ_c p_a(c)·p_b(c) the
    agreement expected by chance from each annotator's label shares, and
    κ = (p_o − p_e) / (1 − p_e). When ``1 − p_e = 0`` (both annotators gave
    every item the same single label) κ is 0/0: NaN, as scikit-learn's
    ``cohen_kappa_score`` gives.
    """
    first, second = _labels(a, "a"), _labels(b, "b")
    if len(first) != len(second) or not first:
        raise InputError(
            f"a has {len(first)} labels and b {len(second)}; pass one each per item "
            "(at least one item)."
        )
    n = len(first)
    observed = sum(x == y for x, y in zip(first, second, strict=True)) / n
    shares_a, shares_b = Counter(first), Counter(second)
    expected = sum(shares_a[c] * shares_b.get(c, 0) for c in shares_a) / n**2
    if expected == 1:
        return float("nan")
    return (observed - expected) / (1 - expected)


def krippendorff_alpha(
    matrix: Any, level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal"
) -> float:
    """Krippendorff's α of an (annotators, units) matrix of numbers, NaN for missing.

    Units with fewer than two values are not pairable and do not count. When
    every pairable value is the same, the expected disagreement is 0 and α is
    0/0: NaN. ``level`` is the level of measurement (``nominal`` labels,
    ``ordinal`` ranks, ``interval`` / ``ratio`` numbers); labels that are not
    numbers must be coded as numbers first.
    """
    if level not in LEVELS:
        raise InputError(f"level must be one of {', '.join(LEVELS)}; got {level!r}.")
    try:
        data = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(
            "matrix must hold numbers (code labels as numbers), NaN for missing; got "
            f"{_checks.describe(matrix)}."
        ) from exc
    if data.ndim != 2 or data.shape[0] < 2:
        raise InputError(
            "matrix must be (annotators, units) with at least two annotators; got "
            f"{_checks.describe(matrix)}."
        )
    if np.isinf(data).any():
        raise InputError("matrix holds inf; use NaN for a missing value.")
    pairable = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    if not pairable.size:
        raise InputError(
            "no unit has values from at least two annotators; α needs pairable values."
        )
    if np.unique(pairable[~np.isnan(pairable)]).size < 2:
        return float("nan")
    try:
        import krippendorff
    except ImportError as exc:  # pragma: no cover - the evaluate extra is missing
        raise ImportError(
            'krippendorff_alpha needs the krippendorff package: pip install "attnwidget[evaluate]"'
        ) from exc
    return float(krippendorff.alpha(reliability_data=pairable, level_of_measurement=level))


def pairwise_token_f1(rationales: Any) -> float:
    """Mean token F1 (:func:`token_prf`) over every pair of annotators' rationales.

    Args:
        rationales: (annotators, n) bool, or a sequence of bool (n,) masks, at
            least two. F1 is symmetric, so each unordered pair counts once.
    """
    if isinstance(rationales, (str, bytes)) or not isinstance(rationales, (Sequence, np.ndarray)):
        raise InputError(
            f"rationales must be (annotators, n) bool masks; got {_checks.describe(rationales)}."
        )
    masks = [_checks.mask(r, f"rationales[{i}]") for i, r in enumerate(rationales)]
    if len(masks) < 2:
        raise InputError(f"pairwise_token_f1 needs at least two annotators; got {len(masks)}.")
    if len({m.size for m in masks}) > 1:
        raise InputError(
            f"the rationales have {sorted({m.size for m in masks})} tokens; pass one mask "
            "of the same length per annotator."
        )
    return float(np.mean([token_prf(x, y).f1 for x, y in itertools.combinations(masks, 2)]))


class RankAgreement(NamedTuple):
    """Spearman's ρ and Kendall's τ-b in [−1, 1] (NaN when either side is constant)."""

    spearman: float
    kendall: float


def rank_agreement(scores_a: Any, scores_b: Any) -> RankAgreement:
    """How two methods' token scores on one example agree in rank: Spearman ρ, Kendall τ-b.

    Ties take their mean rank (ρ) and are corrected for (τ-b). When either
    side is constant no ranking exists and both are NaN (scipy would warn and
    give NaN as well).
    """
    a = _checks.vector(scores_a, "scores_a", min_size=2)
    b = _checks.vector(scores_b, "scores_b")
    _checks.same_length(a, b, ("scores_a", "scores_b"))
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return RankAgreement(float("nan"), float("nan"))
    from scipy import stats

    return RankAgreement(
        float(stats.spearmanr(a, b).statistic), float(stats.kendalltau(a, b).statistic)
    )


class BootstrapCI(NamedTuple):
    """The mean of the finite values and its percentile bootstrap interval."""

    mean: float
    low: float
    high: float
    #: How many values were used, and how many NaNs were dropped.
    # (The field shadows tuple.count, which mypy reports; the name is public API.)
    count: int  # type: ignore[assignment]
    dropped: int


def bootstrap_ci(
    values: Any, *, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0
) -> BootstrapCI:
    """The mean of ``values`` and a percentile bootstrap interval for it.

    NaNs are dropped first (their number is ``dropped``). With ``rng =
    np.random.default_rng(seed)``, each resample is ``rng.integers(0, n, n)``
    (one call per resample, so memory stays O(n)), and ``low`` / ``high`` are
    the ``(1 ∓ confidence) / 2`` quantiles of the resampled means (numpy's
    default, linear interpolation). The same seed gives the same interval.
    With no value left, everything is NaN and ``count`` is 0; with one, the
    interval is that value.
    """
    data = _checks.vector(values, "values", finite=False)
    if np.isinf(data).any():
        raise InputError("values hold inf; only NaN (a missing value) is dropped.")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)):
        raise InputError(f"confidence must be a number in (0, 1); got {confidence!r}.")
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), e.g. 0.95; got {confidence!r}.")
    n_resamples = _checks.integer(n_resamples, "n_resamples", minimum=1)
    seed = _checks.integer(seed, "seed", minimum=0)
    kept = data[~np.isnan(data)]
    dropped = int(data.size - kept.size)
    if not kept.size:
        nan = float("nan")
        return BootstrapCI(nan, nan, nan, 0, dropped)
    rng = np.random.default_rng(seed)
    means = np.array(
        [kept[rng.integers(0, kept.size, kept.size)].mean() for _ in range(n_resamples)]
    )
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return BootstrapCI(float(kept.mean()), float(low), float(high), int(kept.size), dropped)
