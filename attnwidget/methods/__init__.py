"""Explanation methods: pure functions on arrays, each registered by name.

Importing this package registers every built-in method. Use
:func:`available_methods` to list them, :func:`method_info` to read one's
options and :func:`compute_scores` to run several on one captured context.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from attnwidget.errors import ModelNotSupportedError
from attnwidget.methods.blank_out import blank_out
from attnwidget.methods.flow.flow import attention_flow
from attnwidget.methods.grad_attention import grad_attention
from attnwidget.methods.gradients import input_x_gradient, integrated_gradients

# isort: split
# Registers input_x_gradient and integrated_gradients here, in registration order.
from attnwidget.methods import gradient_methods as _gradient_methods  # noqa: F401

# isort: split
from attnwidget.methods.options import Option
from attnwidget.methods.raw import raw_attention
from attnwidget.methods.registry import (
    MethodInfo,
    MethodSpec,
    ScoreContext,
    available_methods,
    get_method,
    method_info,
    register,
    resolve_method_options,
)
from attnwidget.methods.registry_checks import check_scores

__all__ = [
    "MethodInfo",
    "MethodSpec",
    "Option",
    "ScoreContext",
    "attention_flow",
    "available_methods",
    "blank_out",
    "compute_scores",
    "get_method",
    "grad_attention",
    "input_x_gradient",
    "integrated_gradients",
    "method_info",
    "raw_attention",
    "register",
]


def compute_scores(
    names: Sequence[str], context: ScoreContext
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    """Run the named methods on one context.

    Returns ``(scores, details)``: ``scores[name]`` is float32 (n,);
    ``details[name]`` holds a method's extras when it returns any (a method
    adapter may return ``(scores, details)`` instead of plain scores).
    Unknown names raise :class:`UnknownMethodError` and invalid
    ``context.options`` an :class:`InputError` before anything runs; the
    methods see the complete options (defaults filled in; see
    :func:`method_context`).
    """
    specs = [get_method(name) for name in names]  # validate every name first
    context = method_context(specs, context)
    available = {"attentions"}
    if context.keep != "all":  # what was kept: check_keep_for names the keep needed
        from attnwidget.methods.keep import check_keep_for

        check_keep_for(specs, context.options, context.keep)
        available.add("attention_grads")  # grad_attention reads grad_attention_rows
    if context.attention_grads is not None:
        available.add("attention_grads")
    if context.embedding_grads is not None:
        available.add("embedding_grads")
    if context.target_score is not None:
        available.add("target_score")
    if context.target_probability is not None:
        available.add("target_probability")
    if context.head_values is not None and context.head_output_weights is not None:
        available.add("head_values")
    for spec in specs:
        missing = spec.needs - available
        if missing == {"head_values"}:
            raise ModelNotSupportedError(
                f"method {spec.name!r} needs each head's value vectors, which only "
                "attnwidget.explain(model, tokenizer, text) captures, on text models (BERT "
                "family, DistilBERT, GPT-2, Llama-style); plain attention arrays and image "
                "explanations do not have them."
            )
        if missing:
            raise ModelNotSupportedError(
                f"method {spec.name!r} needs {sorted(missing)}, which plain attention arrays "
                "do not provide; run it through attnwidget.explain(model, tokenizer, text)."
            )
    scores: dict[str, np.ndarray] = {}
    details: dict[str, dict[str, Any]] = {}
    for spec in specs:
        result = spec.score(context)
        if isinstance(result, tuple):
            result, extra = result
            details[spec.name] = extra
        scores[spec.name] = check_scores(spec, result, context)  # (n,), or names the method
    return scores, details


def method_context(specs: Sequence[MethodSpec], context: ScoreContext) -> ScoreContext:
    """``context`` with its options checked for ``specs`` and completed with defaults.

    Raises :class:`InputError` for options of unknown or unrequested methods,
    unknown option names and invalid values (see
    :func:`~attnwidget.methods.registry.resolve_method_options`).
    """
    options = resolve_method_options(specs, context.options)
    return dataclasses.replace(context, options=options)


# Registers "lrp" and "chefer2021", after the methods above (registration order is
# the order of available_methods()).
from attnwidget.methods import chefer2021 as _chefer2021  # noqa: E402, F401
from attnwidget.methods import lrp as _lrp  # noqa: E402, F401

#: Registered last (after rollout, as before they existed): the methods that read
#: each head's values (capture's head_values).
_VALUE_METHODS = ("effective_attention", "attention_norm")
from attnwidget.methods import rollout as _rollout  # noqa: E402, F401, I001
from attnwidget.methods import effective_attention as _effective_attention  # noqa: E402, F401
from attnwidget.methods import attention_norm as _attention_norm  # noqa: E402, F401
