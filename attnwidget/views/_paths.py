"""Token-to-token paths through the layers: how each method's relevance travels.

This is what :class:`attnwidget.views.FlowView` draws, as plain arrays.

Nodes and edges
---------------
Node ``(l, i)`` is token position ``i`` after attention layer ``l``: ``l = 0``
are the input tokens, ``l = L`` the top. Edge layer ``l`` (1 … L) links every
node ``(l, i)`` to every node ``(l − 1, j)``; its weight in the attention graph
of Abnar & Zuidema (2020) is the head-fused, residual-adjusted attention
``Â_l[i, j]`` (``Â = 0.5·W + 0.5·I``, rows re-normalised).

A *selection* is one node ``(s, t)``. Its paths go **down** to the input
tokens (when ``s > 0``) and **up** to the top (when ``s < L``). A
:class:`PathResult` holds, for one method and one selection,

* ``nodes`` (L+1, n): a value per node (the selected node is 1). Layer 0
  holds the method's scores of the input tokens for the selected node (down);
  layer L the selected token's score for each top node (up).
* ``edges`` (L, n, n): ``edges[l − 1, i, j]`` is the contribution of the edge
  ``(l, i) → (l − 1, j)`` to the selection.

What each method's contribution is (exactly what the view draws):

``rollout`` (and any product of per-layer matrices ``M_l``, see
:func:`product_paths`)
    Down from ``(s, t)``: mass ``m_s = e_t``, ``m_{l−1} = m_l · M_l``; edge
    ``(l, i) → (l−1, j)`` carries ``m_l[i] · M_l[i, j]``. Each edge layer sums
    to 1 and ``m_0`` is row ``t`` of the rollout to layer ``s``. Up: ``u_s =
    e_t``, ``u_l = M_l · u_{l−1}``; the edge carries ``M_l[i, j] · u_{l−1}[j]``
    (its share of node ``(l, i)``'s content that came from ``(s, t)``); ``u_L``
    is column ``t`` of the rollout.
``grad_attention``
    The same with ``M_l = I + E_h[(∇A_l ⊙ A_l)^+]`` (Chefer et al. 2021), so
    ``m_0`` is the method's relevance row (not normalised).
``raw``
    Raw attention assumes node ``(l, j)`` *is* token ``j``. Down from ``(s, t)``:
    the edges ``(s, t) → (s−1, j)`` with the fused attention ``W_s[t, j]`` (no
    residual), then straight lanes ``(l, j) → (l−1, j)`` carrying the same
    amount down to token j. Up from ``(s, t)``: a lane from ``(s, t)`` to
    ``(L−1, t)``, then the top layer's ``W_L[i, t]`` for every top node i (the
    raw score of token t when explaining top node i).
``flow``
    Down from ``(s, t)``: for every input token j, one maximum flow ``f_j``
    from ``(s, t)`` to ``(0, j)`` through the capacities ``Â`` (scipy's Dinic
    on capacities rounded down to multiples of 2**-30, so every ``f_j`` is
    feasible; maximum flows are not unique, this is the solver's). The edge
    carries ``Σ_j f_j(e) / Σ_j |f_j|``: the max flows to all input tokens
    superposed, normalised like the method's scores, so each edge layer sums
    to 1 and what enters ``(0, j)`` is token j's share. ``nodes[0]`` are the
    exact normalised flow values of :func:`attention_flow_result` (equal to
    the drawn inflows within the 2**-30 rounding, ≤ 1e-4). Up from ``(s, t)``:
    one maximum flow from every top node ``(L, i)`` to ``(s, t)``, each
    divided by the sum of ``(L, i)``'s max flows to all tokens of layer s, so
    that ``nodes[L, i]`` is token t's normalised flow score for top node i.
``lrp``
    Not a property of the selection: AttnLRP's relevance of every attention
    weight for the explained target, summed over heads (signed), with the
    residual-stream relevance of every node; layer 0 holds the token scores.

Stacks
------
Encoder–decoder explanations (T5, BART) have two self-attention stacks:
``stack="encoder"`` (``explanation.attentions``, over the input tokens; for
every other model its only stack) and ``stack="decoder"``
(``explanation.decoder_attentions``, over the decoder tokens; the selection's
query is the explained decoder position). :func:`stack_explanation` gives the
decoder stack as an explanation of its own, without the encoder's scores,
gradients and method details, so only the methods that need attention alone
(raw, rollout, flow) apply there: the capture records gradients and AttnLRP
relevance of the encoder's attention only. Cross-attention (decoder →
encoder) is in neither stack's graph: decoder paths assume, as rollout does,
that decoder tokens mix only through self-attention and the residual.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.sparse import coo_array
from scipy.sparse.csgraph import maximum_flow

from ..errors import ModelNotSupportedError, UnknownMethodError
from ..methods._graph import HeadFusion, add_residual, as_attention_array, fuse_heads
from ..methods.flow import attention_flow_result

#: Capacities are rounded down to multiples of 1/FLOW_SCALE for scipy's integer solver.
FLOW_SCALE = 2**30

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class PathResult:
    """One method's paths for one selected node ``(layer, token)``.

    Attributes:
        method: the method's name.
        layer, token: the selected node (node layer 0 … L, token 0 … n−1).
        nodes: float64 (L+1, n) node values (see the module docstring).
        edges: float64 (L, n, n); ``edges[l−1, i, j]`` = contribution of the
            edge ``(l, i) → (l−1, j)``.
        signed: True when values can be negative (diverging colours).
        note: one line on what is drawn (shown under the view).
        details: extras (e.g. flow's certified ``max_error``).
    """

    method: str
    layer: int
    token: int
    nodes: np.ndarray
    edges: np.ndarray
    signed: bool = False
    note: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def scores_down(self) -> np.ndarray:
        """(n,) the input tokens' values (the method's scores for the selected node)."""
        return self.nodes[0]

    @property
    def scores_up(self) -> np.ndarray:
        """(n,) the top nodes' values (the selected token's score for each top node)."""
        return self.nodes[-1]


# -- stacks ---------------------------------------------------------------------

#: The self-attention stacks a flow diagram can show (see "Stacks" above).
STACKS: tuple[str, ...] = ("encoder", "decoder")


def stacks(explanation: Any) -> list[str]:
    """``explanation``'s stacks: ``["encoder", "decoder"]`` with decoder attention, else one."""
    if getattr(explanation, "decoder_attentions", None) is not None:
        return list(STACKS)
    return ["encoder"]


