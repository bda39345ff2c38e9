"""The disjoint union of K pruned attention-flow problems, as one CSR graph for scipy.

Part of the exact attention-flow solver (Abnar & Zuidema, ACL 2020) in
:mod:`._maxflow`: K problems on copies of one layered graph become one
max-flow problem (sources merged, sinks merged), because one scipy call on
the union costs less than K calls. The CSR structure is built so that
scipy's flow result can be read by position, without searching.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import breadth_first_order

from attnwidget.methods.flow.edges import arc_positions


class Union:
    """K problems on copies of one graph: sources merged (node 0), sinks merged (last).

    Node ``1 + k·depth·n + t·n + m`` is node m of node layer t (0 = layer T−1)
    of problem k. Edges are listed as: the K·n source edges, each problem's
    inner edges in (layer, tail, head) order, the K·n sink edges. The CSR
    structure holds every edge u→v and its reverse v→u, each row listing
    in-neighbours (smaller ids) before out-neighbours, both sorted; scipy's
    flow result has exactly this structure, so flows are read by position
    (``fpos``: forward arc of each edge, ``rpos``: its reverse). The structure
    of one copy is computed once and shifted for the others.
    """

    def __init__(
        self,
        inner: list[np.ndarray],
        source_caps: np.ndarray,
        sink_caps: np.ndarray,
        mask: np.ndarray | None,
    ) -> None:
        count, n = source_caps.shape
        depth = len(inner) + 1
        self.depth = depth
        self.shape = (count, depth, n)
        block = depth * n
        self.num_nodes = 2 + count * block
        sink = self.num_nodes - 1
        stacked = np.stack(inner) if inner else np.zeros((0, n, n))
        if mask is None:
            mask = stacked > 0
        if mask.ndim == 4:  # one subgraph per problem
            self._build_own(stacked, source_caps, sink_caps, mask)
            return
        t, m, j = np.nonzero(mask)  # sorted by (layer, tail, head)
        self.inner_index = (t, m, j)
        per = t.size  # inner edges of one copy
        # One copy: degrees of its nodes (local index t·n + m) and row starts.
        out_deg = np.ones((depth, n), dtype=np.int64)  # last layer: its sink edge
        in_deg = np.ones((depth, n), dtype=np.int64)  # first layer: its source edge
        out_deg[:-1] = mask.sum(axis=2)
        in_deg[1:] = mask.sum(axis=1)
        local_deg = (out_deg + in_deg).ravel()
        local_start = np.concatenate(([0], np.cumsum(local_deg)[:-1]))
        per_copy = int(local_deg.sum())
        node_in = in_deg.ravel()
        rank_out = (np.cumsum(mask, axis=2, dtype=np.int64) - mask)[t, m, j]
        rank_in = (np.cumsum(mask, axis=1, dtype=np.int64) - mask)[t, m, j]
        tail_local = t * n + m
        head_local = tail_local + n + (j - m)
        last = (depth - 1) * n + np.arange(n)
        # Positions within one copy's rows; copy k's rows start after the
        # source row (K·n arcs) and k earlier copies.
        copy_fpos_inner = local_start[tail_local] + node_in[tail_local] + rank_out
        copy_fpos_sink = local_start[last] + node_in[last]
        copy_rpos_inner = local_start[head_local] + rank_in
        copy_rpos_source = local_start[:n]
        shift = (count * n + np.arange(count, dtype=np.int64) * per_copy)[:, None]
        self.fpos = np.concatenate(
            (
                np.arange(count * n),
                (shift + copy_fpos_inner).ravel(),
                (shift + copy_fpos_sink).ravel(),
            )
        )
        self.rpos = np.concatenate(
            (
                (shift + copy_rpos_source).ravel(),
                (shift + copy_rpos_inner).ravel(),
                count * n + count * per_copy + np.arange(count * n),
            )
        )
        problems = np.arange(count, dtype=np.int64)
        node_base = (1 + problems * block)[:, None]
        tokens = np.arange(n, dtype=np.int64)
        self.tails = np.concatenate(
            (
                np.zeros(count * n, dtype=np.int64),
                (node_base + tail_local).ravel(),
                (node_base + (depth - 1) * n + tokens).ravel(),
            )
        )
        self.heads = np.concatenate(
            (
                (node_base + tokens).ravel(),
                (node_base + head_local).ravel(),
                np.full(count * n, sink, dtype=np.int64),
            )
        )
        inner_caps = np.broadcast_to(stacked[t, m, j], (count, per)).ravel()
        self.caps = np.concatenate((source_caps.ravel(), inner_caps, sink_caps.ravel()))
        self.component = np.concatenate(
            (np.repeat(problems, n), np.repeat(problems, per), np.repeat(problems, n))
        )
        self.num_edges = self.tails.size
        self.sink_edges = np.arange(count * n + count * per, self.num_edges)
        degree = np.concatenate(([count * n], np.tile(local_deg, count), [count * n]))
        self.indptr = np.zeros(self.num_nodes + 1, dtype=np.int32)
        np.cumsum(degree, out=self.indptr[1:])
        self.indices = np.empty(2 * self.num_edges, dtype=np.int32)
        self.indices[self.fpos] = self.heads
        self.indices[self.rpos] = self.tails
        self.row_of = np.repeat(np.arange(self.num_nodes, dtype=np.int32), degree)

    def _build_own(
        self,
        stacked: np.ndarray,
        source_caps: np.ndarray,
        sink_caps: np.ndarray,
        masks: np.ndarray,
    ) -> None:
        """Like the shared case, with masks (K, depth−1, n, n): one subgraph per problem."""
        count, n = source_caps.shape
        depth = self.depth
        block = depth * n
        sink = self.num_nodes - 1
        k, t, m, j = np.nonzero(masks)  # sorted by (problem, layer, tail, head)
        self.inner_index = (k, t, m, j)
        out_deg = np.ones((count, depth, n), dtype=np.int64)
        in_deg = np.ones((count, depth, n), dtype=np.int64)
        out_deg[:, :-1] = masks.sum(axis=3)
        in_deg[:, 1:] = masks.sum(axis=2)
        degree = np.concatenate(([count * n], (out_deg + in_deg).ravel(), [count * n]))
        indptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(degree, out=indptr[1:])
        node_in = in_deg.ravel()
        rank_out = (np.cumsum(masks, axis=3, dtype=np.int32) - masks)[k, t, m, j]
        rank_in = (np.cumsum(masks, axis=2, dtype=np.int32) - masks)[k, t, m, j]
        problems = np.repeat(np.arange(count), n)
        tokens = np.tile(np.arange(n), count)
        src_head = 1 + problems * block + tokens
        in_tail = 1 + k * block + t * n + m
        in_head = in_tail + n + (j - m)
        snk_tail = 1 + problems * block + (depth - 1) * n + tokens
        self.tails = np.concatenate((np.zeros(count * n, dtype=np.int64), in_tail, snk_tail))
        self.heads = np.concatenate((src_head, in_head, np.full(count * n, sink)))
        self.caps = np.concatenate((source_caps.ravel(), stacked[t, m, j], sink_caps.ravel()))
        self.component = np.concatenate((problems, k, problems))
        self.num_edges = self.tails.size
        self.sink_edges = np.arange(count * n + k.size, self.num_edges)
        self.fpos = np.concatenate(
            (
                np.arange(count * n),
                indptr[in_tail] + node_in[in_tail - 1] + rank_out,
                indptr[snk_tail] + node_in[snk_tail - 1],
            )
        )
        self.rpos = np.concatenate(
            (indptr[src_head], indptr[in_head] + rank_in, indptr[sink] + np.arange(count * n))
        )
        self.indices = np.empty(2 * self.num_edges, dtype=np.int32)
        self.indices[self.fpos] = self.heads
        self.indices[self.rpos] = self.tails
        self.indptr = indptr.astype(np.int32)
        self.row_of = np.repeat(np.arange(self.num_nodes, dtype=np.int32), degree)

    def reachable(self, residual: np.ndarray) -> np.ndarray:
        """Nodes reachable from node 0 over arcs with ``residual > 0``: bool (N,)."""
        return self.reach_over(residual > 0, reverse=False)

    def reach_over(self, keep: np.ndarray, *, reverse: bool) -> np.ndarray:
        """Nodes reachable from the source over the arcs ``keep`` (bool, CSR order): (N,).

        With ``reverse``, the nodes from which the sink is reachable instead.
        """
        tails, heads = self.row_of[keep], self.indices[keep]
        start = 0
        if reverse:  # walk the arcs backwards from the sink
            tails, heads, start = heads, tails, self.num_nodes - 1
            order = np.argsort(tails, kind="stable")
            tails, heads = tails[order], heads[order]
        counts = np.bincount(tails, minlength=self.num_nodes)
        indptr = np.zeros(self.num_nodes + 1, dtype=np.int32)
        np.cumsum(counts, out=indptr[1:])
        graph = csr_array(
            (np.ones(heads.size, dtype=np.int8), heads, indptr),
            shape=(self.num_nodes,) * 2,
        )
        order = breadth_first_order(graph, start, directed=True, return_predecessors=False)
        side = np.zeros(self.num_nodes, dtype=bool)
        side[order] = True
        return side


def flow_data(flow: csr_array, union: Union) -> np.ndarray:
    """scipy's net flows in the union structure's order (int64)."""
    if np.array_equal(flow.indptr, union.indptr) and np.array_equal(flow.indices, union.indices):
        return flow.data.astype(np.int64)
    # A scipy that orders its result differently: find each arc by position.
    return flow.data[arc_positions(flow, union.row_of, union.indices)].astype(np.int64)
