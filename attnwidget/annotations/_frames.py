"""The store's annotations as a pandas DataFrame (:meth:`Store.to_dataframe`)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from attnwidget.annotations._rows import annotation_from_row, columns, rationale_vector

if TYPE_CHECKING:
    import pandas as pd

_NAMES = ["item_id", "annotator", "spans", "label", "note", "confidence", "saved_at"]
_NAMES += ["revision", "item_label", "n_words", "no_evidence", "char_spans"]
_NAMES += ["guidelines_version", "seconds", "suggestion_shown", "granularity"]


def annotations_frame(
    conn: sqlite3.Connection, annotator: str | None, vectors: bool
) -> pd.DataFrame:
    """One row per current (item, annotator) annotation; see :meth:`Store.to_dataframe`."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in the evaluate extra
        raise ImportError(
            "Store.to_dataframe needs pandas: pip install 'attnwidget[evaluate]'"
        ) from None
    where, args = ("", ()) if annotator is None else ("WHERE a.annotator = ?", (annotator,))
    rows = conn.execute(
        f"SELECT {columns('annotations')}, i.label, i.n_words FROM annotations a"
        f" JOIN items i ON i.idx = a.item_idx {where} ORDER BY i.idx, a.annotator",
        args,
    ).fetchall()
    records = []
    for row in rows:
        found = annotation_from_row(row[:16])
        record = {name: getattr(found, name, None) for name in _NAMES}
        record["item_label"], record["n_words"] = row[16], int(row[17])
        if vectors:
            record["rationale"] = rationale_vector(found.spans, int(row[17]))
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=_NAMES + (["rationale"] if vectors else []))
    frame["saved_at"] = pd.to_datetime(frame["saved_at"], utc=True)
    for name in ("confidence", "seconds"):
        frame[name] = frame[name].astype("float64")
    frame["no_evidence"] = frame["no_evidence"].astype(bool)
    return frame
