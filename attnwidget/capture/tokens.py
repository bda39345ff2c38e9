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


class LengthLimit(int):
    """The longest input (an int), with what sets it, for the messages that cite it.

    ``source`` is ``"model"`` (its position embeddings, ``field`` the config
    field), ``"tokenizer"`` (its ``model_max_length``, below the model's
    ``positions``) or ``"reserved"`` (RoBERTa-style positions less the rows
    kept for padding). An int, so every caller comparing lengths reads it as one.
    """

    source: str
    field: str
    positions: int | None

    def __new__(cls, value: int, source: str, field: str, positions: int | None) -> LengthLimit:
        limit = super().__new__(cls, value)
        limit.source, limit.field, limit.positions = source, field, positions
        return limit

    def fix(self) -> str:
        """What sets the limit and how to live with it, for a "too long" message."""
        if self.source == "tokenizer":
            raise_it = (
                f"raise it with tokenizer.model_max_length = {self.positions}, "
                if self.positions
                else ""
            )
            return (
                f"the tokenizer's model_max_length is {int(self)} (the model's position "
                f"embeddings allow {self.positions or 'more'}); {raise_it}shorten the text"
            )
        if self.source == "reserved":
            return (
                f"the model accepts at most {int(self)} tokens (its "
                f"config.{self.field} is {self.positions}, less "
                f"{(self.positions or 0) - int(self)} positions RoBERTa-style models reserve "
                "for padding); shorten the text"
            )
        return (
            f"the model accepts at most {int(self)} tokens (its config.{self.field}: it has "
            "no position embeddings past that); shorten the text"
        )


def max_length(model: Any, tokenizer: Any) -> LengthLimit | None:
    """The longest input the model accepts (position embeddings), if known.

    The tokenizer's ``model_max_length`` counts when it is lower: a checkpoint
    may ship a tokenizer capped below its model, and the model was trained to it.
    """
    config = getattr(model, "config", None)
    positions, field = None, ""
    for attr in ("max_position_embeddings", "n_positions", "n_ctx"):
        value = getattr(config, attr, None)
        if isinstance(value, int) and value > 0:
            positions, field = value, attr
            break
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if not (isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < 1_000_000):
        tokenizer_limit = None  # transformers' "no limit" is a huge sentinel
    model_limit = None if positions is None else LengthLimit(positions, "model", field, positions)
    # RoBERTa-style models (XLM-R, CamemBERT, renamed copies) count positions
    # from padding_idx + 1, so they reserve padding_idx + 1 rows.
    reserved = _reserved_positions(model)
    if reserved is None and getattr(config, "model_type", "") in _ROBERTA_TYPES:
        reserved = (getattr(config, "pad_token_id", 1) or 1) + 1
    table = getattr(config, "max_position_embeddings", None)
    if reserved and isinstance(table, int) and (positions is None or table - reserved < positions):
        model_limit = LengthLimit(table - reserved, "reserved", "max_position_embeddings", table)
    if tokenizer_limit is not None and (model_limit is None or tokenizer_limit < model_limit):
        allowed = None if model_limit is None else int(model_limit)
        return LengthLimit(tokenizer_limit, "tokenizer", field, allowed)
    return model_limit


def vocabulary_size(model: Any) -> int | None:
    """Rows of the model's input embedding (the ids it can read), if known."""
    get = getattr(model, "get_input_embeddings", None)
    embedding = get() if callable(get) else None
    rows = getattr(embedding, "num_embeddings", None)
    if not isinstance(rows, int):
        rows = getattr(getattr(model, "config", None), "vocab_size", None)
    return rows if isinstance(rows, int) and rows > 0 else None


def check_vocabulary(model: Any, tokenizer: Any, ids: Sequence[int]) -> None:
    """Refuse ids past the model's embedding: the tokenizer belongs to another model.

    Checked before the model runs; the embedding lookup would otherwise fail
    with torch's bare ``IndexError: index out of range in self``. A tokenizer
    smaller than the embedding is fine (models pad their vocabulary).
    """
    rows = vocabulary_size(model)
    if rows is None or not ids or max(ids) < rows:
        return
    config = getattr(model, "config", None)
    name = getattr(config, "name_or_path", "") or getattr(config, "_name_or_path", "")
    where = repr(name) if name else "the model's name or folder"
    size = len(tokenizer) if hasattr(tokenizer, "__len__") else "?"
    raise InputError(
        f"the tokenizer gave token id {max(ids)}, but {type(model).__name__}'s input "
        f"embedding has {rows} rows (ids 0 … {rows - 1}): the tokenizer "
        f"({type(tokenizer).__name__}, a vocabulary of {size} tokens) does not belong to this "
        f"model (a vocabulary of {rows}). Pass the tokenizer saved with the model, e.g. "
        f"AutoTokenizer.from_pretrained({where})."
    )


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
    if text_pair is not None and not isinstance(text_pair, str):
        raise InputError(
            f"text_pair is {describe_value(text_pair)}; pass the second sentence as a string "
            "(or a list of them, one per text), or leave it as None."
        )
    if text_pair is not None and not text_pair.strip():
        raise InputError("text_pair is empty; pass the second sentence or leave it as None.")
    encoding = tokenizer(text, text_pair, add_special_tokens=True, truncation=False)
    length = len(encoding["input_ids"])
    if limit is not None and length > limit:
        if not truncation:
            raise InputError(
                f"text is {length} tokens long but {_limit_fix(limit)}, or pass "
                "truncation=True to keep the first tokens."
            )
        warnings.warn(
            f"text truncated from {length} to {limit} tokens ({_limit_name(limit)}).",
            TruncationWarning,
            stacklevel=4,
        )
        encoding = tokenizer(
            text, text_pair, add_special_tokens=True, truncation=True, max_length=limit
        )
    return encoding


def _limit_fix(limit: int) -> str:
    return limit.fix() if isinstance(limit, LengthLimit) else f"the model accepts at most {limit}"


def _limit_name(limit: int) -> str:
    if isinstance(limit, LengthLimit) and limit.source == "tokenizer":
        return "the tokenizer's model_max_length"
    return "the model's maximum length"


def describe_value(value: Any) -> str:
    """A value in words for messages: "an int (5)", "a bytes (b'ab')", "a list"."""
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    if isinstance(value, (int, float, bytes, str)) and not isinstance(value, bool):
        shown = repr(value)
        return f"{article} {kind} ({shown[:40] + '…' if len(shown) > 40 else shown})"
    return f"{article} {kind}"


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
