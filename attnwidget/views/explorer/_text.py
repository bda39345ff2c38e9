"""The Explorer's text helpers: the token limit, cutting a text to it, and its messages."""

from __future__ import annotations

from typing import Any

import numpy as np

from attnwidget.results.explanation import Explanation
from attnwidget.views.core.format import format_number


def _check_max_length(value: Any, limit: int | None) -> int | None:
    """``max_length`` checked against the model's own limit (None: that limit)."""
    if value is None:
        return limit
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"max_length={value!r} must be a positive number of tokens.")
    if limit is not None and value > limit:
        raise ValueError(
            f"max_length={value} is more than the model accepts ({limit} tokens, its position "
            f"embeddings); pass at most {limit}."
        )
    return int(value)


def _cut(tokenizer: Any, text: str, limit: int) -> str:
    """The start of ``text`` that tokenizes to its first ``limit`` tokens (special included)."""
    try:
        encoding = tokenizer(
            text,
            add_special_tokens=True,
            truncation=True,
            max_length=limit,
            return_offsets_mapping=True,
        )
        ends = [end for start, end in encoding["offset_mapping"] if end > start]
    except (NotImplementedError, TypeError, ValueError, KeyError):
        ends = []  # a slow tokenizer gives no offsets
    if ends:
        return text[: max(ends)]
    ids = tokenizer(text, add_special_tokens=True, truncation=True, max_length=limit)["input_ids"]
    return str(tokenizer.decode(ids, skip_special_tokens=True))


def _message(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    # KeyError-like errors repr their message; the library's own errors do not.
    return text.strip("'\"") if isinstance(error, KeyError) else text


def _summary(explanation: Explanation) -> str:
    target = explanation.target
    text = f"{len(explanation.tokens)} tokens, {explanation.num_layers} layers"
    if target is not None:
        probs = explanation.probabilities
        p = ""
        if probs is not None and explanation.target_id is not None:
            if 0 <= explanation.target_id < probs.shape[-1]:
                p = f" (p = {format_number(probs[explanation.target_id])})"
        text = f"Explaining target {target!r}{p}: {text}."
    return text
