"""Inputs, checks and forward passes shared by the diagnostics.

Every diagnostic runs a sequence classifier on single sentences (no padding):
an :class:`Example` holds one sentence's ids, the row the prediction is read
from (CLS, or the last token for a causal classifier such as GPT-2) and the
positions of its words (special tokens excluded). :func:`probabilities` runs
a batch of copies of one example with edits on chosen layers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attnwidget.capture.kinds import ENCODER, model_kind
from attnwidget.capture.run import model_device
from attnwidget.diagnostics._intervene import Edit, edited
from attnwidget.errors import InputError, ModelNotSupportedError


@dataclass
class Example:
    """One tokenised sentence: ids (1, n), keyword tensors, query row, word positions."""

    text: str
    ids: torch.Tensor
    kwargs: dict[str, torch.Tensor]
    query: int
    words: np.ndarray
    label: int | None = None


def check_model(model: Any) -> None:
    """Refuse anything but a Hugging Face sequence classifier, naming the fix."""
    try:
        kind = model_kind(model)
    except ModelNotSupportedError as error:
        raise InputError(str(error)) from error
    if kind == ENCODER and getattr(model.config, "is_encoder_decoder", False):
        raise InputError(
            f"{type(model).__name__} is an encoder–decoder classifier, whose encoder, decoder "
            "and cross attention would all count as layers here; the diagnostics take "
            "encoder-only or decoder-only classifiers (BERT, RoBERTa, DistilBERT, GPT-2, Llama)."
        )
    if kind != ENCODER:
        raise InputError(
            f"the diagnostics explain a sequence classifier's decision; {type(model).__name__} "
            f"is a {kind} model. Load it with AutoModelForSequenceClassification (e.g. "
            "attnwidget.demo.load('sva-encoder'))."
        )


def check_positive(name: str, value: Any, *, integer: bool = True) -> None:
    """``value`` must be a positive int (or a positive finite number when not ``integer``)."""
    if integer:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        what = "an integer >= 1"
    else:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < np.inf
        what = "a positive number"
    if not ok:
        raise InputError(f"{name} must be {what}, not {value!r}.")


def texts_and_labels(model: Any, data: Iterable[Any]) -> list[tuple[str, int | None]]:
    """Strings, or objects with ``.text`` (and ``.label``) such as :func:`demo.sentences`."""
    label2id = {str(k): int(v) for k, v in (getattr(model.config, "label2id", None) or {}).items()}
    out: list[tuple[str, int | None]] = []
    for item in data:
        if isinstance(item, str):
            out.append((item, None))
            continue
        text = getattr(item, "text", None)
        if not isinstance(text, str):
            raise InputError(
                f"each example must be a string or have a .text (e.g. demo.sentences()), not "
                f"{type(item).__name__}."
            )
        label = getattr(item, "label", None)
        if isinstance(label, str):
            if label not in label2id:
                raise InputError(
                    f"label {label!r} is not one of the model's labels {sorted(label2id)}."
                )
            label = label2id[label]
        out.append((text, label if isinstance(label, int) else None))
    if not out:
        raise InputError("no examples given: pass at least one sentence (n >= 1).")
    return out


def prepare(model: Any, tokenizer: Any, data: Iterable[Any]) -> list[Example]:
    """Tokenise each sentence; the query row from the model's first-layer attention."""
    device = model_device(model)
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    examples = []
    for text, label in texts_and_labels(model, data):
        enc = tokenizer(text, return_tensors="pt")
        ids = enc["input_ids"].to(device)
        kwargs = {"attention_mask": torch.ones_like(ids)}
        if "token_type_ids" in enc:
            kwargs["token_type_ids"] = enc["token_type_ids"].to(device)
        ids_list = ids[0].tolist()
        words = np.array([i for i, t in enumerate(ids_list) if t not in special], dtype=int)
        examples.append(Example(text, ids, kwargs, 0, words, label))
    for example in examples:
        example.query = _query_row(model, example)
    return examples


