"""The Explorer's Compare tab: a CompareView of the shown input's methods, computed when shown.

:func:`attnwidget.compare` re-runs the model on perturbed copies of the
input (faithfulness), so the tab computes nothing until it is shown: then a
job in the Explorer's worker thread (:mod:`attnwidget.views.explorer._jobs`,
after any method being computed) compares the methods the Saliency tab
shows, on the shown explanation, with the progress line saying so. While the
tab is shown, a new input or a newly computed method compares again; while
it is hidden, that waits until it is shown again. The CompareView's
``selected_token`` is linked with the other views' pins
(:mod:`attnwidget.views.explorer._links`) while it shows the current input.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from attnwidget.results.explanation import Explanation
from attnwidget.views.explorer._links import Links, pin_token, pinned_token
from attnwidget.views.explorer._text import _message

log = logging.getLogger(__name__)

#: The Compare tab's name among the Explorer's tabs.
COMPARE = "compare"
_WAITING = "The methods are compared when this tab is shown."


class CompareTab:
    """The Compare tab of an Explorer (see the module docstring)."""

    # Set by ExplorerBase / OnDemand.
    _OWNER: str
    _model: Any
    _preprocessor: Any
    _explanation: Explanation | None
    _shown_args: dict[str, Any]
    _lock: threading.RLock
    _generation: int
    _links: Links
    _jobs: Any
    views: dict[str, Any]
    tabs: widgets.Tab
    # OnDemand's (declared, not defined: a mixin's stub would hide them).
    _visible: Callable[[Explanation], list[str]]
    _progress: Callable[..., None]

    def _compare_enabled(self) -> bool:
        """Whether this Explorer has the tab (the text Explorer, for a model with a head)."""
        return False

    def _start_compare(self) -> None:
        self._compare_view: Any = None
        self._comparison: Any = None
        self._compare_key: tuple[int, tuple[str, ...]] | None = None  # what the view shows
        self._compare_queued = False
        self._compare_note = widgets.Label(value=_WAITING)
        self._compare_note.add_class("attnw-explorer-compare-note")
        self._compare_box = widgets.VBox([self._compare_note])
        self._compare_box.add_class("attnw-explorer-compare")

    # -- public API -------------------------------------------------------------

    @property
    def compare_view(self) -> Any:
        """The Compare tab's :class:`~attnwidget.CompareView` (None until first shown)."""
        return self._compare_view

    @property
    def comparison(self) -> Any:
        """The :class:`~attnwidget.Comparison` the Compare tab shows (None until computed)."""
        return self._comparison

    def compare(self, *, wait: bool = True) -> Any:
        """Compare the shown input's methods now, as showing the Compare tab does.

        Returns the :class:`~attnwidget.Comparison` (with ``wait``; else None at
        once). Raises what :func:`attnwidget.compare` raised (also shown in the
        progress line), or :class:`ValueError` when the Explorer has no Compare
        tab or nothing is explained yet.
        """
        if not self._compare_enabled():
            raise ValueError(
                f"this {self._OWNER} has no Compare tab (it compares the methods of a text "
                "explained by a model with a head)."
            )
        if self._explanation is None:
            raise ValueError("nothing is explained yet: give the Explorer a text first.")
        self._jobs.forget_errors()
        self._queue_compare()
        if not wait:
            return None
        self._jobs.wait()
        return self._comparison

    # -- for ExplorerBase -----------------------------------------------------------

    def _extra_tabs(self) -> dict[str, widgets.Widget]:
        """The tabs after the views: the Compare tab, once there is something to compare."""
        if not self._compare_enabled() or not getattr(self, "views", None):
            return {}
        return {COMPARE: self._compare_box}

    def _linked_views(self) -> dict[str, Any]:
        """The views whose pins are linked: the tabs' views, and the CompareView while current."""
        if self._compare_current():
            return {**self.views, COMPARE: self._compare_view}
        return dict(self.views)

    def _compare_if_shown(self) -> None:
        """Compare again if the Compare tab is the one shown (the input or methods changed)."""
        names = [*self.views, *self._extra_tabs()]
        index = self.tabs.selected_index
        if index is not None and 0 <= index < len(names) and names[index] == COMPARE:
            self._queue_compare()

    def _on_tab(self, _change: dict[str, Any]) -> None:
        self._compare_if_shown()

    # -- internals ----------------------------------------------------------------

    def _compare_current(self) -> bool:
        key = self._compare_key
        return self._compare_view is not None and key is not None and key[0] == self._generation

    def _queue_compare(self) -> None:
        with self._lock:
            if self._compare_queued or self._explanation is None:
                return
            self._compare_queued = True
        self._jobs.submit(self._compare_job)

    def _compare_job(self) -> None:
        """Compare the shown explanation's visible methods and show them (the worker thread)."""
        from attnwidget.evaluation.compare import compare

        with self._lock:
            self._compare_queued = False
            shown, generation = self._explanation, self._generation
            names = self._visible(shown) if shown is not None else []
            args = dict(self._shown_args)
            key = (generation, tuple(names))
            if shown is None or key == self._compare_key:
                return
            if self._compare_key is None or self._compare_key[0] != generation:
                self._note("Comparing the methods…")  # the view showed another input
        if len(names) < 2:
            self._note("Compare needs at least two methods: pick another one above.")
            self._compare_key = key
            return
        self._progress(
            f"Comparing {len(names)} methods on {len(shown.tokens)} tokens (faithfulness re-runs "
            "the model on perturbed copies)…"
        )
        start = time.perf_counter()
        try:
            comparison = compare(
                shown,
                tokenizer=self._preprocessor,
                model=self._model,
                methods=names,
                text_pair=args.get("text_pair"),
                truncation=bool(args.get("truncation", False)),
            )
        except Exception as error:
            log.warning("attnwidget %s: compare failed: %s", self._OWNER, error, exc_info=True)
            self._progress(f"Compare failed: {_message(error)}", error=True)
            self._note(f"Compare failed: {_message(error)}")
            self._compare_key = key  # not again for this input and these methods
            raise
        with self._lock:
            if generation != self._generation:  # a new input meanwhile: compare that one
                self._queue_compare()
                return
            self._show_comparison(comparison)
            self._compare_key = key
        self._progress(f"Compare: {len(names)} methods in {time.perf_counter() - start:.1f} s.")

    def _show_comparison(self, comparison: Any) -> None:
        from attnwidget.views.compare.compare_view import CompareView

        view = self._compare_view
        with self._links.paused():
            if view is None:
                view = CompareView(comparison)
                view.observe(self._on_compare_token, names="selected_token")
                self._compare_view = view
            else:
                view.set_comparison(comparison)
            saliency = self.views.get("saliency")
            pin_token(view, pinned_token(saliency) if saliency is not None else None)
        self._comparison = comparison
        self._compare_box.children = [view]

    def _on_compare_token(self, _change: dict[str, Any]) -> None:
        if self._compare_current():  # a view of an older input pins nothing
            self._links.spread(self._compare_view)

    def _note(self, text: str) -> None:
        self._compare_note.value = text
        if list(self._compare_box.children) != [self._compare_note]:
            self._compare_box.children = [self._compare_note]
