"""Words ↔ tokens: which of an item's words each model token belongs to.

People mark words; models score tokens. The words are the store's:
``text.split()`` (any run of whitespace separates two words), so a word may
hold punctuation ("film,") and a token may be part of a word ("##ing",
"Ġcab", "▁ke"). The rule, in full:

1. Each word's character span ``[start, end)`` in the text: the maximal runs
   of non-whitespace characters (``re`` ``\\S+``, which uses the same
   whitespace test as ``str.split()``: the two always give the same words).
2. Each token's character span: the tokenizer's own offsets
   (``return_offsets_mapping=True``, which every fast tokenizer gives:
   WordPiece, byte-level BPE, SentencePiece/Unigram). They index the
   original text even when the tokenizer lowercases, strips accents or
   marks spaces (``Ġ``, ``▁``).
3. A token belongs to the word its span overlaps (shares at least one
   character with). A span that overlaps two words (a tokenizer that merges
   across a space) goes to the word it shares most characters with, the
   first on a tie. A token belongs to NO word (``-1``) when it is a special
   token ([CLS], </s>, ...: sequence id None), when it comes from
   ``text_pair`` (spans index ``text`` only), or when its span overlaps no
   word: an empty span, or only whitespace (a lone ``Ġ`` or ``▁`` piece).
4. A word's score is the SUM of its tokens' scores (a method's scores of
   the pieces of "cabinet" add up to the word's). A word that no token
   belongs to (cut off by truncation) scores NaN: the model did not see it.

:func:`align` applies it to a tokenizer and a text; :func:`token_words`
is the pure rule on given offsets.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.errors import InputError

_WORD = re.compile(r"\S+")

Span = tuple[int, int]


def word_spans(text: str) -> list[Span]:
    """Character spans ``(start, end)`` of ``text.split()``'s words, in order."""
    return [match.span() for match in _WORD.finditer(text)]


def token_words(
    offsets: Sequence[Sequence[int]],
    words: Sequence[Span],
    sequence_ids: Sequence[int | None] | None = None,
) -> np.ndarray:
    """The word index of each token (``-1``: none), by rule 3 of the module docs.

    Args:
        offsets: each token's character span ``(start, end)`` in the text.
        words: the words' character spans, sorted (:func:`word_spans`).
        sequence_ids: per token, 0 for a token of the text, 1 for one of
            ``text_pair``, None for a special token (None: every token is
            the text's).
    """
    if sequence_ids is not None and len(sequence_ids) != len(offsets):
        raise ValueError(f"{len(sequence_ids)} sequence ids for {len(offsets)} tokens")
    ends = [end for _, end in words]
    out = np.full(len(offsets), -1, dtype=np.int64)
    for k, pair in enumerate(offsets):
        if sequence_ids is not None and sequence_ids[k] != 0:
            continue
        start, end = int(pair[0]), int(pair[1])
        best, most = -1, 0
        # Words ending after the token starts, while they start before it ends.
        w = bisect.bisect_right(ends, start)
        while w < len(words) and words[w][0] < end:
            shared = min(end, words[w][1]) - max(start, words[w][0])
            if shared > most:
                best, most = w, shared
            w += 1
        out[k] = best
    return out


@dataclass(frozen=True)
class Alignment:
    """Which word each token of one tokenised text belongs to."""

    words: tuple[str, ...]
    """The text's words (``text.split()``)."""
    word_spans: tuple[Span, ...]
    """Each word's character span in the text."""
    tokens: tuple[str, ...]
    """The tokenizer's token strings (with its markers: ``##``, ``Ġ``, ``▁``)."""
    token_words: np.ndarray
    """int64, one per token: the index of its word, or -1 for none."""

    def tokens_of(self, word: int) -> list[int]:
        """Indices of the tokens that belong to word ``word``."""
        return [int(k) for k in np.flatnonzero(self.token_words == word)]

    def word_scores(self, token_scores: Any) -> np.ndarray:
        """Per-word sums of per-token scores: ``(..., n_tokens)`` -> ``(..., n_words)``.

        float64; a word no token belongs to is NaN (rule 4 of the module docs).
        """
        scores = np.asarray(token_scores, dtype=np.float64)
        n = len(self.token_words)
        if scores.shape[-1:] != (n,):
            raise ValueError(
                f"token scores have shape {scores.shape}; the last axis must be the {n} tokens"
            )
        keep = self.token_words >= 0
        out = np.zeros((*scores.shape[:-1], len(self.words)), dtype=np.float64)
        # numpy's stubs type ufunc.at's indices without tuples (an Ellipsis and an array)
        np.add.at(out, (..., self.token_words[keep]), scores[..., keep])  # type: ignore[arg-type]
        counts = np.bincount(self.token_words[keep], minlength=len(self.words))
        out[..., counts == 0] = np.nan
        return out


def align(
    tokenizer: Any,
    text: str,
    text_pair: str | None = None,
    *,
    input_ids: Sequence[int] | np.ndarray | None = None,
) -> Alignment:
    """Tokenise ``text`` (and ``text_pair``) as a model would and map tokens to words.

    ``input_ids``: the token ids the scores belong to (an
    :class:`~attnwidget.Explanation`'s ``input_ids``). When given, the
    tokenisation must give exactly these ids: the full text's, or the
    truncated text's when they are fewer (``explain(..., truncation=True)``);
    otherwise :class:`InputError` (the scores would go to the wrong words).
    """
    encoding = _encode(tokenizer, text, text_pair, None)
    if input_ids is not None:
        wanted = [int(i) for i in input_ids]
        if list(encoding["input_ids"]) != wanted and len(wanted) < len(encoding["input_ids"]):
            encoding = _encode(tokenizer, text, text_pair, len(wanted))
        if list(encoding["input_ids"]) != wanted:
            raise InputError(
                f"the tokenizer gives {len(encoding['input_ids'])} tokens for this text but the "
                f"scores are for {len(wanted)} other ones: pass the tokenizer the model was "
                "explained with (the same one given to attnwidget.explain)"
            )
    try:
        sequence_ids = list(encoding.sequence_ids(0))
    except (AttributeError, ValueError, TypeError):
        if text_pair is not None:
            raise InputError(
                "this tokenizer does not say which tokens come from text and which from "
                "text_pair (no sequence_ids()); use a fast tokenizer (use_fast=True)"
            ) from None
        special = encoding.get("special_tokens_mask") or [0] * len(encoding["input_ids"])
        sequence_ids = [None if s else 0 for s in special]
    spans = word_spans(text)
    mapping = token_words(encoding["offset_mapping"], spans, sequence_ids)
    tokens = tuple(str(t) for t in tokenizer.convert_ids_to_tokens(list(encoding["input_ids"])))
    return Alignment(tuple(text[s:e] for s, e in spans), tuple(spans), tokens, mapping)


def _encode(tokenizer: Any, text: str, text_pair: str | None, max_length: int | None) -> Any:
    options: dict[str, Any] = {"add_special_tokens": True, "return_offsets_mapping": True}
    options["return_special_tokens_mask"] = True
    if max_length is None:
        options["truncation"] = False
    else:
        options.update(truncation=True, max_length=max_length)
    try:
        return tokenizer(text, text_pair, **options)
    except NotImplementedError:
        raise InputError(
            f"{type(tokenizer).__name__} gives no character offsets, which map tokens to "
            "words: load the fast tokenizer instead, "
            "AutoTokenizer.from_pretrained(name, use_fast=True)"
        ) from None
