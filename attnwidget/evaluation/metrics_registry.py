"""The metrics :func:`attnwidget.evaluate` computes, by name.

Every metric scores one method's token scores on one example. Faithfulness
metrics re-run the model on perturbed copies of the example, removed tokens
replaced by a blank id (the tokenizer's unknown token by default; positions
and length stay); plausibility metrics compare the scores with a human
rationale. Only *candidate* tokens are ever removed or compared: the words,
i.e. not special tokens and not the query position itself.

========================  ======  ================================================
name                      better  what
========================  ======  ================================================
comprehensiveness_aopc    higher  ERASER's AOPC of comprehensiveness over the top
                                  1/5/10/20/50 % of the candidates (DeYoung et al.
                                  2020), :func:`attnwidget.metrics.erasure_curves`
sufficiency_aopc          lower   the same for sufficiency (keep only the top bins)
perturbation_auc_pos      lower   Chefer, Gur & Wolf (2021): remove 0, 10, …, 90 %
                                  of the candidates, most relevant first; area
                                  (×100) under "the model still predicts the
                                  explained class"; the mean over examples is
                                  their accuracy AUC
perturbation_auc_neg      higher  the same, least relevant first
perturbation_prob_auc_pos lower   as ``perturbation_auc_pos`` with the explained
                                  class's probability instead of 0/1
perturbation_prob_auc_neg higher  the same, least relevant first
token_f1                  higher  token F1 of the top-k positive candidates
                                  (ferret's discretisation, k = the data set's
                                  mean human rationale length in tokens) against
                                  the human tokens (ERASER)
iou_f1                    higher  ERASER's IOU-F1 of those top-k tokens' spans
auprc                     higher  average precision of the scores ranking the
                                  human tokens (NaN without human tokens)
========================  ======  ================================================

:func:`register_metric` adds a metric; its ``compute`` receives a
:class:`MetricInput`. Metrics travel to Dask workers with the work (pickled),
so a metric defined in a notebook runs there too when cloudpickle can ship it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnwidget.errors import InputError
from attnwidget.metrics import auprc as human_auprc
from attnwidget.metrics import (
    discretize,
    erasure_curves,
    iou_f1,
    mask_spans,
    perturbation_curve_tokens,
    token_prf,
)

#: ``ids (B, n) -> (B, 2)``: whether the model still predicts the explained
#: class, and that class's probability, for each perturbed copy.
ScoreFn = Callable[[np.ndarray], np.ndarray]


@dataclass
class MetricInput:
    """What a metric sees of one (example, method).

    Attributes:
        scores: float64 (n,) the method's token scores.
        input_ids: int64 (n,) the example's token ids.
        candidates: sorted positions of the tokens that may be removed or
            compared (the words: no special token, not the query).
        replacement_id: the id a removed token is replaced by.
        score: ``ids (B, n) -> (B, 2)`` (prediction kept, probability) on
            perturbed copies; batched by the caller (see :mod:`._batcher`).
        human: bool (n,) the human rationale over the tokens, or None.
        k: how many tokens a discrete rationale keeps (plausibility), or None.
    """

    scores: np.ndarray
    input_ids: np.ndarray
    candidates: np.ndarray
    replacement_id: int
    score: ScoreFn
    human: np.ndarray | None = None
    k: int | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def cached(self, key: str, make: Callable[[], Any]) -> Any:
        """``make()`` once per input: metrics of one family share a computation."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def probability(self, ids: np.ndarray) -> np.ndarray:
        """``ids -> (B,)`` the explained class's probability."""
        return np.asarray(self.score(ids))[:, 1]

    def erasure(self) -> Any:
        return self.cached(
            "erasure",
            lambda: erasure_curves(
                self.probability,
                self.input_ids,
                self.scores,
                replacement_id=self.replacement_id,
                candidates=self.candidates,
            ),
        )

    def perturbation(self, positive: bool) -> Any:
        return self.cached(
            f"perturbation-{positive}",
            lambda: perturbation_curve_tokens(
                self.score,
                self.input_ids,
                self.scores,
                replacement_id=self.replacement_id,
                candidates=self.candidates,
                positive=positive,
            ),
        )

    def predicted(self) -> np.ndarray:
        """bool (n,): the top-k positive candidates (:func:`attnwidget.metrics.discretize`)."""

        def make() -> np.ndarray:
            chosen = discretize(self.scores[self.candidates], int(self.k or 0))
            out = np.zeros(self.scores.size, dtype=bool)
            out[self.candidates[chosen]] = True
            return out

        return self.cached("predicted", make)


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    ``compute(MetricInput) -> float`` (NaN when undefined for the example);
    ``higher_is_better`` orders the view's example lists; ``needs_rationale``
    metrics need ``rationales=`` in :func:`attnwidget.evaluate`.
    """

    name: str
    summary: str
    higher_is_better: bool
    reference: str
    compute: Callable[[MetricInput], float]
    needs_rationale: bool = False

    def __reduce__(self) -> tuple[Any, ...]:
        # Built-in metrics travel by name (their computations are lambdas);
        # others by value, which cloudpickle (Dask) can do for notebook code.
        if self.name in _BUILTIN and _REGISTRY.get(self.name) is self:
            return (get_metric, (self.name,))
        fields = (self.name, self.summary, self.higher_is_better, self.reference)
        return (Metric, (*fields, self.compute, self.needs_rationale))


def _human(inp: MetricInput) -> np.ndarray | None:
    if inp.human is None:
        return None
    return np.asarray(inp.human, dtype=bool)


def _token_f1(inp: MetricInput) -> float:
    human = _human(inp)
    if human is None:
        return float("nan")
    cands = inp.candidates
    return token_prf(inp.predicted()[cands], human[cands]).f1


def _iou_f1(inp: MetricInput) -> float:
    human = _human(inp)
    if human is None:
        return float("nan")
    keep = np.zeros(human.size, dtype=bool)
    keep[inp.candidates] = True
    return iou_f1(mask_spans(inp.predicted()), mask_spans(human & keep)).f1


def _auprc(inp: MetricInput) -> float:
    human = _human(inp)
    if human is None:
        return float("nan")
    return human_auprc(inp.scores[inp.candidates], human[inp.candidates])


_ERASER = "DeYoung et al. (2020), ERASER, ACL"
_CHEFER = "Chefer, Gur & Wolf (2021), Transformer Interpretability Beyond Attention Visualization"

_REGISTRY: dict[str, Metric] = {}


def register_metric(metric: Metric, *, replace: bool = False) -> Metric:
    """Add ``metric`` to the registry (``replace=True`` to override a name)."""
    if not isinstance(metric, Metric):
        raise InputError(f"register_metric needs a Metric, got {type(metric).__name__}.")
    if metric.name in _REGISTRY and not replace:
        raise InputError(f"a metric named {metric.name!r} exists; pass replace=True to override.")
    _REGISTRY[metric.name] = metric
    return metric


for _metric in (
    Metric(
        "comprehensiveness_aopc",
        "AOPC of the drop in probability when the top 1–50 % tokens are removed",
        True,
        _ERASER,
        lambda inp: inp.erasure().aopc_comprehensiveness,
    ),
    Metric(
        "sufficiency_aopc",
        "AOPC of the drop in probability when only the top 1–50 % tokens are kept",
        False,
        _ERASER,
        lambda inp: inp.erasure().aopc_sufficiency,
    ),
    Metric(
        "perturbation_auc_pos",
        "area under 'prediction kept' as the most relevant tokens are removed (×100)",
        False,
        _CHEFER,
        lambda inp: float(inp.perturbation(True).auc[0]),
    ),
    Metric(
        "perturbation_auc_neg",
        "area under 'prediction kept' as the least relevant tokens are removed (×100)",
        True,
        _CHEFER,
        lambda inp: float(inp.perturbation(False).auc[0]),
    ),
    Metric(
        "perturbation_prob_auc_pos",
        "area under the class probability as the most relevant tokens are removed (×100)",
        False,
        _CHEFER,
        lambda inp: float(inp.perturbation(True).auc[1]),
    ),
    Metric(
        "perturbation_prob_auc_neg",
        "area under the class probability as the least relevant tokens are removed (×100)",
        True,
        _CHEFER,
        lambda inp: float(inp.perturbation(False).auc[1]),
    ),
    Metric(
        "token_f1",
        "token F1 of the top-k positive tokens against the human rationale",
        True,
        _ERASER + "; k as in Attanasio et al. (2023), ferret",
        _token_f1,
        needs_rationale=True,
    ),
    Metric(
        "iou_f1",
        "span F1 (IOU ≥ 0.5) of the top-k positive tokens against the human rationale",
        True,
        _ERASER,
        _iou_f1,
        needs_rationale=True,
    ),
    Metric(
        "auprc",
        "average precision of the scores ranking the human rationale's tokens",
        True,
        _ERASER,
        _auprc,
        needs_rationale=True,
    ),
):
    register_metric(_metric)
_BUILTIN = frozenset(_REGISTRY)

#: The faithfulness metrics (no rationale needed), in registry order.
FAITHFULNESS: tuple[str, ...] = tuple(n for n, m in _REGISTRY.items() if not m.needs_rationale)
#: The plausibility metrics (they need ``rationales=``).
PLAUSIBILITY: tuple[str, ...] = tuple(n for n, m in _REGISTRY.items() if m.needs_rationale)


def available_metrics() -> list[str]:
    """The registered metric names, in registration order."""
    return list(_REGISTRY)


def get_metric(name: str) -> Metric:
    """The metric registered as ``name`` (an :class:`InputError` lists the valid names)."""
    if not isinstance(name, str) or name not in _REGISTRY:
        raise InputError(
            f"unknown metric {name!r}; valid metrics: {', '.join(_REGISTRY)} "
            f"({', '.join(PLAUSIBILITY)} need rationales=...)."
        )
    return _REGISTRY[name]


def resolve_metrics(names: Sequence[str], *, have_rationales: bool) -> tuple[Metric, ...]:
    """The metrics named, checked: known, no repeats, rationales where needed."""
    if isinstance(names, str):
        raise InputError(f"metrics={names!r} is a string; pass a list, e.g. [{names!r}].")
    try:
        listed = list(names)
    except TypeError:
        raise InputError(f"metrics must be a list of metric names; got {names!r}.") from None
    if not listed:
        raise InputError(f"metrics is empty; pass some of: {', '.join(_REGISTRY)}.")
    metrics = tuple(get_metric(name) for name in listed)
    repeated = sorted({n for n in listed if listed.count(n) > 1})
    if repeated:
        raise InputError(f"metrics lists {', '.join(map(repr, repeated))} more than once.")
    needing = [m.name for m in metrics if m.needs_rationale]
    if needing and not have_rationales:
        raise InputError(
            f"{', '.join(needing)} compare explanations with human rationales: pass "
            "rationales=... (one 0/1 word or token vector per example, a mapping from "
            "example id, or an annotation Store with annotator=...)."
        )
    return metrics
