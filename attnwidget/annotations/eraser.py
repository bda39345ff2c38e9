"""ERASER data sets (DeYoung et al., 2020) to and from a :class:`~.store.Store`.

The format, as the ERASER benchmark lays it out:

* ``docs/<docid>``: one document per file, one sentence per line, tokens
  separated by spaces (blank lines are not sentences). A document's tokens are
  all its tokens in order, sentences flattened; evidence offsets index that
  flat sequence. A single ``docs.jsonl`` (``{"docid", "document"}`` per line)
  is read when there is no ``docs/`` folder.
* ``train.jsonl``, ``val.jsonl``, ``test.jsonl``: one annotation per line with
  exactly the keys ``annotation_id``, ``query``, ``evidences`` (a list of
  evidence groups, each a list of evidences with ``text``, ``docid``,
  ``start_token`` inclusive, ``end_token`` exclusive, ``start_sentence``
  inclusive, ``end_sentence`` exclusive), ``classification``, ``query_type``
  and ``docids``. ERASER's own loader passes these keys to a dataclass, so
  nothing else may be added.

Mapping onto a store: an item per document (id = docid, text = the
document's sentences, one per line, so ``text.split()`` is ERASER's token
list and sentence numbers survive), and an annotation per (document,
annotator) whose spans are the annotation's evidences in that document and
whose label is its ``classification``.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations._chars import chars_from_words, word_offsets
from attnwidget.annotations._files import write_atomically
from attnwidget.annotations._rows import add_items_in, save_in
from attnwidget.annotations.validate import Item, Span
from attnwidget.errors import InputError

if TYPE_CHECKING:
    from attnwidget.annotations.store import Store

_SPLIT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _check_docid(docid: str) -> None:
    if docid in (".", "..") or any(c in docid for c in "/\\\0") or docid.startswith("."):
        raise InputError(
            f"item id {docid!r} cannot be an ERASER document file name (docs/<docid>): "
            "ids for export must not contain '/', '\\' or NUL, nor start with '.'"
        )


def _sentences(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.split()]


def export_eraser(
    store: Store, directory: str | Path, *, split: str = "test", annotator: str | None = None
) -> Path:
    """Write ``docs/<item id>`` for every item and ``<split>.jsonl`` with one line per
    annotation of ``annotator`` (None: the store's only annotator).

    ``annotation_id`` and the one ``docids`` entry are the item id; each span is
    its own evidence group; ``classification`` is the annotation's label, or
    the item's label when the annotation has none; ``query`` is the item's
    ``text_pair`` or ``""``; sentence numbers come from the text's lines. A
    store with several annotators needs ``annotator=`` (ERASER keeps one
    rationale per document). Returns the directory.

    ERASER's tokens are the store's words (``text.split()``), so evidences are
    the annotations' word spans. Character spans (``save(..., char_spans=...)``)
    that do not start and end on word boundaries are ROUNDED OUT: a token is
    in the evidence when a character span overlaps it (the store's rule, see
    :mod:`._chars`), so marking "gre" of "great" exports the token "great".
    A ``UserWarning`` then says how many annotations were rounded, with the
    first one. A no-evidence annotation exports with ``evidences: []``.
    """
    if not isinstance(split, str) or not _SPLIT_NAME.fullmatch(split):
        raise InputError(f"split={split!r}: pass a file name stem such as 'train', 'val', 'test'")
    who = None if annotator is None else _validate.annotator(annotator)
    with store._transaction("DEFERRED") as conn:
        items = [
            Item(*row)
            for row in conn.execute(
                "SELECT item_id, text, label, text_pair FROM items ORDER BY idx"
            )
        ]
        where, args = ("", ()) if who is None else ("WHERE a.annotator = ?", (who,))
        rows = conn.execute(
            "SELECT i.item_id, a.annotator, a.spans, a.label, a.char_spans FROM annotations a"
            f" JOIN items i ON i.idx = a.item_idx {where} ORDER BY i.idx",
            args,
        ).fetchall()
    names = sorted({row[1] for row in rows})
    if who is None and len(names) > 1:
        raise InputError(
            f"the store has {len(names)} annotators ({', '.join(names)}); ERASER keeps one "
            "rationale per document: pass annotator=... (one export per annotator)"
        )
    for item in items:
        _check_docid(item.id)
    root = Path(directory)
    (root / "docs").mkdir(parents=True, exist_ok=True)
    by_id = {item.id: item for item in items}
    for item in items:
        text = "\n".join(" ".join(words) for words in _sentences(item.text)) + "\n"
        write_atomically(root / "docs" / item.id, text)
    lines = []
    rounded: list[str] = []
    for item_id, _, spans_json, label, chars_json in rows:
        item = by_id[item_id]
        marked = [(int(s), int(e)) for s, e in json.loads(spans_json)]
        chars = tuple((int(s), int(e)) for s, e in json.loads(chars_json))
        if chars != chars_from_words(marked, word_offsets(item.text)):
            rounded.append(f"item {item_id!r}: characters {list(chars)} -> words {marked}")
        sentence_of = [n for n, words in enumerate(_sentences(item.text)) for _ in words]
        groups = [
            [
                {
                    "text": " ".join(item.words[start:end]),
                    "docid": item_id,
                    "start_token": start,
                    "end_token": end,
                    "start_sentence": sentence_of[start],
                    "end_sentence": sentence_of[end - 1] + 1,
                }
            ]
            for start, end in marked
        ]
        record = {
            "annotation_id": item_id,
            "query": item.text_pair or "",
            "evidences": groups,
            "classification": label if label is not None else item.label,
            "query_type": None,
            "docids": [item_id],
        }
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n")
    write_atomically(root / f"{split}.jsonl", "".join(lines))
    if rounded:
        warnings.warn(
            f"{len(rounded)} annotations have character spans that do not fall on word "
            "boundaries; ERASER keeps tokens, so each was rounded out to every token a span "
            f"overlaps. First: {rounded[0]}",
            UserWarning,
            stacklevel=3,
        )
    return root


def _read_docs(root: Path) -> dict[str, list[list[str]]]:
    folder = root / "docs"
    if folder.is_dir():
        docs = {}
        for name in sorted(os.listdir(folder)):
            if name.startswith(".") or not (folder / name).is_file():
                continue
            docs[name] = _sentences((folder / name).read_text(encoding="utf-8"))
        return docs
    single = root / "docs.jsonl"
    if single.is_file():
        docs = {}
        for number, line in enumerate(single.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                record = _json_line(line, single, number)
                docs[str(record["docid"])] = _sentences(str(record["document"]))
        return dict(sorted(docs.items()))
    raise InputError(
        f"{root} has neither a docs/ folder nor a docs.jsonl file: pass the folder of an "
        "ERASER data set (the one holding docs/ and train.jsonl, val.jsonl, test.jsonl)"
    )


def _json_line(line: str, path: Path, number: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise InputError(f"{path.name} line {number} is not JSON ({error})") from None
    if not isinstance(record, dict):
        raise InputError(f"{path.name} line {number} is not a JSON object")
    return record


def _offset(value: Any, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: {name} is {value!r}; ERASER offsets are integers")
    return value


def _evidence_span(
    evidence: dict[str, Any], sentences: list[list[str]], where: str
) -> tuple[int, int]:
    """Token offsets of one evidence; sentence offsets when the tokens are -1."""
    start = _offset(evidence.get("start_token", -1), where, "start_token")
    end = _offset(evidence.get("end_token", -1), where, "end_token")
    if start < 0 or end < 0:
        first = _offset(evidence.get("start_sentence", -1), where, "start_sentence")
        last = _offset(evidence.get("end_sentence", -1), where, "end_sentence")
        if first < 0 or last < 0 or last > len(sentences):
            raise InputError(
                f"{where}: the evidence has neither token offsets nor sentence offsets "
                f"within the document's {len(sentences)} sentences"
            )
        start = sum(len(words) for words in sentences[:first])
        end = start + sum(len(words) for words in sentences[first:last])
    n_words = sum(len(words) for words in sentences)
    if not 0 <= start <= end <= n_words:
        raise InputError(
            f"{where}: evidence tokens [{start}, {end}) are outside the document's "
            f"{n_words} tokens (start_token inclusive, end_token exclusive)"
        )
    return start, end


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def import_eraser(
    store: Store,
    directory: str | Path,
    *,
    annotator: str = "eraser",
    splits: tuple[str, ...] = ("train", "val", "test"),
    query_as_pair: bool = False,
) -> int:
    """Register an ERASER data set's documents as items and its evidences as
    ``annotator``'s spans, in one transaction; return the number of annotations saved.

    Every document becomes an item (id = docid, label = the classification of
    the annotation that cites it); an annotation citing several documents (as
    in e-SNLI) gives each of them its evidences there and the label.
    Overlapping evidences are merged into one span (the words marked are the
    same); empty ones are dropped; when an evidence's ``text`` is not the
    document's tokens at its offsets, the offsets win and a warning says so.
    ``query_as_pair=True`` keeps a non-empty query as the item's ``text_pair``
    (BoolQ, FEVER); by default it is dropped (Movies' query is boilerplate).
    Refused, with nothing written: a document cited by two annotations (the
    store keeps one annotation per item and annotator), unknown docids,
    offsets outside a document, labels outside the store's ``labels``.
    Items already in the store must have the same text; their label is kept.
    An annotation already saved by ``annotator`` is replaced (history keeps it).
    A cited document with no evidence in it is saved as ``no_evidence=True``
    (the data set says its rationale is empty, which is not "not annotated").
    """
    who = _validate.annotator(annotator)
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"{root} is not a folder: pass the folder of an ERASER data set")
    files = [root / f"{split}.jsonl" for split in splits if (root / f"{split}.jsonl").is_file()]
    if not files:
        raise InputError(f"{root} has none of {[f'{s}.jsonl' for s in splits]}: nothing to import")
    docs = _read_docs(root)
    cited: dict[str, tuple[str, str | None, list[Span], str | None]] = {}
    mismatches: list[str] = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            record = _json_line(line, path, number)
            annotation_id = str(record.get("annotation_id", f"{path.stem}:{number}"))
            where = f"{path.name} line {number} (annotation {annotation_id!r})"
            label = _validate.label(record.get("classification"), store.labels, where)
            groups = record.get("evidences") or []
            evidences = [e for g in groups for e in ([g] if isinstance(g, dict) else g)]
            if not all(isinstance(e, dict) and "docid" in e for e in evidences):
                raise InputError(f"{where}: every evidence must be an object with a 'docid'")
            listed = record.get("docids") or []
            docids = [str(d) for d in ([listed] if isinstance(listed, str) else listed)]
            docids += [str(e["docid"]) for e in evidences if str(e["docid"]) not in docids]
            if not docids and annotation_id in docs:
                docids = [annotation_id]  # Movies: no docids, the annotation id is the docid
            if not docids:
                raise InputError(
                    f"{where}: the annotation names no document (no docids, no evidence, "
                    "and no docs/<annotation_id>)"
                )
            spans: dict[str, list[Span]] = {docid: [] for docid in docids}
            for evidence in evidences:
                docid = str(evidence.get("docid"))
                if docid not in docs:
                    raise InputError(f"{where}: evidence in docid {docid!r}, not in docs/")
                start, end = _evidence_span(evidence, docs[docid], f"{where}, docid {docid!r}")
                tokens = [w for words in docs[docid] for w in words][start:end]
                text = evidence.get("text")
                if isinstance(text, str) and text.split() != tokens:
                    mismatches.append(f"{where}: {text!r:.50} vs {' '.join(tokens)!r:.50}")
                if end > start:
                    spans[docid].append((start, end))
            query = record.get("query")
            pair = query if query_as_pair and isinstance(query, str) and query else None
            for docid, found in spans.items():
                if docid not in docs:
                    raise InputError(f"{where}: docid {docid!r} has no file in docs/")
                if docid in cited:
                    raise InputError(
                        f"{where}: document {docid!r} is also cited by annotation "
                        f"{cited[docid][0]!r}; a store keeps one annotation per document and "
                        "annotator, so data sets whose queries share documents (FEVER, "
                        "BoolQ, MultiRC) cannot be imported this way"
                    )
                cited[docid] = (annotation_id, label, _merge(found), pair)
    if mismatches:
        warnings.warn(
            f"{len(mismatches)} ERASER evidences have a text that is not the document's "
            f"tokens at their offsets; the offsets were used. First: {mismatches[0]}",
            UserWarning,
            stacklevel=3,
        )
    items = []
    for docid, sentences in docs.items():
        if not sentences:
            if docid in cited:
                raise InputError(f"docs/{docid} has no tokens but annotation cites it")
            continue
        _, label, _, pair = cited.get(docid, ("", None, [], None))
        text = "\n".join(" ".join(words) for words in sentences)
        items.append(Item(_validate.item_id(docid), text, label, pair))
    now = datetime.now(timezone.utc)
    with store._transaction() as conn:
        add_items_in(conn, items, store.labels, keep_existing_label=True)
        for item in items:
            if item.id in cited:
                _, label, spans_, _ = cited[item.id]
                save_in(conn, item.id, who, spans_, label, None, None, now, no_evidence=not spans_)
    return len(cited)
