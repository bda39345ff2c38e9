"""Wiegreffe & Pinter (2019), "Attention is not not Explanation" (EMNLP): the uniform baseline.

If a model does as well with uniform attention as with its own, its
attention weights carry little the task needs, and reading them as an
explanation says little. :func:`uniform_baseline` replaces the attention of
chosen layers (default: every layer) with uniform weights over the real
tokens and compares accuracy with the original model's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.diagnostics._intervene import intervention, uniform
from attnwidget.diagnostics._run import (
    check_layers,
    check_model,
    layer_count,
    prepare,
    probabilities,
    progress_bar,
    summary_text,
    total_variation,
)
from attnwidget.errors import InputError


@dataclass
class UniformResult:
    """Predictions with the model's attention and with uniform attention.

    ``labels`` is None when the examples carry no labels (then only the
    agreement between the two is known). ``tvd`` per sentence: total
    variation distance between the two predicted distributions
    (``convention`` says which: see :func:`uniform_baseline`).
    """

    texts: list[str]
    labels: np.ndarray | None
    original: np.ndarray
    uniform: np.ndarray
    tvd: np.ndarray
    layers: list[int]
    convention: str = "standard"

    def summary(self) -> dict[str, float]:
        """Accuracies (when labelled), agreement, mean TVD."""
        out: dict[str, float] = {"sentences": len(self.texts)}
        if self.labels is not None:
            out["accuracy (original)"] = float(np.mean(self.original == self.labels))
            out["accuracy (uniform)"] = float(np.mean(self.uniform == self.labels))
        out["decisions unchanged"] = float(np.mean(self.original == self.uniform))
        out["mean TVD"] = float(self.tvd.mean())
        return out

    def to_dataframe(self) -> Any:
        """One row per sentence (pandas)."""
        import pandas as pd

        data: dict[str, Any] = {"text": self.texts}
        if self.labels is not None:
            data["label"] = self.labels
        data.update(original=self.original, uniform=self.uniform, tvd=self.tvd)
        return pd.DataFrame(data)

    def __str__(self) -> str:
        layers = ", ".join(map(str, self.layers))
        return summary_text(f"Uniform attention in layers {layers}", self.summary())


def uniform_baseline(
    model: Any,
    tokenizer: Any,
    examples: Iterable[Any],
    *,
    layers: Any = "all",
    progress: bool = False,
    convention: str = "standard",
) -> UniformResult:
    """Accuracy with uniform attention vs the model's own (Wiegreffe & Pinter 2019).

    In each of ``layers`` (``"all"``, one index or a list; negative from the
    end) every head's every row gets weight 1/k on each of the k keys its mask
    lets it see (all tokens of an unpadded sentence in an encoder, keys ≤ i in
    a causal model), during the forward pass. Wiegreffe & Pinter freeze
    uniform attention and *train* the rest; here the trained model is kept, so
    this measures how much the trained model relies on its attention.

    Args:
        examples: strings, or objects with ``.text`` and ``.label`` (a label
            name of ``model.config.label2id`` or an id), e.g.
            ``demo.sentences(500, seed=0)``; without labels only the
            agreement between the two runs is reported.
        convention: how ``tvd`` is measured. "standard" (default): the total
            variation distance ½ Σ_c |p_c − q_c| over all classes.
            "wiegreffe_pinter": as the authors' code, ½ |p_1 − q_1| of the
            positive class (class 1) of a binary classifier, which is half the
            standard figure there (½ Σ over two classes is |p_1 − q_1|); use
            it to compare with their published TVDs.

    Raises:
        InputError: unknown layer, no examples, not a classifier, an unknown
            ``convention``, or "wiegreffe_pinter" on a model without exactly
            two classes.
    """
    _check_convention(model, convention)
    check_model(model)
    with intervention(model):
        prepared = prepare(model, tokenizer, examples)
        chosen = check_layers(layers, layer_count(model, prepared[0]))
        edits = dict.fromkeys(chosen, uniform)
        original, changed, tvds = [], [], []
        for example in progress_bar(prepared, progress, "uniform attention"):
            p = probabilities(model, example)[0]
            q = probabilities(model, example, edits)[0]
            original.append(int(p.argmax()))
            changed.append(int(q.argmax()))
            if convention == "wiegreffe_pinter":  # their binary TVD: the positive class only
                tvds.append(0.5 * abs(float(p[1]) - float(q[1])))
            else:
                tvds.append(float(total_variation(p, q)))
    labelled = all(e.label is not None for e in prepared)
    return UniformResult(
        texts=[e.text for e in prepared],
        labels=np.array([e.label for e in prepared]) if labelled else None,
        original=np.array(original),
        uniform=np.array(changed),
        tvd=np.array(tvds),
        layers=chosen,
        convention=convention,
    )


#: ``convention`` of :func:`uniform_baseline`.
CONVENTIONS = ("standard", "wiegreffe_pinter")


def _check_convention(model: Any, convention: Any) -> None:
    """Refuse an unknown convention, or the authors' binary TVD on another model."""
    if convention not in CONVENTIONS:
        raise InputError(
            f"convention={convention!r} is not known; use 'standard' (total variation over "
            "all classes, the default) or 'wiegreffe_pinter' (the authors' binary TVD)."
        )
    labels = getattr(getattr(model, "config", None), "num_labels", None)
    if convention == "wiegreffe_pinter" and labels != 2:
        raise InputError(
            f"convention='wiegreffe_pinter' takes ½|Δp| of the positive class of a binary "
            f"classifier, but this model has {labels} classes; use convention='standard' "
            "(the total variation over all classes)."
        )