def stack_problem(explanation: Any, stack: object) -> str | None:
    """Why ``stack`` cannot be shown for ``explanation`` (and what to do instead), or None."""
    if stack in stacks(explanation):
        return None
    if stack != "decoder":
        return (
            f"stack={stack!r} is not a stack; use 'encoder' or 'decoder' (encoder–decoder models)."
        )
    kind = getattr(explanation, "kind", "arrays")
    if kind == "encoder-decoder":
        why = "this encoder–decoder explanation has no decoder_attentions"
    else:
        why = (
            f"this explanation (kind {kind!r}) has a single self-attention stack, shown as "
            "stack='encoder' (for a decoder-only model such as GPT-2 that stack is its decoder)"
        )
    return (
        f"stack='decoder' needs an encoder–decoder explanation (T5, BART) with decoder "
        f"self-attention; {why}. Use stack='encoder', or explain an encoder–decoder model "
        "with attnwidget.explain(model, tokenizer, text, decoder_text=...)."
    )


def stack_explanation(explanation: Any, stack: str = "encoder") -> Any:
    """``explanation`` as one stack sees it (see "Stacks" in the module docstring).

    ``"encoder"``: the explanation itself. ``"decoder"``: a copy whose tokens are
    the decoder tokens, attentions the decoder self-attention and query the
    explained decoder position, without scores, gradients or details (those
    are the encoder tokens'), so that no method computes them from the wrong
    stack. Raises ``ValueError`` (unknown name) or ``ModelNotSupportedError``
    (no decoder) with the fix.
    """
    problem = stack_problem(explanation, stack)
    if problem is not None:
        raise (ValueError if stack != "decoder" else ModelNotSupportedError)(problem)
    if stack == "encoder":
        return explanation
    return replace(
        explanation,
        tokens=[str(t) for t in explanation.decoder_tokens],
        attentions=explanation.decoder_attentions,
        raw_tokens=None,
        input_ids=None,
        sentence_b_start=None,
        scores={},
        attention_grads=None,
        decoder_tokens=None,
        decoder_attentions=None,
        cross_attentions=None,
        details={},
    )


