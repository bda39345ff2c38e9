"""Cheap exact certificates that an attention-flow value equals its trivial bound.

Part of attention flow (Abnar & Zuidema, ACL 2020;
:mod:`attnwidget.methods.flow.flow`).

For source i (a node of layer T) and sink j (input token j), the trivial bound
is ``τ = min(out-capacity of the source, in-capacity of the sink)``. Every max
flow is ≤ τ, so a *feasible* flow of value τ proves that the maximum is τ. This
module builds such flows for many (i, j) pairs at once; pairs it cannot
certify go to the exact push–relabel solver (:mod:`._push`). On real attention
most pairs sit at τ, so this is where most of the speed comes from.

A flow is glued from three feasible pieces at a "meeting" edge layer l
(edges ``M = Â_l`` from node layer l to node layer l−1, 2 ≤ l ≤ T−1):

* **Supply** ``s`` (n,) at node layer l: the rollout of the source's edges
  down to layer l. Every node receives ≤ 1 and forwards in proportion to its
  (row-stochastic) capacities, so this is a feasible flow, and any vector
  ``w ≤ s`` can be delivered too (scale the flow into each node down).
* **Demand** ``d`` (n,) at node layer l−1: computed upwards from the sink's
  capacities ``c``; each node k's demand is pulled from the layer above in
  proportion to the capacities into k, clipped to what they can carry. Any
  arrival vector ``w ≤ d`` then reaches the sink in full along those pulls.
* **Middle**: a flow F through M with row sums ≤ s, column sums ≤ d and
  ``ΣF = τ``, by Sinkhorn scaling (matrix products, all pairs at once):
  ``F = diag(x)·M·diag(y)`` scaled towards row sums ``s·τ/Σs`` and column
  sums ``d·τ/Σd``, then made exact on one side. Certified when ``x_m·y_k ≤ 1``
  on M's support (``F ≤ M``) and the sums fit, each checked explicitly to
  1e-13, so a certificate never depends on Sinkhorn having converged. Tried
  at up to :data:`MEET_LAYERS` edge layers, middle first, while it pays off
  (on i.i.d. random attention it certifies every pair; on trained models'
  sharp attention the caps ``F ≤ M`` often fail).
"""

from __future__ import annotations

import numpy as np

#: Slack allowed in the feasibility checks (float64 round-off).
CHECK_EPS = 1e-13
#: Least slack on one side for the scaling to have room (below it, skip).
SLACK = 1e-9
#: Sinkhorn iterations between checks, and the most per meeting layer.
CHECK_EVERY = 6
MAX_ITERS = 30
#: Pairs processed together (bounds the (pairs, n) work arrays).
CHUNK_ELEMENTS = 1_000_000
#: Edge layers tried with Sinkhorn scaling (middle first), while each one
#: tried so far certified at least this share of all pairs.
MEET_LAYERS = 4
MEET_WORTH = 0.2


def supplies(adjusted: np.ndarray, top: int, rows: np.ndarray) -> dict[int, np.ndarray]:
    """Rollout supply of each source row: ``{l: (R, n)}`` for node layers l = top−1 … 1.

    ``adjusted`` is (L, n, n) with ``adjusted[l-1] = Â_l``; sources are the
    nodes ``rows`` of node layer ``top``.
    """
    out: dict[int, np.ndarray] = {}
    s = adjusted[top - 1][rows]
    out[top - 1] = s
    for layer in range(top - 1, 1, -1):
        s = s @ adjusted[layer - 1]
        out[layer - 1] = s
    return out


def demands(adjusted: np.ndarray, top: int) -> dict[int, np.ndarray]:
    """Demand of every sink: ``{l: (n_sinks, n)}`` for node layers l = 1 … top−1."""
    out: dict[int, np.ndarray] = {}
    d = adjusted[0].T.copy()  # sink j's capacities from node layer 1
    out[1] = d
    for layer in range(2, top):
        matrix = adjusted[layer - 1]
        col = matrix.sum(axis=0)
        theta = np.minimum(1.0, np.divide(d, col, out=np.zeros_like(d), where=col > 0))
        d = theta @ matrix.T
        out[layer] = d
    return out


