"""AdjudicationView: compare annotators' rationales item by item and save a gold one.

Message schema (traits synced with ``js/src/annotate/adjudication_types.ts``
``AdjudicationTraits``):

================  ==============  ================================================
trait             type            meaning
================  ==============  ================================================
``_view``         str             ``"adjudication"``: the JS view that renders it
``annotators``    list[str]       the annotators compared, one row each
``as_annotator``  str             the name gold annotations are saved under
``count``         int             how many items (all of the store's)
``labels``        list[str]       labels of the filter bar (store's, else seen)
``item``          dict            the shown item: ``index`` (in the view's
                                  order), ``id``, ``text``, ``text_pair``,
                                  ``label``, ``token_f1`` (None: < 2 saved),
                                  ``rows`` (per annotator: ``annotator``,
                                  ``status`` "saved" | "no_evidence" |
                                  "missing", ``char_spans``, ``label``,
                                  ``revision``) and ``gold`` (the same for
                                  ``as_annotator``, with ``rule``, ``reason``,
                                  ``sources``). Text, never HTML
``index``         int             the item shown, 0..count-1, in the view's order:
                                  most disagreement first (set it to move)
``item_id``       str             the shown item's id (set it to move)
``rule``          str             the last rule used (or to use from Python)
``reason``        str             the reason saved with the next adjudication
``last_saved``    dict or None    the last gold annotation saved: ``item_id``,
                                  ``annotator``, ``rule``, ``reason``,
                                  ``revision``, ``no_evidence``, ``char_spans``
``filters``       dict            the filter bar: ``text``, ``label``,
                                  ``annotator``, ``max_token_f1``, ``no_evidence``
                                  (None / "" : not filtered on), as
                                  :func:`attnwidget.annotations.review`
``matches``       list            ``[index, id, snippet, token_f1]`` of the first
                                  500 items that match, in the view's order
``match_count``   int             how many items match
``status``        str             a note ("" if none)
================  ==============  ================================================

Page -> kernel: ``{"type": "go", "request", "index"}``, ``{"type": "adjudicate",
"request", "index", "item_id", "rule", "reason"}`` and ``{"type": "filter",
"request", "filters"}``. Replies: ``{"type": "shown" | "saved" | "filtered",
"request", ...}`` after the new state, or ``{"type": "refused", "request",
"message"}`` (nothing changed).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import traitlets

from attnwidget.annotations import Annotation, Store
from attnwidget.annotations.review import check_filters, disagreement_order, summarize
from attnwidget.errors import InputError
from attnwidget.views.annotate._adjudication_data import (
    MAX_LISTED,
    RULES,
    check_annotators,
    check_fits,
    check_rule,
    item_trait,
    last_saved_trait,
    match_entry,
    open_store,
)
from attnwidget.views.core.base import RecordedReply, _AttnWidget

log = logging.getLogger(__name__)

_FILTER_KEYS = ("text", "label", "annotator", "max_token_f1", "no_evidence")


class AdjudicationView(_AttnWidget):
    """Annotators' rationales side by side, item by item; one click saves the gold one.

    Each item shows its text once per annotator, their marks character-exact
    (a row says "no evidence" or "not annotated" where that is what they
    did), with the characters not every annotator marked highlighted. Items
    come most disagreement first (lowest mean pairwise token F1 from
    :func:`attnwidget.annotations.agreement`'s ``per_item``; items fewer
    than two annotators saved last). "Accept" on a row takes that annotator's
    version; Union, Intersection and Majority merge them; each saves through
    :meth:`~attnwidget.annotations.Store.adjudicate` as ``as_annotator``
    (with the reason typed, if any) and the gold row shows it at once.

    A filter bar (text, label, annotator, token F1 at most, no evidence)
    counts and lists the matching items, each a click away; the same
    filters as :func:`attnwidget.annotations.review`.

    Keys (widget focused): ←/→ previous/next item.

    Args:
        store: a :class:`~attnwidget.annotations.Store` or the path of one.
        annotators: the annotators to compare (at least two, each with saved
            annotations; default: everyone in the store but ``as_annotator``).
        as_annotator: the name gold annotations are saved under (not one of
            ``annotators``).

    A saved page (``to_html()``) shows the item shown when it was saved,
    read-only: moving, filtering and saving need the kernel.

    Example::

        view = attnwidget.AdjudicationView("r.sqlite", annotators=["ana", "ben"])
        view.merge("majority", reason="two of three")   # what the Majority button does
        view.next()
    """

    _view = traitlets.Unicode("adjudication").tag(sync=True)

    annotators = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    as_annotator = traitlets.Unicode("gold", read_only=True).tag(sync=True)
    count = traitlets.Int(0, read_only=True).tag(sync=True)
    labels = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    item = traitlets.Dict(read_only=True).tag(sync=True)
    last_saved = traitlets.Dict(default_value=None, allow_none=True, read_only=True).tag(sync=True)
    matches = traitlets.List(traitlets.List(), read_only=True).tag(sync=True)
    match_count = traitlets.Int(0, read_only=True).tag(sync=True)
    status = traitlets.Unicode("", read_only=True).tag(sync=True)

    index = traitlets.Int(0, help="the item shown, in disagreement order").tag(sync=True)
    item_id = traitlets.Unicode("", help="the shown item's id").tag(sync=True)
    rule = traitlets.Unicode("majority", help="the last rule used").tag(sync=True)
    reason = traitlets.Unicode("", help="saved with the next adjudication").tag(sync=True)
    filters = traitlets.Dict(help="the filter bar, as review()'s keywords").tag(sync=True)

    def __init__(
        self,
        store: Store | str | Path,
        annotators: Sequence[str] | None = None,
        as_annotator: str = "gold",
        **kwargs: Any,
    ) -> None:
        initial = {name: kwargs.pop(name) for name in ("index", "item_id") if name in kwargs}
        super().__init__(**kwargs)
        self._store = open_store(store)
        names, gold = check_annotators(self._store, annotators, as_annotator)
        self._order = disagreement_order(summarize(self._store, names))
        if not self._order:
            raise InputError(f"the store {self._store.path} holds no items to adjudicate")
        self._position = {summary.item_id: k for k, summary in enumerate(self._order)}
        self._ready = False
        labels = self._store.labels or sorted(
            {label for s in self._order for label in (s.item_label, *s.labels) if label}
        )
        with self.hold_sync():
            self.set_trait("annotators", names)
            self.set_trait("as_annotator", gold)
            self.set_trait("count", len(self._order))
            self.set_trait("labels", list(labels))
            self._show(0)
            self._filter(dict(self.filters))
        self._ready = True
        self.on_msg(self._on_message)
        for name, value in initial.items():
            setattr(self, name, value)

    # -- Python API ------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The store adjudications are saved to."""
        return self._store

    @property
    def order(self) -> list[str]:
        """The item ids in the view's order (most disagreement first)."""
        return [summary.item_id for summary in self._order]

    def next(self) -> int:
        """Show the next item; returns the new index."""
        self.index = min(self.index + 1, self.count - 1)
        return self.index

    def previous(self) -> int:
        """Show the previous item; returns the new index."""
        self.index = max(self.index - 1, 0)
        return self.index

    def accept(self, annotator: str, *, reason: str | None = None) -> Annotation:
        """Save ``annotator``'s version of the shown item as gold (an Accept button)."""
        return self.adjudicate(annotator, reason=reason)

    def merge(self, rule: str = "majority", *, reason: str | None = None) -> Annotation:
        """Save the merge of the annotators' versions (``"majority"``, ``"union"`` or
        ``"intersection"``) of the shown item as gold."""
        if rule not in RULES:
            raise InputError(f"rule={rule!r}: merge with one of {list(RULES)}")
        return self.adjudicate(rule, reason=reason)

    def adjudicate(self, rule: str | None = None, *, reason: str | None = None) -> Annotation:
        """Save the shown item's gold annotation by ``rule`` (default :attr:`rule`)
        from every compared annotator who saved it, with ``reason`` (default
        :attr:`reason`; "" for none); the gold row is redrawn. Raises
        ``InputError`` and saves nothing when the store refuses."""
        return self._adjudicate(
            self.index,
            self.rule if rule is None else rule,
            self.reason if reason is None else reason,
        )

    # -- showing an item -------------------------------------------------------

    def _show(self, k: int) -> None:
        trait = item_trait(self._store, k, self._order[k], self.annotators, self.as_annotator)
        check_fits(trait)
        self.set_trait("item", trait)
        self.set_trait("item_id", trait["id"])
        self.set_trait("index", k)

    @traitlets.validate("index")
    def _valid_index(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        if isinstance(value, bool) or not 0 <= value < max(self.count, 1):
            raise traitlets.TraitError(
                f"index={value!r} is not an item: use 0..{self.count - 1} ({self.count} items)"
            )
        return int(value)

    @traitlets.validate("item_id")
    def _valid_item_id(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if self._ready and value not in self._position:
            raise traitlets.TraitError(f"item_id={value!r} is not an item of the store")
        return str(value)

    @traitlets.validate("rule")
    def _valid_rule(self, proposal: dict[str, Any]) -> str:
        try:
            return check_rule(proposal["value"], self.annotators or [proposal["value"]])
        except InputError as error:
            raise traitlets.TraitError(str(error)) from None

    @traitlets.observe("index")
    def _on_index(self, change: dict[str, Any]) -> None:
        if self._ready and self.item.get("index") != change["new"]:
            with self.hold_sync():
                self._show(change["new"])

    @traitlets.observe("item_id")
    def _on_item_id(self, change: dict[str, Any]) -> None:
        if self._ready and self.item.get("id") != change["new"]:
            self.index = self._position[change["new"]]

    # -- filters ---------------------------------------------------------------

    @traitlets.validate("filters")
    def _valid_filters(self, proposal: dict[str, Any]) -> dict[str, Any]:
        value = dict(proposal["value"])
        unknown = sorted(set(value) - set(_FILTER_KEYS))
        if unknown:
            raise traitlets.TraitError(f"filters: unknown keys {unknown}; use {list(_FILTER_KEYS)}")
        try:
            check_filters(**value)
        except InputError as error:
            raise traitlets.TraitError(str(error)) from None
        return value

    @traitlets.observe("filters")
    def _on_filters(self, change: dict[str, Any]) -> None:
        if self._ready:
            self._filter(change["new"])

    def _filter(self, value: dict[str, Any]) -> None:
        filters = check_filters(**value)
        found = [(k, s) for k, s in enumerate(self._order) if filters.keeps(s)]
        with self.hold_sync():
            self.set_trait("match_count", len(found))
            self.set_trait("matches", [match_entry(k, s) for k, s in found[:MAX_LISTED]])

    # -- saving ----------------------------------------------------------------

    def _adjudicate(self, k: int, rule: Any, reason: Any) -> Annotation:
        rule = check_rule(rule, self.annotators)
        if reason is not None and not isinstance(reason, str):
            raise InputError(f"reason={reason!r}: pass a string (or None)")
        shown = self.item
        sources = [row["annotator"] for row in shown["rows"] if row["status"] != "missing"]
        if k != shown.get("index"):
            shown = item_trait(self._store, k, self._order[k], self.annotators, self.as_annotator)
            sources = [row["annotator"] for row in shown["rows"] if row["status"] != "missing"]
        if not sources:
            raise InputError(
                f"item {shown['id']!r}: none of {list(self.annotators)} has annotated it, so "
                "there is nothing to adjudicate"
            )
        if rule not in RULES and rule not in sources:
            raise InputError(
                f"item {shown['id']!r}: {rule!r} has not annotated it; accept one of {sources}"
            )
        saved = self._store.adjudicate(
            shown["id"],
            sources=sources,
            rule=rule,
            as_annotator=self.as_annotator,
            reason=reason or None,
        )
        with self.hold_sync():
            self.rule = rule
            self.reason = ""
            self.set_trait("last_saved", last_saved_trait(saved, rule, reason))
            if k == self.index:
                self._show(k)
        return saved

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") not in (
            "go",
            "adjudicate",
            "filter",
        ):
            return
        self.send(self._answer(content))

    def _answer(self, content: dict[str, Any]) -> dict[str, Any]:
        """Do what the page asks; the reply (sent after the new state)."""
        kind, request = content["type"], content.get("request")
        k = content.get("index")
        try:
            if kind == "filter":
                self.filters = dict(content.get("filters") or {})
                return {"type": "filtered", "request": request, "count": self.match_count}
            if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < self.count:
                raise InputError(f"index {k!r} is not an item: 0..{self.count - 1}")
            if kind == "go":
                self.index = k
                return {"type": "shown", "request": request, "index": self.index}
            if content.get("item_id") != self._order[k].item_id:
                raise InputError(
                    f"the page's item {content.get('item_id')!r} is not item {k} any more: "
                    "nothing was saved"
                )
            saved = self._adjudicate(k, content.get("rule"), content.get("reason") or None)
        except Exception as error:  # never raise into the comm: the page shows it
            log.warning("attnwidget: the page's %s was refused: %s", kind, error)
            return {"type": "refused", "request": request, "message": str(error)}
        return {
            "type": "saved",
            "request": request,
            "index": k,
            "item_id": saved.item_id,
            "revision": saved.revision,
        }

    def _export_replies(self) -> tuple[list[RecordedReply], dict[str, Any] | None]:
        return [], {
            "type": "refused",
            "message": "this is a saved page: it shows one item and cannot move, filter or "
            "save (open the notebook with a running kernel)",
        }

    def _describe_message_part(self, part: str) -> str:
        if part != "item" or not self.item:
            return ""
        return f"item {self.item.get('id')!r} ({len(self.item.get('text', '')):,} characters)"

    def __repr__(self) -> str:
        return (
            f"AdjudicationView(annotators={list(self.annotators)!r}, "
            f"as_annotator={self.as_annotator!r}, index={self.index}, count={self.count}, "
            f"store={str(self._store.path)!r})"
        )
