"""Checks of what is registered as a method: its name, and the shape of its scores."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from attnwidget.errors import InputError

if TYPE_CHECKING:  # the registry imports this module
    from attnwidget.methods.registry import MethodSpec, ScoreContext

#: A method name: its key in the widgets' JavaScript objects, in HTML attributes
#: and in ``method_options``; letters, digits and "_" keep it safe in all three.
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
#: Names every JavaScript object already has (Object.prototype's): a method so
#: named would collide with the inherited member in the views' lookup tables.
_JS_PROTOTYPE = frozenset(
    {
        "constructor",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "toString",
        "valueOf",
    }
)


def check_method_name(name: object) -> None:
    """Refuse a method name that is not identifier-like, or a JavaScript prototype name."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in _JS_PROTOTYPE:
        why = (
            "is a name every JavaScript object already has"
            if name in _JS_PROTOTYPE
            else "is not a method name"
        )
        raise InputError(
            f"method name {name!r} {why}; use 1 to 64 letters, digits and _, starting with a "
            "letter, and not a JavaScript Object member (constructor, toString, valueOf, ...), "
            "e.g. 'my_method'."
        )


def check_scores(spec: MethodSpec, result: Any, context: ScoreContext) -> np.ndarray:
    """``result`` as float32 (n,), or an InputError naming the method when its shape is not (n,).

    Checked as the scores are computed, so a method registered with the wrong
    output fails where it is called, not later in a view.
    """
    scores = np.asarray(result, dtype=np.float32)
    n = _token_count(context)
    if n is not None and scores.shape != (n,):
        raise InputError(
            f"method {spec.name!r} returned scores of shape {scores.shape} for {n} tokens; a "
            f"registered method must return one score per input token, shape ({n},). Fix the "
            f"function registered with attnwidget.register({spec.name!r}, ...)."
        )
    return scores


def _token_count(context: ScoreContext) -> int | None:
    """n, the input's token count, from whatever the context holds (None when unknown)."""
    for array in (context.attentions, context.attention_rows, context.fused_attentions):
        if array is not None:
            return int(np.shape(array)[-1])
    if context.input_ids is not None:
        return len(context.input_ids)
    if context.embeddings is not None:
        return int(np.shape(context.embeddings)[0])
    return None
