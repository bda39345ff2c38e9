"""Adjudication: one gold annotation from several annotators', by a stated rule.

Rules, on characters (each source's ``char_spans``; a no-evidence source
marks no character):

* ``"majority"``: a character is in when MORE than half of the sources mark
  it. A tie is not a majority: with an even number of sources, a character
  marked by exactly half of them is out (with two sources, majority is
  intersection);
* ``"union"``: a character is in when at least one source marks it;
* ``"intersection"``: when every source marks it;
* an annotator's name (one of the sources): that annotator's marks as they are.

The result's word spans follow from its characters by the store's rule (a
word is in when a character span overlaps it, :mod:`._chars`). When no
character is in, the gold annotation is saved as no evidence. Its label is
the named annotator's (a name rule), else the label more than half of the
sources gave, else None; its granularity is the sources' when they all share
one, else ``"char"``. The gold annotation is an ordinary revision of
``as_annotator`` (history, :meth:`Store.revert` work on it), and the
``adjudications`` / ``adjudication_sources`` tables link it to the exact
source versions (annotator, revision, history id) with the rule and reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any, NamedTuple

from attnwidget.annotations import validate as _validate
from attnwidget.annotations._base import StoreBase
from attnwidget.annotations._chars import char_vector, spans_of, word_offsets, words_from_chars
from attnwidget.annotations._revisions import revision_number
from attnwidget.annotations._rows import (
    Annotation,
    Draft,
    annotation_from_row,
    columns,
    lookup_text,
    with_sources,
    write_in,
)
from attnwidget.errors import InputError

RULES = ("majority", "union", "intersection")
"""The rules besides an annotator's name."""


#: ``adjudicate``'s default label: the one its rule gives (None is a label choice: none).
_BY_RULE: Any = object()


class Adjudication(NamedTuple):
    """How a gold annotation was made: its ``rule``, ``reason`` and ``sources``,
    ``(annotator, revision, id)`` of each source version (``id``: its history row)."""

    rule: str
    reason: str | None
    sources: tuple[tuple[str, int, int], ...]


def _sources(value: Any) -> list[str]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InputError(f"sources={value!r}: pass a list of annotator names, e.g. ['ana', 'bob']")
    names = [_validate.annotator(name) for name in value]
    if not names:
        raise InputError("sources=[]: name the annotators whose annotations to adjudicate")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(f"sources: {repeated} appear more than once; list each name once")
    return names


def combine(found: list[Annotation], rule: str, n_chars: int) -> Any:
    """The 0/1 character mask of the gold annotation (the module's rules)."""
    if rule not in RULES:
        return char_vector(next(a for a in found if a.annotator == rule).char_spans, n_chars)
    counts = sum((char_vector(a.char_spans, n_chars).astype(int) for a in found), start=0)
    if rule == "majority":
        return 2 * counts > len(found)
    return counts >= (1 if rule == "union" else len(found))


