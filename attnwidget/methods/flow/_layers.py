"""One exact max flow on the pruned attention graph: reversed, nodes in a chosen order.

Part of exact attention flow (Abnar & Zuidema, ACL 2020,
:mod:`attnwidget.methods.flow.flow`); used by :mod:`._flow_direct`. A pruned
problem is source → node layers T−1 … 1 → sink; it is solved reversed
(sink first), as scipy's Dinic on the graph with every edge turned round
(same value, same cuts).

**Node order.** scipy's Dinic tries a node's arcs in the order of their
heads' indices, and on these layered graphs that order decides how many
phases (one breadth-first search and one blocking flow over every arc each)
a solve takes. Numbering each layer's nodes by how much of the sink's demand
and of the source's supply they carry (the backward and forward rollouts of
the two, each scaled to its layer's largest) makes the first depth-first
searches follow the heavy paths: on near-identity, block and bottleneck
attention (L = 12, n = 128) the first phase then mostly is the whole solve,
and a solve took 2–5× fewer steps of scipy's search than in token order.

**Dense layout.** On the whole graph every edge layer is stored as a full
n × n block (zero capacities included), so the CSR structure and where scipy
puts each arc in its result are the same for every problem; only the data
(the permuted, integer-scaled capacities) is written per problem. Flows come
back as dense (D−1, n, n) arrays, put back in token order (only the integer
capacities and the flows are permuted, the float capacities never), for
:mod:`._flow_proof`, which proves the value (the rounding to 2**-30, see
:mod:`._flow_edges`) without a second solve; when it cannot, a second solve
at a finer scale on the residual graph (:func:`._flow_direct._refine`) decides.

**What a solve costs.** scipy's ``maximum_flow`` first adds the reverse arcs
and pairs every arc with its reverse, at every call: on the whole graph (L =
12, n = 128, 164k arcs) that alone took 7.4 ms of a 9 ms call that moves no
flow, and a full solve on block attention took 15 ms, as long as the plain
solve on the unpruned graph. So a per-sink solve on the whole graph cannot
reach half the plain solver's time; only subgraphs (fewer arcs) or no solve
can.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from attnwidget.methods.flow._proof import Net, prove, reach
from attnwidget.methods.flow.edges import SCALE, arc_positions

Refine = Callable[..., tuple[float, float, np.ndarray]]


@dataclass(frozen=True)
class Solved:
    """One problem: ``value`` within ``error`` where ``ok``; ``side`` (D, n) the
    sink side of the certifying cut per node layer 1 … T−1 and ``net`` the flow
    (both in token order, for :mod:`._flow_reuse`), or None."""

    value: float
    error: float
    ok: bool
    side: np.ndarray | None
    net: Net | None = None


class Layered:
    """The reversed pruned graph of one problem family, solved one problem at a time.

    Layer ℓ = 0 … D−1 is node layer ℓ+1 (ℓ = 0 next to the sink); ``caps[ℓ]``
    (n, n) are the reversed edges from layer ℓ to ℓ+1, i.e. ``inner[D−2−ℓ].T``
    with ``inner`` top first as in :func:`._flow_direct.solve_direct`.
    """

    def __init__(self, inner: list[np.ndarray], n: int, tol: float = 1e-10) -> None:
        self.n, self.depth, self.tol = n, len(inner) + 1, tol
        if inner:
            self.caps = np.stack([m.T for m in inner[::-1]]).astype(np.float64)
        else:
            self.caps = np.zeros((0, n, n))
        self.scaled = np.floor(self.caps * SCALE).astype(np.int32)
        depth = self.depth
        self.num_nodes = 2 + depth * n
        degree = np.full(self.num_nodes, n, dtype=np.int64)
        degree[1 + (depth - 1) * n : -1] = 1  # top layer: one arc, to the source
        degree[-1] = 0
        self.indptr = np.zeros(self.num_nodes + 1, dtype=np.int32)
        np.cumsum(degree, out=self.indptr[1:])
        heads = [1 + np.arange(n)]
        heads += [np.tile(1 + (layer + 1) * n + np.arange(n), n) for layer in range(depth - 1)]
        heads.append(np.full(n, self.num_nodes - 1))
        self.indices = np.concatenate(heads).astype(np.int32)
        self.tails = np.repeat(np.arange(self.num_nodes, dtype=np.int64), degree)
        self._layout: tuple[np.ndarray, np.ndarray] | None = None

    def rollouts(
        self, source_caps: np.ndarray, sink_caps: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(demand, supply), each (D, n): the sink's capacities rolled back up the
        layers and the source's rolled down (as in rollout), per node layer."""
        caps = self.caps
        demand = np.empty((self.depth, self.n))
        supply = np.empty((self.depth, self.n))
        demand[0], supply[-1] = sink_caps, source_caps
        for layer in range(self.depth - 1):
            demand[layer + 1] = demand[layer] @ caps[layer]
            top = self.depth - 2 - layer
            supply[top] = caps[top] @ supply[top + 1]
        return demand, supply

    def solve(
        self,
        source_caps: np.ndarray,
        sink_caps: np.ndarray,
        *,
        mask: np.ndarray | None = None,
        rollouts: tuple[np.ndarray, np.ndarray] | None = None,
        ordered: bool = True,
        refine: Refine | None = None,
    ) -> Solved:
        """Max flow of one problem, on the whole graph or on the inner edges ``mask``
        (D−1, n, n) keeps, whose cut is then priced, and its losses routed, with
        all edges; nodes in the order of the module docstring when ``ordered``, else
        in token order (``rollouts``: this problem's :meth:`rollouts`, if known)."""
        n, depth = self.n, self.depth
        keep = mask
        if ordered:
            if rollouts is None:
                rollouts = self.rollouts(source_caps, sink_caps)
            score = _scaled(rollouts[0]) + _scaled(rollouts[1])
            order = np.argsort(-score, axis=1, kind="stable")
            scaled = np.stack([self._permuted(self.scaled, order, t) for t in range(depth - 1)])
            if mask is not None:
                mask = np.stack([self._permuted(mask, order, t) for t in range(depth - 1)])
            a, z = sink_caps[order[0]], source_caps[order[-1]]
        else:
            order = None
            scaled, a, z = self.scaled, sink_caps, source_caps
        a_int, z_int = np.floor(a * SCALE), np.floor(z * SCALE)
        if mask is None:
            data = np.concatenate((a_int, scaled.ravel(), z_int)).astype(np.int32)
            graph = csr_array((data, self.indices, self.indptr), shape=(self.num_nodes,) * 2)
        else:
            graph, flat = self._masked(mask, scaled, a_int, z_int)
        result = maximum_flow(graph, 0, self.num_nodes - 1, method="dinic")
        flow = result.flow
        if mask is None:
            pos = self._dense_positions(flow)
            got = flow.data[pos]
            inner_flow = got[n:-n].reshape(depth - 1, n, n).astype(np.int64)
        else:
            pos = self._masked_positions(graph, flow, mask)
            got = flow.data[pos]
            inner_flow = np.zeros((depth - 1) * n * n, dtype=np.int64)
            inner_flow[flat] = got[n:-n]
            inner_flow = inner_flow.reshape(depth - 1, n, n)
        fa, fz = got[:n], got[-n:]
        if order is not None:  # the rest in token order: only the flows are permuted back
            back = np.argsort(order, axis=1)
            inner_flow = np.stack([self._permuted(inner_flow, back, t) for t in range(depth - 1)])
            fa, fz = fa[back[0]], fz[back[-1]]
            a_int, z_int = np.floor(sink_caps * SCALE), np.floor(source_caps * SCALE)
        net = Net(sink_caps, fa / SCALE, self.caps, inner_flow / SCALE, source_caps, fz / SCALE)
        scaled_tokens = self.scaled

        def down(t: int, rows: np.ndarray) -> np.ndarray:  # integer residual left
            usable = scaled_tokens[t][rows] > inner_flow[t][rows]
            return usable if keep is None else usable & keep[t][rows]

        def up(t: int, cols: np.ndarray) -> np.ndarray:  # integer flow to cancel
            return inner_flow[t][:, cols] > 0

        side = reach(a_int > fa, down, up, depth)
        ok, price, terms = prove(net, side)
        if ok:
            return Solved(price, terms * 2.0**-53, True, side, net)
        if refine is None or mask is not None:
            return Solved(price, np.inf, False, None)
        return self._refined(result, pos, net, price, refine, order)

    def _permuted(self, blocks: np.ndarray, order: np.ndarray, t: int) -> np.ndarray:
        return blocks[t].take(order[t], axis=0).take(order[t + 1], axis=1)

    def _masked(
        self, keep: np.ndarray, scaled: np.ndarray, a_int: np.ndarray, z_int: np.ndarray
    ) -> tuple[csr_array, np.ndarray]:
        """CSR of the kept inner edges (with all source and sink edges), and their
        flat indices into (D−1, n, n)."""
        n = self.n
        flat = np.flatnonzero(keep)  # sorted by layer, tail, head
        heads = 1 + n + (flat // (n * n)) * n + flat % n
        degree = np.empty(self.num_nodes, dtype=np.int64)
        degree[0] = n
        degree[1 : 1 + (self.depth - 1) * n] = keep.sum(axis=2).ravel()
        degree[1 + (self.depth - 1) * n : -1] = 1
        degree[-1] = 0
        indptr = np.zeros(self.num_nodes + 1, dtype=np.int32)
        np.cumsum(degree, out=indptr[1:])
        indices = np.concatenate((1 + np.arange(n), heads, np.full(n, self.num_nodes - 1)))
        data = np.concatenate((a_int, scaled.ravel()[flat], z_int)).astype(np.int32)
        graph = csr_array((data, indices.astype(np.int32), indptr), shape=(self.num_nodes,) * 2)
        return graph, flat

    def _dense_positions(self, flow: csr_array) -> np.ndarray:
        """Where the dense layout's arcs lie in scipy's result (computed once)."""
        if self._layout is None or not np.array_equal(self._layout[1], flow.indptr):
            self._layout = (arc_positions(flow, self.tails, self.indices), flow.indptr.copy())
        return self._layout[0]

    def _masked_positions(self, graph: csr_array, flow: csr_array, keep: np.ndarray) -> np.ndarray:
        """Where our arcs lie in scipy's result: each row of it holds the node's
        reverse arcs (from the layer before, smaller indices) and then ours."""
        n = self.n
        incoming = np.ones(self.num_nodes, dtype=np.int64)  # layer 0: the arc from the sink
        incoming[0] = 0
        incoming[1 + n : -1] = keep.sum(axis=1).ravel()
        incoming[-1] = n
        row = np.repeat(np.arange(self.num_nodes), np.diff(graph.indptr))
        pos = np.arange(graph.indices.size) + np.cumsum(incoming)[row]
        if pos[-1] < flow.indices.size and np.array_equal(flow.indices[pos], graph.indices):
            return pos
        return arc_positions(flow, row, graph.indices)  # another scipy layout

    def _refined(
        self,
        result,
        pos: np.ndarray,
        net: Net,
        price: float,
        refine: Refine,
        order: np.ndarray | None,
    ) -> Solved:
        """Second solve on the residual graph at a finer scale (no proof went through);
        ``net`` is in token order, scipy's ``result`` in the solve's (``order``)."""
        flow = result.flow
        if order is None:
            caps = np.concatenate((net.a, net.caps.ravel(), net.z))
        else:
            inner = np.stack([self._permuted(net.caps, order, t) for t in range(self.depth - 1)])
            caps = np.concatenate((net.a[order[0]], inner.ravel(), net.z[order[-1]]))
        real = np.zeros(flow.indices.size)
        real[pos] = caps
        spare = real - flow.data * (1.0 / SCALE)
        indptr = np.asarray(flow.indptr, dtype=np.int64)
        row_of = np.repeat(np.arange(self.num_nodes, dtype=np.int64), np.diff(indptr))
        arcs = (row_of, np.asarray(flow.indices, dtype=np.int64))
        lower = float(result.flow_value) / SCALE
        upper = min(price, float(net.a.sum()), float(net.z.sum()))
        value, error, _ = refine(flow, arcs, spare, caps, pos, lower, upper)
        return Solved(value, error, error <= self.tol, None)


def _scaled(values: np.ndarray) -> np.ndarray:
    top = values.max(axis=1, keepdims=True)
    return np.divide(values, top, out=np.zeros_like(values), where=top > 0)
