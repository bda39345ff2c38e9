"""Every annotator of a :class:`~attnwidget.annotations.Store` as one ERASER data set.

ERASER (DeYoung et al. 2020; the benchmark's ``rationale_benchmark/utils.py``
reads ``docs/`` and ``{train,val,test}.jsonl``) keeps one rationale per
document, so :func:`attnwidget.annotations.export_eraser` writes one
annotator. :func:`export_eraser_all` writes them all beside the same
``docs/``: ``<split>.jsonl`` holds the gold annotator's rationales (by
default ``"gold"``, the name :meth:`Store.adjudicate` saves under), which is
what ERASER's own scripts read, and ``<split>.<annotator>.jsonl`` every
other annotator's, each in ERASER's annotation format (a store without a
gold annotator has no ``<split>.jsonl``).
:func:`import_eraser_all` reads such a folder back, one annotator per file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from attnwidget.annotations.eraser import export_eraser, import_eraser
from attnwidget.errors import InputError

if TYPE_CHECKING:
    from attnwidget.annotations.store import Store

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


def export_eraser_all(
    store: Store, directory: str | Path, *, split: str = "test", gold: str | None = "gold"
) -> dict[str, Path]:
    """Write ``docs/``, ``<split>.jsonl`` (``gold``'s) and ``<split>.<annotator>.jsonl``
    for every other annotator; return ``{annotator: file}``.

    Annotator names must be file-name safe (letters, digits, ``_`` and ``-``,
    no dot: the dot separates the split from the name); others are refused
    before anything is written (export them one by one with
    ``export_eraser(..., annotator=name, split=...)``).
    """
    names = store.annotators()
    if not names:
        raise InputError("the store has no annotation to export")
    bad = [name for name in names if name != gold and not _NAME.fullmatch(name)]
    if bad:
        raise InputError(
            f"annotator names {bad} cannot be part of an ERASER file name "
            f"({split}.<annotator>.jsonl); export each with export_eraser(..., annotator=name, "
            "split='...')"
        )
    root = Path(directory)
    files = {}
    if gold is not None and gold in names:
        export_eraser(store, root, split=split, annotator=gold)
        files[gold] = root / f"{split}.jsonl"
    for name in names:
        if name != gold:
            export_eraser(store, root, split=f"{split}.{name}", annotator=name)
            files[name] = root / f"{split}.{name}.jsonl"
    return files


def import_eraser_all(
    store: Store, directory: str | Path, *, split: str = "test", gold: str = "gold"
) -> dict[str, int]:
    """Read a folder written by :func:`export_eraser_all`: ``<split>.jsonl`` as
    ``gold``, each ``<split>.<annotator>.jsonl`` as that annotator (one
    :func:`import_eraser` each). Returns ``{annotator: annotations saved}``."""
    root = Path(directory)
    found = {gold: split} if (root / f"{split}.jsonl").is_file() else {}
    for path in sorted(root.glob(f"{split}.*.jsonl")):
        found[path.name[len(split) + 1 : -len(".jsonl")]] = path.name[: -len(".jsonl")]
    if not found:
        raise InputError(f"{root} holds no {split}.jsonl nor {split}.<annotator>.jsonl")
    return {
        name: import_eraser(store, root, annotator=name, splits=(stem,))
        for name, stem in found.items()
    }
