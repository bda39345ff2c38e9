"""Human rationales: which words of a text a person marked as the reason for its label.

:class:`Store` keeps them in one SQLite file that several notebooks or
processes can write at once and that survives a killed kernel; it reads and
writes ERASER data sets (DeYoung et al., 2020) and gives pandas DataFrames
and 0/1 word vectors for the metrics. Spans are ``(start, end)`` indices into
an item's words (``text.split()``), ``end`` exclusive; every annotation is
also kept as character spans into the text (``char_spans``). Undo is a new
revision (:meth:`Store.revert`), "no evidence" is said explicitly
(``no_evidence=True``), items can be assigned to annotators
(:meth:`Store.assign`, :meth:`Store.queue`) and several annotations
adjudicated into a gold one (:meth:`Store.adjudicate`). The same file keeps
people's judgements of explanations: notes on attention heads and flow edges
(:meth:`Store.head_notes`) and the answers of
:class:`~attnwidget.ExplanationRating` sessions (:meth:`Store.ratings`,
:func:`rating_summary`).

>>> from attnwidget.annotations import Store  # doctest: +SKIP
>>> store = Store("rationales.sqlite", labels=["pos", "neg"])  # doctest: +SKIP
>>> store.add_items([{"id": "r1", "text": "a truly great film"}])  # doctest: +SKIP
>>> store.save("r1", annotator="ana", spans=[(1, 3)], label="pos")  # doctest: +SKIP
"""

from __future__ import annotations

from attnwidget.annotations._adjudicate import Adjudication
from attnwidget.annotations._rows import Annotation, Progress, rationale_vector
from attnwidget.annotations._schema import APPLICATION, SCHEMA_VERSION
from attnwidget.annotations.annotator_agreement import Agreement, agreement
from attnwidget.annotations.eraser import export_eraser, import_eraser
from attnwidget.annotations.judgements import ROLE_SUGGESTIONS, input_hash, plan_trials
from attnwidget.annotations.rating_summary import RatingSummary, rating_summary
from attnwidget.annotations.review import review
from attnwidget.annotations.store import Store
from attnwidget.annotations.validate import Item
from attnwidget.errors import InputError

__all__ = [
    "APPLICATION",
    "ROLE_SUGGESTIONS",
    "SCHEMA_VERSION",
    "Adjudication",
    "Agreement",
    "Annotation",
    "InputError",
    "Item",
    "Progress",
    "RatingSummary",
    "Store",
    "agreement",
    "export_eraser",
    "import_eraser",
    "input_hash",
    "plan_trials",
    "rating_summary",
    "rationale_vector",
    "review",
]
