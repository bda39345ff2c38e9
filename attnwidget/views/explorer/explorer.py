"""Explorer: one text, every view, re-explained as the text changes.

An ipywidgets composition (no front-end code of its own): a text box, a
target picker (the model's labels, or the predicted next/masked token and its
runners-up), a method picker, and the views in tabs: SaliencyView, FlowView,
and HeadView / ModelView when this installation has them. Editing the text
(Enter or leaving the box) or choosing another target runs
:func:`attnwidget.explain` again and every view is updated in place (each
view's ``set_explanation``; a view without one is rebuilt).

Bad input (empty text, text longer than ``max_length``, an unknown target)
is reported in the Explorer's status line as plain text; the views keep
showing the previous explanation. With ``truncation=True`` a longer text is
explained by its first ``max_length`` tokens instead, and the status line
says so.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np

from attnwidget.capture.kinds import ENCODER, IMAGE, model_kind
from attnwidget.capture.tokens import max_length as model_max_length
from attnwidget.capture.tokens import token_label
from attnwidget.errors import InputError
from attnwidget.pipeline.explain import DEFAULT_METHODS, explain
from attnwidget.results.explanation import Explanation
from attnwidget.views.core.format import format_number
from attnwidget.views.explorer._text import _check_max_length, _cut, _message, _summary
from attnwidget.views.flow.flow_view import FlowView
from attnwidget.views.matrix.large_inputs import switch_reason
from attnwidget.views.matrix.matrix_view import AttentionMatrixView
from attnwidget.views.saliency.saliency_view import SaliencyView

log = logging.getLogger(__name__)

#: How many of the model's most probable tokens the target picker offers (LMs).
TOP_TOKENS = 5
#: Status-line colours (Okabe–Ito vermillion for errors reads on light and dark).
ERROR_COLOR = "#d55e00"
#: The target picker's "explain the prediction" choice.
PREDICTED = "predicted"

_PREDICTED_VALUE = ("__predicted__",)  # a sentinel no label or token id can equal


def _shown_as_matrix(name: str, explanation: Explanation) -> bool:
    """Whether the ``name`` tab's class shows ``explanation`` as a matrix view."""
    # Read from the view modules at call time, where their constructors read them.
    limits = {
        "head": ("HeadView", ".head_view", "HEAD_VIEW_TOKENS"),
        "model": ("ModelView", ".model_view", "MODEL_VIEW_TOKENS"),
        "flow": ("FlowView", ".flow_view", "MAX_TOKENS"),
    }
    if name not in limits:
        return False
    view, module, constant = limits[name]
    limit = getattr(importlib.import_module(module, __package__), constant)
    return switch_reason(explanation, limit, view) is not None


def _default_methods(model: Any) -> list[str]:
    """explain()'s defaults, plus "lrp" and "chefer2021" where their engines run on the model.

    Decided from the model's structure, not its ``config.model_type``, so XLM-R
    or a renamed copy of a supported model gets them: each engine's checks run
    on the model (transformers ≥ 5, a rule for every leaf module by what it
    computes) and one forward pass on 3 tokens with its rules installed
    (:func:`attnwidget.relevance.chefer.check_runs`), which refuses what only a
    pass meets: attention outside transformers' interface, or for chefer2021
    Mixtral's router and OPT's or GPT-NeoX's residual streams. So the Explorer
    never offers a method whose every run would be refused. Encoder-decoder
    models get neither.
    """
    from attnwidget.relevance.chefer import check_runs, chefer_rules
    from attnwidget.relevance.lrp import lrp_rules

    methods = list(DEFAULT_METHODS)
    if getattr(getattr(model, "config", None), "is_encoder_decoder", False):
        return methods
    for name, rules in (("lrp", lrp_rules), ("chefer2021", chefer_rules)):
        try:
            check_runs(model, rules=rules)
        except Exception as error:  # an optional method: not offered, never a failed Explorer
            log.debug("Explorer: %s not offered for %s: %s", name, type(model).__name__, error)
            continue
        methods.append(name)
    return methods