# -- per-layer matrices ---------------------------------------------------------


def residual_maps(attentions: object, head_fusion: HeadFusion = "mean") -> np.ndarray:
    """``Â_l`` for l = 1 … L as (L, n, n): fused heads, plus 0.5·I, rows re-normalised."""
    return add_residual(fuse_heads(as_attention_array(attentions), head_fusion))


def grad_attention_maps(attentions: object, gradients: object) -> np.ndarray:
    """``I + E_h[(∇A_l ⊙ A_l)^+]`` for l = 1 … L: grad_attention's per-layer update."""
    attn = as_attention_array(attentions)
    grad = as_attention_array(gradients, name="gradients")
    weighted = np.clip(grad * attn, 0.0, None).mean(axis=1)
    return weighted + np.eye(attn.shape[-1])[None]


# -- the path computations --------------------------------------------------------


def _check_node(layer: int, token: int, num_layers: int, n: int) -> None:
    if not 0 <= layer <= num_layers:
        raise IndexError(
            f"layer={layer} out of range: node layers are 0 (input tokens) .. {num_layers} (top)."
        )
    if not 0 <= token < n:
        raise IndexError(f"token={token} out of range for {n} tokens (valid: 0..{n - 1}).")


def product_paths(maps: np.ndarray, layer: int, token: int) -> tuple[np.ndarray, np.ndarray]:
    """Paths of a product of per-layer matrices (rollout, grad_attention).

    Args:
        maps: (L, n, n); ``maps[l − 1]`` is ``M_l``.
        layer, token: the selected node ``(s, t)``.

    Returns:
        ``(nodes (L+1, n), edges (L, n, n))`` as in the module docstring.
    """
    num_layers, n = maps.shape[0], maps.shape[-1]
    _check_node(layer, token, num_layers, n)
    nodes = np.zeros((num_layers + 1, n))
    edges = np.zeros((num_layers, n, n))
    nodes[layer, token] = 1.0
    mass = nodes[layer].copy()
    for lay in range(layer, 0, -1):  # down: edge layer lay links node layers lay → lay-1
        edges[lay - 1] = mass[:, None] * maps[lay - 1]
        mass = mass @ maps[lay - 1]
        nodes[lay - 1] = mass
    content = nodes[layer].copy()
    for lay in range(layer + 1, num_layers + 1):  # up
        edges[lay - 1] = maps[lay - 1] * content[None, :]
        content = maps[lay - 1] @ content
        nodes[lay] = content
    return nodes, edges


