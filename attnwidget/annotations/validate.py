"""Checks on what callers hand to :class:`~attnwidget.annotations.Store`.

Every function here either returns a normalised value or raises
:class:`~attnwidget.errors.InputError` with a message that names the problem
and the fix. Nothing here touches the database, so a refused input can never
leave a half-written row behind.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from attnwidget.errors import InputError

Span = tuple[int, int]


@dataclass(frozen=True)
class Item:
    """One text to annotate.

    ``words`` is ``text.split()`` (any run of whitespace separates words);
    spans are ``(start, end)`` indices into it, ``end`` exclusive. A
    ``text_pair`` (the second text of a pair task, or an ERASER query) is kept
    for display and for the model, but spans index ``text`` only.
    """

    id: str
    text: str
    label: str | None = None
    text_pair: str | None = None

    @functools.cached_property
    def words(self) -> tuple[str, ...]:
        """``text.split()``: what spans index (computed once, on first use)."""
        return tuple(self.text.split())


def encodable(text: str, what: str, where: str) -> str:
    """``text`` if UTF-8 can encode it (SQLite stores UTF-8); a lone surrogate
    (``"\\ud800"``, e.g. from ``surrogateescape`` decoding) is refused here, with
    the place and the fix, instead of a raw ``UnicodeEncodeError`` from SQLite."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InputError(
            f"{where}: {what} has a lone surrogate {text[error.start]!r} at position "
            f"{error.start}, which UTF-8 cannot store; fix the text at its source, e.g. "
            "decode the file with errors='replace' or apply "
            "text.encode('utf-8', errors='replace').decode('utf-8')"
        ) from None
    return text


