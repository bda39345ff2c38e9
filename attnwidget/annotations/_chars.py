"""Character spans: what the store keeps of every annotation, and the words they cover.

Every annotation is kept as character spans ``(start, end)`` into its item's
text (``end`` exclusive, sorted, not touching) as well as word spans (indices
into ``text.split()``). The two are tied by these rules:

* words -> characters: word span ``(s, e)`` covers the characters from the
  first character of word ``s`` to the last of word ``e - 1``, the spaces
  between them included (a word's characters are a maximal run of
  non-whitespace: ``re`` ``\\S+``, the words ``str.split()`` gives);
* characters -> words (the rule :meth:`Store.rationale` and ERASER export
  use): a word is in when a character span overlaps it, i.e. shares at least
  one character with it. A span that marks part of a word ("gre" of "great")
  rounds out to the whole word; a span over several words gives one word
  span; two character spans inside one word give that word once.

Character spans given directly (``save(..., char_spans=...)``) are checked
here: integers, ``0 <= start < end <= len(text)``, a span of whitespace
only is refused; overlapping or touching spans are merged (a set of marked
characters has one such form), then whitespace at either end of each merged
span is dropped (it marks nothing).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attnwidget.annotations.validate import Span, span_bound
from attnwidget.errors import InputError

if TYPE_CHECKING:
    import numpy as np

_WORD = re.compile(r"\S+")


def word_offsets(text: str) -> list[Span]:
    """Character spans of ``text.split()``'s words, in order."""
    return [match.span() for match in _WORD.finditer(text)]


def chars_from_words(spans: Iterable[Span], offsets: Sequence[Span]) -> tuple[Span, ...]:
    """Word spans as character spans (checked word spans in, sorted and apart out)."""
    return tuple((offsets[start][0], offsets[end - 1][1]) for start, end in spans)


def words_from_chars(spans: Iterable[Span], offsets: Sequence[Span]) -> tuple[Span, ...]:
    """The word spans of the words that character ``spans`` overlap (module rule)."""
    ends = [end for _, end in offsets]
    starts = [start for start, _ in offsets]
    out: list[Span] = []
    for start, end in spans:
        first = bisect.bisect_right(ends, start)  # first word ending after ``start``
        last = bisect.bisect_left(starts, end)  # words from here on start at or after ``end``
        if first >= last:
            continue  # only whitespace: cannot happen for checked spans
        if out and first < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return tuple(out)


def merge(spans: Iterable[Span]) -> tuple[Span, ...]:
    """Sorted spans with overlapping and touching ones merged."""
    out: list[Span] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return tuple(out)


def check_char_spans(value: Any, text: str, where: str) -> tuple[Span, ...]:
    """Checked character spans of ``text``: trimmed, sorted, merged (module rules)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InputError(
            f"{where}: char_spans is a {type(value).__name__}; pass a list of (start, end) "
            "character offsets, e.g. char_spans=[(0, 5)]"
        )
    pairs = list(value)
    if len(pairs) == 2 and not any(isinstance(p, Iterable) for p in pairs):
        raise InputError(
            f"{where}: char_spans={pairs!r} looks like one (start, end) pair; "
            f"pass a list of pairs: char_spans=[({pairs[0]!r}, {pairs[1]!r})]"
        )
    out: list[Span] = []
    for number, pair in enumerate(pairs):
        parts = (
            [] if isinstance(pair, (str, bytes)) or not isinstance(pair, Iterable) else list(pair)
        )
        if len(parts) != 2:
            raise InputError(f"{where}: char span {number} is {pair!r}; each is (start, end)")
        start = span_bound(parts[0], f"char span {number} start", where, unit="char")
        end = span_bound(parts[1], f"char span {number} end", where, unit="char")
        if not 0 <= start < end <= len(text):
            raise InputError(
                f"{where}: char span {number} ({start}, {end}) is not inside the text: it has "
                f"{len(text)} characters, so 0 <= start < end <= {len(text)} (end exclusive)"
            )
        piece = text[start:end]
        if not piece.strip():
            raise InputError(
                f"{where}: char span {number} ({start}, {end}) holds only whitespace "
                f"({piece!r}); mark at least one visible character"
            )
        out.append((start, end))
    trimmed = []
    for start, end in merge(out):  # the marked characters first, then their ends trimmed
        piece = text[start:end]
        trimmed.append(
            (start + len(piece) - len(piece.lstrip()), end - len(piece) + len(piece.rstrip()))
        )
    return tuple(trimmed)


def char_vector(spans: Iterable[Span], n_chars: int) -> np.ndarray:
    """A 0/1 ``uint8`` array over the text's characters: 1 inside ``spans``."""
    import numpy as np

    vector = np.zeros(n_chars, dtype=np.uint8)
    for start, end in spans:
        vector[start:end] = 1
    return vector


def spans_of(mask: Sequence[bool] | Any) -> tuple[Span, ...]:
    """The runs of true values of a 0/1 sequence, as ``(start, end)`` spans."""
    out: list[Span] = []
    start = None
    for position, on in enumerate([*list(mask), False]):
        if on and start is None:
            start = position
        elif not on and start is not None:
            out.append((start, position))
            start = None
    return tuple(out)
