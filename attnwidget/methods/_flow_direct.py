"""One exact max flow per problem, solved from the sink's side, with one scipy call.

Part of exact attention flow (Abnar & Zuidema, ACL 2020,
:mod:`attnwidget.methods.flow`). A pruned problem is source → node layers
T−1 … 1 → sink (``inner[t]`` between node layers T−1−t and T−2−t, top
first); problems differ only in the n source and the n sink capacities.

Why this path exists: on attention whose flows sit *below* their trivial
bound (narrow bottleneck layers, block structure, near-identity layers), the
cheap certificates of :mod:`._flowcert` do not apply and a sparse subgraph
rarely contains the minimum cut (many small edges cross it), so every
problem needs a max flow on the whole pruned graph. This does that as
cheaply as we found:

* **Reversed graph.** The flow from source to sink equals the flow from sink
  to source in the graph with every edge reversed. scipy's Dinic was 15–30 %
  faster that way round on most attention we measured (its breadth-first
  phases start from the sink, whose side of the minimum cut is the small one
  when the cut hugs the sink token's own chain), but 2× slower on strongly
  separated blocks, so whole-graph solves try both directions first
  (:class:`_Whole`) and keep the faster.
* **One structure.** The CSR structure (without the reverse arcs, which scipy
  adds itself) is built once; per problem only the sink's n and the source's
  n capacities are written into it. Where scipy puts each of our edges in
  its result is worked out once, too.
* **One solve, then a proof.** Capacities are rounded down to multiples of
  2**-30 (scipy's int32 limit; see :mod:`._maxflow`), so the integer flow is
  feasible and short of the maximum only by rounding losses on its minimum
  cut. Instead of solving again on the residual graph, :func:`_tight` proves
  that those losses can be routed (the argument of
  :func:`._maxflow_cert.saturate_cut`), which makes the cut's price, summed
  in float64 from the real capacities, the exact value. Problems where the
  proof fails are left to :func:`._maxflow.solve` (``ok`` is False).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

from ._flow_edges import SCALE, arc_positions

#: Subgraphs of a problem: each node's KEEP strongest in- and out-edges, plus
#: its tokens' chains, for each KEEP in turn while they pay off. Measured at
#: L = 12, n = 128: 8 suits bottleneck layers (3 ms a problem, whole graph
#: 16 ms); near-identity and block attention need 24 (17 vs 43 ms, 5 vs 13 ms).
KEEPS = (8, 24)
#: Subgraph tries before judging whether they pay off, and the failure share
#: above which the remaining problems go to the next KEEP (after the last, to
#: the whole graph).
TRIAL = 8
FAIL_SHARE = 0.5
#: Spare capacity an arc needs to be walked when looking for the cut, tried
#: in turn (2**-20: above the rounding losses, < 2**-30 per edge, of any cut
#: of < 2**10 edges; larger cuts need the larger one).
THRESHOLDS = (2.0**-20, 2.0**-16)
#: Whole-graph solves per direction before the faster direction is kept.
PROBE = 2


@dataclass(frozen=True)
class Direct:
    """Results of :func:`solve_direct`, each (K,): where ``ok``, ``value`` is the
    exact max flow up to ``error`` (float64 round-off of the certifying cut's
    price, plus, after a subgraph solve, the capacity of the edges left out
    that cross that cut); elsewhere nothing is claimed."""

    value: np.ndarray
    error: np.ndarray
    ok: np.ndarray


def solve_direct(
    inner: Sequence[np.ndarray],
    source_caps: np.ndarray,
    sink_caps: np.ndarray,
    *,
    chains: tuple[np.ndarray, np.ndarray] | None = None,
    tol: float = 1e-10,
) -> Direct:
    """Exact max flows of K problems (``source_caps``, ``sink_caps`` (K, n)), one by one.

    With ``chains`` (the source's and the sink's token per problem), each
    problem is first solved on its own subgraph: every node's KEEP
    (:data:`KEEPS`) strongest in- and out-edges plus every edge into or out of
    the two tokens' nodes (on hard inputs the minimum cut hugs the sink
    token's chain, so its crossing edges are all there). The subgraph's cut is
    then priced with *all* capacities; the value is certified when the edges
    left out that cross it carry at most ``tol``. Failures are solved on the
    whole graph; once most tries of one KEEP fail, the rest try the next
    KEEP, and after the last one go straight to the whole graph.
    """
    source_caps = np.atleast_2d(np.asarray(source_caps, dtype=np.float64))
    sink_caps = np.atleast_2d(np.asarray(sink_caps, dtype=np.float64))
    count, n = source_caps.shape
    inner = [np.asarray(m, dtype=np.float64) for m in inner]
    full = _Whole(inner, n, tol)
    value, error = np.zeros(count), np.zeros(count)
    ok = np.zeros(count, dtype=bool)
    level = 0 if chains is not None else len(KEEPS)
    base = [_strongest(m, KEEPS[0]) for m in inner] if chains is not None else []
    tried = failed = 0
    for k in range(count):
        src, snk = source_caps[k], sink_caps[k]
        if level < len(KEEPS) and tried >= TRIAL and failed > FAIL_SHARE * tried:
            level, tried, failed = level + 1, 0, 0  # these subgraphs do not pay: larger ones
            if level < len(KEEPS):
                base = [_strongest(m, KEEPS[level]) for m in inner]
        if chains is not None and level < len(KEEPS):
            tried += 1
            tokens = [int(chains[0][k]), int(chains[1][k])]
            masks = []
            for keep, matrix in zip(base, inner, strict=True):
                mask = keep.copy()
                mask[tokens, :] = True
                mask[:, tokens] = True
                masks.append(mask & (matrix > 0))
            sub = _Reversed(inner, n, masks, tol=tol)
            found, err, good, side = sub.solve(src, snk)
            if good:
                left_out = _price(inner, src, snk, side) - found
                if left_out <= tol:
                    value[k], error[k], ok[k] = found, err + max(left_out, 0.0), True
                    continue
            failed += 1
        value[k], error[k], ok[k] = full.solve(src, snk)
    return Direct(value, error, ok)


class _Whole:
    """Whole-graph solves, sink-first or source-first, whichever ran faster.

    scipy's Dinic was faster from the sink on most attention we measured, but
    up to 2× slower on strongly separated blocks; so the first
    :data:`PROBE` solves alternate the two directions (each is exact) and
    the rest take the one whose solves took less CPU time.
    """

    def __init__(self, inner: list[np.ndarray], n: int, tol: float) -> None:
        self.inner, self.n, self.tol = inner, n, tol
        self.graphs: list[_Reversed | None] = [None, None]
        self.spent = [0.0, 0.0]
        self.count = 0

    def solve(self, src: np.ndarray, snk: np.ndarray) -> tuple[float, float, bool]:
        if self.count < 2 * PROBE:
            way = self.count % 2
        else:
            way = int(self.spent[1] < self.spent[0])
        graph = self.graphs[way]
        if graph is None:  # way 1: the reversed graph of the reversed problem
            inner = self.inner if way == 0 else [m.T for m in self.inner[::-1]]
            graph = self.graphs[way] = _Reversed(inner, self.n, tol=self.tol)
        start = time.process_time()
        value, error, ok, _ = graph.solve(src, snk) if way == 0 else graph.solve(snk, src)
        self.spent[way] += time.process_time() - start
        self.count += 1
        return value, error, ok


def _price(inner: list[np.ndarray], src: np.ndarray, snk: np.ndarray, side: np.ndarray) -> float:
    """Capacity, with every edge, of the cut whose sink side is ``side`` (depth, n).

    ``side[t]`` are the nodes of node layer t+1 (bottom first) that lie on
    the sink's side (they were reached from the sink in the reversed graph).
    """
    depth = side.shape[0]
    price = float(src @ side[-1]) + float(snk @ ~side[0])
    for t in range(depth - 1):  # edges from node layer t+2 (inner[depth-2-t]) down to t+1
        above = (~side[t + 1]).astype(np.float64)
        price += float((above @ inner[depth - 2 - t]) @ side[t])
    return price


def _strongest(matrix: np.ndarray, keep: int) -> np.ndarray:
    """Mask of each row's and each column's ``keep`` largest entries, plus the diagonal."""
    n = matrix.shape[0]
    mask = np.zeros(matrix.shape, dtype=bool)
    if keep >= n:
        mask[:] = True
    else:
        top_cols = np.argpartition(-matrix, keep - 1, axis=1)[:, :keep]
        mask[np.arange(n)[:, None], top_cols] = True
        top_rows = np.argpartition(-matrix, keep - 1, axis=0)[:keep, :]
        mask[top_rows, np.arange(n)[None, :]] = True
    mask[np.arange(n), np.arange(n)] = True
    return mask


class _Reversed:
    """The pruned graph (or a subgraph) with every edge reversed, as a CSR for scipy.

    Node 0 is the (original) sink, node ``1 + t·n + j`` is token j of node
    layer t+1 (t = 0: the layer next to the sink), the last node is the
    (original) source. Row 0 holds the sink's n edges (data ``[0:n]``); each
    node of the top layer has one edge, to the source. ``masks`` (one (n, n)
    bool per matrix of ``inner``) keeps only some inner edges.
    """

    def __init__(
        self,
        inner: list[np.ndarray],
        n: int,
        masks: list[np.ndarray] | None = None,
        tol: float = 1e-10,
    ) -> None:
        depth = len(inner) + 1
        self.tol = tol
        self.n, self.depth = n, depth
        self.num_nodes = 2 + depth * n
        last = self.num_nodes - 1
        tails = [np.zeros(n, dtype=np.int64)]
        heads = [1 + np.arange(n)]
        caps = [np.zeros(n)]
        # Reversed edge layer t links node layer t+1 (tails) to t+2 (heads):
        # original edge (i → j) of inner[depth−2−t] becomes j → i.
        for t in range(depth - 1):
            matrix = inner[depth - 2 - t]
            keep = matrix > 0 if masks is None else masks[depth - 2 - t]
            j, i = np.nonzero(keep.T)  # sorted by tail j, then head i
            tails.append(1 + t * n + j)
            heads.append(1 + (t + 1) * n + i)
            caps.append(matrix[i, j])
        tails.append(1 + (depth - 1) * n + np.arange(n))
        heads.append(np.full(n, last, dtype=np.int64))
        caps.append(np.zeros(n))
        self.tails = np.concatenate(tails)
        self.heads = np.concatenate(heads)
        self.caps = np.concatenate(caps)
        self.source_slots = np.arange(self.tails.size - n, self.tails.size)
        counts = np.bincount(self.tails, minlength=self.num_nodes)
        self.indptr = np.zeros(self.num_nodes + 1, dtype=np.int32)
        np.cumsum(counts, out=self.indptr[1:])
        self.indices = self.heads.astype(np.int32)
        self.scaled = np.floor(self.caps * SCALE).astype(np.int32)
        self._layout: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._out_indptr = np.zeros(0, dtype=np.int32)
        self._real = np.zeros(0)

    def solve(
        self, source_caps: np.ndarray, sink_caps: np.ndarray
    ) -> tuple[float, float, bool, np.ndarray]:
        """(value, error, ok, sink side (depth, n)) of one problem on this graph."""
        n = self.n
        caps = self.caps.copy()
        caps[:n] = sink_caps
        caps[self.source_slots] = source_caps
        data = self.scaled.copy()
        data[:n] = np.floor(sink_caps * SCALE)
        data[self.source_slots] = np.floor(source_caps * SCALE)
        graph = csr_array((data, self.indices, self.indptr), shape=(self.num_nodes,) * 2)
        result = maximum_flow(graph, 0, self.num_nodes - 1, method="dinic")
        flow = result.flow
        pos, row_of, indices = self._where(flow)
        # Real residual of every arc of scipy's result (ours and the reverse
        # arcs it added, whose capacity is 0): cap − f forward, f backward.
        real = self._real
        real[pos[:n]] = sink_caps
        real[pos[self.source_slots]] = source_caps
        spare = real - flow.data * (1.0 / SCALE)
        arcs = (row_of, indices)
        value, error, ok, side = _tight(self.num_nodes, arcs, spare, caps, pos)
        if not ok:  # value is a cut's price: solve again for the little that is left
            lower = float(result.flow_value) / SCALE
            upper = min(value, float(sink_caps.sum()), float(source_caps.sum()))
            value, error, side = _refine(flow, arcs, spare, caps, pos, lower, upper)
            ok = error <= self.tol
        return value, error, ok, side[1:-1].reshape(self.depth, n)

    def _where(self, flow: csr_array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Our edges' positions among scipy's result arcs; each arc's tail and head."""
        cached = self._layout
        if cached is not None and np.array_equal(flow.indptr, self._out_indptr):
            return cached
        indptr = np.asarray(flow.indptr, dtype=np.int64)
        row_of = np.repeat(np.arange(self.num_nodes, dtype=np.int64), np.diff(indptr))
        found = arc_positions(flow, self.tails, self.heads)
        self._out_indptr = flow.indptr.copy()
        self._layout = (found, row_of, np.asarray(flow.indices, dtype=np.int64))
        self._real = np.zeros(flow.indices.size)
        self._real[found] = self.caps
        return self._layout


