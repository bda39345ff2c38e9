"""What the AdjudicationView sends the page: its options checked, one item's rows,
the filter bar's matches (the view is in :mod:`.adjudication_view`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from attnwidget.annotations import Annotation, Store
from attnwidget.annotations import validate as _validate
from attnwidget.annotations.review import ItemSummary
from attnwidget.errors import InputError
from attnwidget.views.core.message_size import MESSAGE_CAP, message_bytes

#: The merge rules (besides an annotator's name: accept that annotator's marks).
RULES = ("majority", "union", "intersection")
#: At most this many matches of the filter bar are listed (all are counted).
MAX_LISTED = 500
#: Characters of an item's text shown in the list of matches.
SNIPPET = 80


def open_store(store: Any) -> Store:
    """A Store, or the path of an existing one (adjudication needs saved annotations)."""
    if isinstance(store, Store):
        return store
    if isinstance(store, (str, Path)):
        if not Path(store).is_file():
            raise InputError(
                f"store={str(store)!r} is not a file: pass the path of a store your "
                "annotators saved to (or an attnwidget.annotations.Store)"
            )
        return Store(store)
    raise InputError(
        f"store is a {type(store).__name__}: pass an attnwidget.annotations.Store or the "
        "path of one, e.g. store='rationales.sqlite'"
    )


def check_annotators(store: Store, annotators: Any, as_annotator: Any) -> tuple[list[str], str]:
    """The annotators to adjudicate (>= 2, each with saved annotations) and the gold name."""
    gold = _validate.annotator(as_annotator)
    known = store.annotators()
    if annotators is None:
        judges = {gold, *store.adjudicators()}
        names = [name for name in known if name not in judges]
    else:
        if isinstance(annotators, str) or not isinstance(annotators, Iterable):
            raise InputError(
                f"annotators={annotators!r}: pass a list of at least two annotator names, "
                f"e.g. annotators={known[:2] or ['ana', 'ben']}"
            )
        names = [_validate.annotator(name) for name in annotators]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise InputError(f"annotators: {repeated} appear more than once; list each once")
        unknown = [name for name in names if name not in known]
        if unknown:
            raise InputError(
                f"annotator(s) {unknown} have saved nothing in the store {store.path}; "
                f"its annotators are {known}"
            )
    if len(names) < 2:
        raise InputError(
            f"AdjudicationView needs at least two annotators to compare; got {names} "
            f"(the store's annotators: {known})"
        )
    if gold in names:
        raise InputError(
            f"as_annotator={gold!r} is one of the annotators adjudicated: the gold "
            "annotations need a name of their own (as_annotator='gold' by default)"
        )
    return names, gold


def check_rule(value: Any, names: Sequence[str]) -> str:
    if not isinstance(value, str) or (value not in RULES and value not in names):
        raise InputError(
            f"rule={value!r}: pass one of {list(RULES)} (merge the annotators' marks) or "
            f"an annotator's name to accept their marks ({list(names)})"
        )
    return value


def _row(name: str, found: Annotation | None) -> dict[str, Any]:
    if found is None:
        return {"annotator": name, "status": "missing", "char_spans": [], "label": "",
                "revision": 0}  # fmt: skip
    return {
        "annotator": name,
        "status": "no_evidence" if found.no_evidence else "saved",
        "char_spans": [list(span) for span in found.char_spans],
        "label": found.label or "",
        "revision": found.revision,
    }


def item_trait(
    store: Store, k: int, summary: ItemSummary, names: Sequence[str], gold: str
) -> dict[str, Any]:
    """The ``item`` trait of the item at position ``k`` of the view's order."""
    rows = [_row(name, store.load(summary.item_id, annotator=name)) for name in names]
    found = store.load(summary.item_id, annotator=gold)
    gold_row = _row(gold, found)
    how = None if found is None else store.adjudication(summary.item_id, annotator=gold)
    gold_row["rule"] = "" if how is None else how.rule
    gold_row["reason"] = "" if how is None or how.reason is None else how.reason
    gold_row["sources"] = [] if how is None else [[a, r] for a, r, _ in how.sources]
    f1 = summary.token_f1
    return {
        "index": k,
        "id": summary.item_id,
        "text": summary.text,
        "text_pair": summary.text_pair or "",
        "label": summary.item_label or "",
        "token_f1": None if math.isnan(f1) else f1,
        "rows": rows,
        "gold": gold_row,
    }


def check_fits(trait: dict[str, Any]) -> None:
    """Refuse an item whose trait alone would pass the page's message cap."""
    size = message_bytes({"item": trait})
    if size > MESSAGE_CAP:
        raise InputError(
            f"AdjudicationView: item {trait['id']!r} ({len(trait['text']):,} characters) would "
            f"be a {size / 2**20:.1f} MiB message, over the {MESSAGE_CAP / 2**20:.0f} MiB a "
            "message to the page may carry; the view stays on the item it shows"
        )


def match_entry(k: int, summary: ItemSummary) -> list[Any]:
    """A row of the filter bar's list: ``[index, id, snippet, token_f1 or None]``."""
    text = " ".join(summary.text.split())
    snippet = text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"
    f1 = None if math.isnan(summary.token_f1) else summary.token_f1
    return [k, summary.item_id, snippet, f1]


def last_saved_trait(saved: Annotation, rule: str, reason: str | None) -> dict[str, Any]:
    return {
        "item_id": saved.item_id,
        "annotator": saved.annotator,
        "rule": rule,
        "reason": reason or "",
        "revision": saved.revision,
        "no_evidence": saved.no_evidence,
        "char_spans": [list(span) for span in saved.char_spans],
    }
