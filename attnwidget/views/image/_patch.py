"""ImageView's ``selected_patch`` trait: a row-major patch index, -1 for none.

Until this release the trait was ``[row, col]`` (``[]`` for none); that
form is still taken for one release, with a :class:`DeprecationWarning`
(see :mod:`attnwidget.views.core.selection`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import traitlets

from attnwidget.views.core.selection import NONE, deprecated


def patch_of(index: int, cols: int) -> list[int]:
    """``[row, col]`` of the row-major patch ``index`` in a grid ``cols`` wide."""
    return [index // cols, index % cols]


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class PatchIndex(traitlets.Int):
    """An int trait that also takes the old ``[row, col]`` / ``[]`` form (warns)."""

    default_value = NONE

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            value = _from_pair(value, obj)
        return super().validate(obj, value)


def _from_pair(value: Sequence[Any], obj: Any) -> int:
    deprecated(
        "selected_patch=[row, col] (and [] for none)",
        "the patch index row * cols + col (-1 for none)",
        type(obj).__name__,
        stacklevel=6,
    )
    if len(value) == 0:
        return NONE
    rows, cols = obj.grid
    if len(value) == 2 and all(_is_int(v) for v in value):
        if 0 <= value[0] < rows and 0 <= value[1] < cols:
            return int(value[0]) * cols + int(value[1])
    raise traitlets.TraitError(
        f"selected_patch={list(value)!r} is not a patch of the {rows}×{cols} grid: give its "
        f"index row * cols + col (0..{rows * cols - 1}), -1 for none."
    )
