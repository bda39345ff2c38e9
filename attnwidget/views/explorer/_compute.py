"""Methods computed when picked: the Explorer's method buttons, its jobs and its progress line.

Each offered method has a button. The fast methods (one forward and one
backward pass) are computed before the first drawing; a slower one (lrp,
chefer2021, flow, integrated gradients, blank-out) is computed when its
button, or the Paths picker, asks for it: in a worker thread
(:mod:`attnwidget.views.explorer._jobs`), its button reading "computing…"
and the progress line saying what runs, then how long it took or why it
failed (the error is also logged and raised by :meth:`OnDemand.wait`).

The numbers are those of computing the method up front: the job calls
:func:`attnwidget.explain` on the same input with the same target and
options, asking for that method only, and adds its scores and details to
the shown explanation (each method's scores depend only on the input, the
target and its own options). One method per job, so that a new input waits
for at most one method; a job whose input changed while it ran runs again
for the new one, and the methods picked for one input are computed again
for the next.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import threading
import time
from functools import partial
from typing import Any

import ipywidgets as widgets

from attnwidget.errors import InputError, ModelNotSupportedError, UnknownMethodError
from attnwidget.methods import available_methods, get_method
from attnwidget.pipeline.explain import explain
from attnwidget.results.explanation import Explanation
from attnwidget.views.explorer._jobs import Jobs
from attnwidget.views.explorer._methods import (
    RELEVANCE,
    check_names,
    check_options,
    default_on_demand,
    fast_methods,
    options_for,
    relevance_refusals,
)
from attnwidget.views.explorer._text import _message

log = logging.getLogger(__name__)

#: Methods a FlowView draws paths of once the explanation holds them.
_PATH_METHODS = ("lrp", "chefer2021", "effective_attention", "attention_norm")
_ERROR_COLOR = "#d55e00"


def merged(shown: Explanation, more: Explanation, names: list[str]) -> Explanation:
    """``shown`` with the scores, details and options of ``names`` taken from ``more``."""

    def take(mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
        return {**mine, **{name: theirs[name] for name in names if name in theirs}}

    return dataclasses.replace(
        shown,
        scores=take(shown.scores, more.scores),
        details=take(shown.details, more.details),
        method_options=take(shown.method_options, more.method_options),
        pair_scores=take(shown.pair_scores, more.pair_scores),
        pair_details=take(shown.pair_details, more.pair_details),
    )


class OnDemand:
    """The Explorer's methods: which are offered, their buttons and their jobs."""

    # Set by ExplorerBase / the subclasses.
    _OWNER: str
    _model: Any
    _preprocessor: Any
    _explanation: Explanation | None
    _shown_args: dict[str, Any]
    _guard: threading.local
    _lock: threading.RLock
    _generation: int
    _flow_method: str
    views: dict[str, Any]
    method_picker: widgets.Dropdown
    computing: str
    progress: str

    @property
    def _busy(self) -> bool:
        """True while this thread sets the controls from code (observers then do nothing)."""
        return bool(getattr(self._guard, "busy", False))

    @_busy.setter
    def _busy(self, value: bool) -> None:
        self._guard.busy = value

    def _update(self, explanation: Explanation, added: list[str]) -> None:
        raise NotImplementedError

    def _configure(
        self, methods: Any, on_demand: Any, method_options: Any, modes: tuple[str, ...]
    ) -> None:
        """Check the method arguments for every mode the input can put the widget in."""
        self._user_fast = check_names(methods, "methods")
        self._user_on_demand = check_names(on_demand, "on_demand")
        self._refused: dict[str, str] = {}
        offered = [name for mode in modes for name in self._offered(mode)]
        self._options = check_options(method_options, offered, self._OWNER)

    def _start_on_demand(self) -> None:
        self._jobs = Jobs(f"attnwidget {self._OWNER}")
        self._picked: list[str] = []  # on-demand methods asked for, in order
        self._hidden: set[str] = set()  # computed methods turned off in the page
        self._queued: list[str] = []  # waiting or running
        self._checking: set[str] = set()  # relevance methods whose check is queued or done
        self._buttons: dict[str, widgets.ToggleButton] = {}
        self.method_buttons = widgets.HBox([])
        self.method_buttons.add_class("attnw-explorer-methods")
        self.progress_line = widgets.Label(value="")
        self.progress_line.add_class("attnw-explorer-progress")

    # -- public API -------------------------------------------------------------

    @property
    def methods(self) -> list[str]:
        """The methods offered now: those drawn first, then those computed when picked."""
        fast = self._fast()
        return fast + [name for name in self._on_demand() if name not in fast]

    def compute(self, *names: str, wait: bool = True) -> Explanation | None:
        """Compute ``names`` for the shown input, as picking them in the page does.

        The methods are also shown, and computed again for each new input.
        With ``wait=False`` this returns at once (the page's way); the
        numbers are those of ``explain(..., methods=[...all of them])``.

        Raises:
            InputError: a method this Explorer does not offer (with the ones it
                does); UnknownMethodError for a name no method has.
            Exception: with ``wait``, what the computation raised (also shown in
                the progress line).
        """
        offered = self.methods
        for name in names:
            if name in offered:
                continue
            close = difflib.get_close_matches(name, offered, n=1)
            why = self._refused.get(name)
            message = (
                f"{name!r} is not offered by this {self._OWNER}"
                + (f": {why}" if why else "")
                + (f" (did you mean {close[0]!r}?)" if close and not why else "")
                + f"; it offers: {', '.join(offered)}."
            )
            if name not in available_methods():
                raise UnknownMethodError(message)
            raise InputError(message)
        for name in names:
            self._hidden.discard(name)
            if name not in self._picked and name not in self._fast():
                self._picked.append(name)
        if wait:  # raise this call's errors, not those of earlier picks (shown, logged)
            self._jobs.forget_errors()
        explanation = self._explanation
        if explanation is not None:
            self._queue([name for name in names if name not in explanation.scores])
            if all(name in explanation.scores for name in names):
                self._show_visible()
        self._refresh_buttons()
        if wait:
            self.wait()
        return self._explanation

    def wait(self, timeout: float | None = None) -> None:
        """Wait until the methods being computed are shown; raise what one raised."""
        self._jobs.wait(timeout)

    # -- which methods --------------------------------------------------------------

    def _mode(self) -> str:
        return "head"

    def _fast(self, mode: str | None = None) -> list[str]:
        mode = self._mode() if mode is None else mode
        return list(self._user_fast if self._user_fast is not None else fast_methods(mode))

    def _on_demand(self, mode: str | None = None) -> list[str]:
        """The on-demand methods of ``mode`` that are not refused for this model."""
        mode = self._mode() if mode is None else mode
        given = self._user_on_demand
        names = list(given if given is not None else default_on_demand(mode))
        return [name for name in names if not self._refused.get(name)]

    def _offered(self, mode: str) -> list[str]:
        fast = self._fast(mode)
        return fast + [name for name in self._on_demand(mode) if name not in fast]

    def _visible(self, explanation: Explanation) -> list[str]:
        names = [name for name in explanation.scores if name not in self._hidden]
        return names or list(explanation.scores)

    # -- jobs -------------------------------------------------------------------

    def _after_run(self) -> None:
        """After a new input is shown: the relevance checks (once), then the picked methods."""
        unchecked = [
            name
            for name in RELEVANCE
            if name in self._on_demand() and name not in self._refused.keys() | self._checking
        ]
        if unchecked:  # after the first drawing, in the background
            self._checking.update(unchecked)
            self._jobs.submit(partial(self._check_job, unchecked))
        wanted = [name for name in self._picked if name in self._on_demand()]
        self._queue(wanted)
        self._refresh_buttons()

    def _queue(self, names: list[str]) -> None:
        for name in names:
            if name in self._queued:
                continue
            self._queued.append(name)
            self._jobs.submit(partial(self._job, name))
        self.computing = ", ".join(self._queued)

    def _check_job(self, names: list[str]) -> None:
        self._progress(f"Checking that {' and '.join(names)} run on this model…")
        try:
            refusals = relevance_refusals(self._model, names)
        except Exception as error:  # e.g. an engine that fails to import: shown, raised
            log.warning("attnwidget %s: checking %s failed", self._OWNER, names, exc_info=True)
            self._progress(f"Checking {' and '.join(names)} failed: {_message(error)}", error=True)
            raise
        self._refused.update(refusals)
        refused = [name for name, why in refusals.items() if why]
        self._progress(
            f"Not offered (the model does not support them): {', '.join(refused)}."
            if refused
            else ""
        )
        with self._lock:
            self._refresh_buttons()
            self._refresh_paths()

    def _job(self, name: str) -> None:
        """Compute ``name`` for the shown input and show it (runs in the worker thread)."""
        with self._lock:
            shown, args = self._explanation, dict(self._shown_args)
            generation = self._generation
            done = shown is None or name in shown.scores or name not in self._picked
        if done or self._refused.get(name):
            self._done(name)
            if self._refused.get(name) and name in self._picked:
                self._picked.remove(name)
                why = self._refused[name]
                self._progress(f"{name} does not run on this model: {why}", error=True)
                raise ModelNotSupportedError(f"{name} does not run on this model: {why}")
            return
        rest = [other for other in self._queued if other != name]
        n = len(shown.tokens) if shown is not None else 0
        self._progress(
            f"Computing {name} for {n} tokens…" + (f" (then {', '.join(rest)})" if rest else "")
        )
        start = time.perf_counter()
        try:
            more = explain(
                self._model,
                self._preprocessor,
                **args,
                methods=[name],
                method_options=options_for(self._options, [name]),
            )
        except Exception as error:
            self._done(name)
            if name in self._picked:
                self._picked.remove(name)
            log.warning("attnwidget %s: %s failed: %s", self._OWNER, name, error, exc_info=True)
            self._progress(f"{name} failed: {_message(error)}", error=True)
            raise
        with self._lock:
            if generation != self._generation:
                self._jobs.submit(partial(self._job, name))  # again, for the new input
                return
            assert self._explanation is not None
            explanation = merged(self._explanation, more, [name])
            self._explanation = explanation
            self._update(explanation, [name])
            self._done(name)
        seconds = time.perf_counter() - start
        self._progress(f"{name}: computed in {seconds:.1f} s." if not self._queued else "")

    def _done(self, name: str) -> None:
        if name in self._queued:
            self._queued.remove(name)
        self.computing = ", ".join(self._queued)
        self._refresh_buttons()

    def _progress(self, text: str, *, error: bool = False) -> None:
        self.progress = text
        self.progress_line.style.text_color = _ERROR_COLOR if error else None

    # -- the buttons --------------------------------------------------------------

    def _refresh_buttons(self) -> None:
        explanation = self._explanation
        scores = explanation.scores if explanation is not None else {}
        busy, self._busy = self._busy, True
        try:
            children = []
            for name in self.methods:
                button = self._buttons.get(name)
                if button is None:
                    button = widgets.ToggleButton(description=name)
                    button.observe(partial(self._on_button, name), names="value")
                    self._buttons[name] = button
                computing = name in self._queued
                checking = name in RELEVANCE and name not in self._refused and name not in scores
                button.value = computing or (name in scores and name not in self._hidden)
                button.description = f"{name} (computing…)" if computing else name
                button.disabled = computing
                summary = _summary(name)
                button.tooltip = (
                    summary
                    + (" (click to compute)" if name not in scores and not computing else "")
                    + (
                        " (checking that it runs on this model)"
                        if checking and self._jobs.busy
                        else ""
                    )
                )
                children.append(button)
            if list(self.method_buttons.children) != children:
                self.method_buttons.children = children
        finally:
            self._busy = busy

    def _on_button(self, name: str, change: dict[str, Any]) -> None:
        if self._busy:
            return
        if change["new"]:
            self.compute(name, wait=False)
            return
        explanation = self._explanation
        if explanation is None or name not in explanation.scores:
            return
        if self._visible(explanation) == [name]:  # the saliency view shows at least one
            self._refresh_buttons()
            return
        self._hidden.add(name)
        self._show_visible()

    def _show_visible(self) -> None:
        with self._lock:
            view, explanation = self.views.get("saliency"), self._explanation
            if view is not None and explanation is not None:
                view.set_explanation(explanation, methods=self._visible(explanation))

    def _on_method(self, change: dict[str, Any]) -> None:
        """The Paths picker: draw a method's paths, computing the method first if needed."""
        if self._busy:
            return
        name = change["new"]
        self._flow_method = name
        flow = self.views.get("flow")
        if flow is not None and name in getattr(flow, "methods", ()):
            if flow.selected_method != name:
                flow.selected_method = name
        elif name in self.methods:
            self.compute(name, wait=False)

    def _refresh_paths(self) -> None:
        from attnwidget.views.flow.flow_view import FlowView

        flow = self.views.get("flow")
        busy, self._busy = self._busy, True
        try:
            if not isinstance(flow, FlowView):  # a long input's matrix view: no paths
                self.method_picker.options = [self._flow_method]
                self.method_picker.disabled = True
                return
            methods = list(flow.methods)
            extra = [m for m in self._on_demand() if m in _PATH_METHODS and m not in methods]
            options = [(m, m) for m in methods] + [(f"{m} (compute)", m) for m in extra]
            wanted = self._flow_method
            self.method_picker.options = options
            values = [value for _, value in options]
            self.method_picker.value = wanted if wanted in values else flow.selected_method
            self.method_picker.disabled = False
        finally:
            self._busy = busy


def _summary(name: str) -> str:
    try:
        return get_method(name).summary
    except Exception:  # scores computed outside the registry
        return name
