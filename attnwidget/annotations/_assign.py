"""Who annotates what: :meth:`Store.assign` and :meth:`Store.queue`.

The rule. Annotator names are sorted (the order they are given in does not
matter), and the items are taken in store order (:meth:`Store.items`). Each
item goes to the ``overlap`` annotators with the fewest items so far; ties
are broken by a shuffle of the names drawn from ``random.Random(seed)``, one
shuffle per item. So

* the load is balanced: any two annotators' counts differ by at most one;
* the pairs vary from item to item (every pair meets, for agreement);
* it is deterministic for a seed, and an item's annotators depend only on the
  items before it: items added later extend the assignment without moving
  anyone's earlier items.

Kept in the file: the ``assignments`` table (item, annotator) and the
arguments in ``meta`` (key ``assignment``). Calling :meth:`Store.assign`
again with the same annotators, overlap and seed is idempotent (it assigns
the items added since, and nothing else changes); different arguments are
refused unless ``replace=True``, which replaces the whole assignment
(annotations already saved are kept: they are never deleted).
"""

from __future__ import annotations

import json
import operator
import random
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations._base import StoreBase
from attnwidget.errors import InputError


def plan(names: list[str], overlap: int, seed: int, n_items: int) -> list[list[str]]:
    """The annotators of each of ``n_items`` items, by the module's rule."""
    rng = random.Random(seed)
    load = dict.fromkeys(names, 0)
    out = []
    for _ in range(n_items):
        order = list(names)
        rng.shuffle(order)
        chosen = sorted(order, key=load.__getitem__)[:overlap]  # stable: shuffled ties
        for name in chosen:
            load[name] += 1
        out.append(sorted(chosen))
    return out


def _arguments(annotators: Any, overlap: Any, seed: Any) -> dict[str, Any]:
    if isinstance(annotators, (str, bytes, Mapping)) or not isinstance(annotators, Iterable):
        raise InputError(
            f"annotators={annotators!r}: pass a list of names, e.g. ['ana', 'bob', 'cy']"
        )
    names = [_validate.annotator(name) for name in annotators]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(f"annotators: {repeated} appear more than once; list each name once")
    if not names:
        raise InputError("annotators=[]: pass at least one annotator name")
    for what, value in (("overlap", overlap), ("seed", seed)):
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise InputError(f"{what}={value!r}: pass an int")
    k = operator.index(overlap)
    if not 1 <= k <= len(names):
        raise InputError(
            f"overlap={k}: each item goes to k of the {len(names)} annotators, so "
            f"1 <= overlap <= {len(names)}"
        )
    return {"annotators": sorted(names), "overlap": k, "seed": operator.index(seed)}


class AssignMixin(StoreBase):
    """:meth:`assign`, :meth:`assignment` and :meth:`queue`, for :class:`~.store.Store`."""

    def assign(
        self, annotators: Iterable[str], *, overlap: int = 1, seed: int = 0, replace: bool = False
    ) -> dict[str, int]:
        """Give every item to ``overlap`` of ``annotators``, balanced and deterministic
        for ``seed`` (the rule is in :mod:`._assign`); return how many items each has.

        Idempotent: the same annotators (in any order), overlap and seed again
        assign only items added since. Other arguments are refused while an
        assignment exists, unless ``replace=True`` (the old one is dropped;
        saved annotations are kept). One transaction: all items or none.
        """
        wanted = _arguments(annotators, overlap, seed)
        if not isinstance(replace, bool):
            raise InputError(f"replace={replace!r}: pass True or False")
        with self._transaction() as conn:
            stored = self._stored_assignment(conn)
            if stored is not None and stored != wanted and not replace:
                raise InputError(
                    f"{self._path} already assigns its items with {stored}; call assign() with "
                    "those arguments to assign items added since, or pass replace=True to "
                    "replace that assignment (saved annotations are kept)"
                )
            if stored != wanted:
                conn.execute("DELETE FROM assignments")
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('assignment', ?)",
                    (json.dumps(wanted),),
                )
            idxs = [idx for (idx,) in conn.execute("SELECT idx FROM items ORDER BY idx")]
            chosen = plan(wanted["annotators"], wanted["overlap"], wanted["seed"], len(idxs))
            conn.executemany(
                "INSERT OR IGNORE INTO assignments (item_idx, annotator) VALUES (?, ?)",
                [(idx, name) for idx, names in zip(idxs, chosen, strict=True) for name in names],
            )
            counts = dict(
                conn.execute("SELECT annotator, count(*) FROM assignments GROUP BY annotator")
            )
        return {name: int(counts.get(name, 0)) for name in wanted["annotators"]}

    def assignment(self) -> dict[str, Any] | None:
        """The arguments of the stored assignment (``annotators``, sorted, ``overlap``,
        ``seed``), or None when :meth:`assign` was never called."""
        with self._lock:
            return self._stored_assignment(self._connection())

    def queue(self, annotator: str, *, pending: bool = False) -> list[str]:
        """The ids of the items assigned to ``annotator``, in store order
        (``pending=True``: only those they have not saved yet)."""
        who = _validate.annotator(annotator)
        if not isinstance(pending, bool):
            raise InputError(f"pending={pending!r}: pass True or False")
        left = (
            " AND NOT EXISTS (SELECT 1 FROM annotations a WHERE a.annotator = s.annotator"
            " AND a.item_idx = s.item_idx)"
            if pending
            else ""
        )
        with self._transaction("DEFERRED") as conn:
            self._check_assigned(conn, who)
            rows = conn.execute(
                "SELECT i.item_id FROM assignments s JOIN items i ON i.idx = s.item_idx"
                f" WHERE s.annotator = ?{left} ORDER BY s.item_idx",
                (who,),
            )
            return [item_id for (item_id,) in rows]

    # -- helpers for Store.progress and Store.first_unannotated ---------------

    @staticmethod
    def _stored_assignment(conn: sqlite3.Connection) -> dict[str, Any] | None:
        row = conn.execute("SELECT value FROM meta WHERE key = 'assignment'").fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def _check_assigned(self, conn: sqlite3.Connection, who: str) -> None:
        """Refuse an assignment-aware read when there is none, or none for ``who``."""
        stored = self._stored_assignment(conn)
        if stored is None:
            raise InputError(
                f"no items of {self._path} are assigned yet: call "
                "store.assign(['ana', 'bob', ...], overlap=k) first (or leave out "
                "assigned_only=True to use every item)"
            )
        if who not in stored["annotators"]:
            raise InputError(
                f"annotator {who!r} has no assigned items; the assignment names "
                f"{stored['annotators']} (store.assign(..., replace=True) changes it)"
            )
