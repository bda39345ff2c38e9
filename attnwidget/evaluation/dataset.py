"""What :func:`attnwidget.evaluate` reads: examples from many containers, and the
human rationales that go with them (as 0/1 vectors over the model's tokens).

Examples come from a list of texts (ids ``"0"``, ``"1"``, …), a list of
mappings, a pandas DataFrame, a Hugging Face ``datasets.Dataset`` or an
annotation :class:`~attnwidget.annotations.Store` (its items). Mappings, rows
and records are read by the column names ``id``, ``text``, ``label`` and
``text_pair`` (``columns=`` renames them, e.g. ``{"text": "sentence"}``);
only ``text`` is required.

Rationales are word vectors (one 0/1 per word of ``text.split()``, as the
annotation store keeps them) or token vectors (one per model token, special
tokens included); words are mapped to the tokens whose characters they
overlap (a fast tokenizer's offsets).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.errors import InputError

COLUMNS = ("id", "text", "label", "text_pair")
UNITS = ("words", "tokens")


@dataclass(frozen=True)
class Example:
    """One example: its place in the data, id, text, label and second segment."""

    position: int
    id: str
    text: str
    label: Any = None
    text_pair: str | None = None


def _plain(value: Any) -> Any:
    """numpy scalars (a DataFrame's or Dataset's labels) as Python values; NaN as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def _rows(data: Any) -> list[Any]:
    if isinstance(data, (str, bytes)):
        raise InputError("data is one string; pass a list of texts, e.g. [text].")
    if hasattr(data, "items") and hasattr(data, "rationale") and callable(data.items):
        return list(data.items())  # an annotation Store
    if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "to_dict"):
        return list(data.to_dict("records"))
    if hasattr(data, "column_names") and hasattr(data, "features"):
        return [dict(row) for row in data]  # a datasets.Dataset
    if isinstance(data, Mapping) or not isinstance(data, Sequence):
        raise InputError(
            "data must be a list of texts, a list of dicts (id, text, label), a pandas "
            f"DataFrame, a datasets.Dataset or an annotation Store; got {type(data).__name__}."
        )
    return list(data)


def as_examples(data: Any, columns: Mapping[str, str] | None = None) -> list[Example]:
    """The examples of ``data`` (see the module docstring), ids unique strings."""
    names = dict(zip(COLUMNS, COLUMNS, strict=True))
    for key, value in dict(columns or {}).items():
        if key not in COLUMNS:
            raise InputError(f"columns maps {key!r}; it may rename only {', '.join(COLUMNS)}.")
        names[key] = str(value)
    rows = _rows(data)
    if not rows:
        raise InputError("data holds no example; pass at least one text.")
    examples = []
    for position, row in enumerate(rows):
        if isinstance(row, str):
            fields: dict[str, Any] = {"text": row}
        elif isinstance(row, Mapping):
            fields = {key: row.get(name) for key, name in names.items() if name in row}
            if "text" not in fields:
                raise InputError(
                    f"example {position} has no {names['text']!r} field (it has "
                    f"{', '.join(map(repr, row))}); name the text column with "
                    "columns={'text': ...}."
                )
        elif hasattr(row, "text") and hasattr(row, "id"):  # annotations.Item and alike
            fields = {key: getattr(row, key, None) for key in COLUMNS}
        else:
            raise InputError(
                f"example {position} is a {type(row).__name__}; use a string or a mapping "
                "with a 'text' field."
            )
        text = fields.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"example {position} has no text ({text!r}); give it some words.")
        pair = _plain(fields.get("text_pair"))
        if pair is not None and not isinstance(pair, str):
            raise InputError(f"example {position}: text_pair must be a string or None.")
        ident = _plain(fields.get("id"))
        examples.append(
            Example(
                position=position,
                id=str(position) if ident is None else str(ident),
                text=text,
                label=_plain(fields.get("label")),
                text_pair=pair,
            )
        )
    seen: dict[str, int] = {}
    for example in examples:
        if example.id in seen:
            raise InputError(
                f"examples {seen[example.id]} and {example.position} share the id "
                f"{example.id!r}; ids must be unique."
            )
        seen[example.id] = example.position
    return examples


def _vector(value: Any, where: str) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 1 or (array.size and not np.isin(array, (0, 1)).all()):
        raise InputError(f"the rationale of {where} must be a 1-D 0/1 vector; got {value!r}.")
    return array.astype(bool)


