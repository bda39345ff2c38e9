"""CompareView: every method on one input, how far they agree, and where they part.

Message schema (traits synced with ``js/src/compare/compare_types.ts``
``CompareTraits``; tests/test_fixtures_js.py and the JS tests check that both
name the same traits). m methods, n tokens, A agreement metrics, K
faithfulness and plausibility figures:

============================  ===========  =====================================
trait                         type         meaning
============================  ===========  =====================================
``_view``                     str          ``"compare"``: the JS view
``tokens``                    list[str]    n token strings (text, never HTML)
``raw_tokens``                list[str]    the tokenizer's own strings (hover;
                                           [] if unknown)
``methods``                   list[str]    m method names, one row each
``summaries``                 list[str]    m one-line method descriptions
``signed``                    list[bool]   m flags: diverging colours at 0
``scores``                    bytes        float32 (m, n) token scores
``shape``                     list[int]    ``[m, n]``
``query_index``               int          the explained query position, -1
``compared``                  list[bool]   n flags: the tokens the rank
                                           comparisons run over (they also set
                                           each row's colour range)
``disagreement``              bytes        float32 (n,): the spread of each
                                           token's rank over the methods (NaN:
                                           not compared)
``agreement_metrics``         list[str]    A agreement metric names
``agreement_signed``          list[bool]   A flags: correlations in [-1, 1]
                                           (else shares in [0, 1])
``agreement``                 bytes        float32 (A, m, m), one method ×
                                           method table per metric
``agreement_shape``           list[int]    ``[A, m, m]``
``figure_kinds``              list[str]    K: "faithfulness" / "plausibility"
``figure_metrics``            list[str]    K metric names
``figure_summaries``          list[str]    K one-line metric descriptions
``figure_higher_is_better``   list[bool]   K directions
``figures``                   bytes        float32 (m, K) per-method figures
``figure_shape``              list[int]    ``[m, K]``
``rationale``                 list[bool]   n flags of the human rationale, []
                                           without one
``caption``                   str          what is compared, in a sentence
``notes``                     list[str]    why a part is missing
``selected_token``            int          selected token, -1 for none (page
                                           and Python)
``selected_pair``             list[str]    ``[method, other]`` whose scatter is
                                           drawn, ``[]`` for none
``agreement_metric``          str          the metric the heat map shows
============================  ===========  =====================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import traitlets

from attnwidget.views.compare._tables import Tables, check_comparison, metric_summary, tables
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.core.buffers import decode_float32, encode_float32
from attnwidget.views.core.selection import check_token_index
from attnwidget.views.core.tokens import raw_tokens_of
from attnwidget.views.saliency.saliency_view import _is_signed, _summary

if TYPE_CHECKING:
    from attnwidget.evaluation.comparison import Comparison

#: The agreement metrics in the order the picker lists them (Comparison's order).
METRIC_ORDER: tuple[str, ...] = ("spearman", "kendall", "top1", "top3", "top5", "top20%")


class CompareView(_AttnWidget):
    """Every method compared on one input (what ``attnwidget.compare`` returns), side by side.

    Shows, in one view: each method's token scores as a row over the same
    tokens (wrapped as in :class:`SaliencyView`, each row on its own colour
    range, set by the compared tokens), then a row of the methods'
    disagreement per token (the spread of its rank; the most disputed
    tokens are marked); the method × method agreement as a heat map, with a
    picker for its metric (:attr:`agreement_metric`); and each method's
    faithfulness and plausibility figures as bars, each metric named with
    the way it is better. Clicking a heat-map cell sets
    :attr:`selected_pair` and draws that pair's scatter of token scores
    (every compared token a labelled point); clicking a token (in any row
    or in the scatter) sets :attr:`selected_token` and marks it everywhere.

    Args:
        comparison: what :func:`attnwidget.compare` returned.
        selected_token: the selected token index (-1: none).
        selected_pair: two methods whose scatter to draw (default: none).
        agreement_metric: the heat map's metric (default: the first,
            ``"spearman"``).

    Example::

        comparison = attnwidget.compare(model, tokenizer, "the keys to the cabinet")
        view = attnwidget.CompareView(comparison)
        view                           # click a cell of the heat map, then a token
        view.selected_pair             # ["rollout", "raw"]
        view.agreement_metric = "top3"
    """

    _view = traitlets.Unicode("compare").tag(sync=True)

    tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    raw_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    methods = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    summaries = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    signed = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    scores = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    shape = traitlets.List(traitlets.Int(), [0, 0], read_only=True).tag(sync=True)
    query_index = traitlets.Int(-1, read_only=True).tag(sync=True)
    compared = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    disagreement = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    agreement_metrics = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    agreement_signed = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    agreement = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    agreement_shape = traitlets.List(traitlets.Int(), [0, 0, 0], read_only=True).tag(sync=True)
    figure_kinds = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    figure_metrics = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    figure_summaries = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    figure_higher_is_better = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    figures = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    figure_shape = traitlets.List(traitlets.Int(), [0, 0], read_only=True).tag(sync=True)
    rationale = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    caption = traitlets.Unicode("", read_only=True).tag(sync=True)
    notes = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)

    selected_token = traitlets.Int(-1).tag(sync=True)
    """The selected token index, or -1 for none (synced with the page)."""

    selected_pair = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """``[method, other]``: the heat-map cell whose scatter is drawn (``method``
    across, ``other`` up), or ``[]`` (synced with the page)."""

    agreement_metric = traitlets.Unicode("").tag(sync=True)
    """The agreement metric the heat map shows (synced with the page's picker)."""

    def __init__(
        self,
        comparison: Comparison,
        *,
        selected_token: int = -1,
        selected_pair: list[str] | tuple[str, str] | None = None,
        agreement_metric: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._comparison: Any = None
        self.set_comparison(comparison)
        if agreement_metric is not None:
            self.agreement_metric = agreement_metric
        self.selected_pair = list(selected_pair or [])
        self.selected_token = selected_token

    @property
    def comparison(self) -> Comparison:
        """The :class:`~attnwidget.Comparison` shown."""
        return self._comparison

    def set_comparison(self, comparison: Comparison) -> None:
        """Show another comparison; the selections are kept where they still apply.

        Everything is checked first: a comparison that cannot be shown raises
        and leaves the view as it was.
        """
        check_comparison(comparison)
        t = tables(comparison, METRIC_ORDER)
        explanation = comparison.explanation
        n = len(t.tokens)
        query = getattr(explanation, "query_index", -1)
        one_row = getattr(explanation, "decoder_tokens", None) is None
        query = int(query) if one_row and query is not None and 0 <= query < n else -1
        scores, shape = encode_float32(t.scores)
        disagreement, _ = encode_float32(t.disagreement)
        agreement, agreement_shape = encode_float32(t.agreement)
        figures, figure_shape = encode_float32(t.figures)
        signed = [_is_signed(m, row) for m, row in zip(t.methods, t.scores, strict=True)]
        with self.hold_sync():
            if not -1 <= self.selected_token < n:
                self.selected_token = -1
            if self.selected_pair and not set(self.selected_pair) <= set(t.methods):
                self.selected_pair = []
            self.set_trait("tokens", t.tokens)
            self.set_trait("raw_tokens", raw_tokens_of(explanation, n))
            self.set_trait("methods", t.methods)
            self.set_trait("summaries", [_summary(m) for m in t.methods])
            self.set_trait("signed", signed)
            self.set_trait("scores", scores)
            self.set_trait("shape", shape)
            self.set_trait("query_index", query)
            self.set_trait("compared", t.compared)
            self.set_trait("disagreement", disagreement)
            self.set_trait("agreement_metrics", t.agreement_metrics)
            self.set_trait("agreement_signed", t.agreement_signed)
            self.set_trait("agreement", agreement)
            self.set_trait("agreement_shape", agreement_shape)
            self.set_trait("figure_kinds", t.figure_kinds)
            self.set_trait("figure_metrics", t.figure_metrics)
            self.set_trait("figure_summaries", [metric_summary(k) for k in t.figure_metrics])
            self.set_trait("figure_higher_is_better", t.figure_higher)
            self.set_trait("figures", figures)
            self.set_trait("figure_shape", figure_shape)
            self.set_trait("rationale", t.rationale)
            self.set_trait("caption", _caption(t, explanation))
            self.set_trait("notes", t.notes)
            if self.agreement_metric not in t.agreement_metrics:
                self.agreement_metric = t.agreement_metrics[0]
        self._comparison = comparison

    # -- what the page shows, in Python -------------------------------------------

    def score_matrix(self) -> np.ndarray:
        """float32 (methods, tokens) scores exactly as sent to the page."""
        return decode_float32(self.scores, self.shape)

    def agreement_array(self) -> np.ndarray:
        """float32 (metrics, methods, methods) agreement exactly as sent to the page."""
        return decode_float32(self.agreement, self.agreement_shape)

    def disagreement_array(self) -> np.ndarray:
        """float32 (tokens,) disagreement as sent (NaN for tokens not compared)."""
        return decode_float32(self.disagreement, [len(self.tokens)])

    def figure_matrix(self) -> np.ndarray:
        """float32 (methods, figures) faithfulness and plausibility as sent."""
        return decode_float32(self.figures, self.figure_shape)

    @property
    def selection(self) -> dict[str, Any] | None:
        """The selected token as ``{"index", "token", "scores", "disagreement"}``, or None."""
        j = self.selected_token
        if j < 0:
            return None
        scores = self._comparison.explanation.scores
        value = float(np.asarray(self._comparison.disagreement, dtype=np.float64)[j])
        return {
            "index": j,
            "token": self.tokens[j],
            "scores": {m: float(scores[m][j]) for m in self.methods},
            "disagreement": value if self.compared[j] else float("nan"),
        }

    @property
    def pair_agreement(self) -> float | None:
        """The selected pair's agreement by :attr:`agreement_metric` (full precision), or None."""
        if not self.selected_pair:
            return None
        a, b = self.selected_pair
        return float(self._comparison.agreement[self.agreement_metric].loc[a, b])

    # -- rules ------------------------------------------------------------------------

    @traitlets.validate("selected_token")
    def _validate_selected_token(self, proposal: dict[str, Any]) -> int:
        return check_token_index(proposal["value"], len(self.tokens))

    @traitlets.validate("selected_pair")
    def _validate_selected_pair(self, proposal: dict[str, Any]) -> list[str]:
        value = [str(v) for v in proposal["value"]]
        if not value:
            return []
        methods = list(self.methods)
        if len(value) == 2 and value[0] != value[1] and set(value) <= set(methods):
            return value
        example = methods[:2] if len(methods) >= 2 else ["method", "other"]
        unknown = [v for v in value if v not in methods]
        why = (
            f"{', '.join(map(repr, unknown))} is not a method of this comparison"
            if unknown
            else "name two different methods"
        )
        raise traitlets.TraitError(
            f"selected_pair={value!r}: {why}; use [] or two of {methods}, e.g. {example!r}."
        )

    @traitlets.validate("agreement_metric")
    def _validate_agreement_metric(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        names = list(self.agreement_metrics)
        if value in names:
            return str(value)
        raise traitlets.TraitError(
            f"agreement_metric={value!r} is not an agreement metric of this comparison; "
            f"use one of {', '.join(map(repr, names))}."
        )

    def __repr__(self) -> str:
        return (
            f"CompareView(n={len(self.tokens)}, methods={list(self.methods)}, "
            f"agreement_metric={self.agreement_metric!r}, "
            f"selected_pair={list(self.selected_pair)}, "
            f"selected_token={self.selected_token})"
        )


def _caption(t: Tables, explanation: Any) -> str:
    n, kept = len(t.tokens), sum(t.compared)
    target = getattr(explanation, "target", None)
    explained = f" explaining {str(target)!r}" if target not in (None, "") else ""
    left = (
        ""
        if kept == n
        else f"; the other {n - kept} are drawn but left out of the ranks and of each "
        "row's colour range (dashed outline)"
    )
    return f"{len(t.methods)} methods{explained}, over {n} tokens: {kept} compared by rank{left}."