def _tight(
    num_nodes: int,
    arcs: tuple[np.ndarray, np.ndarray],
    spare: np.ndarray,
    caps: np.ndarray,
    pos: np.ndarray,
) -> tuple[float, float, bool, np.ndarray]:
    """Find a cut next to the flow, prove the flow fills it: (value, error, ok, side).

    Without a proof (``ok`` False), ``value`` is the least price of the cuts
    tried: still an upper bound.

    D: the nodes reached from the source over arcs with ``spare ≥``
    :data:`THRESHOLDS` (each in turn); U: the nodes that reach the sink over such arcs (they
    are disjoint: such a path would be an integer augmenting path). Two cuts
    are tried, source side X = D, then X = all but U. The arcs leaving X with
    real spare δ > 0 are all that separates the flow from the cut's price;
    Δ = Σδ. If Δ < that threshold and every such arc runs from D to U, routing
    each δ from the source to its tail inside D and from its head to the
    sink inside U is feasible (no arc gets more than Δ; D and U share no
    node) and saturates the cut (see also :func:`._maxflow_cert.saturate_cut`),
    so the max flow is the cut's price, summed in float64 from the real
    capacities.
    """
    tails, heads = arcs  # tails ascending
    price = np.inf
    for threshold in THRESHOLDS:
        usable = spare >= threshold
        down = _reach(num_nodes, tails, heads, usable, start=0)
        if down[-1]:  # a path with that much spare: no cut at this threshold
            continue
        up = _reach(num_nodes, tails, heads, usable, start=num_nodes - 1, backwards=True)
        for side in (down, ~up):
            leaving = side[tails] & ~side[heads]
            short = leaving & (spare > 0)
            # 1e-15 covers the float64 round-off of each spare (≤ 1) and of Δ.
            fits = float(spare[short].sum()) + 1e-15 <= threshold
            mine = leaving[pos]
            price = min(price, float(caps[mine].sum()))
            if fits and down[tails[short]].all() and up[heads[short]].all():
                error = float(np.count_nonzero(mine)) * 2.0**-53  # round-off of the price
                return float(caps[mine].sum()), error, True, side
    return price, 0.0, False, down


