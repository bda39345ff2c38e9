"""Find the items of a :class:`~.store.Store` worth a second look: :func:`review`.

One row per item (in store order) with what its annotators did, then kept
only where every filter given holds:

* ``text``: the text (case-insensitive) occurs in the item's text or its
  ``text_pair``;
* ``label``: the item's own label is ``label``, or one of the annotators
  (those considered, see ``annotators``) gave it;
* ``annotator``: a name, or a list of names, every one of whom has saved the
  item;
* ``max_token_f1``: the item's ``token_f1`` (the mean over pairs of
  annotators who both saved it of their token F1 on its words, as
  :func:`~.annotator_agreement.agreement`'s ``per_item`` gives it) is at
  most this; an item fewer than two annotators saved has no ``token_f1``
  (NaN) and never matches;
* ``no_evidence``: True keeps the items at least one annotator saved as "no
  evidence", False those none did.

The :class:`~attnwidget.views.annotate.adjudication_view.AdjudicationView`'s
filter bar runs the same code.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import validate as _validate
from attnwidget.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from attnwidget.annotations.store import Store

#: The columns of :func:`review`'s DataFrame.
COLUMNS = (
    "item_id",
    "position",
    "text",
    "item_label",
    "annotators",
    "n_annotators",
    "labels",
    "no_evidence",
    "token_f1",
)


@dataclass(frozen=True)
class ItemSummary:
    """What :func:`review` knows of one item (a row of its DataFrame)."""

    item_id: str
    position: int  # in store order
    text: str
    text_pair: str | None
    item_label: str | None
    annotators: tuple[str, ...]  # who saved it, among those considered, sorted
    labels: tuple[str | None, ...]  # their labels, in the same order
    no_evidence: tuple[str, ...]  # who saved it as no evidence
    token_f1: float  # mean over pairs; NaN with fewer than two annotators

    def row(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in COLUMNS if name != "n_annotators"}
        out["n_annotators"] = len(self.annotators)
        return out


@dataclass(frozen=True)
class Filters:
    """Checked :func:`review` filters (None: not filtered on)."""

    text: str | None = None
    label: str | None = None
    annotator: tuple[str, ...] | None = None
    max_token_f1: float | None = None
    no_evidence: bool | None = None

    def keeps(self, item: ItemSummary) -> bool:
        if self.text is not None:
            wanted = self.text.casefold()
            haystack = item.text + ("\n" + item.text_pair if item.text_pair else "")
            if wanted not in haystack.casefold():
                return False
        if self.label is not None and self.label != item.item_label:
            if self.label not in item.labels:
                return False
        if self.annotator is not None and not set(self.annotator) <= set(item.annotators):
            return False
        if self.max_token_f1 is not None:
            if math.isnan(item.token_f1) or item.token_f1 > self.max_token_f1:
                return False
        if self.no_evidence is not None and bool(item.no_evidence) != self.no_evidence:
            return False
        return True


def check_filters(
    text: Any = None,
    label: Any = None,
    annotator: Any = None,
    max_token_f1: Any = None,
    no_evidence: Any = None,
) -> Filters:
    """The filters checked (an ``InputError`` names the one that is wrong and the fix).

    An empty string for ``text`` or ``label`` means no filter (what an empty
    search box sends)."""
    if text is not None and not isinstance(text, str):
        raise InputError(f"text={text!r}: pass the text to search for (a string) or None")
    if label is not None and not isinstance(label, str):
        raise InputError(f"label={label!r}: pass a label (a string) or None")
    names: tuple[str, ...] | None = None
    if isinstance(annotator, str):
        names = (_validate.annotator(annotator),) if annotator else None
    elif annotator is not None:
        if not isinstance(annotator, Iterable):
            raise InputError(
                f"annotator={annotator!r}: pass a name, a list of names, or None for anyone"
            )
        names = tuple(_validate.annotator(name) for name in annotator) or None
    bound: float | None = None
    if max_token_f1 is not None:
        if isinstance(max_token_f1, bool) or not isinstance(max_token_f1, (int, float)):
            raise InputError(
                f"max_token_f1={max_token_f1!r}: pass a number in [0, 1] (e.g. 0.5) or None"
            )
        bound = float(max_token_f1)
        if not 0 <= bound <= 1:
            raise InputError(f"max_token_f1={max_token_f1!r}: token F1 is in [0, 1]")
    if no_evidence not in (None, True, False):
        raise InputError(f"no_evidence={no_evidence!r}: pass True, False or None")
    return Filters(text or None, label or None, names, bound, no_evidence)


def summarize(store: Store, annotators: Sequence[str] | None = None) -> list[ItemSummary]:
    """One :class:`ItemSummary` per item of ``store``, in store order.

    ``annotators``: whose annotations count (None: everyone who saved one, but the adjudicators).
    """
    from attnwidget.annotations.annotator_agreement import agreement

    known = store.annotators()
    judges = set(store.adjudicators())  # the adjudicated gold is no annotator's view
    names = [n for n in known if n not in judges] if annotators is None else list(annotators)
    frame = store.to_dataframe()
    frame = frame[frame["annotator"].isin(set(names))]
    saved: dict[str, list[tuple[str, str | None, bool]]] = {}
    for row in frame.itertuples(index=False):
        label = row.label if isinstance(row.label, str) else None
        saved.setdefault(row.item_id, []).append((row.annotator, label, bool(row.no_evidence)))
    f1: dict[str, float] = {}
    if sum(1 for name in names if name in known) >= 2:
        try:
            per_item = agreement(store, [n for n in names if n in known], n_resamples=1).per_item
        except InputError:  # fewer than two annotators saved anything: no pair to score
            per_item = None
        if per_item is not None and len(per_item):
            f1 = per_item.groupby("item_id", sort=False)["token_f1"].mean().to_dict()
    out = []
    for position, item in enumerate(store.items()):
        found = sorted(saved.get(item.id, []))
        out.append(
            ItemSummary(
                item.id,
                position,
                item.text,
                item.text_pair,
                item.label,
                tuple(name for name, _, _ in found),
                tuple(label for _, label, _ in found),
                tuple(name for name, _, empty in found if empty),
                float(f1.get(item.id, math.nan)),
            )
        )
    return out


def disagreement_order(items: Sequence[ItemSummary]) -> list[ItemSummary]:
    """Most disagreement first: lowest ``token_f1`` first (ties in store order),
    then the items fewer than two annotators saved, in store order."""
    scored = [item for item in items if not math.isnan(item.token_f1)]
    rest = [item for item in items if math.isnan(item.token_f1)]
    return sorted(scored, key=lambda item: (item.token_f1, item.position)) + rest


def frame_of(items: Iterable[ItemSummary]) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame.from_records([item.row() for item in items], columns=list(COLUMNS))
    frame["item_label"] = frame["item_label"].astype(object)
    frame.loc[frame["item_label"].isna(), "item_label"] = None  # pandas reads None as NaN
    return frame


def review(
    store: Store,
    text: str | None = None,
    label: str | None = None,
    annotator: str | Sequence[str] | None = None,
    max_token_f1: float | None = None,
    no_evidence: bool | None = None,
    *,
    annotators: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The items of ``store`` that match every filter given, in store order.

    Filters (None: not filtered on; see the module docstring for each):
    ``text`` (case-insensitive substring of the text or text pair),
    ``label`` (the item's label or an annotator's), ``annotator`` (a name or
    names that all saved the item), ``max_token_f1`` (the mean pairwise token
    F1 is at most this), ``no_evidence`` (True: someone saved "no evidence";
    False: nobody did). ``annotators``: whose annotations count (None:
    everyone with a saved annotation; pass the adjudicated ones to leave a
    gold annotator out of the agreement).

    Returns a DataFrame with the columns ``item_id``, ``position`` (the
    item's index in store order), ``text``, ``item_label``, ``annotators``
    (tuple of names), ``n_annotators``, ``labels`` (their labels, same order;
    None for none), ``no_evidence`` (tuple of the names that said no
    evidence) and ``token_f1`` (NaN with fewer than two annotators).
    Raises ``InputError`` for a malformed filter or an unknown annotator.
    """
    filters = check_filters(text, label, annotator, max_token_f1, no_evidence)
    known = store.annotators()
    names = None
    if annotators is not None:
        if isinstance(annotators, str) or not isinstance(annotators, Iterable):
            raise InputError(
                f"annotators={annotators!r}: pass a list of annotator names, or None for everyone"
            )
        names = list(dict.fromkeys(_validate.annotator(name) for name in annotators))
    for name in [*(filters.annotator or ()), *(names or ())]:
        if name not in known:
            raise InputError(
                f"annotator {name!r} has saved nothing in this store; its annotators are {known}"
            )
    return frame_of(item for item in summarize(store, names) if filters.keeps(item))
