"""Certificates that a stage-1 integer flow is within round-off of the maximum.

Part of the exact attention-flow solver (Abnar & Zuidema, ACL 2020) in
:mod:`._maxflow`. Stage 1 solves with capacities rounded down to multiples of
2**-30, so its flow can fall short of the maximum by what the rounding lost
on a minimum cut (< |cut|·2**-30). The checks here prove, without another
max-flow solve, that routing those small losses is possible, which makes
the flow's value exact.
"""

from __future__ import annotations

import numpy as np

from attnwidget.methods.flow._maxflow_union import Union

#: Dense spare-capacity entries held at once by the top-up check.
TOP_UP_ELEMENTS = 4_000_000


def top_up(
    union: Union,
    flow: np.ndarray,
    source_caps: np.ndarray,
    sink_caps: np.ndarray,
    missing: np.ndarray,
) -> np.ndarray:
    """Which problems provably reach their trivial bound after stage 1: bool (K,).

    When the sink's edges are the bound, each sink edge k lacks δ_k ≥ 0 and
    Δ = Σδ is what is missing. If every node of layer 1 whose sink edge lacks
    something is reached from the source by a path of downward residual edges
    whose smallest spare capacity is ≥ Δ (widest paths, one layer at a time),
    sending each δ_k along such a path puts at most Δ on any edge: a feasible
    flow of value τ. When the source's edges are the bound, symmetrically,
    with widest paths from the source's short edges down to the sink.
    """
    count, depth, n = union.shape
    residual = union.caps - flow
    src_res = residual[: count * n].reshape(count, n)
    sink_res = residual[union.sink_edges].reshape(count, n)
    inner_res = residual[count * n : union.sink_edges[0]]
    sink_bound = sink_caps.sum(axis=1) < source_caps.sum(axis=1)
    source_bound = source_caps.sum(axis=1) < sink_caps.sum(axis=1)
    ok = np.zeros(count, dtype=bool)
    own = len(union.inner_index) == 4  # own subgraph per problem
    if own:
        starts = np.searchsorted(union.inner_index[0], np.arange(count + 1))
    per = max(1, TOP_UP_ELEMENTS // max((depth - 1) * n * n, 1))
    for lo in range(0, count, per):
        hi = min(lo + per, count)
        # Spare capacity of the inner edges as dense (problems, depth−1, n, n).
        spare = np.zeros((hi - lo, depth - 1, n, n))
        if own:
            k, t, m, j = (idx[starts[lo] : starts[hi]] for idx in union.inner_index)
            spare[k - lo, t, m, j] = inner_res[starts[lo] : starts[hi]]
        else:
            t, m, j = union.inner_index
            spare[:, t, m, j] = inner_res.reshape(count, -1)[lo:hi]
        if sink_bound[lo:hi].any():
            width = src_res[lo:hi]  # widest path from the source to each node
            for layer in range(depth - 1):
                width = np.minimum(width[:, :, None], spare[:, layer]).max(axis=1)
            short = np.where(sink_res[lo:hi] > 0, width, np.inf).min(axis=1)
            ok[lo:hi] |= sink_bound[lo:hi] & (short >= missing[lo:hi])
        if source_bound[lo:hi].any():
            width = sink_res[lo:hi]  # widest path from each node to the sink
            for layer in range(depth - 2, -1, -1):
                width = np.minimum(spare[:, layer], width[:, None, :]).max(axis=2)
            short = np.where(src_res[lo:hi] > 0, width, np.inf).min(axis=1)
            ok[lo:hi] |= source_bound[lo:hi] & (short >= missing[lo:hi])
    return ok & (missing >= 0)


def saturate_cut(
    union: Union, data: np.ndarray, net: np.ndarray, flow: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prove stage 1's minimum cut tight by routing the rounding losses: (ok, price, side).

    ``data`` are the scaled integer capacities given to scipy, ``net`` its net
    integer flows (both in the CSR arc order of ``union``), ``flow`` the real
    flow on each edge. The nodes reachable from the source in the integer
    residual graph (``side``) define a cut of each problem; ``price`` (K,) is
    its capacity summed in float64 from the original capacities, an upper
    bound. What separates the flow from that bound is, per problem, the real
    residual Δ = Σ δ_a of the arcs a that cross the cut (each < 2**-30: the
    integer residual there is 0). If every such arc's tail is reached from
    the source, and the sink from every such arc's head, by residual arcs
    that do not cross the cut and each have ≥ Δ to spare, then sending δ_a
    along source → tail → head → sink for every a is feasible (no arc carries
    more than Δ in total, and the two halves lie on different sides of the
    cut, so they share no arc), and it saturates the cut: the maximum flow
    *is* ``price``. ``ok`` (K,) says where that proof went through.
    """
    count = union.shape[0]
    side = union.reachable(data.astype(np.int64) - net)
    price = np.bincount(
        union.component, weights=union.caps * crossing_of(union, side), minlength=count
    )
    spare = np.empty(data.size)
    spare[union.fpos] = union.caps - flow
    spare[union.rpos] = flow
    problem = np.empty(data.size, dtype=np.int64)
    problem[union.fpos] = union.component
    problem[union.rpos] = union.component
    tails, heads = union.row_of, union.indices
    across = side[tails] & ~side[heads]
    short = across & (spare > 0)
    missing = np.bincount(problem[short], weights=spare[short], minlength=count)
    # 1e-15 covers the float64 round-off of spare (≤ 1 each) and of missing.
    usable = ~across & (spare >= missing[problem] + 1e-15)
    down = union.reach_over(usable, reverse=False)
    up = union.reach_over(usable, reverse=True)
    bad = short & ~(down[tails] & up[heads])
    ok = np.bincount(problem[bad], minlength=count) == 0
    return ok, price, side


def crossing_of(union: Union, side: np.ndarray) -> np.ndarray:
    """Which edges go from the source side ``side`` (bool (N,)) to the other: (E,) float."""
    return (side[union.tails] & ~side[union.heads]).astype(np.float64)
