"""Resolve the user's ``target`` and ``query_index`` to a class or token id and a row."""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

from attnwidget.capture.kinds import ENCODER
from attnwidget.capture.tokens import token_label
from attnwidget.errors import InputError

#: What to explain: a class index or label name, a token id or token string;
#: None: the model's prediction.
Target: TypeAlias = "int | np.integer | str | None"


def resolve_target(
    target: Any,
    logits: np.ndarray,
    *,
    kind: str,
    model: Any,
    tokenizer: Any,
) -> tuple[int, Any]:
    """Return ``(target_id, target_label)`` for one example.

    ``logits`` is the (C,) or (V,) score vector at the query position. ``None``
    means the model's prediction (argmax). Classifiers take a class index or a
    label name from ``config.id2label``; language models take a token id or a
    string that is exactly one token.
    """
    size = logits.shape[-1]
    if target is None:
        target_id = int(np.argmax(logits))
    elif isinstance(target, (bool, np.bool_)):
        raise InputError(f"target={target!r} is a bool; pass a class index, label or token.")
    elif isinstance(target, (int, np.integer)):
        target_id = int(target)
        if not 0 <= target_id < size:
            what = "class index" if kind == ENCODER else "token id"
            raise InputError(f"target={target_id} is not a valid {what}: expected 0..{size - 1}.")
    elif isinstance(target, str):
        target_id = (
            _label_to_id(target, model) if kind == ENCODER else _token_to_id(target, tokenizer)
        )
    else:
        raise InputError(f"target must be None, an int or a str, got {type(target).__name__}.")
    return target_id, _label(target_id, kind=kind, model=model, tokenizer=tokenizer)


def _label_to_id(label: str, model: Any) -> int:
    label2id = dict(getattr(model.config, "label2id", {}) or {})
    if label in label2id:
        return int(label2id[label])
    folded = {str(k).lower(): v for k, v in label2id.items()}
    if label.lower() in folded:
        return int(folded[label.lower()])
    raise InputError(
        f"unknown label {label!r}; this model's labels are {sorted(label2id)} "
        "(or pass a class index)."
    )


def _token_to_id(token: str, tokenizer: Any) -> int:
    vocab_id = tokenizer.convert_tokens_to_ids(token)
    unk = getattr(tokenizer, "unk_token_id", None)
    if (
        isinstance(vocab_id, int)
        and vocab_id >= 0
        and (vocab_id != unk or token == tokenizer.unk_token)
    ):
        return vocab_id
    ids = tokenizer.encode(token, add_special_tokens=False)
    if len(ids) == 1:
        return int(ids[0])
    if not ids:
        raise InputError(f"target {token!r} encodes to no token; pass a word or a token id.")
    pieces = tokenizer.convert_ids_to_tokens(ids)
    raise InputError(
        f"target {token!r} is {len(ids)} tokens {pieces}; a target must be one token. "
        "Pass one of these pieces (or its id) instead; for byte-level BPE models a "
        "word after a space is written with a leading space, e.g. ' are'."
    )


def _label(target_id: int, *, kind: str, model: Any, tokenizer: Any) -> Any:
    if kind == ENCODER:
        id2label = getattr(model.config, "id2label", None) or {}
        return id2label.get(target_id, id2label.get(str(target_id), target_id))
    return token_label(target_id, tokenizer)


def resolve_query_index(query_index: int | None, default: int, n: int) -> int:
    """The row to explain: the user's override (negative counts from the end) or the default."""
    if query_index is None:
        return default
    if not isinstance(query_index, (int, np.integer)) or isinstance(query_index, bool):
        raise InputError(f"query_index must be an int, got {type(query_index).__name__}.")
    if not -n <= query_index < n:
        raise InputError(f"query_index={query_index} out of range for {n} tokens.")
    return int(query_index) % n
