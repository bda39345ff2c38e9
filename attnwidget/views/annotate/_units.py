"""What one mark of the Annotator covers: a word, a model token or a character.

The page shows an item as *units*, one chip each, and ``selection`` holds
``[start, end)`` spans of unit indices. Each unit has a character span in
the item's text (end exclusive, never starting or ending on whitespace):

- ``"word"``: ``text.split()``'s words (the store's words; saved as word
  ``spans``, as before).
- ``"token"``: the tokenizer's tokens of ``text`` (no special tokens, no
  ``text_pair``), from its offsets (a fast tokenizer); a token's edge
  whitespace (a ``Ġ``/``▁`` piece's space) is left out, and a token of
  whitespace only is dropped. Saved as ``char_spans``.
- ``"char"``: every non-whitespace character (for text without spaces).
  Saved as ``char_spans``.

Unit spans become character spans from the first unit's start to the last
unit's end (what lies between, spaces included, is inside); character spans
(a saved annotation, a suggestion) become the units they overlap.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from attnwidget.annotations import Item
from attnwidget.annotations.alignment import word_spans as word_offsets
from attnwidget.errors import InputError

Span = tuple[int, int]


@dataclass(frozen=True)
class Units:
    """An item's units: their texts, character spans and the text between them."""

    texts: list[str]
    offsets: list[Span]
    gaps: list[str] | None
    """The text after each unit, up to the next (None: one space, the word view)."""

    def to_chars(self, spans: Iterable[Sequence[int]]) -> list[Span]:
        """Unit spans as character spans."""
        return [(self.offsets[s][0], self.offsets[e - 1][1]) for s, e in spans if e > s]

    def from_chars(self, spans: Iterable[Sequence[int]]) -> list[list[int]]:
        """The unit spans of the units that character ``spans`` overlap (merged)."""
        starts = [s for s, _ in self.offsets]
        ends = [e for _, e in self.offsets]
        mask = [False] * len(self.offsets)
        for start, end in spans:
            first = bisect.bisect_right(ends, start)
            last = bisect.bisect_left(starts, end)
            for k in range(first, last):
                mask[k] = True
        return runs(mask)


def runs(mask: Sequence[bool]) -> list[list[int]]:
    """The maximal runs of True as ``[start, end)`` spans."""
    out: list[list[int]] = []
    start = -1
    for k, on in enumerate([*mask, False]):
        if on and start < 0:
            start = k
        elif not on and start >= 0:
            out.append([start, k])
            start = -1
    return out


def units_of(item: Item, granularity: str, tokenizer: Any = None) -> Units:
    """The units of ``item`` at ``granularity`` (see the module docs)."""
    text = item.text
    if granularity == "word":
        offsets = word_offsets(text)
        return Units(list(item.words), offsets, None)
    if granularity == "char":
        offsets = [(k, k + 1) for k, c in enumerate(text) if not c.isspace()]
    else:
        offsets = token_offsets(tokenizer, text)
        if not offsets:
            raise InputError(f"item {item.id!r}: the tokenizer gives no token of its text")
    gaps = [text[offsets[k][1] : offsets[k + 1][0]] for k in range(len(offsets) - 1)]
    return Units([text[s:e] for s, e in offsets], offsets, [*gaps, ""])


def token_offsets(tokenizer: Any, text: str) -> list[Span]:
    """The character spans of ``text``'s tokens, trimmed of whitespace, in order."""
    try:
        encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        mapping = encoding["offset_mapping"]
    except (NotImplementedError, KeyError, TypeError):
        raise InputError(
            f"granularity='token' needs each token's place in the text, which "
            f"{type(tokenizer).__name__} does not give: load the fast tokenizer, "
            "AutoTokenizer.from_pretrained(name, use_fast=True)"
        ) from None
    out: list[Span] = []
    for start, end in mapping:
        start = max(int(start), out[-1][1] if out else 0)
        end = int(end)
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            out.append((start, end))
    return out


def unit_words(units: Units, text: str) -> list[int]:
    """For each unit, the index of the word (``text.split()``) it starts in."""
    starts = [s for s, _ in word_offsets(text)]
    return [max(0, bisect.bisect_right(starts, s) - 1) for s, _ in units.offsets]