class Explorer(widgets.VBox):
    """Explain one text with every view, and re-explain it as you edit.

    Args:
        model, tokenizer: a Hugging Face model with a head and its tokenizer
            (as for :func:`attnwidget.explain`).
        text: the initial text ("" shows an empty Explorer waiting for text).
        methods: the methods :func:`attnwidget.explain` computes (default
            :data:`attnwidget.DEFAULT_METHODS`, plus "lrp" and "chefer2021"
            where their engines run on the model); SaliencyView shows them all.
        target: the initial target (label name or index for classifiers, token
            string or id for language models); None = the prediction.
        method: the FlowView's initial method.
        max_length: the most tokens (special tokens included) a text may have;
            default: what the model accepts (its position embeddings, e.g. 64
            for the demo models, 512 for BERT). Lower it to keep every view
            quick on a big model; above the model's own limit is refused.
        truncation: explain the first ``max_length`` tokens of a longer text
            (the status line says it was cut) instead of reporting an error.

    Attributes:
        text_box, target_picker, method_picker, status: the controls.
        views: the views by name ("saliency", "flow", "head", "model").

    Given a Vision Transformer, ``Explorer(model, processor, image)`` returns
    an :class:`~attnwidget.views.explorer.image_explorer.ImageExplorer` instead.

    Example::

        explorer = Explorer(model, tokenizer, "the keys to the cabinet")
        explorer                      # type in the box, press Enter
        explorer.text = "the key to the cabinets"   # the same from Python
        explorer.explanation, explorer.error
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # Explorer(model, processor, image) for a Vision Transformer: the image
        # explorer (its controls differ: no text box, an image picker).
        model = args[0] if args else kwargs.get("model")
        if cls is Explorer and _is_image_model(model):
            from attnwidget.views.explorer.image_explorer import ImageExplorer

            return ImageExplorer(*args, **kwargs)
        return super().__new__(cls, *args, **kwargs)

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        text: str = "",
        *,
        methods: Sequence[str] | None = None,
        target: Any = None,
        method: str = "rollout",
        max_length: int | None = None,
        truncation: bool = False,
        **kwargs: Any,
    ) -> None:
        self._limit = model_max_length(model, tokenizer)
        self._max_length = _check_max_length(max_length, self._limit)
        if not isinstance(truncation, bool):
            raise TypeError(f"truncation={truncation!r} must be True or False.")
        self._truncation = truncation
        self._model = model
        self._tokenizer = tokenizer
        self._methods = list(_default_methods(model) if methods is None else methods)
        self._kind = model_kind(model)
        self._explanation: Explanation | None = None
        self._error = ""
        self._busy = False  # guards observers while the controls are set from here
        self._flow_method = method
        self.views: dict[str, widgets.Widget] = {}
        # The class behind each tab (a long input makes some of them a matrix view).
        self._classes: dict[str, type] = {}

        self.text_box = widgets.Text(
            value=text,
            placeholder="Type a text, then press Enter",
            continuous_update=False,  # sync on Enter / blur, not on every key
            description="Text:",
            layout=widgets.Layout(width="100%"),
        )
        self.text_box.add_class("attnw-explorer-text")
        self.run_button = widgets.Button(description="Explain", tooltip="Explain the text again")
        self.target_picker = widgets.Dropdown(description="Target:", options=self._targets(None))
        self.method_picker = widgets.Dropdown(description="Paths:", options=[method], value=method)
        self.status = widgets.Label(value="")
        self.status.add_class("attnw-explorer-status")
        self.tabs = widgets.Tab()
        controls = widgets.HBox([self.target_picker, self.method_picker, self.run_button])
        super().__init__(
            children=[self.text_box, controls, self.status, self.tabs],
            **kwargs,
        )
        self.add_class("attnw-explorer")

        if target is not None:
            self._set_target_options(None, extra=target)
        self.text_box.observe(self._on_text, names="value")
        self.target_picker.observe(self._on_target, names="value")
        self.method_picker.observe(self._on_method, names="value")
        self.run_button.on_click(lambda _button: self.run())
        if text.strip():
            self.run()
        else:
            self._set_status("Type a text and press Enter to explain it.")

    # -- public API -------------------------------------------------------------

    @property
    def text(self) -> str:
        return str(self.text_box.value)

    @text.setter
    def text(self, value: str) -> None:
        if value == self.text_box.value:
            self.run()
        else:
            self.text_box.value = value  # the observer re-runs

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
    def max_length(self) -> int | None:
        """The most tokens a text may have (None: the model states no limit)."""
        return self._max_length

    @property
    def truncation(self) -> bool:
        """Whether a longer text is cut to :attr:`max_length` tokens (else an error)."""
        return self._truncation

    @property
    def explanation(self) -> Explanation | None:
        """The explanation the views show (the last one that succeeded)."""
        return self._explanation

    @property
    def error(self) -> str:
        """The last run's error message, "" when it succeeded."""
        return self._error

    def run(self) -> Explanation | None:
        """Explain the current text for the current target and update every view.

        Returns the new explanation, or None when the input was rejected (the
        reason is in :attr:`error` and the status line; the views are kept).
        """
        text = self.text
        if not text.strip():
            return self._fail("Type some text to explain (the text box is empty).")
        self._set_status("Explaining…")
        try:
            text, cut = self._fit(text)
            explanation = explain(
                self._model, self._tokenizer, text, target=self.target, methods=self._methods
            )
        except Exception as error:  # shown, never raised into the widget's void
            log.info("attnwidget Explorer: explain failed: %s", error, exc_info=True)
            return self._fail(_message(error))
        try:
            self._show(explanation)
        except Exception as error:
            log.warning("attnwidget Explorer: a view failed: %s", error, exc_info=True)
            return self._fail(f"cannot show this explanation: {_message(error)}")
        self._explanation = explanation
        self._error = ""
        self._set_status(_summary(explanation) + cut)
        return explanation

    # -- internals ----------------------------------------------------------------

    def _fit(self, text: str) -> tuple[str, str]:
        """The text to explain within :attr:`max_length`, and a note when it was cut.

        Raises :class:`InputError` for a longer text unless ``truncation``. The
        cut keeps the text up to the end of its last token that fits (the
        tokenizer's character offsets), so the model sees the same first tokens.
        """
        limit = self._max_length
        if limit is None:
            return text, ""
        ids = self._tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"]
        length = len(ids)
        if length <= limit:
            return text, ""
        own = limit == self._limit  # the model's own limit, not a lower max_length
        where = (
            f"the model accepts at most {limit}"
            if own
            else f"this Explorer explains at most {limit} (max_length={limit}"
            + (f"; the model accepts {self._limit})" if self._limit is not None else ")")
        )
        if not self._truncation:
            raise InputError(
                f"the text is {length} tokens long (special tokens included) but {where}; "
                "shorten the text"
                + ("" if own else ", raise max_length")
                + f", or create the Explorer with truncation=True to explain its first {limit} "
                "tokens."
            )
        return _cut(self._tokenizer, text, limit), (
            f" The text is {length} tokens long: only its first {limit} are explained "
            f"(truncation=True; {where})."
        )

    def _fail(self, message: str) -> None:
        self._error = message
        kept = " (the views still show the previous text)" if self._explanation else ""
        self._set_status(f"Error: {message}{kept}", error=True)
        return None

    def _set_status(self, text: str, *, error: bool = False) -> None:
        self.status.value = text
        self.status.style.text_color = ERROR_COLOR if error else None

    def _show(self, explanation: Explanation) -> None:
        """Create the views on first use, else hand them the new explanation.

        A view whose constructor shows a long input as an AttentionMatrixView
        (HeadView, ModelView and FlowView above their token limits) is rebuilt
        whenever the text crosses that limit, either way, so each tab always
        shows what its class would show for this text.
        """
        views_module = importlib.import_module(__package__ or "attnwidget.views")
        if not self.views:
            self._classes = {"saliency": SaliencyView, "flow": FlowView}
            for name, cls_name in (("head", "HeadView"), ("model", "ModelView")):
                cls = getattr(views_module, cls_name, None)
                if cls is not None:
                    self._classes[name] = cls
            for name, cls in self._classes.items():
                self._build(name, cls, explanation)
        else:
            for name, view in list(self.views.items()):
                cls = self._classes.get(name, type(view))
                switches = _shown_as_matrix(name, explanation)
                if switches or isinstance(view, AttentionMatrixView):
                    self._build(name, cls, explanation)
                elif hasattr(view, "set_explanation"):
                    view.set_explanation(explanation)
                else:  # a view without set_explanation is rebuilt
                    self._build(name, cls, explanation)
        self.tabs.children = list(self.views.values())
        self.tabs.titles = [_TITLES.get(name, name) for name in self.views]
        self._busy = True
        try:
            flow = self.views["flow"]
            # A long input's flow tab is a matrix view: no path methods to pick.
            methods = list(getattr(flow, "methods", ()))
            self.method_picker.options = methods or [self._flow_method]
            self.method_picker.value = getattr(flow, "method", self._flow_method)
            self.method_picker.disabled = not methods
            self._set_target_options(explanation, extra=self.target)
        finally:
            self._busy = False

    def _build(self, name: str, cls: type, explanation: Explanation) -> None:
        """(Re)create the ``name`` tab's view and its links to the other views."""
        if name == "flow":
            view = cls(explanation, method=self._flow_method)
            if not isinstance(view, AttentionMatrixView):
                view.observe(self._on_flow_method, names="method")
                view.observe(self._on_flow_selection, names=["selected_layer", "selected_token"])
        else:
            view = cls(explanation)
        if name == "saliency":
            view.observe(self._on_saliency_selection, names="selected_token")
        self.views[name] = view

    def _targets(self, explanation: Explanation | None, extra: Any = None) -> list[tuple[str, Any]]:
        """(label, value) choices: the prediction, then labels or likely tokens."""
        options: list[tuple[str, Any]] = [(PREDICTED, _PREDICTED_VALUE)]
        config = getattr(self._model, "config", None)
        if self._kind == ENCODER:
            id2label = getattr(config, "id2label", None) or {}
            for index in sorted(id2label):
                options.append((str(id2label[index]), str(id2label[index])))
        elif explanation is not None and explanation.probabilities is not None:
            probs = np.asarray(explanation.probabilities)
            for token_id in np.argsort(-probs, kind="stable")[:TOP_TOKENS]:
                # token_label: ids past the tokenizer's vocabulary (padded embedding
                # rows) read "<id N>", where convert_ids_to_tokens gives None
                token = token_label(int(token_id), self._tokenizer)
                options.append((f"{token} (p = {format_number(probs[token_id])})", int(token_id)))
        if extra is not None and extra not in [value for _, value in options]:
            options.append((str(extra), extra))
        return options

    def _set_target_options(self, explanation: Explanation | None, extra: Any = None) -> None:
        busy, self._busy = self._busy, True
        try:
            options = self._targets(explanation, extra)
            self.target_picker.options = options
            wanted = _PREDICTED_VALUE if extra is None else extra
            self.target_picker.value = wanted
        finally:
            self._busy = busy

    def _on_text(self, _change: dict[str, Any]) -> None:
        if not self._busy:
            self.run()

    def _on_target(self, _change: dict[str, Any]) -> None:
        if not self._busy:
            self.run()

    def _on_method(self, change: dict[str, Any]) -> None:
        flow = self.views.get("flow")
        if self._busy or not isinstance(flow, FlowView) or change["new"] == flow.method:
            return
        flow.method = change["new"]

    def _on_flow_method(self, change: dict[str, Any]) -> None:
        if change["new"] in self.method_picker.options:
            self.method_picker.value = change["new"]
        self._flow_method = change["new"]

    def _on_flow_selection(self, _change: dict[str, Any]) -> None:
        # An input token chosen in the flow view is the same token in the saliency view.
        flow, saliency = self.views.get("flow"), self.views.get("saliency")
        if not isinstance(flow, FlowView) or saliency is None or flow.selected_layer != 0:
            return
        if saliency.selected_token != flow.selected_token:
            saliency.selected_token = flow.selected_token

    def _on_saliency_selection(self, change: dict[str, Any]) -> None:
        # A token clicked in the saliency view: show where it goes (flow from layer 0).
        flow = self.views.get("flow")
        token = change["new"]
        if not isinstance(flow, FlowView) or token < 0 or token >= len(flow.tokens):
            return
        if (flow.selected_layer, flow.selected_token) != (0, token):
            flow.select(0, token)

    def __repr__(self) -> str:
        return f"Explorer(text={self.text!r}, target={self.target!r}, views={list(self.views)})"


def _is_image_model(model: Any) -> bool:
    try:
        return model_kind(model) == IMAGE
    except Exception:  # not a model with a head: Explorer's own checks say why
        return False


_TITLES = {"saliency": "Saliency", "flow": "Flow", "head": "Heads", "model": "Model"}
