"""A Comparison's parts as CompareView sends them: checked, in order, as float32 arrays.

Kept apart from the widget class so that the class only declares traits and
their rules. Every check here runs before any trait is set: a comparison
that cannot be shown leaves the view as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.errors import InputError

#: The attributes a Comparison has (checked by name: the view takes any object
#: shaped like :class:`attnwidget.evaluation.comparison.Comparison`).
FIELDS = ("explanation", "methods", "tokens", "compared", "agreement", "disagreement")
#: Agreement metrics whose values are correlations in [-1, 1] (the others are
#: shares in [0, 1]): drawn on a diverging scale centred at 0.
CORRELATIONS = ("spearman", "kendall")
#: The kinds of per-method figures, in the order the page shows them.
FIGURE_KINDS = ("faithfulness", "plausibility")


@dataclass(frozen=True)
class Tables:
    """What CompareView sends of one comparison (see its message schema)."""

    methods: list[str]
    tokens: list[str]
    scores: np.ndarray  # (m, n)
    compared: list[bool]
    disagreement: np.ndarray  # (n,)
    agreement_metrics: list[str]
    agreement_signed: list[bool]
    agreement: np.ndarray  # (A, m, m)
    figure_kinds: list[str]
    figure_metrics: list[str]
    figure_higher: list[bool]
    figures: np.ndarray  # (m, K)
    rationale: list[bool]
    notes: list[str]


def check_comparison(comparison: Any) -> None:
    """TypeError unless ``comparison`` looks like a Comparison."""
    missing = [name for name in FIELDS if not hasattr(comparison, name)]
    if missing:
        raise TypeError(
            f"CompareView needs an attnwidget.Comparison, got {type(comparison).__name__} "
            f"(it has no {', '.join(missing)}); make one with "
            "attnwidget.compare(model, tokenizer, text)."
        )


def tables(comparison: Any, metric_order: tuple[str, ...]) -> Tables:
    """The arrays and names of ``comparison``, checked against each other."""
    check_comparison(comparison)
    methods = [str(m) for m in comparison.methods]
    tokens = [str(t) for t in comparison.tokens]
    n = len(tokens)
    if not methods:
        raise ValueError("this comparison holds no methods; compare at least two.")
    duplicates = sorted({m for m in methods if methods.count(m) > 1})
    if duplicates:
        raise ValueError(f"the comparison lists {', '.join(map(repr, duplicates))} more than once.")
    scores = np.stack([_vector(comparison.explanation.scores, m, n) for m in methods])
    compared = np.asarray(comparison.compared)
    if compared.shape != (n,) or compared.dtype != bool:
        raise ValueError(
            f"comparison.compared must be a bool array of shape ({n},), one flag per token; "
            f"got {compared.dtype} {compared.shape}."
        )
    disagreement = np.asarray(comparison.disagreement, dtype=np.float64)
    if disagreement.shape != (n,):
        raise ValueError(
            f"comparison.disagreement has shape {disagreement.shape}; expected ({n},), one "
            "value per token."
        )
    names, signed, agreement = _agreement(comparison.agreement, methods, metric_order)
    kinds, metrics, higher, figures, notes = _figures(comparison, methods)
    rationale = getattr(comparison, "rationale", None)
    if rationale is not None:
        rationale = np.asarray(rationale, dtype=bool)
        if rationale.shape != (n,):
            raise ValueError(
                f"comparison.rationale has shape {rationale.shape}; expected ({n},), one flag "
                "per token."
            )
    return Tables(
        methods=methods,
        tokens=tokens,
        scores=scores,
        compared=[bool(c) for c in compared],
        disagreement=np.where(compared, disagreement, np.nan),
        agreement_metrics=names,
        agreement_signed=signed,
        agreement=agreement,
        figure_kinds=kinds,
        figure_metrics=metrics,
        figure_higher=higher,
        figures=figures,
        rationale=[] if rationale is None else [bool(r) for r in rationale],
        notes=notes,
    )


def _vector(scores: Any, method: str, n: int) -> np.ndarray:
    if method not in scores:
        raise ValueError(
            f"the comparison's explanation holds no scores of {method!r}; it has "
            f"{', '.join(map(repr, scores)) or 'none'}."
        )
    row = np.asarray(scores[method], dtype=np.float64)
    if row.shape != (n,):
        raise ValueError(
            f"scores of method {method!r} have shape {row.shape}; expected ({n},), one score "
            "per token."
        )
    return row


def _agreement(
    tables: Any, methods: list[str], order: tuple[str, ...]
) -> tuple[list[str], list[bool], np.ndarray]:
    """The agreement metrics (known ones in ``order``, then the rest), their signs and values."""
    if not isinstance(tables, dict) or not tables:
        raise ValueError(
            "the comparison holds no agreement table (comparison.agreement is empty); "
            "compare at least two methods."
        )
    names = [m for m in order if m in tables] + [str(m) for m in tables if m not in order]
    out = np.full((len(names), len(methods), len(methods)), np.nan)
    for k, name in enumerate(names):
        table = tables[name]
        index, columns = list(map(str, table.index)), list(map(str, table.columns))
        missing = [m for m in methods if m not in index or m not in columns]
        if missing:
            raise ValueError(
                f"the agreement table {name!r} has no row or column for "
                f"{', '.join(map(repr, missing))}; it covers {index}."
            )
        frame = table.copy()
        frame.index, frame.columns = index, columns
        out[k] = frame.loc[methods, methods].to_numpy(dtype=np.float64)
    signed = [
        name in CORRELATIONS or bool(np.nanmin(out[k], initial=0.0) < 0)
        for k, name in enumerate(names)
    ]
    return names, signed, out


def _figures(
    comparison: Any, methods: list[str]
) -> tuple[list[str], list[str], list[bool], np.ndarray, list[str]]:
    """Faithfulness then plausibility columns: kinds, metrics, directions, (m, K) values, notes."""
    directions = dict(getattr(comparison, "directions", None) or {})
    kinds: list[str] = []
    metrics: list[str] = []
    higher: list[bool] = []
    columns: list[np.ndarray] = []
    notes: list[str] = []
    why = {
        "faithfulness": "no faithfulness figures: compare() measures them by re-running the "
        "model it is given",
        "plausibility": "no plausibility figures: give compare() a human rationale "
        "(rationale=...) to measure them",
    }
    for kind in FIGURE_KINDS:
        table = getattr(comparison, kind, None)
        if table is None or len(table.columns) == 0:
            notes.append(why[kind])
            continue
        frame = table.copy()
        frame.index = list(map(str, frame.index))
        frame = frame.reindex(methods)
        for metric in frame.columns:
            kinds.append(kind)
            metrics.append(str(metric))
            higher.append(_higher(str(metric), directions))
            columns.append(frame[metric].to_numpy(dtype=np.float64))
    values = np.stack(columns, axis=1) if columns else np.zeros((len(methods), 0))
    return kinds, metrics, higher, values, notes


def metric_summary(metric: str) -> str:
    """The registered metric's one-line description ("" for one not registered)."""
    from attnwidget.evaluation.metrics_registry import get_metric  # pandas: on first use

    try:
        return get_metric(metric).summary
    except InputError:
        return ""


def _higher(metric: str, directions: dict[str, str]) -> bool:
    """Whether a higher ``metric`` is better: the comparison's word, else the registry's."""
    direction = directions.get(metric)
    if direction in ("higher", "lower"):
        return direction == "higher"
    from attnwidget.evaluation.metrics_registry import get_metric

    try:
        return bool(get_metric(metric).higher_is_better)
    except InputError:
        raise ValueError(
            f"the comparison does not say which way {metric!r} is better; add "
            f"comparison.directions[{metric!r}] = 'higher' or 'lower'."
        ) from None
