"""The Annotator's model side: a classifier's prediction for an item, and each
method's token scores summed to the item's words (:mod:`attnwidget.annotations.alignment`).

Both are computed when an item is shown, after the item itself has been sent
to the page, so moving between items never waits for the model; the last
few items' results are kept.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.annotations import Item
from attnwidget.annotations.alignment import align
from attnwidget.errors import InputError, TruncationWarning

#: How many items' predictions and scores are kept.
CACHE_ITEMS = 32


@dataclass(frozen=True)
class Prediction:
    """A classifier's prediction: the top label and its probability."""

    label: str
    probability: float
    truncated: bool = False

    def as_trait(self) -> dict[str, Any]:
        return {"label": self.label, "probability": self.probability, "truncated": self.truncated}


@dataclass(frozen=True)
class WordScores:
    """Each method's scores over an item's words: float32 ``(methods, words)``."""

    methods: list[str]
    signed: list[bool]
    scores: np.ndarray


class ModelSide:
    """Predictions and word scores of one sequence classifier for the Annotator's items."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        methods: Sequence[str] | None,
        show_scores: bool,
        method_options: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        from attnwidget.capture import ENCODER, model_kind
        from attnwidget.capture.tokens import max_length

        if tokenizer is None:
            raise InputError(
                "Annotator(model=...) needs its tokenizer too: pass tokenizer=, e.g. "
                "AutoTokenizer.from_pretrained(the model's name)"
            )
        kind = model_kind(model)
        if kind != ENCODER:
            raise InputError(
                f"Annotator(model=...) shows a classifier's predicted label, but "
                f"{type(model).__name__} is a {kind} model; pass a sequence classifier "
                "(AutoModelForSequenceClassification) or leave model out"
            )
        if isinstance(methods, str):
            raise InputError(f"methods={methods!r} is a string; pass a list, e.g. [{methods!r}]")
        self.model = model
        self.tokenizer = tokenizer
        self.methods = None if methods is None else list(methods)
        self.show_scores = show_scores
        self.limit = max_length(model, tokenizer)
        id2label = getattr(model.config, "id2label", None) or {}
        self.labels = [str(id2label[k]) for k in sorted(id2label)]
        if show_scores:  # unknown names and options fail now, not on the first item
            from attnwidget.methods import get_method
            from attnwidget.methods.registry import resolve_method_options
            from attnwidget.pipeline.explain import DEFAULT_METHODS

            names = DEFAULT_METHODS if self.methods is None else self.methods
            resolve_method_options([get_method(name) for name in names], method_options)
        self.method_options = method_options
        self._predictions: OrderedDict[str, Prediction] = OrderedDict()
        self._scores: OrderedDict[str, WordScores] = OrderedDict()
        self._suggested: OrderedDict[tuple[str, str, float], list[tuple[int, int]]] = OrderedDict()

    def predict(self, item: Item) -> Prediction:
        """The classifier's top label for the item and its probability (cached)."""
        found = self._predictions.get(item.id)
        if found is None:
            found = self._predict(item)
            _remember(self._predictions, item.id, found)
        return found

    def word_scores(self, item: Item) -> WordScores:
        """Each method's token scores summed to the item's words (cached)."""
        found = self._scores.get(item.id)
        if found is None:
            found = self._word_scores(item)
            _remember(self._scores, item.id, found)
        return found

    def suggest(self, item: Item, method: str, top: float) -> list[tuple[int, int]]:
        """The character spans of the item's top ``top`` share of tokens by ``method``
        (at least one; tokens of ``text`` only, highest score first; cached)."""
        key = (item.id, method, top)
        found = self._suggested.get(key)
        if found is None:
            found = self._suggest(item, method, top)
            _remember(self._suggested, key, found)
        return found

    def _suggest(self, item: Item, method: str, top: float) -> list[tuple[int, int]]:
        from attnwidget.pipeline.explain import explain

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TruncationWarning)
            exp = explain(
                self.model,
                self.tokenizer,
                item.text,
                text_pair=item.text_pair,
                methods=[method],
                method_options=(
                    {method: self.method_options[method]}
                    if self.method_options and method in self.method_options
                    else None
                ),
                truncation=True,
            )
        scores = np.asarray(exp.scores[method], dtype=np.float64).reshape(-1)
        try:  # the tokens the scores belong to (truncated as explain truncated them)
            encoding = self.tokenizer(
                item.text,
                item.text_pair,
                return_offsets_mapping=True,
                return_special_tokens_mask=True,
                truncation=True,
                max_length=len(scores),
            )
        except NotImplementedError:
            raise InputError(
                f"suggest= maps tokens to the text by their character offsets, which "
                f"{type(self.tokenizer).__name__} does not give: load the fast tokenizer, "
                "AutoTokenizer.from_pretrained(name, use_fast=True)"
            ) from None
        try:
            sequence = list(encoding.sequence_ids(0))
        except (AttributeError, ValueError, TypeError):
            special = encoding.get("special_tokens_mask") or [0] * len(scores)
            sequence = [None if flag else 0 for flag in special]
        offsets = [(int(s), int(e)) for s, e in encoding["offset_mapping"]]
        ours = [
            k
            for k, (s, e) in enumerate(offsets)
            if k < len(scores)
            and sequence[k] == 0
            and e > s
            and np.isfinite(scores[k])
            and item.text[s:e].strip()
        ]
        if not ours:
            return []
        count = max(1, round(top * len(ours)))
        best = sorted(ours, key=lambda k: -scores[k])[:count]
        return sorted(offsets[k] for k in best)

    def _predict(self, item: Item) -> Prediction:
        import torch

        options: dict[str, Any] = {"return_tensors": "pt", "truncation": self.limit is not None}
        if self.limit is not None:
            options["max_length"] = self.limit
        full = len(self.tokenizer(item.text, item.text_pair)["input_ids"])
        encoding = self.tokenizer(item.text, item.text_pair, **options)
        device = next(self.model.parameters()).device
        inputs = {k: v.to(device) for k, v in encoding.items()}
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                logits = self.model(**inputs).logits
        finally:
            self.model.train(was_training)
        row = logits.detach().float().cpu().numpy().reshape(-1)
        shifted = np.exp(row - row.max())
        probabilities = shifted / shifted.sum()
        top = int(np.argmax(probabilities))
        label = self.labels[top] if top < len(self.labels) else str(top)
        truncated = full > encoding["input_ids"].shape[-1]
        return Prediction(label, float(probabilities[top]), truncated)

    def _word_scores(self, item: Item) -> WordScores:
        from attnwidget.pipeline.explain import explain
        from attnwidget.views.saliency.saliency_view import _is_signed

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TruncationWarning)  # shown as the prediction's note
            exp = explain(
                self.model,
                self.tokenizer,
                item.text,
                text_pair=item.text_pair,
                methods=self.methods,
                method_options=self.method_options,
                truncation=True,
            )
        alignment = align(self.tokenizer, item.text, item.text_pair, input_ids=exp.input_ids)
        names = list(exp.scores)
        rows = [alignment.word_scores(exp.scores[name]) for name in names]
        matrix = np.stack(rows).astype(np.float32) if rows else np.zeros((0, len(item.words)))
        signed = [_is_signed(name, np.asarray(exp.scores[name])) for name in names]
        return WordScores(names, signed, matrix.astype(np.float32))


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > CACHE_ITEMS:
        cache.popitem(last=False)
