"""Push–relabel max flows for every sink of one source, on one residual graph.

The one exact solver of attention flow (Abnar & Zuidema, ACL 2020,
:mod:`attnwidget.methods.flow.flow`). The problems of one source row differ
only in their sink: the graph (source → node layers T−1 … 1 → the n input
tokens) is the same, and so is every feasible *preflow* (a flow that may
leave excess at nodes). So one preflow is carried from sink to sink: the
first sink is solved from scratch, each later one starts from the preflow
the previous solve left (the old sink's inflow becomes excess to reroute),
and only the distance labels are recomputed. No per-sink graph set-up.

The algorithm is the first phase of push–relabel (Goldberg & Tarjan, "A new
approach to the maximum-flow problem", JACM 1988) with highest-label
selection, the gap heuristic and global relabelling (Cherkassky & Goldberg,
"On implementing the push–relabel method for the maximum flow problem",
Algorithmica 1997). It ends with a maximum *preflow*: no node that can still
reach the sink holds excess. The nodes that reach the sink in the residual
graph, T', then give a minimum cut: every arc into T' is saturated and every
arc out of it is empty, so the cut's capacity equals the sink's excess, and
that excess can be delivered as a flow (all excess comes from the source).
The kernel checks that equality in integers for every sink.

Why bit sets: the graph is layered and dense (every node has an arc to every
node of the layer below), so a plain implementation spends its time scanning
n arcs per node to find the few that are admissible. Here each node keeps
bit sets of its arcs with room and of its arcs carrying flow, and each layer
a bit set of its nodes per label, so the admissible arcs of a node are an AND
of two words per 64 tokens, and a relabel or a breadth-first search costs
words, not arcs. On the hard inputs of ``bench/flow.py --hard`` this made the
solver several times faster than scanning arcs.

Capacities are rounded *down* to multiples of 2**-56 (int64; any node's
excess is at most the source's supply, ≤ 2**56). The integer flow is
feasible for the real capacities, so ``lower = excess·2**-56`` is a flow
value; ``upper``, the cut T' summed in float64 from the real capacities, is
a cut. The exact maximum lies between them; the gap (about |cut|·2**-56 plus
float64 rounding of the sum, ~1e-13 at L = 12, n = 128) is the value's
certified error, so no second, finer solve is needed.

Compiled with numba on first use (numba is not imported with the package);
without a working numba the same kernel runs uncompiled, with the same
values (:func:`kernel`; the kernel itself is :mod:`._push_kernel`).
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.methods.flow import _push_kernel
from attnwidget.methods.flow._push_kernel import SCALE

__all__ = [
    "PushGraph",
    "RowFlows",
    "available",
    "fallback_reason",
    "kernel",
    "prepare",
    "solve_row",
    "warm_up",
]
#: A global relabel after this many relabels, as a multiple of the node count.
GLOBAL_EVERY = 1.0
#: float64 rounding of a cut's sum: at most this per arc summed.
_SUM_EPS = 2.0**-52


@dataclass(frozen=True)
class PushGraph:
    """The layers of one flow problem, rounded once for every source and sink.

    ``capacities[a]`` (int64, (n, n)): ⌊Â_{a+1}·2**56⌋, arcs from node layer
    a+1 to node layer a; ``real_t[a, j, i]`` the float capacity of arc
    (a+1, i) → (a, j) (transposed: the cut sums read it by sink side).
    """

    capacities: np.ndarray
    real_t: np.ndarray


@dataclass(frozen=True)
class RowFlows:
    """Max flows from one source: ``value`` (the certified cut) and ``error``, (S,)."""

    value: np.ndarray
    error: np.ndarray


def prepare(layers: list[np.ndarray]) -> PushGraph:
    """Round ``[Â_1, …, Â_{T−1}]`` (bottom first, each (n, n)) for :func:`solve_row`."""
    real = np.stack(layers).astype(np.float64, copy=False)
    if not np.isfinite(real).all() or (real < 0).any() or real.max(initial=0.0) > 1.0:
        # the integer scale assumes capacities in [0, 1] (re-normalised attention rows)
        raise ValueError("push–relabel capacities must be finite and within [0, 1]")
    return PushGraph(
        capacities=np.floor(real * SCALE).astype(np.int64),
        real_t=np.ascontiguousarray(real.transpose(0, 2, 1)),
    )


def solve_row(
    graph: PushGraph,
    source_caps: np.ndarray,
    sinks: np.ndarray,
    *,
    warm: bool = True,
    global_every: float = GLOBAL_EVERY,
) -> RowFlows:
    """Max flows from one source to each of ``sinks`` (input-token positions).

    Args:
        graph: the layers, from :func:`prepare`.
        source_caps: (n,) capacities from the source into node layer T−1.
        sinks: (S,) token positions, solved in this order (neighbours in turn
            keep the carried preflow close).
        warm: carry the preflow from sink to sink (False: each sink from
            scratch; for tests and comparison).
        global_every: relabels between global relabels, per node.

    Returns:
        A :class:`RowFlows`: each value is the capacity of a cut that an
        integer flow of the rounded graph fills to within ``error``.
    """
    sinks = np.ascontiguousarray(sinks, dtype=np.int64)
    real_source = np.ascontiguousarray(
        np.broadcast_to(
            np.asarray(source_caps, dtype=np.float64), (sinks.size, graph.real_t.shape[1])
        )
    )
    supply = np.floor(real_source * SCALE).astype(np.int64)
    lower = np.empty(sinks.size)
    upper = np.empty(sinks.size)
    cut_arcs = np.empty(sinks.size, dtype=np.int64)
    ok = kernel()(
        graph.capacities,
        graph.real_t,
        real_source,
        supply,
        sinks,
        warm,
        float(global_every),
        lower,
        upper,
        cut_arcs,
    )
    if not ok:  # a broken invariant of the solver, never a property of the input
        raise AssertionError("push–relabel: an integer cut differs from its flow")
    slack = (cut_arcs + 1) * _SUM_EPS * np.maximum(upper, 1.0)
    return RowFlows(
        value=upper,
        error=np.maximum(upper - lower, 0.0) + slack,
    )


def warm_up() -> str | None:
    """Compile the solver (or load numba's on-disk cache) now; why it runs uncompiled, if so.

    The first flow in a process otherwise pays it: ~1 s to load the cache,
    ~10 s to compile on a new installation.
    """
    return fallback_reason()


# ------------------------------------------------ compiling, or not

_LOADED: dict[str, Any] = {}
_LOCK = threading.RLock()
#: Small helpers inlined into their callers; the rest compiled as functions.
_INLINED = ("_lowest", "_set", "_clear")
_FUNCTIONS = ("_start", "_gap", "_cut", "_relabel_all", "_fill_buckets", "solve_sinks")
#: The plain Python functions, kept to run uncompiled (and to undo a failed compile).
_PLAIN = {name: getattr(_push_kernel, name) for name in _INLINED + _FUNCTIONS}
_NO_NUMBA_HINT = (
    "its push-relabel solver runs uncompiled: the same values, about 200x slower. "
    "Install or repair numba (pip install --upgrade numba), a dependency of attnwidget, "
    "for the compiled solver."
)


def available() -> bool:
    """Whether numba imports here (tried once; it is not imported with the package)."""
    with _LOCK:
        if "available" not in _LOADED:
            try:
                importlib.import_module("numba")
                _LOADED["available"] = True
            except Exception as error:  # ImportError, or a numba broken against this numpy
                _LOADED["available"] = False
                _LOADED["reason"] = f"numba does not import ({type(error).__name__}: {error})"
        return bool(_LOADED["available"])


def kernel() -> Callable[..., bool]:
    """:func:`._push_kernel.solve_sinks` as it runs here: compiled by numba, else plain.

    The first call compiles it (or loads numba's on-disk cache) and runs it once
    on a 2-token graph, so a numba that imports but cannot compile is found
    here and not in the middle of a flow. Without a working numba it warns
    once (a RuntimeWarning naming the fix) and returns the uncompiled kernel.
    """
    with _LOCK:
        if "kernel" not in _LOADED:
            _LOADED["kernel"] = _load()
            if "reason" in _LOADED:
                warnings.warn(
                    f"attention flow: {_LOADED['reason']}; {_NO_NUMBA_HINT}",
                    RuntimeWarning,
                    stacklevel=3,
                )
        return _LOADED["kernel"]


def fallback_reason() -> str | None:
    """Why the kernel runs uncompiled (``None`` when numba compiled it)."""
    kernel()
    with _LOCK:
        return _LOADED.get("reason")


def _load() -> Callable[..., bool]:
    if not available():
        return _uncompiled
    names = vars(_push_kernel)
    try:
        from numba import njit

        # Rebind the kernel module's names first: numba resolves the helpers a
        # function calls from that module's globals when it compiles the function.
        for name in _INLINED:
            names[name] = njit(cache=True, nogil=True, inline="always")(_PLAIN[name])
        for name in _FUNCTIONS:
            names[name] = njit(cache=True, nogil=True)(_PLAIN[name])
        solver = names["solve_sinks"]
        if not _smoke(solver):
            raise AssertionError("its cut differs from its flow on a 2-token graph")
    except Exception as error:  # a numba that imports but does not compile here
        names.update(_PLAIN)
        _LOADED["reason"] = f"numba failed to compile the solver ({type(error).__name__}: {error})"
        return _uncompiled
    return solver


def _uncompiled(*args: Any) -> bool:
    """The plain kernel, run by Python (numpy scalars; the bit tricks wrap as in numba)."""
    with np.errstate(over="ignore"):
        return bool(_PLAIN["solve_sinks"](*args))


def _smoke(solver: Callable[..., bool]) -> bool:
    """Run ``solver`` on two layers of 2 tokens (all capacities 1/2), with the real dtypes."""
    c = np.full((2, 2, 2), int(SCALE) // 2, dtype=np.int64)
    real_t = np.full((2, 2, 2), 0.5)
    real_source = np.full((2, 2), 0.5)
    supply = np.full((2, 2), int(SCALE) // 2, dtype=np.int64)
    sinks = np.arange(2, dtype=np.int64)
    out = (np.empty(2), np.empty(2), np.empty(2, dtype=np.int64))
    return bool(solver(c, real_t, real_source, supply, sinks, True, 1.0, *out))
