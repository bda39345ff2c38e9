"""Which methods an Explorer draws with, which it computes when picked, and their options.

The first drawing needs one forward and one backward pass: explain()'s
default methods (:data:`attnwidget.DEFAULT_METHODS`; for a bare encoder,
:mod:`attnwidget.pipeline.similarity`'s defaults). The slower methods are
offered in the page and computed only when picked (:data:`ON_DEMAND`).
"""

from __future__ import annotations

import difflib
import logging
import weakref
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from attnwidget.errors import InputError
from attnwidget.methods import get_method
from attnwidget.methods.registry import resolve_method_options
from attnwidget.pipeline.explain import DEFAULT_METHODS
from attnwidget.pipeline.similarity import ATTENTION_METHODS, SIMILARITY_METHODS

log = logging.getLogger(__name__)

#: Methods computed when picked in the page, never before the first drawing.
ON_DEMAND: tuple[str, ...] = ("lrp", "chefer2021", "flow", "integrated_gradients", "blank_out")
#: The same for a bare encoder explained without a target (attention-only methods).
ATTENTION_ON_DEMAND: tuple[str, ...] = ("flow", "effective_attention", "attention_norm")
#: On-demand methods offered only where their relevance engine runs on the model.
RELEVANCE: tuple[str, ...] = ("lrp", "chefer2021")

# Per model: the relevance methods' refusal ("" when the method runs), checked once.
_CHECKED: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()


def fast_methods(mode: str) -> tuple[str, ...]:
    """explain()'s defaults for ``mode``: "head" (a model with a head, text or image),
    "attention" (a bare encoder, no target) or "similarity" (a bare encoder, two texts)."""
    return {"attention": ATTENTION_METHODS, "similarity": SIMILARITY_METHODS}.get(
        mode, DEFAULT_METHODS
    )


def default_on_demand(mode: str) -> tuple[str, ...]:
    """The methods offered on demand in ``mode`` (see :func:`fast_methods`)."""
    return ATTENTION_ON_DEMAND if mode == "attention" else ON_DEMAND


def check_names(value: Any, argument: str) -> list[str] | None:
    """A list of registered method names (None stays None); bad names raise."""
    if value is None:
        return None
    if isinstance(value, str):
        raise InputError(f"{argument}={value!r} is a string; pass a list, e.g. [{value!r}].")
    names = [str(name) for name in value]
    for name in names:
        get_method(name)  # UnknownMethodError naming the registered ones
    return names


def check_options(
    options: Any, offered: Iterable[str], owner: str
) -> dict[str, dict[str, Any]] | None:
    """``method_options`` checked as :func:`attnwidget.explain` checks them, before any run.

    Options are for the methods the widget offers (drawn or on demand); a
    method it does not offer is refused with the names it does.
    """
    if options is None:
        return None
    if not isinstance(options, dict):
        raise InputError(
            f"method_options must be a dict of per-method options, e.g. "
            f"{{'rollout': {{'head_fusion': 'max'}}}}, got {type(options).__name__}."
        )
    names = list(dict.fromkeys(offered))
    for name in options:
        get_method(str(name))  # an unknown method: UnknownMethodError
        if name not in names:
            close = difflib.get_close_matches(str(name), names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(
                f"method_options names {name!r}{hint}, which this {owner} does not compute; "
                f"its methods: {', '.join(names)} (add it with methods= or on_demand=)."
            )
    resolve_method_options([get_method(name) for name in options], options)  # names and values
    return {str(name): dict(values) for name, values in options.items()}


def options_for(
    options: dict[str, dict[str, Any]] | None, names: Sequence[str]
) -> dict[str, dict[str, Any]] | None:
    """The part of ``options`` for ``names`` (explain() refuses options of other methods)."""
    if not options:
        return None
    return {name: options[name] for name in names if name in options} or None


def relevance_refusals(model: Any, names: Iterable[str]) -> dict[str, str]:
    """For each of ``names`` in :data:`RELEVANCE`: why its engine refuses ``model`` ("" if not).

    Decided from the model's structure, not its ``config.model_type``: each
    engine's static checks and one forward pass on 3 tokens with its rules
    installed (:func:`attnwidget.relevance.chefer.check_runs`, which holds the
    model's lock), so a renamed copy of a supported model gets them and
    Mixtral's router or OPT's residual stream is refused for chefer2021.
    Encoder-decoder models get neither. Vision Transformers get both (the
    image pipeline has checked the model; the text check feeds token ids).
    Checked once per model.
    """
    wanted = [name for name in names if name in RELEVANCE]
    try:
        known = _CHECKED.setdefault(model, {})
    except TypeError:  # not weak-referenceable: check every time
        known = {}
    missing = [name for name in wanted if name not in known]
    if missing:
        if getattr(getattr(model, "config", None), "is_encoder_decoder", False):
            for name in missing:
                known[name] = f"{name} does not explain encoder-decoder models."
        elif getattr(model, "main_input_name", None) == "pixel_values":
            known.update(dict.fromkeys(missing, ""))
        else:
            from attnwidget.relevance.chefer import check_runs, chefer_rules
            from attnwidget.relevance.lrp import lrp_rules

            rules: dict[str, Callable[[Any], AbstractContextManager[Any]]] = {
                "lrp": lrp_rules,
                "chefer2021": chefer_rules,
            }
            for name in missing:
                try:
                    check_runs(model, rules=rules[name])
                    known[name] = ""
                except Exception as error:  # refused: not offered, never a failed Explorer
                    log.debug("Explorer: %s not offered for %s: %s", name, type(model), error)
                    known[name] = str(error).strip() or type(error).__name__
    return {name: known[name] for name in wanted}
