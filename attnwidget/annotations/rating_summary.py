"""What people said about the methods: :func:`rating_summary` of a store's ratings.

Per method, from the latest answer of every trial (:meth:`Store.ratings`):

* ``rating_mean`` (``rating_low``, ``rating_high``): the mean 1–5 plausibility
  rating and its percentile bootstrap interval
  (:func:`attnwidget.metrics.bootstrap_ci`, over the individual ratings);
* ``win_rate`` (``win_low``, ``win_high``): in A/B comparisons that showed the
  method, the share it was picked as the more convincing one (the mean of a
  0/1 per comparison, with its bootstrap interval);
* ``sim_explained`` / ``sim_control`` (each with ``_low``/``_high``): forward
  simulation accuracy (Hase & Bansal, 2020): the share of inputs whose model
  output the person predicted right, when shown the method's explanation and
  in the control condition (the inputs assigned to the method but shown with
  no explanation; the condition is randomised per input, see
  :func:`~.judgements.plan_trials`). The gain is their difference.

and over the whole store, the agreement between raters on ratings:
Krippendorff's α (Krippendorff, 2004), ordinal
(:func:`attnwidget.metrics.krippendorff_alpha`), with units = (input, method)
and each rater's latest rating of the unit. NaN when fewer than two raters
rated a common unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attnwidget.metrics.agreement import bootstrap_ci, krippendorff_alpha

if TYPE_CHECKING:
    import pandas as pd

    from attnwidget.annotations.store import Store

SUMMARY_COLUMNS = (
    "n_ratings",
    "rating_mean",
    "rating_low",
    "rating_high",
    "n_comparisons",
    "win_rate",
    "win_low",
    "win_high",
    "n_explained",
    "sim_explained",
    "sim_explained_low",
    "sim_explained_high",
    "n_control",
    "sim_control",
    "sim_control_low",
    "sim_control_high",
)


@dataclass(frozen=True)
class RatingSummary:
    """:func:`rating_summary`'s result.

    ``methods``: one row per method (index ``method``), columns
    :data:`SUMMARY_COLUMNS`; NaN where a mode has no answer for it.
    ``alpha``: Krippendorff's α (ordinal) of the ratings, NaN when not
    computable; ``alpha_units`` / ``alpha_raters``: the units rated by at
    least two raters, and the raters.
    """

    methods: pd.DataFrame
    alpha: float
    alpha_units: int
    alpha_raters: int

    def _repr_html_(self) -> str:
        table = self.methods._repr_html_()
        return f"{table}<p>Krippendorff's α (ordinal, ratings): {self.alpha:.3f}</p>"


def _ci(values: list[float], confidence: float, seed: int) -> tuple[float, float, float]:
    if not values:
        nan = float("nan")
        return nan, nan, nan
    ci = bootstrap_ci(np.asarray(values, dtype=np.float64), confidence=confidence, seed=seed)
    return ci.mean, ci.low, ci.high


def ratings_alpha(rows: list[dict[str, Any]]) -> tuple[float, int, int]:
    """(α, pairable units, raters) of rate-mode rows: each rater's latest rating per unit."""
    latest: dict[tuple[str, str], dict[str, int]] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        unit = (row["input_hash"], row["methods"][0])
        latest.setdefault(unit, {})[row["annotator"]] = int(row["rating"])
    raters = sorted({who for values in latest.values() for who in values})
    units = [u for u in sorted(latest) if len(latest[u]) >= 2]
    if len(raters) < 2 or not units:
        return float("nan"), len(units), len(raters)
    matrix = np.full((len(raters), len(units)), np.nan)
    for j, unit in enumerate(units):
        for who, value in latest[unit].items():
            matrix[raters.index(who), j] = value
    return float(krippendorff_alpha(matrix, level="ordinal")), len(units), len(raters)


def rating_summary(store: Store, *, confidence: float = 0.95, seed: int = 0) -> RatingSummary:
    """Per method: mean rating, A/B win rate and simulation accuracy with and
    without its explanation, each with a bootstrap interval (``confidence``,
    ``seed``); and the raters' agreement. See the module docstring."""
    import pandas as pd

    rows = store.rating_rows()
    ratings: dict[str, list[float]] = {}
    wins: dict[str, list[float]] = {}
    explained: dict[str, list[float]] = {}
    control: dict[str, list[float]] = {}
    for row in rows:
        methods = row["methods"]
        if row["mode"] == "rate":
            ratings.setdefault(methods[0], []).append(float(row["rating"]))
        elif row["mode"] == "compare":
            for method in methods:
                wins.setdefault(method, []).append(float(row["chosen"] == method))
        elif row["mode"] == "simulate":
            bucket = explained if row["explanation_shown"] else control
            bucket.setdefault(methods[0], []).append(float(bool(row["correct"])))
    names = sorted(set(ratings) | set(wins) | set(explained) | set(control))
    table = []
    for name in names:
        values: list[float] = []
        for found in (ratings, wins, explained, control):
            got = found.get(name, [])
            values.append(float(len(got)))
            values.extend(_ci(got, confidence, seed))
        table.append(values)
    frame = pd.DataFrame(table, columns=list(SUMMARY_COLUMNS), index=pd.Index(names, name="method"))
    for column in ("n_ratings", "n_comparisons", "n_explained", "n_control"):
        frame[column] = frame[column].astype(int)
    alpha, units, raters = ratings_alpha([r for r in rows if r["mode"] == "rate"])
    return RatingSummary(frame, alpha, units, raters)
