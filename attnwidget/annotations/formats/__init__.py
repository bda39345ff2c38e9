"""Annotation tools' file formats to and from a :class:`~attnwidget.annotations.Store`.

One module per format, each citing the tool's documentation it follows:
:mod:`.label_studio` (Label Studio's JSON export), :mod:`.doccano` (doccano's
JSONL), :mod:`.prodigy` (Prodigy's JSONL) and :mod:`.dataset` (a Hugging Face
``datasets.Dataset``). ERASER is :mod:`attnwidget.annotations.eraser`;
:mod:`.eraser_all` writes every annotator and the gold one beside one ``docs/``.

These formats mark **character** offsets (end exclusive); the store keeps
word spans (``text.split()``). Importing marks every word a character span
overlaps, and the returned :class:`ImportReport` lists each span that did not
fall on word boundaries (``rounded``). Exporting writes each word span as the
characters from its first word's start to its last word's end, so a file
whose spans fall on word boundaries round-trips exactly.

Every import reads and checks the whole file first, then writes: a malformed
file, an unknown label, or an item whose id names another text is refused
with nothing written. Re-importing is idempotent: an annotation the store
already holds with the same spans and label is left alone (``unchanged``);
one that differs is refused unless ``on_conflict="replace"`` (a new
revision, the old one kept in history) or ``"keep"`` (the store's wins).
"""

from __future__ import annotations

from attnwidget.annotations.formats._common import ImportReport, RoundedSpan
from attnwidget.annotations.formats.dataset import from_dataset, to_dataset
from attnwidget.annotations.formats.doccano import export_doccano, import_doccano
from attnwidget.annotations.formats.eraser_all import export_eraser_all, import_eraser_all
from attnwidget.annotations.formats.label_studio import export_label_studio, import_label_studio
from attnwidget.annotations.formats.prodigy import export_prodigy, import_prodigy

__all__ = [
    "ImportReport",
    "RoundedSpan",
    "export_doccano",
    "export_eraser_all",
    "export_label_studio",
    "export_prodigy",
    "from_dataset",
    "import_doccano",
    "import_eraser_all",
    "import_label_studio",
    "import_prodigy",
    "to_dataset",
]
