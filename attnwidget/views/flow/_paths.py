"""The path methods FlowView can draw, registered by name.

Each entry turns an explanation and a selected node into a
:class:`~attnwidget.views.flow._path_maths.PathResult`; the maths is in
:mod:`attnwidget.views.flow._path_maths`, what each method's paths mean is in its
docstring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.errors import ModelNotSupportedError, UnknownMethodError
from attnwidget.methods.graph import HeadFusion, as_attention_array, fuse_heads
from attnwidget.views.core.method_maps import METHOD_MATRICES, method_maps, shown_methods
from attnwidget.views.flow._path_maths import (
    PathResult,
    Progress,
    _max_flow_edges,
    check_node,
    flow_paths,
    grad_attention_maps,
    lrp_paths,
    product_paths,
    raw_paths,
    residual_maps,
)
from attnwidget.views.flow._path_stacks import STACKS, stack_explanation, stack_problem, stacks

__all__ = [
    "STACKS",
    "PathMethod",
    "PathResult",
    "_max_flow_edges",
    "compute_paths",
    "get_path_method",
    "path_methods",
    "register_path_method",
    "stack_explanation",
    "stack_problem",
    "stacks",
]


# -- the registry of path methods ---------------------------------------------------


@dataclass(frozen=True)
class PathMethod:
    """A method the flow view can draw: how to compute its paths, and when it applies."""

    name: str
    compute: Callable[..., PathResult]
    applies: Callable[[Any], bool]
    summary: str
    signed: bool = False


_PATH_METHODS: dict[str, PathMethod] = {}


def register_path_method(
    name: str,
    *,
    applies: Callable[[Any], bool],
    summary: str,
    signed: bool = False,
) -> Callable[[Callable[..., PathResult]], Callable[..., PathResult]]:
    """Decorator: ``fn(explanation, layer, token, *, head_fusion, progress) -> PathResult``."""

    def decorator(fn: Callable[..., PathResult]) -> Callable[..., PathResult]:
        if name in _PATH_METHODS:
            raise ValueError(f"a path method named {name!r} is already registered")
        _PATH_METHODS[name] = PathMethod(name, fn, applies, summary, signed)
        return fn

    return decorator


def path_methods(explanation: Any = None, stack: str = "encoder") -> list[str]:
    """Names of the path methods, or those that apply to ``explanation``'s ``stack``."""
    if explanation is None:
        return list(_PATH_METHODS)
    shown = stack_explanation(explanation, stack)
    return [m.name for m in _PATH_METHODS.values() if m.applies(shown)]


def get_path_method(name: str) -> PathMethod:
    try:
        return _PATH_METHODS[name]
    except KeyError:
        raise UnknownMethodError(
            f"method {name!r} has no path view; path methods: {', '.join(path_methods())}."
        ) from None


def compute_paths(
    explanation: Any,
    method: str,
    layer: int,
    token: int,
    *,
    stack: str = "encoder",
    head_fusion: HeadFusion = "mean",
    progress: Progress | None = None,
) -> PathResult:
    """The paths of ``method`` for the node ``(layer, token)`` of ``explanation``'s ``stack``."""
    spec = get_path_method(method)
    shown = stack_explanation(explanation, stack)
    if not spec.applies(shown):
        if stack != "encoder" and spec.applies(explanation):
            why = "the explanation holds what it needs for the encoder only; use stack='encoder'"
        else:
            why = f"it needs what attnwidget.explain(..., methods=[{method!r}]) captures"
        raise ModelNotSupportedError(
            f"method {method!r} cannot draw paths for the {stack} stack of this explanation; "
            f"{why}. Available here: {', '.join(path_methods(explanation, stack))}."
        )
    return spec.compute(shown, layer, token, head_fusion=head_fusion, progress=progress)


def _always(_explanation: Any) -> bool:
    return True


@register_path_method(
    "raw",
    applies=_always,
    summary="One layer's attention (heads fused); identity lanes assumed elsewhere.",
)
def _raw(explanation: Any, layer: int, token: int, **options: Any) -> PathResult:
    fused = fuse_heads(as_attention_array(explanation.attentions), options["head_fusion"])
    nodes, edges = raw_paths(fused, layer, token)
    note = (
        "raw: the selected layer's attention (no residual); straight lanes assume node (l, j) "
        "is token j."
    )
    return PathResult("raw", layer, token, nodes, edges, note=note)


@register_path_method(
    "rollout",
    applies=_always,
    summary="Rollout: the selected node's information split along Â = 0.5·W + 0.5·I.",
)
def _rollout(explanation: Any, layer: int, token: int, **options: Any) -> PathResult:
    maps = residual_maps(explanation.attentions, options["head_fusion"])
    nodes, edges = product_paths(maps, layer, token)
    note = "rollout: edge (l,i)→(l−1,j) carries mass(l,i) × Â_l[i,j]; each layer sums to 1."
    return PathResult("rollout", layer, token, nodes, edges, note=note)


