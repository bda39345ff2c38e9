"""Token-to-token paths through the layers: how each method's relevance travels.

This is what :class:`attnwidget.views.FlowView` draws, as plain arrays; the
registry of path methods is :mod:`attnwidget.views.flow._paths`, the stacks
:mod:`attnwidget.views.flow._path_stacks`.

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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnwidget.methods.flow.flow import attention_flow_result
from attnwidget.methods.graph import HeadFusion, add_residual, as_attention_array, fuse_heads

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


def check_node(layer: int, token: int, num_layers: int, n: int) -> None:
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
    check_node(layer, token, num_layers, n)
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
    check_node(layer, token, num_layers, n)
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
    check_node(layer, token, num_layers, n)
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

    The methods layer's extractor (:func:`attnwidget.methods.flow.edges.max_flow_edges`,
    scipy's Dinic); the node values come from :func:`attention_flow_result`.
    """
    from attnwidget.methods.flow.edges import (
        max_flow_edges,  # views import methods, never the reverse
    )

    return max_flow_edges(stack, source, sink)


def lrp_paths(details: dict[str, Any], scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AttnLRP's relevance as paths: ``details`` is an explanation's ``details["lrp"]``."""
    relevance = np.asarray(details["attention_relevance"], dtype=np.float64)  # (L, H, n, n)
    layers = np.asarray(details["layer_relevance"], dtype=np.float64)  # (L+1, n)
    nodes = layers.copy()
    nodes[0] = np.asarray(scores, dtype=np.float64)
    return nodes, relevance.sum(axis=1)
