""":class:`EvaluationResult`: what :func:`attnwidget.evaluate` returns."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnwidget.errors import InputError
from attnwidget.evaluation._compute import ChunkResult, ExampleResult
from attnwidget.evaluation.dataset import Example
from attnwidget.evaluation.metrics_registry import Metric
from attnwidget.metrics import AGREEMENT_METRICS, bootstrap_ci, pair_agreement
from attnwidget.results.explanation import Explanation

if TYPE_CHECKING:
    import pandas as pd

#: The columns of :attr:`EvaluationResult.per_example` before the metrics.
ID_COLUMNS = ("id", "method", "target", "probability")
#: The columns of :attr:`EvaluationResult.summary`.
SUMMARY_COLUMNS = ("mean", "low", "high", "count", "dropped")


class EvaluationResult:
    """The per-example metric values of an evaluation and their summary.

    Attributes:
        per_example: a DataFrame with one row per (example, method), in data
            order then method order: ``id``, ``method``, ``target`` (the
            explained class or token), ``probability`` (its probability on the
            whole input), then one float64 column per metric (NaN where a
            metric is undefined, e.g. AUPRC without human tokens).
        agreement: the methods' rank agreement over the examples (see the
            property).
        summary: a DataFrame indexed by (method, metric): ``mean`` of the
            finite values, its percentile bootstrap interval ``low`` … ``high``
            (:func:`attnwidget.metrics.bootstrap_ci`, Efron & Tibshirani 1993;
            ``confidence`` 0.95 by default), ``count`` values used and
            ``dropped`` NaNs.
        methods, metrics: the names, in order; ``metric_info`` maps each
            metric name to its :class:`~attnwidget.evaluation.Metric`.
        examples: the :class:`~attnwidget.evaluation.dataset.Example` objects.
        config: the settings that produced the numbers.
        n_computed, n_loaded: examples computed by this run and loaded from
            the results file (``store=``).
        store: the results file, or None.
        model, tokenizer: kept (``keep_model=True``) to re-explain examples
            (:meth:`explanation`), else None.
    """

    def __init__(
        self,
        *,
        chunks: Sequence[ChunkResult],
        examples: Sequence[Example],
        methods: Sequence[str],
        metrics: Sequence[Metric],
        config: dict[str, Any],
        n_computed: int,
        n_loaded: int,
        store: Path | None = None,
        model: Any = None,
        tokenizer: Any = None,
        confidence: float = 0.95,
        n_resamples: int = 1000,
        seed: int = 0,
        progress: bool = False,
    ) -> None:
        import pandas as pd

        self.methods = list(methods)
        self.metrics = [m.name for m in metrics]
        self.metric_info = {m.name: m for m in metrics}
        self.examples = list(examples)
        self.config = dict(config)
        self.n_computed, self.n_loaded = int(n_computed), int(n_loaded)
        self.store = store
        self.model, self.tokenizer = model, tokenizer
        ordered = sorted(chunks, key=lambda c: c.index)
        self._results: dict[str, ExampleResult] = {
            r.id: r for chunk in ordered for r in chunk.examples
        }
        records = []
        for chunk in ordered:
            for r in chunk.examples:
                for method in self.methods:
                    values = r.values[method]
                    row = [r.id, method, r.target, float(r.probability)]
                    records.append(row + [float(values[m]) for m in self.metrics])
        frame = pd.DataFrame.from_records(records, columns=[*ID_COLUMNS, *self.metrics])
        frame["probability"] = frame["probability"].astype("float64")
        for name in self.metrics:
            frame[name] = frame[name].astype("float64")
        self.per_example = frame
        self.summary = self._summarize(confidence, n_resamples, seed, progress)
        self._bootstrap: dict[str, Any] = {
            "confidence": confidence,
            "n_resamples": n_resamples,
            "seed": seed,
        }
        self._agreement: Any = None

    def _summarize(self, confidence: float, n_resamples: int, seed: int, progress: bool) -> Any:
        import pandas as pd
        from tqdm.auto import tqdm

        cells = [(method, metric) for method in self.methods for metric in self.metrics]
        by_method = {m: g for m, g in self.per_example.groupby("method", sort=False)}
        rows = []
        for method, metric in tqdm(cells, desc="bootstrap", disable=not progress, leave=False):
            values = by_method[method][metric].to_numpy(dtype=np.float64)
            rows.append(
                tuple(
                    bootstrap_ci(values, confidence=confidence, n_resamples=n_resamples, seed=seed)
                )
            )
        index = pd.MultiIndex.from_tuples(cells, names=["method", "metric"])
        summary = pd.DataFrame.from_records(rows, columns=list(SUMMARY_COLUMNS), index=index)
        return summary.astype({"count": "int64", "dropped": "int64"})

    @property
    def agreement(self) -> pd.DataFrame:
        """How the methods agree over the examples, with bootstrap intervals.

        A DataFrame indexed by (``metric``, ``method``, ``other``), one row
        per agreement figure (:data:`attnwidget.metrics.AGREEMENT_METRICS`:
        Spearman ρ, Kendall τ-b, top-k overlaps) and pair of methods (in
        method order, each pair once), with the summary's columns: the
        ``mean`` over examples of the pair's figure on that example's words
        (the tokens the metrics compare, as :func:`attnwidget.compare`
        does), its percentile bootstrap interval ``low`` … ``high``,
        ``count`` and ``dropped`` (NaN: a constant method, or an example
        stored by an older attnwidget without its compared tokens). Computed
        on first use.
        """
        if self._agreement is None:
            self._agreement = self._summarize_agreement()
        return self._agreement

    def _summarize_agreement(self) -> pd.DataFrame:
        import pandas as pd

        pairs = [(a, b) for i, a in enumerate(self.methods) for b in self.methods[i + 1 :]]
        values: dict[tuple[str, str, str], list[float]] = {
            (metric, a, b): [] for metric in AGREEMENT_METRICS for a, b in pairs
        }
        for result in self._results.values():
            words = result.compared
            for a, b in pairs:
                if words is None or len(words) < 2:
                    figures = dict.fromkeys(AGREEMENT_METRICS, float("nan"))
                else:
                    figures = pair_agreement(result.scores[a][words], result.scores[b][words])
                for metric, value in figures.items():
                    values[(metric, a, b)].append(value)
        rows = [tuple(bootstrap_ci(v, **self._bootstrap)) for v in values.values()]
        index = pd.MultiIndex.from_tuples(list(values), names=["metric", "method", "other"])
        table = pd.DataFrame.from_records(rows, columns=list(SUMMARY_COLUMNS), index=index)
        return table.astype({"count": "int64", "dropped": "int64"})

    # -- reading ---------------------------------------------------------------

    def table(self, statistic: str = "mean") -> pd.DataFrame:
        """A method × metric table of one summary column (``mean``, ``low``, ``high``, …)."""
        if statistic not in SUMMARY_COLUMNS:
            raise InputError(f"statistic={statistic!r}: use one of {', '.join(SUMMARY_COLUMNS)}.")
        table = self.summary[statistic].unstack("metric")
        return table.loc[self.methods, self.metrics]

    def examples_for(self, method: str, metric: str, *, worst_first: bool = True) -> pd.DataFrame:
        """The examples of one (method, metric) cell sorted by its value (NaN last).

        ``worst_first``: the lowest values first for a metric where higher is
        better (and the highest first where lower is better).
        """
        self._check_cell(method, metric)
        rows = self.per_example[self.per_example["method"] == method]
        ascending = self.metric_info[metric].higher_is_better == worst_first
        ordered = rows.sort_values(metric, ascending=ascending, kind="stable", na_position="last")
        return ordered[["id", "target", "probability", metric]].reset_index(drop=True)

    def _check_cell(self, method: str, metric: str) -> None:
        if method not in self.methods:
            raise InputError(f"method {method!r} is not in this result: {', '.join(self.methods)}.")
        if metric not in self.metrics:
            raise InputError(f"metric {metric!r} is not in this result: {', '.join(self.metrics)}.")

    def example(self, example_id: str) -> Example:
        """The example with this id."""
        for example in self.examples:
            if example.id == str(example_id):
                return example
        raise InputError(f"no example with id {example_id!r} in this result.")

    def scores(self, example_id: str) -> dict[str, np.ndarray]:
        """The float32 token scores of each method on one example, as evaluated."""
        self.example(example_id)
        return {m: s.copy() for m, s in self._results[str(example_id)].scores.items()}

    def explanation(self, example_id: str, *, reexplain: bool | None = None) -> Explanation:
        """One example's :class:`~attnwidget.Explanation`.

        ``reexplain``: True runs :func:`attnwidget.explain` again with the kept
        model (full explanation, attention included; the target as
        evaluated); False builds it from the stored tokens and scores (no
        attention: ``attentions`` has 0 layers); None (default) re-explains
        when the model was kept.
        """
        example = self.example(example_id)
        stored = self._results[example.id]
        if reexplain is None:
            reexplain = self.model is not None
        if reexplain:
            if self.model is None:
                raise InputError(
                    "this result keeps no model (keep_model=False); pass reexplain=False."
                )
            from attnwidget.pipeline.explain import explain

            return explain(
                self.model,
                self.tokenizer,
                example.text,
                text_pair=example.text_pair,
                target=stored.target_id,
                methods=self.methods,
                method_options=self.config.get("method_options"),
                truncation=bool(self.config.get("truncation")),
            )
        n = len(stored.tokens)
        return Explanation(
            tokens=list(stored.tokens),
            attentions=np.zeros((0, 1, n, n), dtype=np.float32),
            query_index=stored.query_index,
            scores={m: stored.scores[m].copy() for m in self.methods},
            target=stored.target,
            target_id=stored.target_id,
        )

    def __repr__(self) -> str:
        return (
            f"EvaluationResult({len(self.examples)} examples, methods={self.methods}, "
            f"metrics={self.metrics}, computed={self.n_computed}, loaded={self.n_loaded})"
        )
