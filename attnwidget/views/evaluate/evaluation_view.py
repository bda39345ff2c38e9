"""EvaluationView: an evaluation's method × metric table, its intervals, and the
examples behind each cell.

Message schema (traits synced with ``js/src/evaluate/evaluation_types.ts``
``EvaluationTraits``; tests/test_fixtures_js.py and the JS tests check that
both name the same traits). M methods, K metrics, N examples:

====================  ==========  =============================================
trait                 type        meaning
====================  ==========  =============================================
``_view``             str         ``"evaluation"``: the JS view that renders it
``methods``           list[str]   M method names, one table row each (text,
                                  never HTML)
``metrics``           list[str]   K metric names, one table column each
``metric_summaries``  list[str]   K one-line metric descriptions
``higher_is_better``  list[bool]  K flags: the better direction of each metric
``summary``           bytes       float32 little-endian C order (M, K, 4):
                                  mean, low, high (the bootstrap interval) and
                                  the count of values of each cell
``summary_shape``     list[int]   ``[M, K, 4]``
``confidence``        float       the intervals' confidence (0.95)
``example_ids``       list[str]   N example ids (text, never HTML)
``example_texts``     list[str]   N texts, cut to 160 characters
``values``            bytes       float32 (N, M, K): every example's value of
                                  every cell (NaN: undefined)
``values_shape``      list[int]   ``[N, M, K]``
``selected``          list[str]   ``[method, metric]`` of the selected cell,
                                  ``[]`` for none; set by clicks in the page
                                  (table or chart) and from Python
``selected_example``  str         the selected example's id, ``""`` for none;
                                  set by clicks in the cell's example list
====================  ==========  =============================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import traitlets

from attnwidget.errors import InputError
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.core.buffers import decode_float32, encode_float32
from attnwidget.views.saliency.saliency_view import SaliencyView

if TYPE_CHECKING:
    from attnwidget.evaluation.result import EvaluationResult

#: Characters of each example's text sent to the page.
TEXT_PREVIEW = 160


class EvaluationView(_AttnWidget):
    """The table of an :class:`~attnwidget.EvaluationResult`, its chart and its examples.

    The table shows each method × metric mean with its bootstrap interval
    (numbers as every view formats them); the chart draws the means with
    their intervals, one panel per metric. Clicking a cell (or its dot in the
    chart) sets :attr:`selected` and lists the examples behind it sorted by
    that metric, worst first (the page's button reverses the order);
    clicking an example sets :attr:`selected_example`, and
    :meth:`open_example` shows it in a :class:`SaliencyView`.

    Example::

        result = attnwidget.evaluate(model, tokenizer, texts, methods=[...], metrics=[...])
        view = attnwidget.EvaluationView(result)
        view                        # click a cell, then an example
        view.selected               # ["rollout", "comprehensiveness_aopc"]
        view.open_example()         # a SaliencyView of the clicked example
    """

    _view = traitlets.Unicode("evaluation").tag(sync=True)

    methods = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    metrics = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    metric_summaries = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    higher_is_better = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    summary = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    summary_shape = traitlets.List(traitlets.Int(), [0, 0, 4], read_only=True).tag(sync=True)
    confidence = traitlets.Float(0.95, read_only=True).tag(sync=True)
    example_ids = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    example_texts = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    values = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    values_shape = traitlets.List(traitlets.Int(), [0, 0, 0], read_only=True).tag(sync=True)

    selected = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """``[method, metric]`` of the selected cell, or ``[]`` (synced with the page)."""

    selected_example = traitlets.Unicode("").tag(sync=True)
    """The selected example's id, or ``""`` (synced with the page)."""

    def __init__(
        self,
        result: EvaluationResult,
        *,
        selected: list[str] | tuple[str, str] | None = None,
        selected_example: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not all(hasattr(result, a) for a in ("per_example", "summary", "metric_info")):
            raise TypeError(
                f"EvaluationView needs an attnwidget.EvaluationResult, got "
                f"{type(result).__name__}; make one with attnwidget.evaluate(...)."
            )
        self._result = result
        methods, metrics = list(result.methods), list(result.metrics)
        summary = result.summary.loc[[(m, k) for m in methods for k in metrics]]
        cells = summary[["mean", "low", "high", "count"]].to_numpy(dtype=np.float64)
        summary_data, summary_shape = encode_float32(cells.reshape(len(methods), len(metrics), 4))
        ids = [e.id for e in result.examples]
        frame = result.per_example
        position = {ident: i for i, ident in enumerate(ids)}
        matrix = np.full((len(ids), len(methods), len(metrics)), np.nan)
        rows = frame["id"].map(position).to_numpy()
        for j, method in enumerate(methods):
            mask = (frame["method"] == method).to_numpy()
            matrix[rows[mask], j, :] = frame.loc[mask, metrics].to_numpy(dtype=np.float64)
        values_data, values_shape = encode_float32(matrix)
        info = result.metric_info
        with self.hold_sync():
            self.set_trait("methods", methods)
            self.set_trait("metrics", metrics)
            self.set_trait("metric_summaries", [info[k].summary for k in metrics])
            self.set_trait("higher_is_better", [bool(info[k].higher_is_better) for k in metrics])
            self.set_trait("summary", summary_data)
            self.set_trait("summary_shape", summary_shape)
            self.set_trait("confidence", float(result.config.get("confidence", 0.95)))
            self.set_trait("example_ids", ids)
            self.set_trait("example_texts", [_preview(e.text) for e in result.examples])
            self.set_trait("values", values_data)
            self.set_trait("values_shape", values_shape)
        self.selected = list(selected or [])
        self.selected_example = selected_example

    @property
    def result(self) -> Any:
        """The :class:`~attnwidget.EvaluationResult` shown."""
        return self._result

    def summary_array(self) -> np.ndarray:
        """float32 (M, K, 4) mean, low, high, count exactly as sent to the page."""
        return decode_float32(self.summary, self.summary_shape)

    def values_array(self) -> np.ndarray:
        """float32 (N, M, K) every example's value exactly as sent to the page."""
        return decode_float32(self.values, self.values_shape)

    def cell_examples(self) -> Any:
        """The selected cell's examples sorted worst first (a DataFrame), or None."""
        if not self.selected:
            return None
        method, metric = self.selected
        return self._result.examples_for(method, metric)

    def open_example(self, example_id: str | None = None, *, reexplain: bool | None = None):
        """A :class:`SaliencyView` of the selected example (or of ``example_id``).

        Re-explained with the model when the result keeps it (``reexplain``
        as in :meth:`EvaluationResult.explanation`), else drawn from the
        stored scores. The selected cell's method comes first.
        """
        ident = self.selected_example if example_id is None else str(example_id)
        if not ident:
            raise InputError("no example is selected: click one in the list, or pass its id.")
        explanation = self._result.explanation(ident, reexplain=reexplain)
        methods = list(self.methods)
        if self.selected:
            methods.remove(self.selected[0])
            methods.insert(0, self.selected[0])
        return SaliencyView(explanation, methods=methods)

    @traitlets.validate("selected")
    def _validate_selected(self, proposal: dict[str, Any]) -> list[str]:
        value = list(proposal["value"])
        if not value:
            return []
        if len(value) != 2 or value[0] not in self.methods or value[1] not in self.metrics:
            raise traitlets.TraitError(
                f"selected={value!r}: use [] or [method, metric] with a method of "
                f"{list(self.methods)} and a metric of {list(self.metrics)}."
            )
        return [str(value[0]), str(value[1])]

    @traitlets.validate("selected_example")
    def _validate_selected_example(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value == "" or value in self.example_ids:
            return str(value)
        raise traitlets.TraitError(
            f"selected_example={value!r} is not an example id of this result ('' for none)."
        )

    def __repr__(self) -> str:
        return (
            f"EvaluationView({len(self.example_ids)} examples, methods={list(self.methods)}, "
            f"metrics={list(self.metrics)}, selected={list(self.selected)}, "
            f"selected_example={self.selected_example!r})"
        )


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT_PREVIEW else text[: TEXT_PREVIEW - 1] + "…"
