"""Attention flow without a solve: a cut and a flow found for one sink, reused for the next.

Part of exact attention flow (Abnar & Zuidema, ACL 2020,
:mod:`attnwidget.methods.flow.flow`); used by :mod:`._flow_direct`. The problems
of one source row differ only in the sink's n capacities (the edges of
node layer 1 into input token j). On block attention the minimum cut of a
sink is mostly that of its neighbours: the source's block's edges out, the
sink's block's edges in (on "blocks apart", L = 12, n = 128, 11 of the 16
sinks of a block share one cut exactly). So before solving, each problem
tries the certified cuts of the last few solved ones:

* the cut's price with this sink's capacities is an upper bound (any cut);
* the stored flow of that cut's problem is made feasible for this sink: its
  sink edges are cut down to the new capacities, and what no longer arrives
  is cancelled back towards the source in proportion (a flow again);
* :func:`._flow_proof.prove` then routes everything the cut's arcs still
  miss (what the new sink edges allow more, the old rounding losses) along
  trees of the residual graph; when it goes through, the flow plus those
  routes has the cut's price as its value, which is therefore the maximum.

Nothing is assumed: a stale cut just fails the proof and the problem is
solved as before. The flow's float round-off (the cancelling changes its
conservation by a few ulps) is measured and added to the error.

Tried and not kept: the flows of the two trivial cuts too (values at the
bound; on the sink's own cut the new sink edges refilled over those with
room through the first 3 layers, a few flows kept and the best-fitting one
tried). On "blocks" (n = 128, every value at its bound, no cheap
certificate) that certified 57 of 117 sinks, but a try took 9–13 ms, more
than the 24-edge subgraph solve it replaced (7–9 ms): 0.78 → 1.14× the
plain solver's time.
"""

from __future__ import annotations

import numpy as np

from attnwidget.methods.flow._proof import Net, prove
from attnwidget.methods.flow._side import side_flow

#: Certified (cut, flow) pairs kept per source row, most recent first, and
#: how many of them (the cheapest) a problem tries: the cheapest price bounds
#: the maximum best, so only it can be exact (bar ties). On "blocks apart"
#: (n = 128) keeping 8 certified 64 of 114 sinks, 4 kept 53.
KEEP_CUTS = 8
TRIES = 1
#: After this many failed tries in a row, reuse is only tried on every
#: PROBE-th problem until it works again (on near-identity attention every
#: sink has its own cut; on block attention the first sinks of a block do).
MISSES = 3
PROBE = 16
#: Node layers (next to the sink) through which a sink's new capacities are
#: met by moving flow between its sink edges.
REBALANCE_LAYERS = 3


class Reuse:
    """Recent certified cuts of one source row, in :class:`._flow_layers.Layered`'s
    layout (layer 0 next to the sink, token order)."""

    def __init__(self) -> None:
        self.source: np.ndarray | None = None
        self.stored: list[tuple[np.ndarray, Net]] = []
        self.shared = False
        self.missed = self.waited = 0

    def add(self, source_caps: np.ndarray, side: np.ndarray, net: Net) -> None:
        """Keep the certified cut ``side`` (the sink's side, (D, n)) and its flow.

        Trivial cuts (all the source's edges, or all the sink's) are not kept:
        the trivial bound prices them already. Reuse starts once two problems
        were certified by the same cut (before, :meth:`try_cut` costs nothing).
        """
        if self.source is None or not np.array_equal(self.source, source_caps):
            self.source, self.stored, self.shared = source_caps, [], False
        if not side.any() or side.all():
            return
        if any(np.array_equal(side, old) for old, _ in self.stored):
            self.shared = True  # two problems with one cut: try again from now on
            self.missed = self.waited = 0
        self.stored.insert(0, (side, net))
        del self.stored[KEEP_CUTS:]

    def try_cut(
        self, source_caps: np.ndarray, sink_caps: np.ndarray, bound: float
    ) -> tuple[float, float, np.ndarray, Net] | None:
        """(value, error, side, flow) certified from a stored cut, or None.

        Only cuts priced below ``bound`` (the trivial bound) are tried, the
        cheapest first (the maximum is at most every cut's price).
        """
        if self.source is None or not np.array_equal(self.source, source_caps):
            return None
        if not self.shared:
            return None
        if self.missed >= MISSES:  # cuts are not shared here: probe now and then
            self.waited += 1
            if self.waited < PROBE:
                return None
            self.waited = 0
        self.missed += 1
        priced = []
        for side, net in self.stored:
            price = _price(side, net, sink_caps)
            if price < bound:
                priced.append((price, side, net))
        for _, side, net in sorted(priced, key=lambda item: item[0])[:TRIES]:
            moved = _moved(net, side, sink_caps)
            if moved is None:
                continue
            lacking = np.zeros(side.shape)
            lacking[0] = np.where(side[0], np.maximum(moved.flow[0].sum(axis=1) - moved.fa, 0.0), 0)
            ok, price, terms = prove(moved, side, lacking)
            if ok:
                self.missed = 0
                error = terms * 2.0**-53 + _imbalance(moved) - float(lacking.sum())
                return price, max(error, terms * 2.0**-53), side, moved
        return None


def _price(side: np.ndarray, net: Net, sink_caps: np.ndarray) -> float:
    """The cut's price with the new sink capacities (the rest of it is unchanged)."""
    other = ~side
    price = float(sink_caps[other[0]].sum()) + float(net.z[side[-1]].sum())
    for t in range(side.shape[0] - 1):
        price += float(net.caps[t][np.ix_(side[t], other[t + 1])].sum())
    return price


def _moved(net: Net, side: np.ndarray, sink_caps: np.ndarray) -> Net | None:
    """``net``'s flow made feasible for the new sink capacities, or None.

    Each sink edge is cut down to its new capacity. A node on the source's
    side of the cut then passes on less: its outgoing flows are cancelled in
    proportion, layer by layer towards the source (a flow again). A node on
    the sink's side instead gets what it lacks over the other sink edges,
    through the first node layers (:func:`._flow_side.side_flow`); that keeps the flow
    across the cut, so the cut stays tight.
    """
    fa = np.minimum(net.fa, sink_caps)
    flow = net.flow
    lack = np.zeros(side.shape)
    lack[0] = np.where(side[0], net.fa - fa, 0.0)
    if lack.any():  # met from the sink edges with room, near the sink
        region = side.copy()
        region[REBALANCE_LAYERS:] = False
        sent = side_flow(Net(sink_caps, fa, net.caps, flow, net.z, net.fz), region, lack)
        if sent is None:
            return None
        fa, flow = sent[0].fa, sent[0].flow
    flow = flow.copy()
    short = np.where(side[0], 0.0, net.fa - fa)  # what layer 0's nodes now receive less
    for t in range(flow.shape[0]):
        out = flow[t].sum(axis=1)
        share = np.divide(short, out, out=np.zeros_like(short), where=out > 0)
        cut = flow[t] * np.minimum(share, 1.0)[:, None]
        flow[t] -= cut
        short = cut.sum(axis=0)
    fz = np.maximum(net.fz - short, 0.0)
    np.clip(flow, 0.0, net.caps, out=flow)
    return Net(sink_caps, fa, net.caps, flow, net.z, fz)


def _imbalance(net: Net) -> float:
    """Total flow conservation violation (float round-off of the cancelling):
    the flow's value is off by at most this."""
    inflow = np.concatenate(([net.fa], net.flow.sum(axis=1)))
    outflow = np.concatenate((net.flow.sum(axis=2), [net.fz]))
    return float(np.abs(inflow - outflow).sum())