def _query_row(model: Any, example: Example) -> int:
    n = example.ids.shape[1]
    with edited() as state, torch.no_grad():
        model(input_ids=example.ids, **example.kwargs)
    if not state.weights:
        raise InputError(
            f"{type(model).__name__} computed no softmax attention through transformers' "
            "attention interface, so there is no attention to intervene on. Use a Transformer "
            "with softmax self-attention (BERT, RoBERTa, DistilBERT, ELECTRA, GPT-2, Llama ...)."
        )
    first = state.weights[0][0].float()
    causal = n > 1 and float(torch.triu(first, diagonal=1).max()) < 1e-9
    return n - 1 if causal else 0


def layer_count(model: Any, example: Example) -> int:
    """How many attention layers one pass calls."""
    with edited() as state, torch.no_grad():
        model(input_ids=example.ids, **example.kwargs)
    return state.calls


def check_layers(layers: Any, count: int) -> list[int]:
    """Layer indices (negative from the end) → sorted non-negative, checked."""
    if layers is None or layers == "all":
        return list(range(count))
    single = isinstance(layers, int) and not isinstance(layers, bool)
    items = [layers] if single else list(layers)
    out = []
    for layer in items:
        if isinstance(layer, bool) or not isinstance(layer, int) or not -count <= layer < count:
            raise InputError(
                f"unknown layer {layer!r}: the model has {count} attention layers, so a layer "
                f"is an integer from 0 to {count - 1} (or -{count} to -1 from the end)."
            )
        out.append(layer % count)
    if not out:
        raise InputError("layers is empty: name at least one layer, or 'all'.")
    return sorted(set(out))


def probabilities(
    model: Any, example: Example, edits: Mapping[int, Edit] | None = None, copies: int = 1
) -> torch.Tensor:
    """(copies, C) float64 class probabilities with ``edits``, under no_grad."""
    with torch.no_grad():
        return forward(model, example, edits, copies).double().softmax(-1)


def forward(
    model: Any, example: Example, edits: Mapping[int, Edit] | None = None, copies: int = 1
) -> torch.Tensor:
    """(copies, C) logits of ``copies`` copies of the example, run with ``edits``."""
    # A causal classifier without a pad token refuses batches; run those one by one.
    batch = copies if getattr(model.config, "pad_token_id", None) is not None else 1
    chunks = []
    for start in range(0, copies, batch):
        size = min(batch, copies - start)
        kwargs = {k: v.expand(size, -1) for k, v in example.kwargs.items()}
        with edited(edits):  # a fresh pass: layers counted from 0 again
            out = model(input_ids=example.ids.expand(size, -1), **kwargs)
        chunks.append(out.logits)
    return torch.cat(chunks)


def total_variation(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """½ Σ |p − q| over the last axis."""
    return 0.5 * (p - q).abs().sum(-1)


def js_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen–Shannon divergence over the last axis, natural log (0 … ln 2)."""
    m = 0.5 * (p + q)

    def kl(a: torch.Tensor) -> torch.Tensor:
        return torch.where(a > 0, a * (a.clamp_min(1e-30).log() - m.clamp_min(1e-30).log()), 0)

    return (0.5 * kl(p) + 0.5 * kl(q)).sum(-1)


def progress_bar(items: Sequence[Any], progress: bool, desc: str) -> Iterator[Any]:
    """``items`` through a tqdm bar when ``progress`` (tqdm is optional otherwise)."""
    if not progress:
        yield from items
        return
    try:
        from tqdm.auto import tqdm
    except ImportError as error:
        raise InputError(
            "progress=True needs tqdm (pip install tqdm); or pass progress=False."
        ) from error
    yield from tqdm(items, desc=desc, leave=False)


def fmt(value: Any) -> str:
    """A number for people: 4 significant digits."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float | np.floating):
        return f"{float(value):.4g}"
    return str(value)


def summary_text(title: str, rows: Mapping[str, Any]) -> str:
    """Lines ``key: value`` under a title, numbers to 4 significant digits."""
    width = max(len(k) for k in rows)
    return "\n".join([title, *(f"  {k:<{width}}  {fmt(v)}" for k, v in rows.items())])