def raw_paths(fused: np.ndarray, layer: int, token: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw attention's paths: one layer's attention, identity lanes elsewhere.

    Args:
        fused: (L, n, n) head-fused attention ``W_l`` (no residual).
    """
    num_layers, n = fused.shape[0], fused.shape[-1]
    _check_node(layer, token, num_layers, n)
    nodes = np.zeros((num_layers + 1, n))
    edges = np.zeros((num_layers, n, n))
    nodes[layer, token] = 1.0
    lanes = np.arange(n)
    if layer > 0:
        weights = fused[layer - 1, token]
        edges[layer - 1, token] = weights
        for lay in range(layer - 1, 0, -1):
            edges[lay - 1, lanes, lanes] = weights
        nodes[:layer] = weights
    if layer < num_layers:
        for lay in range(layer + 1, num_layers):
            edges[lay - 1, token, token] = 1.0
            nodes[lay, token] = 1.0
        edges[num_layers - 1, :, token] = fused[num_layers - 1, :, token]
        nodes[num_layers] = fused[num_layers - 1, :, token]
    return nodes, edges


def flow_paths(
    attentions: object,
    layer: int,
    token: int,
    *,
    head_fusion: HeadFusion = "mean",
    progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Attention flow's paths (see the module docstring): nodes, edges, details.

    Costs one maximum flow per input token (down) or per top node (up), plus
    :func:`attention_flow_result` for the exact values; ``progress(done,
    total)`` is called as the flows are solved.
    """
    array = as_attention_array(attentions)
    maps = add_residual(fuse_heads(array, head_fusion))
    num_layers, n = maps.shape[0], maps.shape[-1]
    _check_node(layer, token, num_layers, n)
    nodes = np.zeros((num_layers + 1, n))
    edges = np.zeros((num_layers, n, n))
    nodes[layer, token] = 1.0
    details: dict[str, Any] = {}
    total = (n if layer > 0 else 0) + (n if layer < num_layers else 0)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    if progress is not None:
        progress(0, total)  # at once: the page learns that the kernel is working

    if layer > 0:
        exact = attention_flow_result(array[:layer], rows=[token], head_fusion=head_fusion)
        stack = [maps[lay - 1] for lay in range(layer, 0, -1)]  # top first
        flows = np.zeros((layer, n, n))
        values = 0.0
        for sink in range(n):
            value, parts = _max_flow_edges(stack, token, sink)
            values += value
            for depth, part in enumerate(parts):
                flows[layer - 1 - depth] += part
            tick()
        if values > 0:
            edges[:layer] = flows / values
        for lay in range(1, layer):
            nodes[lay] = edges[lay].sum(axis=0)  # inflow of node layer lay
        nodes[0] = exact.values[0]
        details["down_max_error"] = exact.max_error
        details["down_raw_values"] = exact.raw_values[0]
    if layer < num_layers:
        exact = attention_flow_result(array[layer:], rows=None, head_fusion=head_fusion)
        row_sums = exact.raw_values.sum(axis=1)
        stack = [maps[lay - 1] for lay in range(num_layers, layer, -1)]
        flows = np.zeros((num_layers - layer, n, n))
        for source in range(n):
            value, parts = _max_flow_edges(stack, source, token)
            if value > 0 and row_sums[source] > 0:
                for depth, part in enumerate(parts):
                    flows[num_layers - layer - 1 - depth] += part / row_sums[source]
            tick()
        edges[layer:] = flows
        for lay in range(layer + 1, num_layers):
            nodes[lay] = edges[lay - 1].sum(axis=1)  # outflow = inflow of node (lay, i)
        nodes[num_layers] = exact.values[:, token]
        details["up_max_error"] = exact.max_error
    return nodes, edges, details


def _max_flow_edges(
    stack: list[np.ndarray], source: int, sink: int
) -> tuple[float, list[np.ndarray]]:
    """One maximum flow from ``source`` (top node layer) to ``sink`` (bottom) and its edge flows.

    The methods layer's extractor (:func:`attnwidget.methods._flow_edges.max_flow_edges`),
    the same that the exact solver reads scipy's results with.
    """
    from ..methods._flow_edges import max_flow_edges  # views import methods, never the reverse

    return max_flow_edges(stack, source, sink)


def lrp_paths(details: dict[str, Any], scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AttnLRP's relevance as paths: ``details`` is an explanation's ``details["lrp"]``."""
    relevance = np.asarray(details["attention_relevance"], dtype=np.float64)  # (L, H, n, n)
    layers = np.asarray(details["layer_relevance"], dtype=np.float64)  # (L+1, n)
    nodes = layers.copy()
    nodes[0] = np.asarray(scores, dtype=np.float64)
    return nodes, relevance.sum(axis=1)


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
    summary="Relevance × gradient rollout: mass split along each layer's row-normalised Ā_l.",
)
def _chefer2021(explanation: Any, layer: int, token: int, **_options: Any) -> PathResult:
    maps = explanation.details["chefer2021"]["layer_maps"]
    nodes, edges = product_paths(maps, layer, token)
    note = (
        "chefer2021: edge (l,i)→(l−1,j) carries mass(l,i) × Ā_l[i,j], "
        "Ā_l = I + E_h[(∇A_l ⊙ R^{A_l})^+] with rows normalised (identity below start_layer)."
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
    _check_node(layer, token, num_layers, n)
    nodes, edges = lrp_paths(explanation.details["lrp"], explanation.scores["lrp"])
    note = (
        f"lrp: relevance of each attention weight for the target at query #"
        f"{explanation.query_index} (summed over heads); it does not depend on the selection."
    )
    return PathResult("lrp", layer, token, nodes, edges, signed=True, note=note)