def _refine(
    flow: csr_array,
    arcs: tuple[np.ndarray, np.ndarray],
    spare: np.ndarray,
    caps: np.ndarray,
    pos: np.ndarray,
    lower: float,
    upper: float,
) -> tuple[float, float, np.ndarray]:
    """Second solve on the residual graph of a flow of value ``lower``: (value, error, side).

    ``upper`` (a cut's price) bounds the maximum, so what is left, G = upper −
    lower, is found in the residual graph with each arc's spare clipped to G
    (a flow of value ≤ G never needs more on one arc) and scaled by 2**30/G,
    rounded down: its resolution is G·2**-30 per arc instead of 2**-30. The
    new integer residual graph's cut, priced in float64, is the upper bound;
    ``error`` = upper − lower after the solve.
    """
    num_nodes = flow.shape[0]
    tails, heads = arcs
    gap = upper - lower
    if gap <= 0.0:
        return upper, max(gap, 0.0), np.zeros(num_nodes, dtype=bool)
    scale = SCALE / gap
    data = np.floor(np.clip(spare, 0.0, gap) * scale).astype(np.int32)
    graph = csr_array((data, flow.indices, flow.indptr), shape=flow.shape)
    result = maximum_flow(graph, 0, num_nodes - 1, method="dinic")
    same = np.array_equal(result.flow.indptr, flow.indptr) and np.array_equal(
        result.flow.indices, flow.indices
    )  # every arc already had its reverse, so scipy added none: same order
    positions = slice(None) if same else arc_positions(result.flow, tails, heads)
    net = result.flow.data[positions]
    lower += float(result.flow_value) / scale
    side = _reach(num_nodes, tails, heads, data.astype(np.int64) - net > 0, start=0)
    mine = (side[tails] & ~side[heads])[pos]
    upper = min(upper, float(caps[mine].sum()))
    rounding = float(np.count_nonzero(mine)) * 2.0**-53
    return upper, max(upper - lower, 0.0) + rounding, side


def _reach(
    num_nodes: int,
    tails: np.ndarray,
    heads: np.ndarray,
    keep: np.ndarray,
    *,
    start: int,
    backwards: bool = False,
) -> np.ndarray:
    """Nodes reachable from ``start`` over the arcs ``tails[keep] → heads[keep]``
    (``tails`` ascending); ``backwards``: the nodes that reach ``start``."""
    t, h = tails[keep], heads[keep]
    counts = np.bincount(t, minlength=num_nodes)
    indptr = np.zeros(num_nodes + 1, dtype=np.int32)
    np.cumsum(counts, out=indptr[1:])
    # float64 data: scipy's graph validation would otherwise copy it as float64
    graph = csr_array((np.ones(h.size), h.astype(np.int32), indptr), shape=(num_nodes,) * 2)
    if backwards:
        graph = graph.T.tocsr()  # a counting sort, O(arcs)
    found = breadth_first_order(graph, start, directed=True, return_predecessors=False)
    side = np.zeros(num_nodes, dtype=bool)
    side[found] = True
    return side
