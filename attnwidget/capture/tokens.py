"""Tokenisation for capture: encoding with length checks, readable token text."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from attnwidget.errors import InputError, TruncationWarning

# Markers tokenizers put on token strings: WordPiece continuation, byte-level
# BPE space (GPT-2, RoBERTa), SentencePiece space (T5, Llama), newline.
_SPACE_MARKERS = ("Ġ", "▁")
_SYMBOL_FOR = {"Ċ": "⏎", "\n": "⏎", "\t": "⇥", "ĉ": "⇥"}


def unknown_token(token_id: int | None) -> str:
    """The label of an id the tokenizer has no text for: ``<id 50300>``.

    Models often pad their embedding matrix beyond the tokenizer's vocabulary
    (a multiple of 64 or 128 rows, e.g. Phi-3 and GPT-NeoX configs); those
    ids can be predicted but ``convert_ids_to_tokens`` returns None for them.
    """
    return "<unknown>" if token_id is None else f"<id {int(token_id)}>"


def token_text(tokenizer: Any, token_id: int) -> str | None:
    """``convert_ids_to_tokens(token_id)``, or None when the tokenizer has no such id."""
    try:
        raw = tokenizer.convert_ids_to_tokens(int(token_id))
    except (IndexError, KeyError, ValueError, OverflowError, TypeError):
        return None  # slow tokenizers raise for ids past their vocabulary
    return raw if isinstance(raw, str) else None


def token_label(token_id: int, tokenizer: Any) -> str:
    """A readable label for one token id, also for ids past the tokenizer's vocabulary."""
    raw = token_text(tokenizer, token_id)
    special = int(token_id) in (getattr(tokenizer, "all_special_ids", None) or [])
    return readable_token(raw, tokenizer, special=special, token_id=token_id)


def readable_token(
    raw: str | None, tokenizer: Any, *, special: bool, token_id: int | None = None
) -> str:
    """Token text without tokenizer markup: ``Ġdog`` -> ``dog``, ``##ing`` -> ``ing``.

    Special tokens keep their form (``[CLS]``, ``</s>``). A token that is
    only whitespace is shown as a visible symbol rather than as nothing. A
    token the tokenizer has no text for (``raw`` None: an id in a padded
    vocabulary) is shown as ``<id N>`` (:func:`unknown_token`).
    """
    if raw is None:
        return unknown_token(token_id)
    if special:
        return raw
    if raw in _SYMBOL_FOR:
        return _SYMBOL_FOR[raw]
    text = raw
    if text.startswith("##"):
        text = text[2:]
    elif text.startswith(_SPACE_MARKERS):
        text = text[1:]
        if not text:
            return "␣"
    try:
        # Byte-level tokens (e.g. "Ã©") decode to the character they spell.
        decoded = tokenizer.convert_tokens_to_string([raw])
    except Exception:
        decoded = text
    decoded = decoded.strip()
    if decoded and "##" not in decoded and "\ufffd" not in decoded:
        text = decoded
    return text if text.strip() else "␣"


def max_length(model: Any, tokenizer: Any) -> int | None:
    """The longest input the model accepts (position embeddings), if known."""
    config = getattr(model, "config", None)
    limits = []
    for attr in ("max_position_embeddings", "n_positions", "n_ctx"):
        value = getattr(config, attr, None)
        if isinstance(value, int) and value > 0:
            limits.append(value)
            break
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < 1_000_000:
        limits.append(tokenizer_limit)
    if not limits:
        return None
    limit = min(limits)
    # RoBERTa-style models (XLM-R, CamemBERT, renamed copies) count positions
    # from padding_idx + 1, so they reserve padding_idx + 1 rows.
    reserved = _reserved_positions(model)
    if reserved is None and getattr(config, "model_type", "") in _ROBERTA_TYPES:
        reserved = (getattr(config, "pad_token_id", 1) or 1) + 1
    if reserved:
        limit = min(limit, getattr(config, "max_position_embeddings", limit) - reserved)
    return limit


_ROBERTA_TYPES = {"roberta", "xlm-roberta", "camembert"}


def _reserved_positions(model: Any) -> int | None:
    """``padding_idx + 1`` of a learned position table with a padding row, else None."""
    named = getattr(model, "named_modules", None)
    if not callable(named):
        return None
    for name, module in named():
        padding = getattr(module, "padding_idx", None)
        if name.endswith("position_embeddings") and isinstance(padding, int):
            return padding + 1
    return None


def encode(
    tokenizer: Any,
    text: str,
    *,
    text_pair: str | None,
    limit: int | None,
    truncation: bool,
) -> dict[str, Any]:
    """Tokenise one input, enforcing the model's maximum length.

    Returns the tokenizer's encoding (lists, batch size 1 squeezed away).
    Raises :class:`InputError` for empty text and for text that is too long
    unless ``truncation=True``, in which case it warns and truncates.
    """
    if not isinstance(text, str):
        raise InputError(
            f"text must be a string (or a list of strings), got {type(text).__name__}."
        )
    if not text.strip():
        raise InputError("text is empty; pass at least one word to explain.")
    if text_pair is not None and (not isinstance(text_pair, str) or not text_pair.strip()):
        raise InputError("text_pair is empty; pass the second sentence or leave it as None.")
    encoding = tokenizer(text, text_pair, add_special_tokens=True, truncation=False)
    length = len(encoding["input_ids"])
    if limit is not None and length > limit:
        if not truncation:
            raise InputError(
                f"text is {length} tokens long but the model accepts at most {limit}; "
                "shorten it or pass truncation=True to keep the first tokens."
            )
        warnings.warn(
            f"text truncated from {length} to {limit} tokens (the model's maximum length).",
            TruncationWarning,
            stacklevel=4,
        )
        encoding = tokenizer(
            text, text_pair, add_special_tokens=True, truncation=True, max_length=limit
        )
    return encoding


def second_segment_start(encoding: Any) -> int | None:
    """Index of the first token of the second sentence of a pair, else None."""
    sequence_ids = None
    if hasattr(encoding, "sequence_ids"):
        try:
            sequence_ids = encoding.sequence_ids(0)
        except (ValueError, IndexError, TypeError):
            sequence_ids = None
    if sequence_ids is not None:
        for index, sequence in enumerate(sequence_ids):
            if sequence == 1:
                return index
        return None
    type_ids = encoding.get("token_type_ids")
    if type_ids and 1 in type_ids:
        return list(type_ids).index(1)
    return None


def token_strings(
    tokenizer: Any, ids: Sequence[int], readable: bool = True
) -> tuple[list[str], list[str], np.ndarray]:
    """``(raw tokens, shown tokens, special mask)`` of one input's ids, as every
    capture writes them (shown: :func:`readable_token` unless ``readable`` is False)."""
    raw = list(tokenizer.convert_ids_to_tokens(list(ids)))
    special = np.array(
        tokenizer.get_special_tokens_mask(list(ids), already_has_special_tokens=True), dtype=bool
    )
    shown = (
        [readable_token(t, tokenizer, special=s) for t, s in zip(raw, special, strict=True)]
        if readable
        else list(raw)
    )
    return raw, shown, special
