"""What every view's selection traits mean, and the renames kept for one release.

One convention holds in every view:

- **A selection by position is an int, and -1 means nothing is selected.**
  ``selected_token`` (SaliencyView, HeadView, ModelView, FlowView,
  AttentionMatrixView, CompareView), ``selected_patch`` (ImageView: the patch index,
  ``row * cols + col``), ``selected_step`` (GenerationView),
  ``selected_output`` / ``selected_input`` (AlignmentView). Python never sees
  ``None``, ``[]`` or ``"mean"`` for "nothing": -1 only (a negative index
  never counts from the end in a selection trait). NeuronView always shows one
  query, so its ``selected_token`` is never -1. EvaluationView selects an
  example by its id, a string, and ``""`` is none there.
- **The selected head is the int trait ``head``.** A head id ``0 … H-1``
  means that head; -1 means no single head is selected, and the view then
  shows all heads together: their mean (AttentionMatrixView, ImageView) or
  the grid of every head with none enlarged (ModelView). HeadView shows a
  *set* of heads (``heads``) and keeps ``head`` in step with it: ``head`` is
  the one head shown alone, -1 when several are shown. NeuronView needs one
  head and refuses -1. FlowView fuses heads (``head_fusion``) and has none.
- ``layer`` is an attention layer id ``0 … L-1`` (ModelView: -1 when no head
  is enlarged). FlowView's ``selected_layer`` is a node row ``0 … L`` of the
  flow graph (0 = the input tokens), not an attention layer, hence its name.

Renamed traits and keywords keep their old name for one release: it still
works and raises a :class:`DeprecationWarning` naming the new one
(:func:`renamed_keyword`, :func:`renamed_trait`).
"""

from __future__ import annotations

import warnings
from typing import Any

import traitlets

#: The value of a selection trait when nothing is selected.
NONE = -1

#: The synced selection traits of each view (by its ``_view`` name) whose
#: "nothing selected" value is :data:`NONE`, their default. The page's side
#: (js/src/core/trait_names.ts ``SELECTION_TRAITS``) is checked against this
#: table through the golden fixture tests/test_fixtures_js.py writes.
SELECTION_TRAITS: dict[str, tuple[str, ...]] = {
    "saliency": ("selected_token",),
    "head": ("selected_token",),
    "model": ("layer", "head", "selected_token"),
    "flow": ("selected_token",),
    "matrix": ("head", "selected_token"),
    "image": ("head", "selected_patch"),
    "alignment": ("selected_output", "selected_input"),
    "generation": ("selected_step",),
    "compare": ("selected_token",),
}


def deprecated(old: str, new: str, owner: str, *, stacklevel: int = 3) -> None:
    """Warn that ``owner``'s ``old`` is now ``new`` (kept for one release)."""
    warnings.warn(
        f"{owner}: {old} is deprecated and will be removed in the next release; use {new}.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_keyword(kwargs: dict[str, Any], old: str, new: str, owner: str, given: Any) -> Any:
    """Take the deprecated keyword ``old`` out of a constructor's ``kwargs``.

    Returns the value to use for ``new``: ``given`` (what the caller passed as
    ``new``, None when it passed nothing) when ``old`` is absent, else
    ``old``'s value, with a :class:`DeprecationWarning`. Both given raise
    :class:`TypeError`.
    """
    if old not in kwargs:
        return given
    value = kwargs.pop(old)
    if given is not None:
        raise TypeError(f"{owner}: give {new}= only ({old}= is its deprecated name).")
    deprecated(f"the keyword {old}=", f"{new}=", owner, stacklevel=4)
    return value


def renamed_trait(old: str, new: str) -> property:
    """A property ``old`` that reads and writes the trait ``new``, with a
    :class:`DeprecationWarning` at each use."""

    def get(self: Any) -> Any:
        deprecated(f".{old}", f".{new}", type(self).__name__)
        return getattr(self, new)

    def set_(self: Any, value: Any) -> None:
        deprecated(f".{old}", f".{new}", type(self).__name__)
        setattr(self, new, value)

    return property(get, set_, doc=f"Deprecated name of :attr:`{new}` (kept for one release).")


class Head(traitlets.Int):
    """The ``head`` trait: a head id, or -1 (:data:`NONE`) for no single head.

    ``"mean"``, the old name of -1 in AttentionMatrixView, is still taken for
    one release, with a :class:`DeprecationWarning`.
    """

    default_value = NONE

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, str) and value == "mean":
            deprecated(
                'head="mean"', "head=-1 (the mean over heads)", type(obj).__name__, stacklevel=5
            )
            value = NONE
        return super().validate(obj, value)


def check_token_index(value: Any, n: int) -> int:
    """A ``selected_token`` proposal checked against ``n`` tokens: -1 (none) or
    0 … n−1, else a TraitError that names the range (the page is sent Python's
    value back, so a bad click never leaves the two sides apart)."""
    if isinstance(value, bool):
        raise traitlets.TraitError(f"selected_token must be an int, not {value!r}.")
    if value == -1 or 0 <= value < n:
        return int(value)
    allowed = f"a token index 0..{n - 1}" if n else "no token index (there are no tokens)"
    raise traitlets.TraitError(
        f"selected_token={value} is out of range: use -1 for no selection or {allowed} "
        f"({n} tokens)."
    )
