"""What ExplanationRating shows: the inputs, methods, outputs and the page's trial payload.

Kept apart from the widget (rating_view.py) so it can be tested without a
page: which methods are compared, the model output a "simulate" trial asks
for, and what one trial sends to the page. A hidden method's name is never
sent: the page gets "Explanation" (rate, simulate) or "A"/"B" (compare).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnwidget.errors import InputError
from attnwidget.results.explanation import Explanation


def as_explanations(explanations: Any) -> list[Explanation]:
    """A list of Explanations from one or a sequence of them."""
    items = [explanations] if isinstance(explanations, Explanation) else list(explanations)
    if not items:
        raise InputError("explanations is empty: pass one Explanation or a list of them")
    for k, item in enumerate(items):
        if not isinstance(item, Explanation):
            raise InputError(
                f"explanations[{k}] is a {type(item).__name__}; pass attnwidget Explanations "
                "(from attnwidget.explain or Explanation.from_attentions)"
            )
    return items


def common_methods(items: list[Explanation], methods: Sequence[str] | None) -> list[str]:
    """The methods to judge: ``methods``, or those every explanation scored."""
    if methods is None:
        found = [m for m in items[0].scores if all(m in e.scores for e in items)]
    else:
        found = [str(m) for m in methods]
        for k, item in enumerate(items):
            missing = [m for m in found if m not in item.scores]
            if missing:
                raise InputError(
                    f"explanations[{k}] has no scores for {missing}; it has {list(item.scores)}"
                )
    if not found:
        raise InputError(
            "no method scored every explanation: compute the same methods for each "
            "(explain(..., methods=[...])) or pass methods="
        )
    return found


def model_output(item: Explanation, labels: Sequence[str] | None) -> str:
    """The model's output a "simulate" trial asks for: with ``labels``, the label of
    the most probable class; else the explanation's target (by default the
    predicted class)."""
    if labels is not None:
        values = item.probabilities if item.probabilities is not None else item.logits
        if values is not None and np.size(values) == len(labels):
            return str(labels[int(np.argmax(values))])
        if item.target_id is not None and 0 <= int(item.target_id) < len(labels):
            return str(labels[int(item.target_id)])
    if item.target is None:
        raise InputError(
            "mode='simulate' needs each explanation's model output: its target is None; "
            "explain a classifier's prediction, or pass labels= with its class names"
        )
    return str(item.target)


def choices_for(outputs: list[str], labels: Sequence[str] | None) -> list[str]:
    """The answers a person picks from in "simulate": ``labels``, else the outputs seen."""
    found = [str(x) for x in labels] if labels is not None else sorted(set(outputs))
    if len(found) < 2:
        raise InputError(
            f"mode='simulate' needs at least two possible outputs to predict; found {found}: "
            "pass labels= (the model's class names)"
        )
    return found


def trial_payload(
    trial: dict[str, Any],
    position: int,
    items: list[Explanation],
    mode: str,
    show_method: bool,
    choices: list[str],
) -> tuple[dict[str, Any], np.ndarray]:
    """The ``trial`` trait (tokens and, per panel, its label) and the panels' scores
    (float32, (panels, tokens): the ``scores`` trait, sent as bytes)."""
    item = items[int(trial["input"])]
    panels = []
    rows = []
    if trial["explanation_shown"]:
        for side, method in enumerate(trial["methods"]):
            scores = np.nan_to_num(np.asarray(item.scores[method], dtype=np.float32))
            rows.append(scores)
            hidden = "AB"[side] if mode == "compare" else "Explanation"
            panels.append(
                {
                    "label": method if show_method else hidden,
                    "side": ("left", "right")[side] if mode == "compare" else "",
                    "signed": bool((scores < 0).any()),
                }
            )
    n = len(item.tokens)
    matrix = np.stack(rows) if rows else np.zeros((0, n), dtype=np.float32)
    return {
        "position": position,
        "tokens": [str(t) for t in item.tokens],
        "query_index": int(item.query_index),
        "explanation_shown": bool(trial["explanation_shown"]),
        "panels": panels,
        "choices": list(choices) if mode == "simulate" else [],
        "shape": [len(rows), n],
    }, matrix
