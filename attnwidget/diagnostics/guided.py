"""Wiegreffe & Pinter (2019): a model's frozen attention guiding a model without context.

Wiegreffe & Pinter's diagnostic: train a classifier that sees each token
alone (an MLP over token embeddings, no context) and pools its tokens with
given weights. With *uniform* weights it must find the answer in the
average; with weights *learned* alongside it, it finds its own; with the
trained model's attention *frozen* in, it is pointed where the model looked.
If the frozen weights beat uniform ones, the attention carries information
about which tokens matter for the task that does not depend on the model
that produced it.

:func:`guided_mlp` trains the three variants on the same sentences (seeded,
deterministic on one thread) and reports their held-out accuracies. The
frozen weights are one layer's prediction row (``[CLS]`` for an encoder),
mean over heads, renormalised over the words (special tokens get 0).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from attnwidget.diagnostics._intervene import edited, intervention
from attnwidget.diagnostics._run import (
    check_layers,
    check_model,
    layer_count,
    prepare,
    summary_text,
)
from attnwidget.errors import InputError

VARIANTS = ("uniform", "learned", "frozen")


@dataclass
class GuidedResult:
    """Held-out accuracy of the context-free classifier with each pooling."""

    layer: int
    train_sentences: int
    test_sentences: int
    accuracy: dict[str, float]

    def summary(self) -> dict[str, float]:
        """Sentence counts and the three accuracies."""
        return {
            "train sentences": self.train_sentences,
            "test sentences": self.test_sentences,
            **{f"accuracy, {name} weights": value for name, value in self.accuracy.items()},
        }

    def __str__(self) -> str:
        return summary_text(
            f"Context-free MLP guided by attention of layer {self.layer} (Wiegreffe & Pinter)",
            self.summary(),
        )


class _PooledMLP(nn.Module):
    """Embed each token, one hidden layer per token, pool with weights, classify."""

    def __init__(self, vocab: int, classes: int, width: int, learned: bool) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.hidden = nn.Sequential(nn.Linear(width, width), nn.Tanh())
        self.score = nn.Linear(width, 1) if learned else None
        self.out = nn.Linear(width, classes)

    def forward(self, ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        hidden = self.hidden(self.embed(ids))  # (B, n, width)
        if self.score is not None:  # learned: softmax over the words (weights mark them)
            logits = self.score(hidden).squeeze(-1).masked_fill(weights <= 0, float("-inf"))
            weights = logits.softmax(-1)
        return self.out((weights.unsqueeze(-1) * hidden).sum(1))


def _rows(model: Any, tokenizer: Any, data: list[Any], layer: int | None):
    """Token ids, labels, uniform and frozen word weights of each sentence (padded)."""
    prepared = prepare(model, tokenizer, data)
    chosen = check_layers(-1 if layer is None else layer, layer_count(model, prepared[0]))[0]
    if any(e.label is None for e in prepared):
        raise InputError(
            "guided_mlp trains classifiers, so every example needs a label: pass objects with "
            ".text and .label (e.g. demo.sentences(...))."
        )
    width = max(e.ids.shape[1] for e in prepared)
    ids = torch.zeros((len(prepared), width), dtype=torch.long)
    uniform = torch.zeros((len(prepared), width), dtype=torch.float64)
    frozen = torch.zeros_like(uniform)
    for i, example in enumerate(prepared):
        n = example.ids.shape[1]
        ids[i, :n] = example.ids[0].cpu()
        with edited() as state, torch.no_grad():
            model(input_ids=example.ids, **example.kwargs)
        row = state.weights[chosen][0].double().mean(0)[example.query].cpu()
        words = torch.as_tensor(example.words)
        uniform[i, words] = 1.0 / len(words)
        frozen[i, words] = row[words] / row[words].sum()
    # Every label is set (checked above); the filter only narrows the type.
    labels = torch.tensor([int(e.label) for e in prepared if e.label is not None])
    return ids, labels, uniform.float(), frozen.float(), chosen


def guided_mlp(
    model: Any,
    tokenizer: Any,
    train: Iterable[Any],
    test: Iterable[Any],
    *,
    layer: int = -1,
    epochs: int = 30,
    width: int = 32,
    seed: int = 0,
) -> GuidedResult:
    """Train context-free classifiers pooled with uniform, learned and the model's frozen
    attention; their accuracy on ``test`` (Wiegreffe & Pinter 2019, section 4).

    Args:
        model, tokenizer: the trained classifier whose attention is frozen in,
            and its tokenizer (the MLPs use the same token ids).
        train, test: labelled examples (``.text``, ``.label``), e.g.
            ``demo.sentences(2000, seed=1, split="train")`` and
            ``demo.sentences(500, seed=0)``.
        layer: the attention layer whose prediction row is frozen in.
        epochs: full passes of Adam (batch 64, lr 1e-2) over ``train``.

    Raises:
        InputError: unlabelled or no examples, an unknown layer, epochs < 1.
    """
    check_model(model)
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise InputError(f"epochs must be a positive integer, got {epochs!r}.")
    with intervention(model):
        train_ids, train_y, train_u, train_f, chosen = _rows(model, tokenizer, list(train), layer)
        test_ids, test_y, test_u, test_f, _ = _rows(model, tokenizer, list(test), layer)
    vocab = int(max(train_ids.max(), test_ids.max())) + 1
    classes = int(getattr(model.config, "num_labels", 2))
    accuracy: dict[str, float] = {}
    for name in VARIANTS:
        weights_train = train_f if name == "frozen" else train_u
        weights_test = test_f if name == "frozen" else test_u
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            mlp = _PooledMLP(vocab, classes, width, learned=name == "learned")
            optimiser = torch.optim.Adam(mlp.parameters(), lr=1e-2)
            generator = torch.Generator().manual_seed(seed)
            for _ in range(epochs):
                order = torch.randperm(len(train_ids), generator=generator)
                for start in range(0, len(order), 64):
                    batch = order[start : start + 64]
                    loss = nn.functional.cross_entropy(
                        mlp(train_ids[batch], weights_train[batch]), train_y[batch]
                    )
                    optimiser.zero_grad()
                    loss.backward()
                    optimiser.step()
            with torch.no_grad():
                predicted = mlp(test_ids, weights_test).argmax(-1)
        accuracy[name] = float((predicted == test_y).double().mean())
    return GuidedResult(chosen, len(train_ids), len(test_ids), accuracy)


__all__ = ["VARIANTS", "GuidedResult", "guided_mlp"]
