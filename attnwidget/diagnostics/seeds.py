"""Wiegreffe & Pinter (2019): how much attention varies across training seeds.

Models trained alike but from different random seeds reach the same
decisions; if their attention distributions still differ widely, a large
divergence between two attention maps is no evidence by itself that either
one "explains" differently (Wiegreffe & Pinter use this spread as the
baseline an adversarial attention has to beat). :func:`seed_variance`
compares every pair of the given models on the same sentences: the
Jensen–Shannon divergence of their prediction row's attention (a chosen
layer, mean over heads, over every key) and the total variation distance
of their predicted distributions.

Training the models is the caller's part (e.g. ``attnwidget.demo.train.
train_model("sva-encoder", TrainSettings(seed=s))``; ``bench/seeds.py``
does it for three seeds).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import torch

from attnwidget.diagnostics._intervene import edited, intervention
from attnwidget.diagnostics._run import (
    check_layers,
    check_model,
    js_divergence,
    layer_count,
    prepare,
    probabilities,
    progress_bar,
    summary_text,
    total_variation,
)
from attnwidget.errors import InputError


@dataclass
class SeedVarianceResult:
    """Per model pair (i, j) and sentence: attention JSD and output TVD.

    ``attention_jsd`` and ``output_tvd`` are (pairs, sentences); ``pairs``
    names the two models of each row by their index in the given list;
    ``same_decision`` is True where both models predict the same class.
    """

    texts: list[str]
    pairs: list[tuple[int, int]]
    layer: int
    attention_jsd: np.ndarray
    output_tvd: np.ndarray
    same_decision: np.ndarray

    def summary(self) -> dict[str, float]:
        """Means and medians over every pair and sentence."""
        return {
            "models": len({m for pair in self.pairs for m in pair}),
            "sentences": len(self.texts),
            "attention JSD, mean": float(self.attention_jsd.mean()),
            "attention JSD, median": float(np.median(self.attention_jsd)),
            "attention JSD, p90": float(np.quantile(self.attention_jsd, 0.9)),
            "output TVD, mean": float(self.output_tvd.mean()),
            "same decision": float(self.same_decision.mean()),
        }

    def to_dataframe(self) -> Any:
        """One row per model pair and sentence (pandas)."""
        import pandas as pd

        rows = []
        for p, (i, j) in enumerate(self.pairs):
            for s, text in enumerate(self.texts):
                rows.append(
                    {
                        "model_a": i,
                        "model_b": j,
                        "text": text,
                        "attention_jsd": self.attention_jsd[p, s],
                        "output_tvd": self.output_tvd[p, s],
                        "same_decision": bool(self.same_decision[p, s]),
                    }
                )
        return pd.DataFrame(rows)

    def __str__(self) -> str:
        return summary_text(
            f"Attention across training seeds, layer {self.layer} (mean over heads)",
            self.summary(),
        )


def _row_and_output(model: Any, example: Any, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    with edited() as state, torch.no_grad():
        model(input_ids=example.ids, **example.kwargs)
    row = state.weights[layer][0].double().mean(0)[example.query]
    return row, probabilities(model, example)[0]


def seed_variance(
    models: Sequence[Any],
    tokenizer: Any,
    examples: Iterable[Any],
    *,
    layer: int = -1,
    progress: bool = False,
) -> SeedVarianceResult:
    """Attention JSD and output TVD between every pair of ``models`` (Wiegreffe & Pinter 2019).

    Args:
        models: two or more classifiers of the same task and tokenizer
            (e.g. one architecture trained with different seeds).
        examples: strings, or objects with ``.text`` (e.g. ``demo.sentences``).
        layer: the attention layer compared (negative from the end).

    Raises:
        InputError: fewer than two models, an unknown layer, no examples.
    """
    models = list(models)
    if len(models) < 2:
        raise InputError(
            f"seed_variance compares models pairwise and got {len(models)}; pass two or more "
            "models trained alike with different seeds."
        )
    for model in models:
        check_model(model)
    data = list(examples)
    rows: list[list[torch.Tensor]] = []
    outputs: list[list[torch.Tensor]] = []
    texts: list[str] = []
    chosen = 0
    for index, model in enumerate(models):
        with intervention(model):
            prepared = prepare(model, tokenizer, data)
            chosen = check_layers(layer, layer_count(model, prepared[0]))[0]
            texts = [e.text for e in prepared]
            pairs = [
                _row_and_output(model, e, chosen)
                for e in progress_bar(prepared, progress, f"model {index + 1}/{len(models)}")
            ]
        rows.append([r for r, _ in pairs])
        outputs.append([o for _, o in pairs])
    model_pairs = list(combinations(range(len(models)), 2))
    jsd = np.zeros((len(model_pairs), len(texts)))
    tvd = np.zeros_like(jsd)
    same = np.zeros(jsd.shape, dtype=bool)
    for p, (i, j) in enumerate(model_pairs):
        for s in range(len(texts)):
            if rows[i][s].shape != rows[j][s].shape:
                raise InputError(
                    "the models tokenise the sentences differently; seed_variance needs models "
                    "that share one tokenizer."
                )
            jsd[p, s] = float(js_divergence(rows[i][s], rows[j][s]))
            tvd[p, s] = float(total_variation(outputs[i][s], outputs[j][s]))
            same[p, s] = int(outputs[i][s].argmax()) == int(outputs[j][s].argmax())
    return SeedVarianceResult(texts, model_pairs, chosen, jsd, tvd, same)
