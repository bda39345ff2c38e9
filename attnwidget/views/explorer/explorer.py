"""Explorer: one text, every view, re-explained as the text changes.

An ipywidgets composition (no front-end code of its own; the shared parts
are in :mod:`attnwidget.views.explorer._base`): a text box, a target picker
(the model's labels, or the predicted next/masked token and its
runners-up), the FlowView's method picker, a button per method, and the
views in tabs: SaliencyView, FlowView, HeadView and ModelView. Editing the
text (Enter or leaving the box) or choosing another target runs
:func:`attnwidget.explain` again with the fast methods and every view is
updated in place; the slower methods are computed when picked, in the
background, with a "computing…" state and a progress line.

A bare encoder (``AutoModel``) is explained without a target (attention-only
methods), or, with a second text in the "Pair" box (``text_pair=``), by the
cosine similarity of the two texts' pooled embeddings
(:mod:`attnwidget.pipeline.similarity`).

Bad input (empty text, text longer than ``max_length``, an unknown target)
is reported in the Explorer's status line as plain text; the views keep
showing the previous explanation. With ``truncation=True`` a longer text is
explained by its first ``max_length`` tokens instead, and the status line
says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import ipywidgets as widgets
import numpy as np

from attnwidget.capture.kinds import ENCODER, IMAGE, is_bare_encoder, model_kind
from attnwidget.capture.targets import Target
from attnwidget.capture.tokens import max_length as model_max_length
from attnwidget.capture.tokens import token_label
from attnwidget.errors import InputError
from attnwidget.pipeline.inputs import check_model, check_tokenizer
from attnwidget.results.explanation import Explanation
from attnwidget.views.core.format import format_number
from attnwidget.views.core.selection import renamed_keyword
from attnwidget.views.explorer._base import (
    _PREDICTED_VALUE,
    ERROR_COLOR,
    PREDICTED,
    ExplorerBase,
    check_keywords,
)
from attnwidget.views.explorer._text import _check_max_length, _cut, _summary

__all__ = ["ERROR_COLOR", "PREDICTED", "TOP_TOKENS", "Explorer"]

#: How many of the model's most probable tokens the target picker offers (LMs).
TOP_TOKENS = 5
_SIMILARITY = "similarity"
_PARAMETERS = [
    "model",
    "tokenizer",
    "text",
    "text_pair",
    "methods",
    "on_demand",
    "method_options",
    "target",
    "flow_method",
    "max_length",
    "truncation",
    "pooling",
    "ignore_keys",
]


class Explorer(ExplorerBase):
    """Explain one text with every view, and re-explain it as you edit.

    Args:
        model, tokenizer: a Hugging Face model and its tokenizer, as for
            :func:`attnwidget.explain`: a model with a head, or a bare encoder
            (``AutoModel``; attention-only methods, or the similarity of two
            texts with ``text_pair``).
        text: the initial text ("" shows an empty Explorer waiting for text).
        text_pair: a second text (a "Pair" box): the sentence pair of a
            classifier, or for a bare encoder the text whose similarity is
            explained; a bare encoder always gets the box ("" = no pair).
        methods: the methods the first drawing computes (default: explain()'s
            defaults, one forward and one backward pass).
        on_demand: the methods offered as buttons and computed only when
            picked (default: lrp and chefer2021 where their engines run on the
            model, flow, integrated_gradients and blank_out; for a bare encoder
            without a pair: flow, effective_attention and attention_norm).
        method_options: per-method options, as for :func:`attnwidget.explain`
            (checked now; options of a method the Explorer does not offer are
            refused).
        target: the initial target (label name or index for classifiers, token
            string or id for language models); None = the prediction.
        flow_method: the FlowView's initial method (default "rollout"); the
            ``methods`` are what is computed. Named ``method`` before (still
            accepted for one release, with a DeprecationWarning).
        max_length: the most tokens (special tokens included) a text may have;
            default: what the model accepts (its position embeddings). Above
            the model's own limit is refused.
        truncation: explain the first ``max_length`` tokens of a longer text
            (the status line says it was cut) instead of reporting an error.
        pooling: bare encoders: "mean" or "cls" (see :func:`attnwidget.explain`).
        ignore_keys: attention sinks left out of every attention row, rows
            renormalised, in every explanation and view (``"first"``,
            ``"special"`` or positions; see :func:`attnwidget.explain`).

    Attributes:
        text_box, pair_box, target_picker, method_picker, method_buttons,
        status, progress_line: the controls (``pair_box`` is None without a pair).
        views: the views by name ("saliency", "flow", "head", "model").
        compare_view, comparison: the Compare tab's CompareView and its
            Comparison (None until the tab is first shown, or
            :meth:`compare` is called): the methods the Saliency tab shows,
            compared by :func:`attnwidget.compare` when the tab is shown
            (in the background, with progress), its token pinned with the
            other views'.

    Given a Vision Transformer, ``Explorer(model, processor, image)`` returns
    an :class:`~attnwidget.views.explorer.image_explorer.ImageExplorer` instead.

    Example::

        explorer = Explorer(model, tokenizer, "the keys to the cabinet")
        explorer                      # type in the box, press Enter
        explorer.text = "the key to the cabinets"   # the same from Python
        explorer.compute("lrp")       # what its button does (and waits)
        explorer.to_html("explorer.html")           # every tab, offline
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # Explorer(model, processor, image) for a Vision Transformer: the image
        # explorer (its controls differ: no text box, an image picker).
        model = args[0] if args else kwargs.get("model")
        if cls is Explorer and _is_image_model(model):
            from attnwidget.views.explorer.image_explorer import ImageExplorer

            return ImageExplorer(*args, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        text: str = "",
        *,
        text_pair: str | None = None,
        methods: Sequence[str] | None = None,
        on_demand: Sequence[str] | None = None,
        method_options: dict[str, dict[str, Any]] | None = None,
        target: Target = None,
        flow_method: str | None = None,
        max_length: int | None = None,
        truncation: bool = False,
        pooling: Literal["mean", "cls"] | None = None,
        ignore_keys: str | Sequence[int] | None = None,
        **kwargs: Any,
    ) -> None:
        flow_method = renamed_keyword(kwargs, "method", "flow_method", "Explorer", flow_method)
        check_keywords("Explorer", kwargs, _PARAMETERS)
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}.")
        if text_pair is not None and not isinstance(text_pair, str):
            raise TypeError(f"text_pair must be a string, got {type(text_pair).__name__}.")
        check_model(model)  # a model name, None, no weights; then a forgotten tokenizer
        check_tokenizer(tokenizer, model, "Explorer")
        self._bare = is_bare_encoder(model)
        self._kind = ENCODER if self._bare else model_kind(model)  # refuses headless others
        if pooling is not None and not self._bare:
            raise InputError(
                f"pooling={pooling!r} is for bare encoders (sentence embeddings), but "
                f"{type(model).__name__} has a head; leave it out."
            )
        if self._bare and target not in (None, _SIMILARITY):
            raise InputError(
                f"target={target!r}: {type(model).__name__} is a bare encoder without a head; "
                "it is explained without a target, or by the similarity of the text and "
                "text_pair (leave target out)."
            )
        self._limit = model_max_length(model, tokenizer)
        self._max_length = _check_max_length(max_length, self._limit)
        if not isinstance(truncation, bool):
            raise TypeError(f"truncation={truncation!r} must be True or False.")
        self._truncation, self._pooling, self._tokenizer = truncation, pooling, tokenizer
        self._model = model
        modes = ("attention", "similarity") if self._bare else ("head",)
        self._configure(methods, on_demand, method_options, modes)

        self.text_box = widgets.Text(
            value=text,
            placeholder="Type a text, then press Enter",
            continuous_update=False,  # sync on Enter / blur, not on every key
            description="Text:",
            layout=widgets.Layout(width="100%"),
        )
        self.text_box.add_class("attnw-explorer-text")
        self.pair_box: widgets.Text | None = None
        inputs: list[widgets.Widget] = [self.text_box]
        if self._bare or text_pair is not None:
            hint = "its similarity to the text is explained" if self._bare else "a sentence pair"
            self.pair_box = widgets.Text(
                value=text_pair or "",
                placeholder=f"A second text ({hint}), then press Enter",
                continuous_update=False,
                description="Pair:",
                layout=widgets.Layout(width="100%"),
            )
            self.pair_box.add_class("attnw-explorer-pair")
            inputs.append(self.pair_box)
        self.run_button = widgets.Button(description="Explain", tooltip="Explain the text again")
        self._start(
            model,
            tokenizer,
            inputs=inputs,
            controls=[self.run_button],
            flow_method=flow_method or "rollout",
            target=None if self._bare else target,
            kwargs=kwargs,
            ignore_keys=ignore_keys,
        )
        self.text_box.observe(self._on_text, names="value")
        if self.pair_box is not None:
            self.pair_box.observe(self._on_text, names="value")
        self.run_button.on_click(lambda _button: self.run())
        self._refresh_buttons()
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
    def text_pair(self) -> str | None:
        """The second text (None without a Pair box; "" = none)."""
        return None if self.pair_box is None else str(self.pair_box.value)

    @text_pair.setter
    def text_pair(self, value: str) -> None:
        if self.pair_box is None:
            raise InputError(
                "this Explorer has no second text; create it with text_pair='…' to explain "
                "sentence pairs."
            )
        if value == self.pair_box.value:
            self.run()
        else:
            self.pair_box.value = value

    @property
    def max_length(self) -> int | None:
        """The most tokens a text may have (None: the model states no limit)."""
        return self._max_length

    @property
    def truncation(self) -> bool:
        """Whether a longer text is cut to :attr:`max_length` tokens (else an error)."""
        return self._truncation

    # -- the ExplorerBase hooks ---------------------------------------------------

    def _compare_enabled(self) -> bool:
        return not self._bare  # compare() explains a prediction: a model with a head

    def _mode(self) -> str:
        if not self._bare:
            return "head"
        return _SIMILARITY if (self.text_pair or "").strip() else "attention"

    def _inputs(self) -> tuple[dict[str, Any], str]:
        text, pair = self.text, self.text_pair
        if not text.strip():
            raise InputError("Type some text to explain (the text box is empty).")
        pair = pair if pair and pair.strip() else None
        args: dict[str, Any] = {"text_pair": pair}
        if self._bare:
            text, note = self._fit(text)
            if pair is not None:
                pair, pair_note = self._fit(pair, "second text")
                note += pair_note
                args.update(text_pair=pair, target=_SIMILARITY)
            if self._pooling is not None:
                args["pooling"] = self._pooling
        elif pair is not None:
            note = self._fit_pair(text, pair, args)
            args["target"] = self.target
        else:
            text, note = self._fit(text)
            args["target"] = self.target
        return {"text": text, **args}, note

    def _view_classes(self) -> dict[str, type]:
        from attnwidget.views.attention.head_view import HeadView
        from attnwidget.views.attention.model_view import ModelView
        from attnwidget.views.flow.flow_view import FlowView
        from attnwidget.views.saliency.saliency_view import SaliencyView

        return {"saliency": SaliencyView, "flow": FlowView, "head": HeadView, "model": ModelView}

    def _summary(self, explanation: Explanation) -> str:
        if not self._bare:
            return _summary(explanation)
        sizes = f"{len(explanation.tokens)} tokens, {explanation.num_layers} layers"
        if explanation.target_score is not None:
            pair = len(explanation.pair_tokens or [])
            return (
                f"Explaining the cosine similarity ({format_number(explanation.target_score)}) "
                f"of the two texts' {explanation.pooling}-pooled embeddings: {sizes}, "
                f"{pair} tokens in the second text."
            )
        query = "the mean of all rows" if explanation.pooling == "mean" else "the [CLS] row"
        return f"A bare encoder, no target: its attention read from {query}; {sizes}."

    def _targets(self, explanation: Explanation | None, extra: Any = None) -> list[tuple[str, Any]]:
        if self._bare:
            return [("similarity" if self._mode() == _SIMILARITY else "none", _PREDICTED_VALUE)]
        if self._kind == ENCODER:
            return super()._targets(explanation, extra)
        options: list[tuple[str, Any]] = [(PREDICTED, _PREDICTED_VALUE)]
        if explanation is not None and explanation.probabilities is not None:
            probs = np.asarray(explanation.probabilities)
            for token_id in np.argsort(-probs, kind="stable")[:TOP_TOKENS]:
                # token_label: ids past the tokenizer's vocabulary (padded embedding
                # rows) read "<id N>", where convert_ids_to_tokens gives None
                token = token_label(int(token_id), self._tokenizer)
                options.append((f"{token} (p = {format_number(probs[token_id])})", int(token_id)))
        if extra is not None and extra not in [value for _, value in options]:
            options.append((str(extra), extra))
        return options

    # -- internals ----------------------------------------------------------------

    def _too_long(self, length: int, what: str) -> str:
        limit = self._max_length
        own = limit == self._limit  # the model's own limit, not a lower max_length
        where = (
            f"the model accepts at most {limit}"
            if own
            else f"this Explorer explains at most {limit} (max_length={limit}"
            + (f"; the model accepts {self._limit})" if self._limit is not None else ")")
        )
        if not self._truncation:
            raise InputError(
                f"the {what} is {length} tokens long (special tokens included) but {where}; "
                f"shorten the {what}"
                + ("" if own else ", raise max_length")
                + f", or create the Explorer with truncation=True to explain its first {limit} "
                "tokens."
            )
        return where

    def _fit(self, text: str, what: str = "text") -> tuple[str, str]:
        """The text to explain within :attr:`max_length`, and a note when it was cut.

        Raises :class:`InputError` for a longer text unless ``truncation``. The
        cut keeps the text up to the end of its last token that fits (the
        tokenizer's character offsets), so the model sees the same first tokens.
        """
        limit = self._max_length
        if limit is None:
            return text, ""
        length = len(self._tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])
        if length <= limit:
            return text, ""
        where = self._too_long(length, what)
        return _cut(self._tokenizer, text, limit), (
            f" The {what} is {length} tokens long: only its first {limit} are explained "
            f"(truncation=True; {where})."
        )

    def _fit_pair(self, text: str, pair: str, args: dict[str, Any]) -> str:
        """A sentence pair within :attr:`max_length`: explain() cuts it when ``truncation``."""
        limit = self._max_length
        if limit is None:
            return ""
        length = len(self._tokenizer(text, pair, truncation=False)["input_ids"])
        if length <= limit:
            return ""
        where = self._too_long(length, "sentence pair")
        args["truncation"] = True
        return (
            f" The pair is {length} tokens long: it is cut to {limit} (truncation=True; {where})."
        )

    def _on_text(self, _change: dict[str, Any]) -> None:
        if not self._busy:
            self.run()

    def __repr__(self) -> str:
        return f"Explorer(text={self.text!r}, target={self.target!r}, views={list(self.views)})"


def _is_image_model(model: Any) -> bool:
    try:
        return model_kind(model) == IMAGE
    except Exception:  # not a model with a head: Explorer's own checks say why
        return False
