"""What the Explorer and the ImageExplorer share: the controls, the views and their links.

An ipywidgets composition with no front-end code of its own: input controls
(the subclass's), a target picker, the FlowView's method picker ("Paths"), a
row of method buttons, a status line, a progress line and the views in tabs.
The first drawing costs one :func:`attnwidget.explain` with the fast methods
(one forward and one backward pass); the slower methods are computed when
picked (:mod:`attnwidget.views.explorer._compute`). A token pinned in one
view is pinned in every view (:mod:`attnwidget.views.explorer._links`).
"""

from __future__ import annotations

import difflib
import importlib
import logging
import threading
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import traitlets

from attnwidget.capture.kinds import ENCODER_DECODER, is_bare_encoder, model_kind
from attnwidget.methods import sinks
from attnwidget.pipeline.explain import explain
from attnwidget.results.explanation import Explanation
from attnwidget.views.core.method_maps import METHOD_MATRICES
from attnwidget.views.explorer._compare import CompareTab
from attnwidget.views.explorer._compute import OnDemand
from attnwidget.views.explorer._html import explorer_page
from attnwidget.views.explorer._links import Links
from attnwidget.views.explorer._marimo import marimo_display
from attnwidget.views.explorer._methods import options_for
from attnwidget.views.explorer._text import _message
from attnwidget.views.flow.flow_view import FlowView
from attnwidget.views.matrix.large_inputs import switch_reason
from attnwidget.views.matrix.matrix_view import AttentionMatrixView

log = logging.getLogger(__name__)

#: The target picker's "explain the prediction" choice.
PREDICTED = "predicted"
_PREDICTED_VALUE = ("__predicted__",)  # a sentinel no label or token id can equal
#: Status-line colour for errors (Okabe–Ito vermillion reads on light and dark).
ERROR_COLOR = "#d55e00"
#: Tab titles by view name.
TITLES = {
    "image": "Image",
    "saliency": "Saliency",
    "flow": "Flow",
    "head": "Heads",
    "model": "Model",
    "compare": "Compare",
}
#: Options of the box itself that the Explorers also take as keywords.
BOX_OPTIONS = ("layout", "box_style")
# The views that switch to an AttentionMatrixView past a token limit: the module
# and constant their constructors read (read at call time, as they do).
_LIMITS = {
    "head": ("HeadView", "attnwidget.views.attention.head_view", "HEAD_VIEW_TOKENS"),
    "model": ("ModelView", "attnwidget.views.attention.model_view", "MODEL_VIEW_TOKENS"),
    "flow": ("FlowView", "attnwidget.views.flow.flow_view", "MAX_TOKENS"),
}


def check_keywords(owner: str, kwargs: dict[str, Any], accepted: list[str]) -> None:
    """Refuse keywords the widget does not take, with a "did you mean" hint."""
    unknown = [name for name in kwargs if name not in BOX_OPTIONS]
    if not unknown:
        return
    valid = [*accepted, *BOX_OPTIONS]
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, valid, n=1)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    word = "argument" if len(unknown) == 1 else "arguments"
    raise TypeError(
        f"{owner}() got unexpected keyword {word} {', '.join(hints)}; it takes: {', '.join(valid)}."
    )


def shown_as_matrix(name: str, explanation: Explanation) -> bool:
    """Whether the ``name`` tab's class shows ``explanation`` as a matrix view."""
    if name not in _LIMITS:
        return False
    view, module, constant = _LIMITS[name]
    limit = getattr(importlib.import_module(module), constant)
    return switch_reason(explanation, limit, view) is not None


