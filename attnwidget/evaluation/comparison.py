""":class:`Comparison`: what :func:`attnwidget.compare` returns for one input.

The "disagreement problem" of post-hoc explanations (Krishna et al. 2022):
methods explaining the same prediction often rank the input's tokens
differently. A Comparison holds, for one input, how far every pair of methods
agrees, how faithful each method is to the model (measured by re-running it),
how plausible each is against a human rationale, and which tokens the
methods disagree on most.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

# The agreement metrics, in display order (:func:`attnwidget.metrics.pair_agreement`).
from attnwidget.metrics.method_agreement import AGREEMENT_METRICS as AGREEMENT_METRICS
from attnwidget.results.explanation import Explanation

if TYPE_CHECKING:
    import pandas as pd


#: Which way is better, for every figure a Comparison holds.
DIRECTIONS: dict[str, str] = {
    "spearman": "higher",
    "kendall": "higher",
    "top1": "higher",
    "top3": "higher",
    "top5": "higher",
    "top20%": "higher",
    "comprehensiveness_aopc": "higher",
    "sufficiency_aopc": "lower",
    "perturbation_auc_pos": "lower",
    "perturbation_auc_neg": "higher",
    "perturbation_prob_auc_pos": "lower",
    "perturbation_prob_auc_neg": "higher",
    "token_f1": "higher",
    "iou_f1": "higher",
    "auprc": "higher",
}


@dataclass
class Comparison:
    """Every method on one input: agreement, faithfulness, plausibility, disagreement.

    Attributes:
        explanation: the :class:`~attnwidget.Explanation` compared (its
            ``scores`` hold each method's token scores).
        methods: the methods compared, in order.
        tokens: the input's tokens (``explanation.tokens``; for images, the
            patches' labels).
        compared: bool (n,): the tokens the rank comparisons run over (not
            special tokens, unless ``include_special=True``; never the
            query position of a causal or masked LM).
        agreement: metric name (:data:`AGREEMENT_METRICS`) -> a methods ×
            methods DataFrame, symmetric with a unit diagonal (NaN where a
            method's scores are constant over the compared tokens).
        faithfulness: a DataFrame indexed by method, one column per
            faithfulness metric (the functions :func:`attnwidget.evaluate`
            uses); None without a model to re-run.
        plausibility: a DataFrame indexed by method (``token_f1``,
            ``iou_f1``, ``auprc``) against ``rationale``; None without one.
        rationale: bool (n,) the human rationale over the tokens, or None.
        disagreement: float (n,): per token, the standard deviation over
            methods of its normalised rank (0 = ranked first, 1 = last, ties
            share their mean rank); NaN for tokens not compared.
        directions: figure name -> ``"higher"`` or ``"lower"`` (is better).
        settings: what produced the numbers (metrics, replacement id, k, …).
    """

    explanation: Explanation
    methods: list[str]
    tokens: list[str]
    compared: np.ndarray
    agreement: dict[str, pd.DataFrame]
    faithfulness: pd.DataFrame | None
    plausibility: pd.DataFrame | None
    rationale: np.ndarray | None
    disagreement: np.ndarray
    directions: dict[str, str] = field(default_factory=lambda: dict(DIRECTIONS))
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def scores(self) -> dict[str, np.ndarray]:
        """method -> float (n,) token scores (the explanation's)."""
        return {m: np.asarray(self.explanation.scores[m]) for m in self.methods}

    def most_disputed(self, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` compared tokens with the largest disagreement, largest first (ties
        by position)."""
        order = [
            i
            for i in np.argsort(-np.nan_to_num(self.disagreement, nan=-1.0), kind="stable")
            if self.compared[i]
        ]
        return [(self.tokens[i], float(self.disagreement[i])) for i in order[:k]]

    def to_dataframe(self) -> pd.DataFrame:
        """One tidy table of every figure.

        Columns: ``kind`` ("agreement", "faithfulness", "plausibility",
        "disagreement"), ``metric``, ``method``, ``other`` (the second method
        of an agreement pair, else empty), ``token`` (the token's index for a
        disagreement row, else -1), ``value`` and ``better`` ("higher",
        "lower", or empty for disagreement).
        """
        import pandas as pd

        rows: list[dict[str, Any]] = []
        for metric, table in self.agreement.items():
            for a in self.methods:
                for b in self.methods:
                    rows.append(_row("agreement", metric, a, b, -1, table.loc[a, b], self))
        for kind, table in (
            ("faithfulness", self.faithfulness),
            ("plausibility", self.plausibility),
        ):
            if table is None:
                continue
            for method in table.index:
                for metric in table.columns:
                    rows.append(_row(kind, metric, method, "", -1, table.loc[method, metric], self))
        for index in np.flatnonzero(self.compared):
            value = self.disagreement[index]
            rows.append(_row("disagreement", "rank_spread", "", "", int(index), value, self))
        columns = ["kind", "metric", "method", "other", "token", "value", "better"]
        return pd.DataFrame(rows, columns=columns)

    def __repr__(self) -> str:
        faithful = "" if self.faithfulness is None else ", faithfulness"
        plausible = "" if self.plausibility is None else ", plausibility"
        return (
            f"Comparison({len(self.methods)} methods {self.methods}, {len(self.tokens)} tokens "
            f"({int(self.compared.sum())} compared): agreement{faithful}{plausible})"
        )


def _row(
    kind: str, metric: str, method: str, other: str, token: int, value: Any, c: Comparison
) -> dict[str, Any]:
    return {
        "kind": kind,
        "metric": metric,
        "method": method,
        "other": other,
        "token": token,
        "value": float(value),
        "better": c.directions.get(metric, ""),
    }
