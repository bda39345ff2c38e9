"""Notes on attention heads and flow edges: :meth:`Store.save_head_note`,
:meth:`Store.head_notes` (schema 4, table ``head_notes``).

A note names its target by model (``model_name``), layer and either a head
(HeadView, ModelView) or an edge ``(from_token, to_token)`` between layer
``layer`` and ``layer + 1`` of FlowView's diagram, plus the input it was made
on (:func:`~.judgements.input_hash` of its tokens, and their text). Saving is
append-only, like annotations: every save is a new row, committed before the
call returns; the latest row of a (target, input, annotator) is its current
note, and :meth:`head_notes` lists those by default.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations._base import StoreBase
from attnwidget.annotations.judgements import input_hash, input_text
from attnwidget.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

NOTE_COLUMNS = (
    "id",
    "model_name",
    "kind",
    "layer",
    "head",
    "from_token",
    "to_token",
    "input_hash",
    "input_text",
    "role",
    "note",
    "annotator",
    "saved_at",
)
"""The columns of :meth:`Store.head_notes` (and of the ``head_notes`` table)."""


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise InputError(f"{what}={value!r}: pass an int >= 0")
    try:
        number = operator.index(value)
    except TypeError:
        raise InputError(f"{what}={value!r}: pass an int >= 0") from None
    if number < 0:
        raise InputError(f"{what}={number}: pass an int >= 0")
    return int(number)


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{what} is a {type(value).__name__}; pass a string")
    return _validate.encodable(value, what, "head note")


def model_name_option(value: Any) -> str:
    """A model name: a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            f"model_name={value!r}: pass the model's name, a non-empty string "
            "(e.g. 'bert-base-uncased')"
        )
    return _validate.encodable(value, "model_name", "head note")


class HeadNotesMixin(StoreBase):
    """:meth:`save_head_note` and :meth:`head_notes`, for :class:`~.store.Store`."""

    def save_head_note(
        self,
        model_name: str,
        *,
        layer: int,
        head: int | None = None,
        edge: tuple[int, int] | None = None,
        tokens: Sequence[str],
        role: str = "",
        note: str = "",
        annotator: str,
    ) -> dict[str, Any]:
        """Save a role and note for a head (``head=``) or a flow edge (``edge=(from,
        to)`` token positions) of ``layer`` of ``model_name``, made on the input
        ``tokens``. Give exactly one of ``head`` and ``edge``; ``role`` or
        ``note`` must say something. Returns the saved row (as
        :meth:`head_notes` lists it) once committed; bad input raises
        ``InputError`` and writes nothing.
        """
        name = model_name_option(model_name)
        who = _validate.annotator(annotator)
        if (head is None) == (edge is None):
            raise InputError("save_head_note: give head= (a head) or edge=(from, to), not both")
        layer = _int(layer, "layer")
        kind = "head" if head is not None else "edge"
        head_id = None if head is None else _int(head, "head")
        pair: tuple[int | None, int | None] = (None, None)
        if edge is not None:
            try:
                start, end = edge
            except (TypeError, ValueError):
                raise InputError(f"edge={edge!r}: pass (from_token, to_token)") from None
            pair = (_int(start, "edge from_token"), _int(end, "edge to_token"))
        words = [str(t) for t in tokens]
        if not words:
            raise InputError("save_head_note: tokens is empty; pass the input's tokens")
        for k in (pair[0], pair[1]):
            if k is not None and k >= len(words):
                raise InputError(f"edge={edge!r}: token {k} is out of range 0..{len(words) - 1}")
        role_text, note_text = _text(role, "role").strip(), _text(note, "note")
        if not role_text and not note_text.strip():
            raise InputError("save_head_note: role and note are both empty; write one of them")
        row = (
            name,
            kind,
            layer,
            head_id,
            *pair,
            input_hash(words),
            _validate.encodable(input_text(words), "input text", "head note"),
            role_text,
            note_text,
            who,
            datetime.now(timezone.utc).isoformat(),
        )
        with self._transaction() as conn:
            cursor = conn.execute(
                f"INSERT INTO head_notes ({', '.join(NOTE_COLUMNS[1:])}) "
                f"VALUES ({', '.join('?' * len(row))})",
                row,
            )
            ident = cursor.lastrowid
        return dict(zip(NOTE_COLUMNS, (ident, *row), strict=True))

    def head_note_rows(
        self, model_name: str | None = None, *, latest: bool = True
    ) -> list[dict[str, Any]]:
        """:meth:`head_notes` as a list of dicts (oldest first)."""
        where, args = "", []
        if model_name is not None:
            where, args = "WHERE model_name = ?", [model_name_option(model_name)]
        sql = f"SELECT {', '.join(NOTE_COLUMNS)} FROM head_notes {where} ORDER BY id"
        if latest:
            sql = (
                f"SELECT {', '.join(NOTE_COLUMNS)} FROM head_notes WHERE id IN ("
                "SELECT max(id) FROM head_notes "
                f"{where} GROUP BY model_name, kind, layer, head, from_token, to_token, "
                "input_hash, annotator) ORDER BY id"
            )
        with self._transaction("DEFERRED") as conn:
            rows = conn.execute(sql, args).fetchall()
        return [dict(zip(NOTE_COLUMNS, row, strict=True)) for row in rows]

    def head_notes(self, model_name: str | None = None, *, latest: bool = True) -> pd.DataFrame:
        """The notes on heads and edges of ``model_name`` (None: every model) as a
        DataFrame with columns :data:`NOTE_COLUMNS`, oldest first.

        ``latest=True`` (default) keeps each annotator's current note per target
        and input; ``latest=False`` lists every save. ``head`` is None for edge
        notes, ``from_token``/``to_token`` None for head notes.
        """
        import pandas as pd

        rows = self.head_note_rows(model_name, latest=latest)
        frame = pd.DataFrame(rows, columns=list(NOTE_COLUMNS))
        for column in ("head", "from_token", "to_token"):
            frame[column] = frame[column].astype("Int64")
        return frame
