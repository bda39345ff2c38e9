"""Exact maximum flows on pruned attention-flow graphs, many at a time, certified.

Part of attention flow (Abnar & Zuidema, ACL 2020). The union graph lives in
:mod:`._maxflow_union`, the stage-1 certificates in :mod:`._maxflow_cert`;
:mod:`._flow_direct` solves hard problems one at a time, and leaves to
:func:`solve` only those it cannot certify.

One problem of :func:`attnwidget.methods.flow.flow.attention_flow`, pruned to what
its source can reach, is: source → n nodes of node layer T−1 → … → n nodes of
node layer 1 → sink, with float capacities ≤ 1 (``inner[t]`` between node
layers T−1−t and T−2−t). Between problems only the n source and the n sink
capacities change.

**Batching.** K problems are solved by one call of scipy's Dinic
(``scipy.sparse.csgraph.maximum_flow``) on their disjoint union, the K
sources merged into one node and the K sinks into another: the components
share no other node, so the union's max flow and min cut are the sums of the
components', and each component's flow is read off its own edges. This
removes scipy's per-call overhead (~0.3 ms) from every problem.

**Subgraphs.** A problem may be solved on a subgraph (a per-problem edge
mask). Its flows are flows of the full graph, so they are lower bounds;
:func:`solve` prices the final cut with the full capacities and grows the
subgraph until the two agree (see there).

**Integer scaling.** scipy's solver takes int32 capacities (scipy 1.17 casts
larger values silently), so we solve in stages:

1. Capacities are rounded **down** to multiples of ``1/SCALE``, ``SCALE =
   2**30``: every capacity is ≤ 1, so scaled values are ≤ 2**30 < 2**31, and so
   is every flow value. Rounding down makes the integer flow divided by SCALE
   a feasible flow of the real graph (a lower bound). A minimum cut C of the
   rounded graph shows ``F ≤ cap(C) < F_1 + |C|/SCALE``, so after stage 1 the
   error is below ``E/SCALE`` (E edges of one problem: ≈ 1.7e-4 for L = 12,
   n = 128; ≈ n/SCALE ≈ 1e-7 when the cut is the sink's n edges).
2. *Top-up.* Stage 1 typically falls short of the trivial bound τ (capacity
   out of the source or into the sink) only by what rounding lost on the n
   edges of that bound (each < 1/SCALE). The missing amounts are routed in
   float64 along widest paths of the downward residual graph: if every edge
   that lacks something is reached by a path whose spare capacity is ≥ the
   whole missing amount Δ, sending them all puts ≤ Δ on any edge, so the
   flow reaches τ exactly, which proves the maximum is τ. Else the same
   argument on stage 1's own min cut (:func:`._maxflow_cert.saturate_cut`):
   if the losses on its edges can be routed that way, its price is exact.
3. Otherwise the rest (at most the bound ``G`` above) is found in the
   residual graph with residual capacities clipped to G (a flow of value ≤ G
   never needs more on one edge) and scaled by ``2**30/G``, rounded down
   again; stages repeat (at most :data:`MAX_STAGES`).

**Certificate.** After a stage ≥ 2, the nodes reachable from the source in
that stage's integer residual graph define a cut of each component; its
capacity, summed in float64 from the **original** capacities, is an upper
bound; the accumulated feasible flow is a lower bound. We stop when
``upper − lower ≤ tol`` (default 1e-10), so every value carries its own
proof of accuracy instead of an a-priori bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from attnwidget.methods.flow._maxflow_cert import crossing_of, saturate_cut, top_up
from attnwidget.methods.flow._maxflow_union import Union, flow_data
from attnwidget.methods.flow.edges import SCALE

#: Stop refining once every certified gap (upper − lower) is at most this.
DEFAULT_TOL = 1e-10
MAX_STAGES = 5
#: Fewest edge layers between the source's and the sink's edges for which
#: stage 1's own cut is proved tight instead of solving a stage 2 (on
#: shallower graphs stage 2 is cheap and the proof cost more than it saved).
SATURATE_FROM = 3
#: Edges per scipy call on the full graph (memory is ~150 bytes per edge).
BATCH_EDGES = 60_000
#: Subgraph of the first round: each node's strongest in- and out-edges.
KEEP = 4
#: Rounds of subgraph growth before a problem is solved on the full graph.
MAX_ROUNDS = 2
#: Chain tokens (sources and sinks) whose edges one batch's subgraph includes.
BATCH_TOKENS = 8
#: Graphs with at most this many edge layers give each problem its own subgraph.
OWN_MASKS_UP_TO = 2


@dataclass(frozen=True)
class Solutions:
    """Max flows of K problems: ``lower ≤ exact max flow ≤ upper``, each (K,).

    ``reached`` (K, depth, n) bool: per problem, the nodes of node layers T−1
    … 1 (top first) on the source side of the cut that gave ``upper``; for a
    problem at its trivial bound, the trivial cut (all nodes when the sink's
    edges are the bound, none when the source's are).
    """

    lower: np.ndarray
    upper: np.ndarray
    reached: np.ndarray


def solve(
    inner: Sequence[np.ndarray],
    source_caps: np.ndarray,
    sink_caps: np.ndarray,
    *,
    chains: tuple[np.ndarray, np.ndarray] | None = None,
    tol: float = DEFAULT_TOL,
) -> Solutions:
    """Exact max flows of K problems on the layered graph with edge layers ``inner``.

    Args:
        inner: ``[Â_{T-1}, …, Â_2]``, (n, n) capacity matrices, top first; may
            be empty (one node layer).
        source_caps: (K, n) capacities of the source's edges.
        sink_caps: (K, n) capacities of the sink's edges.
        chains: ``(i, j)``, two (K,) token indices per problem (the source
            and the sink token), or None to solve on the full graph.
        tol: stop when ``upper − lower ≤ tol`` for every problem.

    With ``chains``, problems are first solved on a subgraph: every node's
    :data:`KEEP` strongest in- and out-edges, plus every edge into or out of
    the nodes of tokens i and j (the source's and the sink's own chains carry
    most of the flow: each node keeps ≥ 0.5 of itself per layer). On deep
    graphs a batch of problems with few distinct such tokens shares one
    subgraph; shallow ones (≤ :data:`OWN_MASKS_UP_TO` edge layers) give each
    problem its own. A flow is
    optimal for the full graph when it reaches the trivial bound or when the
    subgraph's cut, priced with all capacities, equals it; otherwise the
    edges crossing that cut are added (for all later problems) and the problem
    is solved again, at most :data:`MAX_ROUNDS` times before the full graph.
    """
    source_caps = np.atleast_2d(np.asarray(source_caps, dtype=np.float64))
    sink_caps = np.atleast_2d(np.asarray(sink_caps, dtype=np.float64))
    count, n = source_caps.shape
    inner = [np.asarray(m, dtype=np.float64) for m in inner]
    allowed = np.stack([m > 0 for m in inner]) if inner else np.zeros((0, n, n), dtype=bool)
    edges = 2 * n + int(allowed.sum())  # of one problem on the full graph
    rows, cols = chains if chains is not None else (None, None)
    base = np.stack([_strongest(m, KEEP) for m in inner]) if inner else allowed.copy()
    lower = np.zeros(count)
    upper = np.zeros(count)
    reached = np.zeros((count, len(inner) + 1, n), dtype=bool)
    todo = np.arange(count)
    # Shallow graphs: each problem gets its own subgraph (building K masks of
    # depth·n² is cheap there); deep ones: a batch shares one subgraph.
    own_masks = len(inner) <= OWN_MASKS_UP_TO
    for round_ in range(MAX_ROUNDS + 1):
        if todo.size == 0:
            break
        full = chains is None or round_ == MAX_ROUNDS
        parts = []
        size = edges if full else 2 * n + int(base.sum()) + 4 * n * len(inner)
        for batch in _batches(todo, rows, cols, size, full=full or own_masks):
            mask = None
            if not full:
                tokens = np.stack((rows[batch], cols[batch]), axis=1)
                if own_masks:
                    mask = np.broadcast_to(base, (batch.size, *base.shape)).copy()
                    which = np.arange(batch.size)[:, None]
                    mask[which, :, tokens, :] = True
                    mask[which, :, :, tokens] = True
                    mask &= allowed[None]
                else:
                    tokens = np.unique(tokens)
                    mask = base.copy()
                    mask[:, tokens, :] = True
                    mask[:, :, tokens] = True
                    mask &= allowed
            parts.append(_solve_batch(inner, source_caps[batch], sink_caps[batch], mask, tol))
        sol = _concat(parts)
        lower[todo], upper[todo], reached[todo] = sol.lower, sol.upper, sol.reached
        if full:
            break
        # Price each subgraph cut with the full capacities.
        side = sol.reached
        cut = (source_caps[todo] * ~side[:, 0]).sum(axis=1)
        cut += (sink_caps[todo] * side[:, -1]).sum(axis=1)
        for t, matrix in enumerate(inner):
            cut += ((side[:, t].astype(np.float64) @ matrix) * ~side[:, t + 1]).sum(axis=1)
        trivial = np.minimum(source_caps[todo].sum(axis=1), sink_caps[todo].sum(axis=1))
        upper[todo] = np.minimum(trivial, cut)  # sol.upper holds for the subgraph only
        open_ = upper[todo] - lower[todo] > tol
        # Grow the subgraph (for all later problems) by the edges crossing open cuts.
        for t in range(len(inner)):
            above = side[open_, t].astype(np.float64)
            below = (~side[open_, t + 1]).astype(np.float64)
            base[t] |= (above.T @ below > 0) & allowed[t]
        todo = todo[open_]
    return Solutions(lower, np.maximum(upper, lower), reached)


def _batches(
    todo: np.ndarray,
    rows: np.ndarray | None,
    cols: np.ndarray | None,
    edges: int,
    *,
    full: bool,
) -> list[np.ndarray]:
    """Split problems into batches: by edge count on the full graph, else by chain tokens."""
    if full or rows is None or cols is None:
        per_call = max(1, BATCH_EDGES // max(edges, 1))
        return [todo[s] for s in _slices(todo.size, per_call)]
    batches: list[np.ndarray] = []
    current: list[int] = []
    tokens: set[int] = set()
    for p in todo.tolist():
        pair = {int(rows[p]), int(cols[p])}
        if current and len(tokens | pair) > BATCH_TOKENS:
            batches.append(np.array(current))
            current, tokens = [], set()
        current.append(p)
        tokens |= pair
    if current:
        batches.append(np.array(current))
    return batches


def _solve_batch(
    inner: list[np.ndarray],
    source_caps: np.ndarray,
    sink_caps: np.ndarray,
    mask: np.ndarray | None,
    tol: float,
) -> Solutions:
    """Solve K problems on one subgraph (``mask`` (depth−1, n, n), or full) at once."""
    count, n = source_caps.shape
    depth = len(inner) + 1
    union = Union(inner, source_caps, sink_caps, mask)
    caps = union.caps
    trivial = np.minimum(source_caps.sum(axis=1), sink_caps.sum(axis=1))
    sink_bound = sink_caps.sum(axis=1) <= source_caps.sum(axis=1)
    upper = trivial.copy()
    lower = np.zeros(count)
    reached = np.zeros((count, depth, n), dtype=bool)
    reached[sink_bound] = True  # trivial cuts until a better one is found
    flow = np.zeros(union.num_edges)
    topped = np.zeros(count, dtype=bool)
    remaining = 1.0  # every capacity is ≤ 1
    for stage in range(MAX_STAGES):
        scale = SCALE / remaining
        data = np.empty(2 * union.num_edges, dtype=np.int32)
        data[union.fpos] = np.floor(np.clip(caps - flow, 0.0, remaining) * scale)
        data[union.rpos] = np.floor(np.clip(flow, 0.0, remaining) * scale)
        graph = csr_array((data, union.indices, union.indptr), shape=(union.num_nodes,) * 2)
        result = maximum_flow(graph, 0, union.num_nodes - 1, method="dinic")
        net = flow_data(result.flow, union)
        step = net[union.fpos] / scale
        flow += step
        # Problems certified by the top-up keep exactly their trivial bound.
        lower += np.where(topped, 0.0, step[: count * n].reshape(count, n).sum(axis=1))
        if stage == 0:
            topped = top_up(union, flow, source_caps, sink_caps, trivial - lower)
            lower = np.where(topped, trivial, lower)
            gaps = upper - lower
            if gaps.max() <= tol:
                break
            # Else prove stage 1's own min cut tight (no further solve), or
            # at least keep its price as the upper bound.
            if len(inner) < SATURATE_FROM:
                edges = union.num_edges / count
                remaining = min(edges / SCALE, max(float(gaps.max()), tol))
                continue
            ok, price, side = saturate_cut(union, data, net, flow)
            ok &= ~topped
            better = price < upper
            upper = np.minimum(upper, price)
            reached[better] = side[1:-1].reshape(count, depth, n)[better]
            # The price is a float64 sum of ≤ |cut| terms ≤ 1: round-off ≤ |cut|·2**-53.
            terms = np.bincount(union.component, weights=crossing_of(union, side), minlength=count)
            lower = np.where(ok, price - terms * 2.0**-53, lower)
            upper = np.where(ok, price, upper)
            topped |= ok  # their lower bounds are final
            gaps = upper - lower
            if gaps.max() <= tol:
                break
            # A min cut C of the rounded graph: F ≤ cap(C) < lower + |C|/SCALE.
            edges = union.num_edges / count
            remaining = min(edges / SCALE, max(float(gaps.max()), tol))
            continue
        side = union.reachable(data.astype(np.int64) - net)
        crossing = side[union.tails] & ~side[union.heads]
        cut = np.bincount(union.component, weights=caps * crossing, minlength=count)
        better = cut < upper
        upper = np.where(better, cut, upper)
        reached[better] = side[1:-1].reshape(count, depth, n)[better]
        gaps = upper - lower
        if gaps.max() <= tol:
            break
        remaining = float(gaps.max())
    return Solutions(lower, np.maximum(upper, lower), reached)


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
    return mask & (matrix > 0)


def _slices(count: int, step: int) -> list[slice]:
    return [slice(s, min(s + step, count)) for s in range(0, count, step)]


def _concat(parts: list[Solutions]) -> Solutions:
    return Solutions(
        np.concatenate([p.lower for p in parts]),
        np.concatenate([p.upper for p in parts]),
        np.concatenate([p.reached for p in parts]),
    )