class ExplorerBase(OnDemand, CompareTab, widgets.VBox):
    """The shared machinery; see :class:`~attnwidget.views.explorer.explorer.Explorer`."""

    _OWNER = "Explorer"

    computing = traitlets.Unicode("")
    """The methods being computed or waiting, comma-separated ("" when idle); the
    page shows them on their buttons ("computing…")."""
    progress = traitlets.Unicode("")
    """The progress line the page shows under the status line (what is computed,
    how long it took, or why it failed)."""

    def _start(
        self,
        model: Any,
        preprocessor: Any,
        *,
        inputs: list[widgets.Widget],
        controls: list[widgets.Widget],
        flow_method: str,
        target: Any,
        kwargs: dict[str, Any],
        ignore_keys: Any = None,
    ) -> None:
        """Create the controls and the box (``inputs`` on top, then a row of
        ``controls`` and the pickers); no model run yet. ``ignore_keys`` goes to
        every explain() (checked here, its positions per input by explain())."""
        self._ignore_keys = checked_ignore_keys(ignore_keys, model)
        self._model, self._preprocessor = model, preprocessor
        self._explanation: Explanation | None = None
        self._error = ""
        # Guards observers while the controls are set from code. Per thread: a
        # worker's refresh must not swallow a click that the comm thread handles
        # meanwhile (a shared flag's save/restore could also be left set).
        self._guard = threading.local()
        self._flow_method = flow_method
        self._lock = threading.RLock()  # the shown explanation and the views
        self._generation = 0  # bumps with every new input shown: a job's result for an
        # older one is not shown (the job runs again for the new input)
        self._shown_args: dict[str, Any] = {}
        self.views: dict[str, widgets.Widget] = {}
        self._classes: dict[str, type] = {}
        self._links = Links(self._linked_views)
        self.target_picker = widgets.Dropdown(
            description="Target:", options=self._targets(None, target)
        )
        self.method_picker = widgets.Dropdown(
            description="Paths:", options=[flow_method], value=flow_method
        )
        self.status = widgets.Label(value="")
        self.status.add_class("attnw-explorer-status")
        self.tabs = widgets.Tab()
        self._start_on_demand()
        self._start_compare()
        row = widgets.HBox([*controls, self.target_picker, self.method_picker])
        super().__init__(
            children=[
                *inputs,
                row,
                self.method_buttons,
                self.status,
                self.progress_line,
                self.tabs,
            ],
            **kwargs,
        )
        self.add_class("attnw-explorer")
        self._busy = True
        try:
            self.target_picker.value = _PREDICTED_VALUE if target is None else target
        finally:
            self._busy = False
        self.target_picker.observe(self._on_target, names="value")
        self.method_picker.observe(self._on_method, names="value")
        self.tabs.observe(self._on_tab, names="selected_index")

    @traitlets.observe("progress")
    def _show_progress(self, change: dict[str, Any]) -> None:
        self.progress_line.value = change["new"]

    # -- public API -------------------------------------------------------------

    @property
    def target(self) -> Any:
        """The chosen target (None: the prediction)."""
        value = self.target_picker.value
        return None if value == _PREDICTED_VALUE else value

    @target.setter
    def target(self, value: Any) -> None:
        self._set_target_options(self._explanation, extra=value)
        self.run()

    @property
    def explanation(self) -> Explanation | None:
        """The explanation the views show (the last one that succeeded)."""
        return self._explanation

    @property
    def error(self) -> str:
        """The last run's error message, "" when it succeeded."""
        return self._error

    def run(self) -> Explanation | None:
        """Explain the current input with the fast methods and update every view.

        The methods picked earlier that the fast ones do not include are then
        computed again for the new input, in the background (see :meth:`wait`).
        Returns the new explanation, or None when the input was rejected (the
        reason is in :attr:`error` and the status line; the views are kept).
        """
        try:
            args, note = self._inputs()
            if self._ignore_keys is not None:  # kept in _shown_args: the jobs use it too
                args["ignore_keys"] = self._ignore_keys
        except Exception as error:  # bad input: shown, never raised into the widget's void
            log.info("attnwidget %s: input refused: %s", self._OWNER, error)
            self._fail(_message(error))
            return None
        self._set_status("Explaining…")
        names = self._fast()
        try:
            explanation = explain(
                self._model,
                self._preprocessor,
                **args,
                methods=names,
                method_options=options_for(self._options, names),
            )
        except Exception as error:
            log.info("attnwidget %s: explain failed: %s", self._OWNER, error, exc_info=True)
            self._fail(_message(error))
            return None
        with self._lock:
            try:
                self._show(explanation)
            except Exception as error:
                log.warning("attnwidget %s: a view failed: %s", self._OWNER, error, exc_info=True)
                self._fail(f"cannot show this explanation: {_message(error)}")
                return None
            self._explanation, self._error, self._shown_args = explanation, "", args
            self._generation += 1
        self._set_status(self._summary(explanation) + note)
        self._after_run()
        return explanation

    def to_html(self, path: str | Path | None = None, *, title: str | None = None) -> str:
        """Every tab as ONE self-contained page (offline; tabs switch without a kernel).

        Each tab's view is saved as its own ``to_html`` would save it (state,
        recorded replies), the front-end bundle once; the status line heads
        the page. Methods still computing are left out. Raises
        :class:`ValueError` while nothing has been explained yet.
        """
        with self._lock:
            shown = self._linked_views().items()  # the Compare tab while it is current
            views = [(TITLES.get(name, name), view) for name, view in shown]
            lines = [str(self.status.value)] if self.status.value else []
            text = explorer_page(title or f"attnwidget {type(self).__name__}", views, lines)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    # -- for the subclasses -----------------------------------------------------

    def _inputs(self) -> tuple[dict[str, Any], str]:
        """explain()'s arguments for the current input (its third argument as ``text``),
        and a note for the status line; raises for input to refuse."""
        raise NotImplementedError

    def _view_classes(self) -> dict[str, type]:
        raise NotImplementedError

    def _summary(self, explanation: Explanation) -> str:
        raise NotImplementedError

    def _targets(self, explanation: Explanation | None, extra: Any = None) -> list[tuple[str, Any]]:
        """(label, value) choices: the prediction, then the model's labels."""
        options: list[tuple[str, Any]] = [(PREDICTED, _PREDICTED_VALUE)]
        id2label = getattr(getattr(self._model, "config", None), "id2label", None) or {}
        for index in sorted(id2label):
            options.append((str(id2label[index]), str(id2label[index])))
        if extra is not None and extra not in [value for _, value in options]:
            options.append((str(extra), extra))
        return options

    # -- internals ----------------------------------------------------------------

    def _fail(self, message: str) -> None:
        self._error = message
        kept = " (the views still show the previous input)" if self._explanation else ""
        self._set_status(f"Error: {message}{kept}", error=True)
        return None

    def _set_status(self, text: str, *, error: bool = False) -> None:
        self.status.value = text
        self.status.style.text_color = ERROR_COLOR if error else None

    def _show(self, explanation: Explanation) -> None:
        """Create the views on first use, else hand them the new explanation.

        A view whose constructor shows a long input as an AttentionMatrixView
        (HeadView, ModelView and FlowView above their token limits) is rebuilt
        whenever the input crosses that limit, either way. Pins are cleared: a
        token index of the old input is another token of the new one.
        """
        with self._links.paused():
            if not self.views:
                self._classes = self._view_classes()
                for name, cls in self._classes.items():
                    self._build(name, cls, explanation)
            else:
                for name, view in list(self.views.items()):
                    switches = shown_as_matrix(name, explanation)
                    if switches or isinstance(view, AttentionMatrixView):
                        self._build(name, self._classes[name], explanation)
                    elif hasattr(view, "set_explanation"):
                        self._hand(view, explanation)
                    else:  # a view without set_explanation is rebuilt
                        self._build(name, self._classes[name], explanation)
            self._links.pin(None)
        self._refresh_tabs()
        self._busy = True
        try:
            self._set_target_options(explanation, extra=self.target)
        finally:
            self._busy = False

    def _update(self, explanation: Explanation, added: list[str]) -> None:
        """Show ``explanation``, the shown one plus the ``added`` methods' scores.

        Only the views that draw those scores change; the pins stay.
        """
        matrices = any(name in METHOD_MATRICES for name in added)
        with self._links.paused():
            for name, view in list(self.views.items()):
                if name in ("head", "model") and not matrices:
                    continue
                if hasattr(view, "set_explanation") and not isinstance(view, AttentionMatrixView):
                    self._hand(view, explanation)
                else:
                    self._build(name, self._classes[name], explanation)
        saliency = self.views.get("saliency")
        if saliency is not None:
            self._links.spread(saliency)  # to a rebuilt view
        self._refresh_tabs()

    def _hand(self, view: Any, explanation: Explanation) -> None:
        if type(view).__name__ == "SaliencyView":
            view.set_explanation(explanation, methods=self._visible(explanation))
        elif isinstance(view, FlowView):
            view.set_explanation(explanation)
            if self._flow_method in view.methods and view.selected_method != self._flow_method:
                view.selected_method = self._flow_method
        else:
            view.set_explanation(explanation)

    def _build(self, name: str, cls: type, explanation: Explanation) -> None:
        """(Re)create the ``name`` tab's view and its links to the other views."""
        if name == "flow":
            view = cls(explanation, selected_method=self._flow_method)
            if isinstance(view, FlowView):
                view.observe(self._on_flow_method, names="selected_method")
        elif name == "saliency":
            view = cls(explanation, methods=self._visible(explanation))
        else:
            view = cls(explanation)
        self._links.watch(view)
        self.views[name] = view

    def _refresh_tabs(self) -> None:
        tabs = {**self.views, **self._extra_tabs()}  # the views, then the Compare tab
        if list(self.tabs.children) != list(tabs.values()):
            self.tabs.children = list(tabs.values())
        self.tabs.titles = [TITLES.get(name, name) for name in tabs]
        self._refresh_paths()
        self._compare_if_shown()  # the input or its methods changed

    def _set_target_options(self, explanation: Explanation | None, extra: Any = None) -> None:
        busy, self._busy = self._busy, True
        try:
            self.target_picker.options = self._targets(explanation, extra)
            self.target_picker.value = _PREDICTED_VALUE if extra is None else extra
        finally:
            self._busy = busy

    def _on_target(self, _change: dict[str, Any]) -> None:
        if not self._busy:
            self.run()

    def _on_flow_method(self, change: dict[str, Any]) -> None:
        self._flow_method = change["new"]
        if change["new"] in [value for _, value in self.method_picker.options]:
            busy, self._busy = self._busy, True
            try:
                self.method_picker.value = change["new"]
            finally:
                self._busy = busy

    def _display_(self) -> Any:
        """marimo's display hook (Jupyter ignores it): see explorer/_marimo.py."""
        return marimo_display(self, TITLES)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(target={self.target!r}, views={list(self.views)})"


def checked_ignore_keys(value: Any, model: Any) -> sinks.CheckedKeys:
    """An Explorer's ``ignore_keys``, refused now where explain() would refuse it."""
    checked = sinks.check_ignore_keys(value)
    if is_bare_encoder(model):
        sinks.refuse_ignored(checked, "bare encoders (sentence embeddings)")
    elif model_kind(model) == ENCODER_DECODER:
        sinks.refuse_ignored(checked, "encoder–decoder models")
    return checked