@register_path_method(
    "flow",
    applies=_always,
    summary="Attention flow: maximum flows through the capacities Â, superposed.",
)
def _flow(explanation: Any, layer: int, token: int, **options: Any) -> PathResult:
    nodes, edges, details = flow_paths(
        explanation.attentions,
        layer,
        token,
        head_fusion=options["head_fusion"],
        progress=options.get("progress"),
    )
    note = (
        "flow: one max flow to each end token (Dinic), superposed and normalised; end "
        "tokens show the exact normalised flow values."
    )
    return PathResult("flow", layer, token, nodes, edges, note=note, details=details)


def _has_grads(explanation: Any) -> bool:
    return getattr(explanation, "attention_grads", None) is not None


@register_path_method(
    "grad_attention",
    applies=_has_grads,
    summary="Gradient-weighted attention: mass split along I + E_h[(∇A ⊙ A)^+].",
)
def _grad_attention(explanation: Any, layer: int, token: int, **_options: Any) -> PathResult:
    maps = grad_attention_maps(explanation.attentions, explanation.attention_grads)
    nodes, edges = product_paths(maps, layer, token)
    note = "grad_attention: edge (l,i)→(l−1,j) carries mass(l,i) × (I + Ā_l)[i,j] (not normalised)."
    return PathResult("grad_attention", layer, token, nodes, edges, note=note)


def _has_chefer2021(explanation: Any) -> bool:
    return "layer_maps" in getattr(explanation, "details", {}).get("chefer2021", {})


@register_path_method(
    "chefer2021",
    applies=_has_chefer2021,
    summary="Relevance × gradient rollout: mass split along each layer's Ā_l.",
)
def _chefer2021(explanation: Any, layer: int, token: int, **_options: Any) -> PathResult:
    details = explanation.details["chefer2021"]
    nodes, edges = product_paths(details["layer_maps"], layer, token)
    # Images follow the authors' ViT code (rows not normalised), text their BERT code.
    rows = "normalised" if details.get("row_normalise", True) else "not normalised"
    note = (
        "chefer2021: edge (l,i)→(l−1,j) carries mass(l,i) × Ā_l[i,j], "
        f"Ā_l = I + E_h[(∇A_l ⊙ R^{{A_l}})^+] with rows {rows} (identity below start_layer)."
    )
    return PathResult("chefer2021", layer, token, nodes, edges, note=note)


def _has_lrp(explanation: Any) -> bool:
    details = getattr(explanation, "details", {}).get("lrp", {})
    return "attention_relevance" in details and "layer_relevance" in details


@register_path_method(
    "lrp",
    applies=_has_lrp,
    summary="AttnLRP: relevance of every attention weight for the target (signed).",
    signed=True,
)
def _lrp(explanation: Any, layer: int, token: int, **_options: Any) -> PathResult:
    num_layers, n = explanation.num_layers, len(explanation.tokens)
    check_node(layer, token, num_layers, n)
    nodes, edges = lrp_paths(explanation.details["lrp"], explanation.scores["lrp"])
    note = (
        f"lrp: relevance of each attention weight for the target at query #"
        f"{explanation.query_index} (summed over heads); it does not depend on the selection."
    )
    return PathResult("lrp", layer, token, nodes, edges, signed=True, note=note)


def _maps_path_method(name: str, summary: str, signed: bool) -> None:
    """Register ``name``'s per-head maps (:mod:`._method_maps`) as raw-like paths."""

    def applies(explanation: Any) -> bool:
        return name in shown_methods(explanation)

    def compute(explanation: Any, layer: int, token: int, **options: Any) -> PathResult:
        found = method_maps(explanation, name)
        assert found is not None  # applies(): the explanation has the maps
        maps = found.astype(np.float64)
        fused = fuse_heads(maps, options["head_fusion"])
        nodes, edges = raw_paths(fused, layer, token)
        note = (
            f"{name}: the selected layer's {METHOD_MATRICES[name].lower()} (heads fused, no "
            "residual); straight lanes assume node (l, j) is token j."
        )
        return PathResult(name, layer, token, nodes, edges, signed=signed, note=note)

    register_path_method(name, applies=applies, summary=summary, signed=signed)(compute)


_maps_path_method(
    "effective_attention",
    "Effective attention: one layer's attention without its null-space part (signed).",
    signed=True,
)
_maps_path_method(
    "attention_norm",
    "Norm-based attention: one layer's ‖α f(x)‖, each row's share (heads fused).",
    signed=False,
)