def certify(adjusted: np.ndarray, top: int, rows: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Pairs whose max flow provably equals ``bound``: bool (len(rows), n).

    Each certificate is a feasible flow of value τ, so a certified value is
    exactly its bound. ``bound[r, j]`` is the trivial bound of source ``rows[r]`` (node layer
    ``top``) and sink j; the certificates are Sinkhorn scaling at up to
    :data:`MEET_LAYERS` edge layers.
    """
    n = adjusted.shape[-1]
    done = np.zeros(bound.shape, dtype=bool)
    if top < 4:  # three node layers or fewer: the exact solver is as cheap
        return done
    supply = supplies(adjusted, top, rows)
    demand = demands(adjusted, top)
    # Middle edge layers first: there the source's and the sink's mass have
    # both spread out, which is where the scaling most often succeeds.
    layers = sorted(range(2, top), key=lambda layer: abs(layer - (top + 1) / 2))
    chunk = max(1, CHUNK_ELEMENTS // n)
    for layer in layers[:MEET_LAYERS]:
        todo_r, todo_j = np.nonzero(~done)
        for start in range(0, todo_r.size, chunk):
            r = todo_r[start : start + chunk]
            j = todo_j[start : start + chunk]
            ok = _meet(adjusted[layer - 1], supply[layer][r], demand[layer - 1][j], bound[r, j])
            done[r[ok], j[ok]] = True
        if done.all() or done.sum() < MEET_WORTH * bound.size:
            break  # all done, or scaling does not suit this attention (the solver does the rest)
    return done


def _meet(matrix: np.ndarray, s: np.ndarray, d: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Certify pairs at one edge layer: s, d (P, n) supplies/demands, tau (P,)."""
    sum_s = s.sum(axis=1)
    sum_d = d.sum(axis=1)
    # Column-exact needs Σd ≥ τ; row-exact needs Σs ≥ τ; at least one side must
    # have strict slack for float scaling to fit.
    # (to round-off: a side that sums to τ − 1e-17 is scaled up to τ, and the
    # ≤ s / ≤ d checks below then allow the 1e-17).
    possible = (sum_d >= tau - CHECK_EPS) & (sum_s >= tau - CHECK_EPS) & (tau > 0)
    possible &= (sum_d > tau + SLACK) | (sum_s > tau + SLACK)
    result = np.zeros(tau.shape, dtype=bool)
    active = np.flatnonzero(possible)
    if active.size == 0:
        return result
    s, d, tau = s[active], d[active], tau[active]
    r_target = s * (tau / sum_s[active])[:, None]
    c_target = d * (tau / sum_d[active])[:, None]
    y = np.ones_like(c_target)
    matrix_t = matrix.T
    for it in range(1, MAX_ITERS + 1):
        x = _safe_div(r_target, y @ matrix_t)
        y = _safe_div(c_target, x @ matrix)
        if it % CHECK_EVERY and it != MAX_ITERS:
            continue
        # Two exact candidates: columns just fitted (x, y), or rows refitted.
        x_rows = _safe_div(r_target, y @ matrix_t)
        ok = _feasible(matrix, x, y, s, d, tau) | _feasible(matrix, x_rows, y, s, d, tau)
        result[active[ok]] = True
        # Drop the certified pairs, and those whose scaling has converged
        # without fitting: more iterations would not change the verdict.
        converged = np.abs(x * (y @ matrix_t) - r_target).max(axis=1) <= CHECK_EPS
        keep = ~ok & ~converged
        active, s, d, tau = active[keep], s[keep], d[keep], tau[keep]
        r_target, c_target, y = r_target[keep], c_target[keep], y[keep]
        if active.size == 0:
            break
    return result


def _feasible(
    matrix: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    s: np.ndarray,
    d: np.ndarray,
    tau: np.ndarray,
) -> np.ndarray:
    """Is ``F = diag(x)·M·diag(y)`` a valid middle piece of value τ, per pair?

    Row sums ≤ s, column sums ≤ d, ``F ≤ M`` on M's support (``x_m·y_k ≤ 1``)
    and ``ΣF ≥ τ``, each to :data:`CHECK_EPS`.
    """
    rows = x * (y @ matrix.T)
    cols = y * (x @ matrix)
    ok = (rows <= s + CHECK_EPS).all(axis=1) & (cols <= d + CHECK_EPS).all(axis=1)
    ok &= cols.sum(axis=1) >= tau - CHECK_EPS
    peak = x.max(axis=1) * y.max(axis=1)
    support = matrix > 0
    loose = ok & (peak > 1.0 + CHECK_EPS)
    if loose.any() and not support.all():
        # max of x_m·y_k over M's support only, a few pairs at a time
        idx = np.flatnonzero(loose)
        n = matrix.shape[0]
        step = max(1, CHUNK_ELEMENTS // (n * n))
        for start in range(0, idx.size, step):
            part = idx[start : start + step]
            prod = x[part, :, None] * y[part, None, :]
            peak[part] = np.where(support[None], prod, 0.0).max(axis=(1, 2))
    return ok & (peak <= 1.0 + CHECK_EPS)


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)
