"""Linked selection: a token pinned in one of the Explorer's views is pinned in every view.

Each view names its pinned token in its own trait; :data:`SELECTION` is the
one place that knows those names and each one's "nothing pinned" value, so a
renamed trait is a one-line change here. FlowView selects a node (layer,
token); its input tokens are the nodes of layer 0, so a token pinned
elsewhere selects (0, token) there, and a node of layer 0 selected in the
diagram pins its token everywhere (a node of a higher layer is a hidden
state, not a token: selecting one unpins the others). ImageView pins a
patch (its row-major index), which is the token at that grid position (the
special tokens are not patches, so pinning one unpins the image).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import traitlets

log = logging.getLogger(__name__)

#: A view's ``_view`` name -> the trait holding its pinned token. Its "nothing
#: pinned" value is the trait's default (-1 in every view).
SELECTION: dict[str, str] = {
    "saliency": "selected_token",
    "flow": "selected_token",
    "head": "selected_token",
    "model": "selected_token",
    "matrix": "selected_token",
    "image": "selected_patch",
    "compare": "selected_token",
}


def selection_trait(view: Any) -> tuple[str, Any] | None:
    """(trait name, nothing-pinned value) of ``view``'s pinned token, or None."""
    name = SELECTION.get(str(getattr(view, "_view", "")))
    if name is None or not view.has_trait(name):
        return None
    return name, view.trait_defaults(name)


def _patches(view: Any) -> list[int]:
    """ImageView: the token positions of the patches, in grid order."""
    exp = view.explanation
    special = set(exp.special_tokens)
    return [i for i in range(len(exp.tokens)) if i not in special]


def pinned_token(view: Any) -> int | None:
    """The token ``view`` pins (an index into the explanation's tokens), or None."""
    found = selection_trait(view)
    if found is None:
        return None
    name, nothing = found
    value = getattr(view, name)
    if value == nothing or (view._view == "flow" and view.selected_layer != 0):
        return None
    if view._view == "image":  # the patch's row-major index
        patches = _patches(view)
        index = int(value)
        return patches[index] if 0 <= index < len(patches) else None
    return int(value)


def pin_token(view: Any, token: int | None) -> None:
    """Pin ``token`` in ``view`` (None: unpin); a view that cannot pin it now is left."""
    found = selection_trait(view)
    if found is None or pinned_token(view) == token:
        return
    name, nothing = found
    try:
        if view._view == "flow":
            view.select(0, nothing if token is None else token)
        elif view._view == "image":  # a special token is no patch: the image unpins
            patches = _patches(view)
            setattr(view, name, patches.index(token) if token in patches else nothing)
        else:
            setattr(view, name, nothing if token is None else token)
    except (traitlets.TraitError, ValueError) as error:
        # e.g. ModelView pins only in an enlarged head; HeadView's decoder rows
        log.debug("Explorer: %s cannot pin token %s now: %s", type(view).__name__, token, error)


class Links:
    """Keeps the pinned token of a set of views in step (see :func:`pin_token`)."""

    def __init__(self, views: Callable[[], dict[str, Any]]) -> None:
        self._views = views
        self._quiet = False

    def watch(self, view: Any) -> None:
        """Spread the pins made in ``view`` (in the page or from Python) to the others."""
        found = selection_trait(view)
        if found is None:
            return
        names = [found[0]] + (["selected_layer"] if view._view == "flow" else [])
        view.observe(lambda _change, source=view: self.spread(source), names=names)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No spreading while the Explorer itself hands the views a new explanation."""
        quiet, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = quiet

    def spread(self, source: Any) -> None:
        """Pin ``source``'s token in every other view."""
        if not self._quiet:
            self.pin(pinned_token(source), skip=source)

    def pin(self, token: int | None, *, skip: Any = None) -> None:
        """Pin ``token`` (None: unpin) in every view but ``skip``."""
        with self.paused():  # the views set here must not spread back
            for view in self._views().values():
                if view is not skip:
                    pin_token(view, token)