class AdjudicateMixin(StoreBase):
    """:meth:`adjudicate` and :meth:`adjudication`, for :class:`~.store.Store`."""

    def adjudicate(
        self,
        item_id: str,
        *,
        sources: Iterable[str],
        rule: str = "majority",
        as_annotator: str = "gold",
        reason: str | None = None,
        label: str | None = _BY_RULE,
    ) -> Annotation:
        """Save ``as_annotator``'s annotation of the item made from the current
        annotations of ``sources`` by ``rule`` (see :mod:`._adjudicate`), linked
        to the exact source versions; return it once committed.

        ``rule`` is ``"majority"`` (a character is in when more than half of the
        sources mark it; exactly half is out), ``"union"``, ``"intersection"``
        or one of the sources' names (their marks). No-evidence sources mark
        nothing. The label is the named source's, or the label more than half
        the sources gave (else none), unless ``label=`` sets it (one of the
        store's labels, or None for none). ``reason`` (free text) is kept with the rule:
        :meth:`adjudication` reads both back. Refused with nothing written:
        a source that has not annotated the item, ``as_annotator`` among the
        sources, an unknown rule. Reads and write are one transaction, so a
        source saved meanwhile by another process cannot slip in between.
        """
        ident = _validate.item_id(item_id)
        names = _sources(sources)
        gold = _validate.annotator(as_annotator)
        if gold in names:
            raise InputError(
                f"as_annotator={gold!r} is also a source; save the result under another "
                "name (as_annotator='gold' by default)"
            )
        if not isinstance(rule, str) or (rule not in RULES and rule not in names):
            raise InputError(
                f"rule={rule!r}: pass one of {list(RULES)} or the name of one of the "
                f"sources {names}"
            )
        why = _validate.note(reason, f"item {ident!r}")
        chosen = (
            label if label is _BY_RULE else _validate.label(label, self.labels, f"item {ident!r}")
        )
        with self._transaction() as conn:
            idx, _, text = lookup_text(conn, ident)
            found: list[Annotation] = []
            for name in names:
                row = conn.execute(
                    f"SELECT {columns('annotations')} FROM annotations a JOIN items i"
                    " ON i.idx = a.item_idx WHERE a.item_idx = ? AND a.annotator = ?",
                    (idx, name),
                ).fetchone()
                if row is not None:
                    found.append(annotation_from_row(row))
            missing = [n for n in names if n not in {a.annotator for a in found}]
            if missing:
                raise InputError(
                    f"item {ident!r}: {missing} have not annotated it, so it cannot be "
                    f"adjudicated from them; pass sources among those who have "
                    f"({[a.annotator for a in found]}), or save theirs first"
                )
            chars = spans_of(combine(found, rule, len(text)))
            words = words_from_chars(chars, word_offsets(text))
            kinds = {a.granularity for a in found}
            draft = Draft(
                words,
                chars,
                not chars,
                _label(found, rule) if chosen is _BY_RULE else chosen,
                granularity=kinds.pop() if len(kinds) == 1 else "char",
            )
            made = write_in(conn, idx, ident, gold, draft, datetime.now(timezone.utc))
            conn.execute(
                "INSERT INTO adjudications (history_id, rule, reason) VALUES (?, ?, ?)",
                (made.id, rule, why),
            )
            conn.executemany(
                "INSERT INTO adjudication_sources (history_id, annotator, revision, source_id)"
                " VALUES (?, ?, ?, ?)",
                [(made.id, a.annotator, a.revision, a.id) for a in found],
            )
            return with_sources(conn, [made])[0]

    def adjudicators(self) -> list[str]:
        """Names whose current version of some item is an adjudication (the gold
        annotators :meth:`adjudicate` wrote), sorted. ``agreement`` and
        ``review`` leave them out unless named: they measure the annotators."""
        with self._transaction("DEFERRED") as conn:
            rows = conn.execute(
                "SELECT DISTINCT a.annotator FROM annotations a"
                " JOIN adjudications j ON j.history_id = a.history_id ORDER BY a.annotator"
            )
            return [name for (name,) in rows]

    def adjudication(
        self, item_id: str, *, annotator: str = "gold", revision: int | None = None
    ) -> Adjudication | None:
        """How ``annotator``'s current version of the item (or ``revision``) was
        adjudicated: rule, reason and source versions; None if it was saved by hand."""
        ident = _validate.item_id(item_id)
        who = _validate.annotator(annotator)
        wanted = None if revision is None else revision_number(revision, "revision")
        with self._transaction("DEFERRED") as conn:
            idx, _, _ = lookup_text(conn, ident)
            if wanted is None:
                row = conn.execute(
                    "SELECT history_id FROM annotations WHERE item_idx = ? AND annotator = ?",
                    (idx, who),
                ).fetchone()
            else:
                row = conn.execute(
                    "SELECT id FROM history WHERE item_idx = ? AND annotator = ? AND revision = ?",
                    (idx, who, wanted),
                ).fetchone()
            if row is None:
                which = "annotation" if wanted is None else f"revision {wanted}"
                raise InputError(
                    f"item {ident!r} has no {which} by {who!r} (store.history({ident!r}, "
                    f"annotator={who!r}) lists the versions there are)"
                )
            made = conn.execute(
                "SELECT rule, reason FROM adjudications WHERE history_id = ?", (row[0],)
            ).fetchone()
            if made is None:
                return None
            used = conn.execute(
                "SELECT annotator, revision, source_id FROM adjudication_sources"
                " WHERE history_id = ? ORDER BY annotator",
                (row[0],),
            ).fetchall()
        return Adjudication(made[0], made[1], tuple((a, int(r), int(s)) for a, r, s in used))


def _label(found: list[Annotation], rule: str) -> str | None:
    if rule not in RULES:
        return next(a.label for a in found if a.annotator == rule)
    counts = Counter(a.label for a in found if a.label is not None)
    if not counts:
        return None
    label, count = counts.most_common(1)[0]
    return label if 2 * count > len(found) else None
