"""Human rationales: which words of a text a person marked as the reason for its label.

:class:`Store` keeps them in one SQLite file that several notebooks or
processes can write at once and that survives a killed kernel; it reads and
writes ERASER data sets (DeYoung et al., 2020) and gives pandas DataFrames
and 0/1 word vectors for the metrics. Spans are ``(start, end)`` indices into
an item's words (``text.split()``), ``end`` exclusive.

>>> from attnwidget.annotations import Store  # doctest: +SKIP
>>> store = Store("rationales.sqlite", labels=["pos", "neg"])  # doctest: +SKIP
>>> store.add_items([{"id": "r1", "text": "a truly great film"}])  # doctest: +SKIP
>>> store.save("r1", annotator="ana", spans=[(1, 3)], label="pos")  # doctest: +SKIP
"""

from __future__ import annotations

from attnwidget.annotations._rows import Annotation, rationale_vector
from attnwidget.annotations._schema import APPLICATION, SCHEMA_VERSION
from attnwidget.annotations.annotator_agreement import Agreement, agreement
from attnwidget.annotations.eraser import export_eraser, import_eraser
from attnwidget.annotations.store import Store
from attnwidget.annotations.validate import Item
from attnwidget.errors import InputError

__all__ = [
    "APPLICATION",
    "SCHEMA_VERSION",
    "Agreement",
    "Annotation",
    "InputError",
    "Item",
    "Store",
    "agreement",
    "export_eraser",
    "import_eraser",
    "rationale_vector",
]