def item_id(value: Any) -> str:
    """An item id as stored: a non-empty string (an ``int`` is written in decimal)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(
            f"item id {value!r} is a {type(value).__name__}: pass a string (or an int) id"
        )
    text = str(value)
    if not text:
        raise InputError("item id is an empty string: give every item a non-empty id")
    return encodable(text, "the item id", f"item id {text!r}")


def _optional_text(value: Any, what: str, where: str) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None  # pandas writes a missing value as NaN
    if not isinstance(value, str):
        raise InputError(
            f"{where}: {what} {value!r} is a {type(value).__name__}; pass a string or None"
            + (
                " (map class indices to names first, e.g. features['label'].int2str)"
                if what == "label"
                else ""
            )
        )
    return encodable(value, what, where)


def coerce_item(value: Any, position: int) -> Item:
    """One item from an :class:`Item` or a mapping with ``id``, ``text`` and optionally
    ``label`` and ``text_pair`` (other keys, e.g. a data set's extra columns, are ignored)."""
    if isinstance(value, Item):
        if _sound(value):
            return value  # frozen: the same object (its words stay computed)
        raw: Mapping[str, Any] = {
            "id": value.id,
            "text": value.text,
            "label": value.label,
            "text_pair": value.text_pair,
        }
    elif isinstance(value, Mapping):
        raw = value
    else:
        raise InputError(
            f"item {position} is a {type(value).__name__}: pass Item objects or mappings "
            "such as {'id': 'a1', 'text': 'the words to mark', 'label': None}"
        )
    if "id" not in raw or "text" not in raw:
        missing = [key for key in ("id", "text") if key not in raw]
        raise InputError(
            f"item {position} has no {' and no '.join(map(repr, missing))} key "
            f"(keys given: {sorted(map(str, raw))}); every item needs 'id' and 'text'"
        )
    ident = item_id(raw["id"])
    text = raw["text"]
    if not isinstance(text, str):
        raise InputError(f"item {ident!r}: text is a {type(text).__name__}; pass a string")
    if not text or text.isspace():  # the same test as ``not text.split()``, without the list
        raise InputError(f"item {ident!r}: text has no words; give it some text to annotate")
    label, pair = raw.get("label"), raw.get("text_pair")
    if label is None and pair is None:  # the common case: no message built unless refused
        return Item(ident, encodable(text, "text", f"item {ident!r}"))
    where = f"item {ident!r}"
    return Item(
        ident,
        encodable(text, "text", where),
        _optional_text(label, "label", where),
        _optional_text(pair, "text_pair", where),
    )


def _sound(item: Item) -> bool:
    """Whether an Item passes every check of :func:`coerce_item` as it is (fast path:
    no message is built; any doubt goes the long way, which says what is wrong)."""
    ident, text, label, pair = item.id, item.text, item.label, item.text_pair
    if type(ident) is not str or type(text) is not str or not ident or text.isspace():
        return False
    if not text or (label is not None and type(label) is not str):
        return False
    if pair is not None and type(pair) is not str:
        return False
    try:
        for value in (ident, text, label or "", pair or ""):
            value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def coerce_items(items: Any) -> list[Item]:
    """A list of items from an iterable of items/mappings or a pandas DataFrame."""
    if hasattr(items, "columns") and hasattr(items, "to_dict"):
        items = items.to_dict("records")  # a DataFrame iterates over its column names
    if isinstance(items, (str, bytes, Mapping, Item)) or not isinstance(items, Iterable):
        raise InputError(
            f"add_items() takes a list of items, got a {type(items).__name__}: "
            "wrap a single item in a list"
        )
    return [coerce_item(value, position) for position, value in enumerate(items)]


def annotator(value: Any) -> str:
    """An annotator name: a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            f"annotator {value!r} is not a name: pass a non-empty string, e.g. annotator='ana'"
        )
    return encodable(value, "the annotator name", f"annotator {value!r}")


#: unit -> (the keyword, what its bounds are, an example) for span_bound's messages.
_BOUNDS = {
    "word": ("spans", "word indices", "word indices such as (3, 5)"),
    "char": ("char_spans", "offsets", "character offsets such as (0, 5)"),
}


def span_bound(value: Any, what: str, where: str, *, unit: str = "word") -> int:
    """One end of a span, an int (not a bool); ``unit`` ("word" or "char") names
    the kind of span in the message."""
    field, noun, example = _BOUNDS[unit]
    if isinstance(value, bool):
        raise InputError(f"{where}: {what} is {value!r}, a bool; {field} hold {noun} (ints)")
    try:
        return operator.index(value)
    except TypeError:
        raise InputError(
            f"{where}: {what} {value!r} is a {type(value).__name__}, not an integer; "
            f"{field} are (start, end) {example}"
        ) from None


def spans(value: Any, n_words: int, where: str) -> tuple[Span, ...]:
    """Sorted ``(start, end)`` pairs with ``0 <= start < end <= n_words``, none overlapping.

    Touching spans such as ``(1, 3), (3, 4)`` are kept apart (they do not
    overlap). An empty list is allowed: the annotator marked no words.
    """
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InputError(
            f"{where}: spans is a {type(value).__name__}; pass a list of (start, end) "
            "word-index pairs, e.g. spans=[(3, 5)]"
        )
    pairs = list(value)
    if len(pairs) == 2 and not any(isinstance(p, Iterable) for p in pairs):
        raise InputError(
            f"{where}: spans={pairs!r} looks like one (start, end) pair; "
            f"pass a list of pairs: spans=[({pairs[0]!r}, {pairs[1]!r})]"
        )
    out: list[Span] = []
    for number, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Iterable):
            raise InputError(f"{where}: span {number} is {pair!r}; each span is (start, end)")
        parts = list(pair)
        if len(parts) != 2:
            raise InputError(
                f"{where}: span {number} is {pair!r} with {len(parts)} values; "
                "each span is a pair (start, end)"
            )
        start = span_bound(parts[0], f"span {number} start", where)
        end = span_bound(parts[1], f"span {number} end", where)
        if end <= start:
            raise InputError(
                f"{where}: span {number} is ({start}, {end}) with end <= start; end is "
                f"exclusive, so one word at index {start} is ({start}, {start + 1})"
            )
        if start < 0 or end > n_words:
            raise InputError(
                f"{where}: span {number} ({start}, {end}) is out of range: the text has "
                f"{n_words} words, so 0 <= start < end <= {n_words}"
            )
        out.append((start, end))
    out.sort()
    for (s0, e0), (s1, e1) in itertools.pairwise(out):
        if s1 < e0:
            raise InputError(
                f"{where}: spans ({s0}, {e0}) and ({s1}, {e1}) overlap; merge them into "
                f"({s0}, {max(e0, e1)}) or pass them without shared words"
            )
    return tuple(out)


def label(value: Any, labels: Sequence[str] | None, where: str) -> str | None:
    """A label: None, or a string that is one of the store's ``labels`` when it has some."""
    text = _optional_text(value, "label", where)
    if text is not None and labels is not None and text not in labels:
        raise InputError(
            f"{where}: label {text!r} is not one of this store's labels {list(labels)}; "
            "pick one of them (or label=None)"
        )
    return text


def note(value: Any, where: str) -> str | None:
    """A free-text note or None."""
    if value is not None and not isinstance(value, str):
        raise InputError(f"{where}: note is a {type(value).__name__}; pass a string or None")
    return None if value is None else encodable(value, "note", where)


def confidence(value: Any, where: str) -> float | None:
    """None or a finite number in [0, 1]."""
    if value is None:
        return None
    try:
        if isinstance(value, (bool, str, bytes)):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(
            f"{where}: confidence {value!r} is not a number; pass a float in [0, 1] or None"
        ) from None
    if not 0.0 <= number <= 1.0:  # also refuses NaN
        raise InputError(
            f"{where}: confidence {number!r} is outside [0, 1]; pass e.g. 0.8 for 80 %"
        )
    return number


GRANULARITIES = ("word", "token", "char")
"""What an annotator marked: whole words, model tokens, or characters."""


def optional_name(value: Any, what: str, where: str) -> str | None:
    """None or a non-empty string (a guidelines version, a method name)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            f"{where}: {what}={value!r}; pass a non-empty string (e.g. a version or a hash) or None"
        )
    return encodable(value, what, where)


def seconds(value: Any, where: str) -> float | None:
    """None or a finite number of seconds >= 0 (time spent on an item)."""
    if value is None:
        return None
    try:
        if isinstance(value, (bool, str, bytes)):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(
            f"{where}: seconds={value!r} is not a number; pass the time spent in seconds "
            "(e.g. 12.5) or None"
        ) from None
    if not 0.0 <= number < math.inf:  # also refuses NaN
        raise InputError(f"{where}: seconds={number!r}; pass a finite number >= 0 or None")
    return number


def granularity(value: Any, where: str) -> str | None:
    """None (the default for the marks given) or one of :data:`GRANULARITIES`."""
    if value is None or value in GRANULARITIES:
        return value
    raise InputError(f"{where}: granularity={value!r}; pass one of {list(GRANULARITIES)}")


def flag(value: Any, name: str) -> bool:
    """A True/False option (``name`` for the message)."""
    if not isinstance(value, bool):
        raise InputError(f"{name}={value!r}: pass True or False")
    return value


def labels_option(value: Any) -> list[str] | None:
    """The ``labels=`` option of :class:`Store`: None or distinct non-empty strings."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InputError(
            f"labels={value!r}: pass a list of label names, e.g. labels=['pos', 'neg']"
        )
    names = list(value)
    bad = [name for name in names if not isinstance(name, str) or not name]
    if bad:
        raise InputError(f"labels: {bad!r} are not non-empty strings; labels are names")
    if not names:
        raise InputError("labels=[] allows no label at all: pass labels=None for free labels")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(f"labels: {repeated} appear more than once; list each label once")
    return names
