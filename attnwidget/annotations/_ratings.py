"""People judging explanations: rating sessions and their answers (schema 4).

:meth:`Store.start_rating_session` records a session of an
:class:`~attnwidget.ExplanationRating` (its mode, seed, whether method names
were shown and the seeded order of its trials) and :meth:`Store.save_rating`
one answer, each in its own transaction that has committed when the call
returns. Answers are append-only: answering a trial again adds a row, and
:meth:`Store.ratings` lists the latest per (session, position) by default.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations._base import StoreBase
from attnwidget.annotations.judgements import MODES
from attnwidget.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

RATING_COLUMNS = (
    "id",
    "session",
    "position",
    "annotator",
    "mode",
    "seed",
    "input_hash",
    "input_text",
    "methods",
    "method_shown",
    "explanation_shown",
    "rating",
    "chosen",
    "chosen_side",
    "predicted",
    "actual",
    "correct",
    "note",
    "seconds",
    "saved_at",
)
"""The columns of :meth:`Store.ratings` (``methods`` as a list)."""


def _answer(mode: str, trial: dict[str, Any], answer: dict[str, Any]) -> tuple[Any, ...]:
    """(rating, chosen, chosen_side, predicted, actual, correct) of a checked answer."""
    methods = list(trial["methods"])
    if mode == "rate":
        rating = answer.get("rating")
        if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
            raise InputError(f"rating={rating!r}: pass an int from 1 to 5")
        return rating, None, None, None, None, None
    if mode == "compare":
        side = answer.get("side")
        if side not in ("left", "right"):
            raise InputError(f"side={side!r}: pass 'left' or 'right' (the side picked)")
        return None, methods[0 if side == "left" else 1], side, None, None, None
    predicted = answer.get("predicted")
    if not isinstance(predicted, str) or not predicted:
        raise InputError(f"predicted={predicted!r}: pass the output predicted (a label)")
    actual = str(trial["actual"])
    return None, None, None, predicted, actual, int(predicted == actual)


class RatingsMixin(StoreBase):
    """Rating sessions and answers, for :class:`~.store.Store`."""

    def start_rating_session(
        self,
        *,
        annotator: str,
        mode: str,
        seed: int,
        show_method: bool,
        methods: list[str],
        trials: list[dict[str, Any]],
    ) -> str:
        """Record a new session and its trials (in the order shown); return its id.

        Each trial is a dict with at least ``input_hash``, ``input_text``,
        ``methods`` (rate and simulate: one method; compare: ``[left,
        right]``) and ``explanation_shown`` (simulate's control condition:
        False), and for simulate ``actual`` (the model's output).
        """
        who = _validate.annotator(annotator)
        if mode not in MODES:
            raise InputError(f"mode={mode!r}: pass one of {list(MODES)}")
        session = uuid.uuid4().hex
        now = datetime.now(timezone.utc).isoformat()
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO rating_sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session,
                    who,
                    mode,
                    int(seed),
                    int(bool(show_method)),
                    json.dumps(list(methods), ensure_ascii=False),
                    json.dumps(trials, ensure_ascii=False),
                    now,
                ),
            )
        return session

    def rating_session(self, session: str) -> dict[str, Any]:
        """A session as recorded: annotator, mode, seed, show_method, methods, trials."""
        with self._transaction("DEFERRED") as conn:
            row = conn.execute(
                "SELECT annotator, mode, seed, show_method, methods, trials, created_at "
                "FROM rating_sessions WHERE session = ?",
                (session,),
            ).fetchone()
        if row is None:
            raise InputError(f"no rating session {session!r} in {self._path}")
        who, mode, seed, shown, methods, trials, created = row
        return {
            "session": session,
            "annotator": who,
            "mode": mode,
            "seed": seed,
            "show_method": bool(shown),
            "methods": json.loads(methods),
            "trials": json.loads(trials),
            "created_at": created,
        }

    def save_rating(
        self,
        session: str,
        position: int,
        *,
        answer: dict[str, Any],
        note: str = "",
        seconds: float | None = None,
    ) -> dict[str, Any]:
        """Save the answer to trial ``position`` of ``session``; return the saved row.

        ``answer``: ``{"rating": 1..5}`` (rate), ``{"side": "left"|"right"}``
        (compare) or ``{"predicted": label}`` (simulate; scored against the
        trial's ``actual``). Committed when this returns; bad input raises
        ``InputError`` and writes nothing.
        """
        text = _validate.note(note, f"rating {position}") or ""
        spent = _validate.seconds(seconds, f"rating {position}")
        info = self.rating_session(session)
        trials = info["trials"]
        if isinstance(position, bool) or not isinstance(position, int):
            raise InputError(f"position={position!r}: pass the trial's position (an int)")
        if not 0 <= position < len(trials):
            raise InputError(f"position={position} is out of range 0..{len(trials) - 1}")
        trial = trials[position]
        mode = info["mode"]
        row = (
            session,
            position,
            info["annotator"],
            mode,
            info["seed"],
            trial["input_hash"],
            trial["input_text"],
            json.dumps(trial["methods"], ensure_ascii=False),
            int(info["show_method"]),
            int(bool(trial["explanation_shown"])),
            *_answer(mode, trial, answer),
            text,
            spent,
            datetime.now(timezone.utc).isoformat(),
        )
        with self._transaction() as conn:
            cursor = conn.execute(
                f"INSERT INTO ratings ({', '.join(RATING_COLUMNS[1:])}) "
                f"VALUES ({', '.join('?' * len(row))})",
                row,
            )
            ident = cursor.lastrowid
        saved = dict(zip(RATING_COLUMNS, (ident, *row), strict=True))
        saved["methods"] = list(trial["methods"])
        return saved

    def rating_rows(self, mode: str | None = None, *, latest: bool = True) -> list[dict[str, Any]]:
        """:meth:`ratings` as a list of dicts (``methods`` parsed), oldest first."""
        if mode is not None and mode not in MODES:
            raise InputError(f"mode={mode!r}: pass one of {list(MODES)} or None")
        where, args = ("WHERE mode = ?", [mode]) if mode is not None else ("", [])
        sql = f"SELECT {', '.join(RATING_COLUMNS)} FROM ratings {where} ORDER BY id"
        if latest:
            sql = (
                f"SELECT {', '.join(RATING_COLUMNS)} FROM ratings WHERE id IN ("
                f"SELECT max(id) FROM ratings {where} GROUP BY session, position) ORDER BY id"
            )
        with self._transaction("DEFERRED") as conn:
            rows = conn.execute(sql, args).fetchall()
        found = [dict(zip(RATING_COLUMNS, row, strict=True)) for row in rows]
        for row in found:
            row["methods"] = json.loads(row["methods"])
            for key in ("method_shown", "explanation_shown"):
                row[key] = bool(row[key])
            if row["correct"] is not None:
                row["correct"] = bool(row["correct"])
        return found

    def ratings(self, mode: str | None = None, *, latest: bool = True) -> pd.DataFrame:
        """Every answer of every rating session (``mode``: only that mode's), oldest
        first, as a DataFrame with columns :data:`RATING_COLUMNS`; ``latest=True``
        keeps the last answer per (session, position)."""
        import pandas as pd

        return pd.DataFrame(self.rating_rows(mode, latest=latest), columns=list(RATING_COLUMNS))