def collect_rationales(
    rationales: Any, examples: Sequence[Example], annotator: str | None
) -> list[np.ndarray | None]:
    """One 0/1 vector (or None: no rationale) per example, from any accepted form.

    ``rationales``: a sequence aligned with the examples; a mapping from
    example id; an annotation Store (with ``annotator``) or a ``(store,
    annotator)`` pair.
    """
    if isinstance(rationales, tuple) and len(rationales) == 2 and isinstance(rationales[1], str):
        rationales, annotator = rationales
    if hasattr(rationales, "rationale") and callable(rationales.rationale):
        if not isinstance(annotator, str):
            raise InputError(
                "rationales is an annotation Store: name whose rationales to use with "
                f"annotator=... (it has: {', '.join(rationales.annotators()) or 'none'})."
            )
        out: list[np.ndarray | None] = []
        for example in examples:
            try:
                found = rationales.rationale(example.id, annotator=annotator)
            except InputError:  # the store does not hold this example
                found = None
            out.append(None if found is None else _vector(found, f"example {example.id!r}"))
        return out
    if annotator is not None:
        raise InputError("annotator= is read only when rationales is an annotation Store.")
    if isinstance(rationales, Mapping):
        unknown = set(map(str, rationales)) - {e.id for e in examples}
        if unknown:
            raise InputError(f"rationales name unknown example ids: {sorted(unknown)[:5]}.")
        by_id = {str(k): v for k, v in rationales.items()}
        values = [by_id.get(e.id) for e in examples]
    elif isinstance(rationales, (str, bytes)) or not isinstance(rationales, Sequence):
        raise InputError(
            "rationales must be a list (one 0/1 vector per example, None for none), a "
            f"mapping from example id, or an annotation Store; got {type(rationales).__name__}."
        )
    else:
        values = list(rationales)
        if len(values) != len(examples):
            raise InputError(
                f"{len(values)} rationales for {len(examples)} examples; pass one per example "
                "(None where there is none) or a mapping from example id."
            )
    return [
        None if v is None else _vector(v, f"example {e.id!r}")
        for v, e in zip(values, examples, strict=True)
    ]


def word_tokens(tokenizer: Any, example: Example, *, limit: int | None) -> list[list[int]]:
    """For each token of the example, the indices of the words of ``text.split()`` it overlaps.

    ``limit``: the model's maximum length when texts are truncated (as
    :func:`attnwidget.explain` truncates them), else None.
    """
    cut = {"truncation": True, "max_length": limit} if limit else {"truncation": False}
    try:
        encoding = tokenizer(
            example.text,
            example.text_pair,
            add_special_tokens=True,
            return_offsets_mapping=True,
            **cut,
        )
    except NotImplementedError:
        raise InputError(
            "word rationales need a fast tokenizer (character offsets); pass token "
            "rationales with rationale_unit='tokens' instead."
        ) from None
    spans, start = [], 0
    for word in example.text.split():
        begin = example.text.index(word, start)
        spans.append((begin, begin + len(word)))
        start = begin + len(word)
    sequence = encoding.sequence_ids() if hasattr(encoding, "sequence_ids") else None
    out = []
    for index, (a, b) in enumerate(encoding["offset_mapping"]):
        first_text = sequence is None or sequence[index] == 0
        out.append(
            [w for w, (s, e) in enumerate(spans) if first_text and b > a and a < e and b > s]
        )
    return out


def token_rationales(
    tokenizer: Any,
    examples: Sequence[Example],
    rationales: Sequence[np.ndarray | None],
    *,
    unit: str,
    limit: int | None,
) -> list[np.ndarray | None]:
    """Word rationales as token vectors (``unit="words"``); token ones pass unchanged.

    A token is in the rationale when it overlaps a marked word (special
    tokens never are). Lengths are checked against the word count here and
    against the model's tokens when the examples are explained.
    """
    if unit not in UNITS:
        raise InputError(f"rationale_unit={unit!r}: use 'words' or 'tokens'.")
    if unit == "tokens":
        return list(rationales)
    out: list[np.ndarray | None] = []
    for example, words in zip(examples, rationales, strict=True):
        if words is None:
            out.append(None)
            continue
        n_words = len(example.text.split())
        if words.size != n_words:
            raise InputError(
                f"the rationale of example {example.id!r} has {words.size} entries for its "
                f"{n_words} words (text.split()); pass one per word, or token vectors with "
                "rationale_unit='tokens'."
            )
        mapping = word_tokens(tokenizer, example, limit=limit)
        out.append(np.array([bool(ws) and bool(words[ws].any()) for ws in mapping], dtype=bool))
    return out


def rationale_k(human: Sequence[np.ndarray | None]) -> int:
    """ferret's k: the mean length (tokens) of the human rationales, rounded (0 if none)."""
    lengths = [int(h.sum()) for h in human if h is not None]
    return round(float(np.mean(lengths))) if lengths else 0


def digest(example: Example, human: np.ndarray | None) -> str:
    """A fingerprint of an example's content and its rationale (the results file checks it)."""
    payload = json.dumps(
        [example.id, example.text, example.text_pair, repr(example.label)], ensure_ascii=False
    ).encode()
    hasher = hashlib.blake2b(payload, digest_size=16)
    if human is not None:
        hasher.update(f"{human.size}:".encode() + np.packbits(human).tobytes())
    return hasher.hexdigest()


def chunks(count: int, size: int) -> list[range]:
    """Positions ``0 … count-1`` cut into runs of ``size`` (the last may be shorter)."""
    return [range(start, min(start + size, count)) for start in range(0, count, size)]
