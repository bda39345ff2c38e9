"""Edge flows of one attention-flow problem, from scipy's max flow, for FlowView.

Attention flow (Abnar & Zuidema, ACL 2020) values come from the exact
push–relabel solver (:mod:`attnwidget.methods.flow.flow`); FlowView also draws
*how* one maximum flow runs, edge by edge. :func:`max_flow_edges` gives those
edge flows with scipy's Dinic (``scipy.sparse.csgraph.maximum_flow``), whose
result is a CSR matrix of net flows with the input's structure plus the
reverse arcs scipy adds, so the flow on an edge is found by position
(:func:`arc_positions`). The views reach it through
:mod:`attnwidget.views.flow._path_maths`.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

#: Capacities are rounded down to multiples of 1/SCALE for scipy's int32 solver
#: (every capacity is ≤ 1, so scaled values stay ≤ 2**30 < 2**31).
SCALE = 2**30


def arc_positions(flow: csr_array, tails: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """Where the arcs ``tails[e] → heads[e]`` lie in ``flow.data``: (E,) int64.

    ``flow`` is scipy's max-flow result (or any CSR matrix holding every one
    of these arcs). scipy returns rows with sorted column indices, which makes
    this one binary search; other orders are sorted first.
    """
    num_nodes = flow.shape[0]
    indptr = np.asarray(flow.indptr, dtype=np.int64)
    row_of = np.repeat(np.arange(num_nodes, dtype=np.int64), np.diff(indptr))
    keys = row_of * num_nodes + np.asarray(flow.indices, dtype=np.int64)
    wanted = np.asarray(tails, dtype=np.int64) * num_nodes + np.asarray(heads, dtype=np.int64)
    if np.all(keys[1:] > keys[:-1]):
        return np.searchsorted(keys, wanted)
    order = np.argsort(keys, kind="stable")
    return order[np.searchsorted(keys[order], wanted)]


def max_flow_edges(
    stack: list[np.ndarray], source: int, sink: int
) -> tuple[float, list[np.ndarray]]:
    """One maximum flow from ``source`` (top node layer) to ``sink`` (bottom) and its edge flows.

    ``stack`` lists the capacity matrices of the edge layers from the top down:
    ``stack[0][source, k]`` are the source's edges, ``stack[-1][k, sink]`` the
    sink's. Returns ``(value, flows)``, ``flows[d]`` (n, n) on ``stack[d]``'s
    edges. Maximum flows are not unique; this is scipy Dinic's, on capacities
    rounded down to multiples of 2**-30 (so it is feasible, and its value is
    within the rounding, ≤ edges·2**-30, of the maximum; the exact values are
    :func:`attnwidget.methods.flow.flow.attention_flow_result`'s).
    """
    n = stack[0].shape[-1]
    out = np.zeros((len(stack), n, n))
    if len(stack) == 1:  # one edge
        out[0, source, sink] = stack[0][source, sink]
        return float(out[0, source, sink]), list(out)
    if len(stack) == 2:  # disjoint two-edge paths source → k → sink
        through = np.minimum(stack[0][source], stack[1][:, sink])
        out[0, source] = through
        out[1, :, sink] = through
        return float(through.sum()), list(out)
    # Node ids: 0 = source, 1 + d·n + k = node k of the d-th inner node layer
    # from the top, last = sink. Edge layer e (0 = the source's edges) is
    # stack[e]; tails/heads below are in CSR order (by tail, then head).
    inner = len(stack) - 1
    sink_id = 1 + inner * n
    ks = np.arange(n)
    layer = [np.zeros(n, dtype=np.int64)]
    rows, cols = [np.full(n, source)], [ks]
    tails, heads = [np.zeros(n, dtype=np.int64)], [1 + ks]
    caps = [stack[0][source]]
    for d in range(1, inner):
        i, k = np.nonzero(stack[d] > 0)
        layer.append(np.full(i.size, d))
        rows.append(i)
        cols.append(k)
        tails.append(1 + (d - 1) * n + i)
        heads.append(1 + d * n + k)
        caps.append(stack[d][i, k])
    layer.append(np.full(n, inner))
    rows.append(ks)
    cols.append(np.full(n, sink))
    tails.append(1 + (inner - 1) * n + ks)
    heads.append(np.full(n, sink_id, dtype=np.int64))
    caps.append(stack[-1][:, sink])
    tail, head = np.concatenate(tails), np.concatenate(heads)
    # Rounded DOWN: the integer flow stays feasible for the real capacities.
    scaled = np.floor(np.concatenate(caps) * SCALE).astype(np.int32)
    counts = np.bincount(tail, minlength=sink_id + 1)
    indptr = np.zeros(sink_id + 2, dtype=np.int32)
    np.cumsum(counts, out=indptr[1:])
    graph = csr_array((scaled, head.astype(np.int32), indptr), shape=(sink_id + 1,) * 2)
    result = maximum_flow(graph, 0, sink_id, method="dinic")
    amounts = result.flow.data[arc_positions(result.flow, tail, head)] / SCALE
    out[np.concatenate(layer), np.concatenate(rows), np.concatenate(cols)] = amounts
    return float(result.flow_value) / SCALE, list(out)
