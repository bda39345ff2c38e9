"""ExplanationRating: people judge explanations, one at a time, and every answer is kept.

Three modes (issue 23; human evaluation as in Doshi-Velez & Kim, 2017):

* ``"rate"``: each (input, method) explanation is shown as coloured tokens
  (SaliencyView's colours and ranges); the person gives a 1–5 plausibility
  rating ("how well does this explain the output?") and an optional note.
* ``"compare"``: two methods' explanations of the same input side by side;
  the person picks the more convincing one. Which method is on which side is
  a seeded coin flip per pair, recorded.
* ``"simulate"``: forward simulation (Hase & Bansal, 2020): the person sees
  the input and one method's explanation, or none (the control condition,
  half of the inputs, randomised), predicts the model's output, and the
  page then reveals it and says whether the prediction was right.

The order (:func:`attnwidget.annotations.plan_trials`) is seeded by ``seed``
and recorded in the store with the session (``Store.rating_session``); the
method name is hidden by default (``show_method=False``) and then never sent
to the page. Every answer is saved at once, in its own transaction
(:meth:`~attnwidget.annotations.Store.save_rating`), with its order position,
seed, mode, methods, condition and the seconds the person took.
:func:`attnwidget.annotations.rating_summary` summarises a store's answers.

Synced traits: ``mode``, ``show_method``, ``count`` (trials), ``position``
(the trial shown; ``count`` when all are answered), ``trial`` (tokens,
panels: label, side, signed; ``shape`` [panels, tokens]; ``choices`` for
simulate), ``scores`` (the panels' scores, float32 bytes), ``revealed``
(simulate, after an answer: predicted, actual, correct), ``answered`` (how
many trials have an answer), ``status``. The page sends ``{"type":
"answer", "position", "rating" | "side" | "predicted", "note", "seconds"}``
and ``{"type": "next"}`` (after a reveal); the kernel answers ``{"type":
"saved", "position"}`` or ``{"type": "error", "message"}``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import traitlets

from attnwidget.annotations import Store
from attnwidget.annotations.judgements import MODES, plan_trials
from attnwidget.errors import InputError
from attnwidget.views.annotate._rating_trials import (
    as_explanations,
    choices_for,
    common_methods,
    model_output,
    trial_payload,
)
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.core.buffers import encode_float32
from attnwidget.views.core.notes import open_store

log = logging.getLogger(__name__)


class ExplanationRating(_AttnWidget):
    """Show explanations of several methods one at a time and record what people judge.

    Args:
        explanations: an :class:`~attnwidget.Explanation` or a list of them
            (one per input), each with scores of the methods to judge.
        store: an :class:`~attnwidget.annotations.Store` or its path: the
            session (order, seed, mode) and every answer are saved there.
        annotator: who answers (a non-empty name).
        mode: "rate" (1–5 plausibility), "compare" (A/B) or "simulate"
            (predict the model's output, with or without an explanation).
        seed: seeds the order, the A/B sides and the simulate condition.
        show_method: show the method names (default False: hidden, so they
            cannot sway the judgement).
        methods: the methods to judge (default: every method all the
            explanations scored).
        labels: the model's class names, for "simulate" (the choices, and
            the label of the most probable class as the output); default:
            the explanations' targets.

    Example::

        rating = ExplanationRating([exp1, exp2, exp3], store="judgements.sqlite",
                                   annotator="ana", mode="compare", seed=1)
        rating                                     # click the better side ...
        rating_summary(rating.store).methods       # win rates with intervals
    """

    _view = traitlets.Unicode("rating").tag(sync=True)

    mode = traitlets.Unicode("rate", read_only=True).tag(sync=True)
    show_method = traitlets.Bool(False, read_only=True).tag(sync=True)
    count = traitlets.Int(0, read_only=True).tag(sync=True)
    position = traitlets.Int(0, read_only=True).tag(sync=True)
    trial = traitlets.Dict(read_only=True).tag(sync=True)
    scores = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    revealed = traitlets.Dict(read_only=True).tag(sync=True)
    answered = traitlets.Int(0, read_only=True).tag(sync=True)
    status = traitlets.Unicode("", read_only=True).tag(sync=True)

    def __init__(
        self,
        explanations: Any,
        *,
        store: Store | str | Path,
        annotator: str,
        mode: str = "rate",
        seed: int = 0,
        show_method: bool = False,
        methods: Sequence[str] | None = None,
        labels: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if mode not in MODES:
            raise InputError(f"mode={mode!r}: pass one of {list(MODES)}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputError(f"seed={seed!r}: pass an int >= 0")
        if not isinstance(show_method, bool):
            raise InputError(f"show_method={show_method!r}: pass True or False")
        self._items = as_explanations(explanations)
        self._methods = common_methods(self._items, methods)
        if mode == "compare" and len(self._methods) < 2:
            raise InputError(f"mode='compare' needs two methods or more; found {self._methods}")
        self._labels = None if labels is None else [str(x) for x in labels]
        outputs = [model_output(e, self._labels) for e in self._items] if mode == "simulate" else []
        self._choices = choices_for(outputs, self._labels) if mode == "simulate" else []
        trials = plan_trials([e.tokens for e in self._items], self._methods, mode, seed)
        for trial in trials:
            if mode == "simulate":
                trial["actual"] = outputs[int(trial["input"])]  # type: ignore[call-overload]
        self._trials = trials
        self._store = open_store(store)
        self._seed = seed
        super().__init__(**kwargs)
        self.session = self._store.start_rating_session(
            annotator=annotator,
            mode=mode,
            seed=seed,
            show_method=show_method,
            methods=self._methods,
            trials=trials,
        )
        self._answers: dict[int, dict[str, Any]] = {}
        with self.hold_sync():
            self.set_trait("mode", mode)
            self.set_trait("show_method", show_method)
            self.set_trait("count", len(trials))
            self._show(0)
        self.on_msg(self._on_message)

    @property
    def store(self) -> Store:
        """The store the session and its answers are in."""
        return self._store

    @property
    def trials(self) -> list[dict[str, Any]]:
        """The trials in the order shown (as recorded in the store)."""
        return [dict(t) for t in self._trials]

    @property
    def methods(self) -> list[str]:
        """The methods judged."""
        return list(self._methods)

    def _show(self, position: int) -> None:
        self.set_trait("revealed", {})
        self.set_trait("position", position)
        if position >= len(self._trials):
            self.set_trait("trial", {})
            self.set_trait("status", f"Done: {len(self._trials)} answered. Thank you.")
            return
        payload, matrix = trial_payload(
            self._trials[position],
            position,
            self._items,
            self.mode,
            self.show_method,
            self._choices,
        )
        self.set_trait("scores", encode_float32(matrix)[0])
        self.set_trait("trial", payload)
        self.set_trait("status", "")

    def answer(
        self,
        *,
        rating: int | None = None,
        side: str | None = None,
        predicted: str | None = None,
        note: str = "",
        seconds: float | None = None,
    ) -> dict[str, Any]:
        """Answer the trial shown (as the page does) and move on (simulate: reveal first)."""
        position = self.position
        if position >= len(self._trials):
            raise InputError("every trial is answered: there is nothing to answer")
        given = {"rating": rating, "side": side, "predicted": predicted}
        answer = {k: v for k, v in given.items() if v is not None}
        saved = self._store.save_rating(
            self.session, position, answer=answer, note=note, seconds=seconds
        )
        self._answers[position] = saved
        with self.hold_sync():
            self.set_trait("answered", len(self._answers))
            if self.mode == "simulate":
                shown = {k: saved[k] for k in ("predicted", "actual")}
                self.set_trait("revealed", {**shown, "correct": bool(saved["correct"])})
            else:
                self._show(position + 1)
        return saved

    def next(self) -> None:
        """After a simulate reveal: show the next trial."""
        if self.revealed:
            with self.hold_sync():
                self._show(self.position + 1)

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        try:
            if kind == "next":
                self.next()
                return
            if kind != "answer":
                return
            if content.get("position") != self.position:
                return  # an answer to a trial no longer shown (a double click)
            keys = ("rating", "side", "predicted", "note", "seconds")
            self.answer(**{k: content[k] for k in keys if content.get(k) is not None})
        except InputError as error:
            self.send({"type": "error", "message": str(error)})
            return
        except Exception as error:  # a full disk, a closed store: say so in the page
            log.exception("attnwidget: an answer could not be saved")
            self.send({"type": "error", "message": f"not saved: {error}"})
            return
        self.send({"type": "saved", "position": content.get("position")})

    def __repr__(self) -> str:
        return (
            f"ExplanationRating(mode={self.mode!r}, {self.answered}/{self.count} answered, "
            f"methods={self._methods if self.show_method else '(hidden)'})"
        )
