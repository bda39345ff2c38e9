"""The Annotator's page -> kernel requests: save an item, undo or redo its last
change, go to an item, go to the first left.

Kept apart from the widget class (state) so each stays small; the message
schema is described in :mod:`attnwidget.views.annotate.annotator`.
"""

from __future__ import annotations

import logging
from typing import Any

from attnwidget.errors import InputError

log = logging.getLogger(__name__)

#: The requests the page may send (each answered by :func:`answer_page`).
REQUESTS = ("save", "go", "first", "undo", "redo")


def answer_page(ann: Any, content: dict[str, Any]) -> dict[str, Any]:
    """Do what the page asks of the Annotator ``ann``; the reply to send.

    The reply goes after the next item's state. Nothing raises into the comm: a
    refused request is answered with ``{"type": "refused", "message"}``, which the
    page shows, and changes nothing.
    """
    request, k = content.get("request"), content.get("index")
    try:
        if content["type"] == "first":
            found = ann._order.first_unannotated()
            if found is None:
                raise InputError(f"all {ann.count} items are saved: none is left to do")
            k = found
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < ann.count:
            raise InputError(f"index {k!r} is not an item: 0..{ann.count - 1}")
        if content["type"] in ("go", "first"):
            ann.index = k
            return {"type": "shown", "request": request, "index": ann.index}
        if content.get("item_id") != ann._items[k].id:
            raise InputError(
                f"the page's item {content.get('item_id')!r} is not item {k} "
                f"({ann._items[k].id!r}) any more: nothing was saved"
            )
        if content["type"] in ("undo", "redo"):
            saved = ann._step(k, -1 if content["type"] == "undo" else 1)
        else:
            saved = ann._save(
                k,
                content.get("spans", []),
                content.get("label", ""),
                content.get("note", ""),
                content.get("confidence"),
                content.get("no_evidence", False),
                content.get("seconds"),
            )
    except Exception as error:  # never raise into the comm: the page shows it
        log.warning("attnwidget: the page's %s was refused: %s", content.get("type"), error)
        return {"type": "refused", "request": request, "index": k, "message": str(error)}
    if (
        content["type"] == "save"
        and content.get("advance")
        and ann.index == k
        and k + 1 < ann.count
    ):
        ann.index = k + 1
    return {
        "type": "saved",
        "request": request,
        "index": k,
        "item_id": saved.item_id,
        "revision": saved.revision,
        "progress": list(ann.progress),
    }
