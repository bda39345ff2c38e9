"""The Annotator's undo and redo: each restores a revision with :meth:`Store.revert`.

Per item, a *timeline* of the revisions the annotator moved through and a
position in it (the revision whose marks are current). It starts as the
item's stored history (every revision, oldest first; the last is current).
Undo reverts the item to the revision one step back, redo to the one step
forward: each is an ordinary new revision in the store (``reverted_from``
says which it restores), so nothing is ever deleted, and the new revisions
made by undo and redo do not join the timeline (undo twice goes two saves
back, not back and forth). A save made after an undo drops the steps ahead
of the position (as in an editor) and becomes the newest step.

The timeline lives in the widget, one per item, for the session: a new
Annotator starts each item's timeline from the store's history again.
"""

from __future__ import annotations

from typing import Any

from attnwidget.annotations import Annotation, Store
from attnwidget.errors import InputError


class Timeline:
    """Undo/redo positions of one annotator's items (keyed by the item's id)."""

    def __init__(self, store: Store, annotator: str) -> None:
        self.store = store
        self.annotator = annotator
        self._lines: dict[str, tuple[list[int], int]] = {}

    def _line(self, item_id: str) -> tuple[list[int], int]:
        found = self._lines.get(item_id)
        if found is None:
            revisions = [a.revision for a in self.store.history(item_id, annotator=self.annotator)]
            found = (revisions, len(revisions) - 1)
            self._lines[item_id] = found
        return found

    def state(self, item_id: str, saved: Annotation | None) -> dict[str, Any]:
        """The ``history`` trait of the item: can it undo, redo, and which revision is shown."""
        if saved is None and item_id not in self._lines:
            return {"undo": False, "redo": False, "shown": None}
        revisions, position = self._line(item_id)
        if not revisions:
            return {"undo": False, "redo": False, "shown": None}
        return {
            "undo": position > 0,
            "redo": position < len(revisions) - 1,
            "shown": revisions[position],
        }

    def saved(self, item_id: str, revision: int) -> None:
        """A save made ``revision``: it is the newest step; the steps ahead are dropped."""
        if item_id not in self._lines:
            return  # read from the history (which holds it) when first needed
        revisions, position = self._lines[item_id]
        self._lines[item_id] = ([*revisions[: position + 1], revision], position + 1)

    def step(self, item_id: str, by: int) -> Annotation:
        """Undo (``by=-1``) or redo (``by=1``): revert to that step; the new revision."""
        revisions, position = self._line(item_id)
        target = position + by
        if not 0 <= target < len(revisions):
            what = "undo" if by < 0 else "redo"
            why = "nothing saved earlier than what is shown" if by < 0 else "nothing undone to redo"
            raise InputError(f"item {item_id!r}: no {what}: {why}")
        restored = self.store.revert(item_id, self.annotator, to_revision=revisions[target])
        self._lines[item_id] = (revisions, target)
        return restored
