"""Attention flow (Abnar & Zuidema, ACL 2020), exact and fast.

Abnar & Zuidema, "Quantifying Attention Flow in Transformers" (ACL 2020)
treat the layers as a flow network: nodes ``(l, i)`` for l = 0 … L (l = 0 are
the input tokens) and, for every layer l ≥ 1, an edge ``(l, i) → (l−1, j)``
with capacity ``Â_l[i, j]``, the head-fused, residual-adjusted attention
(``Â = 0.5·W + 0.5·I``, rows re-normalised). ``F[i, j]`` is the value of the
maximum flow from the source ``(layer, i)`` to the sink ``(0, j)``; the
reference code (``compute_flows`` in samiraabnar/attention_flow) computes
every value with networkx's Edmonds–Karp and then divides each source row by
its sum.

This module gives the same numbers (each within a certified ~1e-13, reported
as :attr:`FlowResult.max_error`) much faster, with no approximation:

* **Pruning.** A source ``(T, i)`` only reaches the layers below it, and the
  other input tokens are dead ends, so each problem is source → node layers
  T−1 … 1 → one sink; between problems only the n source and n sink
  capacities change.
* **Closed forms** for the first two layers: one layer is the edge itself,
  ``F = Â_1[i, j]``; two layers are disjoint two-edge paths,
  ``F = Σ_k min(Â_2[i, k], Â_1[k, j])``.
* **Certificates at the trivial bound** (:mod:`._flowcert`). Every flow is at
  most ``τ = min(capacity out of the source, capacity into the sink)``, and
  a feasible flow of value τ proves the maximum is τ. On real attention most
  values sit at τ; such flows are built for many pairs at once (rollout
  supply, proportional demand, Sinkhorn scaling at one layer) and checked
  explicitly.
* **One exact solver** for the rest: push–relabel (Goldberg & Tarjan, JACM
  1988; :mod:`._push`), which carries one preflow from sink to sink of a
  source row, so each later sink only reroutes the previous one's flow (no
  per-sink set-up), its values proven by a cut to ~1e-13 (capacities
  rounded to 2**-56).

**Without numba.** numba (a dependency) compiles the solver's kernel on first
use; the first call in a process loads it from numba's disk cache (~1 s;
~10 s to compile on a new installation; :func:`._push.warm_up`). Where numba
is missing or cannot compile, the same kernel runs uncompiled, as plain
Python over numpy arrays, after one RuntimeWarning that names the fix. That
is the one fallback because it is exact with the very same numbers (the same
int64 and float64 operations in the same order, so the oldest-transformers
CI run, which has no numba, checks the code that runs everywhere) and fast
enough for short inputs: the kernel takes 30–50 ms per source row (every
sink) at L = 7–8, n = 10–12, and ~2 s at L = 12, n = 32, about 200× its
compiled time (0.2–0.3 ms, ~10 ms). A plain ``scipy.sparse.csgraph.maximum_flow``
would be faster on long inputs but not exact: it takes int32 capacities, so
each value comes out short by up to edges·2**-30 (~1e-6 at L = 12, n = 32),
and recovering that remainder took eight modules of certified re-solves.

**Measured** (``python bench/flow.py --hard --repeats 1``: CLS row, L = 12,
our CPU time ÷ one plain scipy Dinic solve per sink on the unpruned graph,
one run on a busy 2-core machine): n = 128: bottleneck 0.23, near-identity
0.14, blocks 0.07, blocks apart 0.05 (random 0.01, real 0.05); n = 64: 0.32,
0.20, 0.11, 0.07; n = 32: 0.46, 0.30, 0.38, 0.34 (goal ≤ 0.5).

Whether a value sits at τ is reported too (``at_bound``): such a value is set
by one bottleneck (how much the source token sends, or how much the input
token receives in layer 1), not by the paths through the network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnwidget.errors import TooLargeError
from attnwidget.methods.flow import _push
from attnwidget.methods.flow._flowcert import certify
from attnwidget.methods.graph import (
    HeadFusion,
    add_residual,
    as_attention_array,
    check_row_sums,
    fuse_heads,
    resolve_layer,
    resolve_rows,
)
from attnwidget.methods.options import AT_LEAST_ONE, Option, head_fusion_option, layer_option
from attnwidget.methods.progress import Progress, ProgressArg, check_progress, wanted
from attnwidget.methods.registry import ScoreContext, register

#: Default memory cap for one flow computation (the graph and work arrays).
DEFAULT_MAX_BYTES = 2 * 1024**3
#: A value counts as "at the trivial bound" when within this of it.
AT_BOUND_ATOL = 1e-9
#: Bytes per graph edge, a generous bound: the solver's int64 and float64 copies
#: take ~40 (kept at the figure of the earlier scipy-based solver, so that
#: ``max_bytes`` refuses the same inputs as before).
_BYTES_PER_EDGE = 160
#: Seconds per source row ≈ this × n**2.5 (L ≥ 3), fitted to one source row's
#: time on softmax attention (L = 6 and 12; n = 64 … 256: 0.03 … 0.7 s) on a
#: busy 2-core machine; it also matches the 24 s reported for n = 1,024. A
#: rough figure: certificates finish many rows sooner, machines differ.
_SECONDS_PER_ROW_N25 = 6e-7
#: Sinks solved per kernel call while progress is shown (each call starts its
#: preflow afresh, so fewer, larger chunks lose less of the carried flow).
_PROGRESS_CHUNKS = 20


@dataclass(frozen=True)
class FlowResult:
    """Attention flow from some source rows of one layer to every input token.

    All arrays have shape (R, n): R = ``len(rows)`` sources, n input tokens.

    Attributes:
        values: the flows, each row divided by its sum when ``normalize`` (the
            reference's ``compute_flows``), else equal to ``raw_values``.
        raw_values: maximum-flow values F[i, j] (each in [0, 1]).
        trivial_bound: ``min(out-capacity of source i, in-capacity of sink j)``,
            i.e. ``min(Σ_k Â_T[i, k], Σ_k Â_1[k, j])``; always ≥ raw_values.
        at_bound: ``raw_values ≥ trivial_bound − 1e-9``: the value is set by
            one bottleneck rather than by paths through the layers.
        rows: (R,) the source token positions.
        layer: the 0-based layer index of the sources (node row ``layer + 1``).
        max_error: certified bound on ``|raw_values − exact max flow|`` over all
            entries (~1e-13 at L = 12, n = 128), proven per value by a cut of
            the graph (see the module docstring).
    """

    values: np.ndarray
    raw_values: np.ndarray
    trivial_bound: np.ndarray
    at_bound: np.ndarray
    rows: np.ndarray
    layer: int
    max_error: float


def attention_flow(
    attentions: object,
    *,
    layer: int = -1,
    rows: int | Sequence[int] | np.ndarray | None = None,
    normalize: bool = True,
    head_fusion: HeadFusion = "mean",
    residual: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: ProgressArg = None,
) -> np.ndarray:
    """Attention flow of Abnar & Zuidema (ACL 2020): (len(rows), n) array.

    ``F[r, j]`` is the maximum flow from node ``rows[r]`` of the node row after
    attention layer ``layer`` (same index convention as rollout's output) to
    input token j, through the attention graph with capacities ``Â_l``. See
    :func:`attention_flow_result` for the arguments and the certificate
    details; this returns its ``values``.
    """
    return attention_flow_result(
        attentions,
        layer=layer,
        rows=rows,
        normalize=normalize,
        head_fusion=head_fusion,
        residual=residual,
        max_bytes=max_bytes,
        progress=progress,
    ).values


def attention_flow_result(
    attentions: object,
    *,
    layer: int = -1,
    rows: int | Sequence[int] | np.ndarray | None = None,
    normalize: bool = True,
    head_fusion: HeadFusion = "mean",
    residual: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: ProgressArg = None,
) -> FlowResult:
    """Attention flow (Abnar & Zuidema, 2020) with bounds and certificates.

    Args:
        attentions: (L, H, n, n) array or the HF tuple of (1, H, n, n) tensors
            (post-softmax; rows that do not sum to 1 give a warning).
        layer: attention layer whose output nodes are the sources; -1 (default)
            is the top layer L. ``layer=k`` means the node row after attention
            layer k+1, as in :func:`attnwidget.methods.rollout.rollout`.
        rows: source token positions (an int, giving one row, or a sequence);
            None = all n.
        normalize: divide each row by its sum (as the reference does); False
            returns raw max-flow values.
        head_fusion: "mean" (the paper), "max" or "min" over heads.
        residual: add the residual ``0.5·I`` (the paper); False only
            re-normalises rows.
        max_bytes: raise :class:`TooLargeError` instead of building a graph
            that needs more memory than this.
        progress: None (default): when :func:`flow_seconds` estimates the
            work at 5 s or more, say so on stderr before it starts and show
            a progress bar of the (source, token) pairs solved (tqdm, else
            plain lines); True: always; False: never; a callable
            ``progress(done, total)`` gets the counts instead. Ctrl-C stops
            the work (the input is never changed). Shown, each source row's
            sinks are solved in a few chunks, so the values can differ from an
            unshown run within :attr:`FlowResult.max_error`.

    Returns:
        A :class:`FlowResult`; its arrays have shape (len(rows), n).

    Raises:
        AttentionShapeError, NonFiniteError: invalid attention.
        IndexError, TypeError: bad ``layer`` or ``rows``.
        TooLargeError: the graph would need more than ``max_bytes``.
    """
    progress = check_progress(progress)
    _check_size(attentions, layer, max_bytes)
    array = as_attention_array(attentions)
    check_row_sums(array, method="attention flow")
    num_layers, n = array.shape[0], array.shape[-1]
    layer_index = resolve_layer(layer, num_layers)
    sources = resolve_rows(rows, n)
    adjusted = add_residual(fuse_heads(array, head_fusion), residual=residual)
    estimate = flow_seconds(num_layers, n, sources.size, layer=layer_index)
    raw, bound, gap = _max_flows(adjusted, layer_index + 1, sources, progress, estimate)
    if normalize:
        sums = raw.sum(axis=1, keepdims=True)
        values = np.divide(raw, sums, out=np.zeros_like(raw), where=sums > 0)
    else:
        values = raw.copy()
    return FlowResult(
        values=values,
        raw_values=raw,
        trivial_bound=bound,
        at_bound=raw >= bound - AT_BOUND_ATOL,
        rows=sources,
        layer=layer_index,
        max_error=float(gap.max(initial=0.0)),
    )


def _max_flows(
    adjusted: np.ndarray,
    top: int,
    sources: np.ndarray,
    progress: ProgressArg = None,
    estimate: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Max flows from nodes ``sources`` of node layer ``top`` to every token.

    ``adjusted[l-1]`` is ``Â_l`` (n, n). Returns (raw, bound, gap), each
    (len(sources), n); gap is the certified error of each value.
    """
    n = adjusted.shape[-1]
    source_caps = adjusted[top - 1][sources]  # (R, n)
    sink_caps = adjusted[0]  # column j = capacities into sink j
    bound = np.minimum(source_caps.sum(axis=1)[:, None], sink_caps.sum(axis=0)[None, :])
    gap = np.zeros(bound.shape)
    if top == 1:
        return source_caps.copy(), bound, gap
    if top == 2:  # disjoint paths (2, i) → (1, k) → (0, j)
        raw = np.empty(bound.shape)
        step = max(1, 4_000_000 // (n * n))
        for start in range(0, sources.size, step):
            part = source_caps[start : start + step, :, None]
            raw[start : start + step] = np.minimum(part, sink_caps[None]).sum(axis=1)
        return raw, bound, gap
    raw = np.zeros(bound.shape)
    done = certify(adjusted, top, sources, bound)
    raw[done] = bound[done]
    todo_r, todo_j = np.nonzero(~done)
    if not todo_r.size:
        return raw, bound, gap
    graph = _push.prepare([adjusted[layer] for layer in range(top - 1)])
    what = f"attention flow ({sources.size:,} source rows × {n:,} tokens, {top} layers)"
    with Progress(
        todo_r.size, "attention flow", "pairs", progress, estimate, announcement=what
    ) as bar:
        # One kernel call per row carries the preflow from sink to sink; while
        # progress is shown the row goes in a few chunks so the bar can move.
        chunks = _PROGRESS_CHUNKS if wanted(progress, estimate) else 1
        # np.nonzero gives the pairs by row, each row's sinks ascending (neighbours in turn)
        for part in np.split(np.arange(todo_r.size), np.flatnonzero(np.diff(todo_r)) + 1):
            for piece in np.array_split(part, min(chunks, part.size)):
                r, sinks = todo_r[piece[0]], todo_j[piece]
                flows = _push.solve_row(graph, source_caps[r], sinks)
                raw[r, sinks] = flows.value
                gap[r, sinks] = flows.error
                bar.update(piece.size)
    return raw, bound, gap


def _check_size(attentions: object, layer: int, max_bytes: int) -> None:
    """Raise TooLargeError from the shape alone, before anything is allocated."""
    if isinstance(attentions, (tuple, list)):
        if not attentions:
            return
        num_layers = len(attentions)
        shape = tuple(getattr(attentions[0], "shape", ()))
    else:
        shape = tuple(getattr(attentions, "shape", ()))
        num_layers = int(shape[0]) if len(shape) == 4 else 1
    if len(shape) < 3 or not -num_layers <= layer < num_layers:
        return  # as_attention_array / resolve_layer report these
    n, heads = int(shape[-1]), int(shape[-3])
    needed, edges = flow_memory(num_layers, heads, n, layer=layer)
    if needed > max_bytes:
        top = layer % num_layers + 1
        raise TooLargeError(
            f"attention flow for n={n} tokens from layer {top} of {num_layers} would need "
            f"about {needed:,} bytes ({needed / 1024**3:.1f} GiB; its graph has {edges:,} "
            f"edges), more than max_bytes={max_bytes:,}. Use fewer tokens (truncate the "
            "text) or a lower layer, or use attention rollout (method 'rollout'), which "
            "needs only n×n numbers per layer; fewer rows make flow faster, not smaller. "
            "Or raise max_bytes if the memory is there."
        )


def flow_seconds(num_layers: int, n: int, rows: int, *, layer: int = -1) -> float:
    """A rough estimate of :func:`attention_flow_result`'s seconds from the sizes.

    ``rows`` source rows at attention layer ``layer`` over ``n`` tokens: one
    or two layers are closed forms (no solver); from three on, each row costs
    about ``6e-7 · n**2.5`` s (measured on a busy 2-core machine: 0.6 s at
    n = 256, ~20 s at n = 1,024). Certificates often finish a row sooner.
    """
    top = layer % num_layers + 1
    if top <= 2:
        return 0.0
    return float(rows) * _SECONDS_PER_ROW_N25 * float(n) ** 2.5


def flow_memory(num_layers: int, heads: int, n: int, *, layer: int = -1) -> tuple[int, int]:
    """Estimated peak bytes of :func:`attention_flow_result`, and its graph's edge count.

    Counts the float64 copy of the (L, H, n, n) input, a few (L, n, n) work
    arrays, and ~160 bytes per edge of the largest graph solved at once (a
    generous bound: the solver's int64 and float64 copies take ~40).
    """
    top = layer % num_layers + 1
    edges = max(top - 2, 0) * n * n + 2 * n
    needed = 8 * num_layers * heads * n * n + 8 * 4 * num_layers * n * n
    return needed + _BYTES_PER_EDGE * edges, edges


@register(
    "flow",
    needs={"attentions"},
    summary="Max flow from the query row through the attention graph to each input token.",
    reference="Abnar & Zuidema (2020), Quantifying Attention Flow in Transformers.",
    options=(
        layer_option("the sources' layer (negative counts from the end)"),
        Option("normalize", bool, True, "divide the row by its sum (the reference does)"),
        head_fusion_option(),
        Option("residual", bool, True, "add the 0.5·I residual (the paper)"),
        Option(
            "max_bytes",
            int,
            DEFAULT_MAX_BYTES,
            "refuse (TooLargeError) graphs needing more memory",
            **AT_LEAST_ONE,
        ),
    ),
)
def _score_flow(context: ScoreContext) -> tuple[np.ndarray, dict[str, object]]:
    """Flow of the query row; details: ``raw_values``, ``trivial_bound``, ``at_bound``.

    An encoder–decoder query is a distribution w over encoder rows (see
    ScoreContext.query_row), so every row's flow is computed and weighted:
    ``raw_values = w @ F`` and ``trivial_bound = w @ τ``. ``at_bound[j]`` is
    True when every row with nonzero weight is at its bound for token j,
    i.e. exactly when the weighted value equals the weighted bound (each
    term ``F[i, j] ≤ τ[i, j]``, so the sum is at its bound only if each is).
    """
    options = context.options_for("flow")
    weighted = context.query_weights is not None
    attentions = context.attentions
    if attentions is None:  # keep="fused": one head-mean map per layer (head_fusion "mean")
        assert context.fused_attentions is not None  # kept by "fused" (check_keep_for)
        attentions = context.fused_attentions[:, None]
    result = attention_flow_result(
        attentions,
        layer=options["layer"],
        rows=None if weighted else [context.query_index],
        normalize=options["normalize"],
        head_fusion=options["head_fusion"],
        residual=options["residual"],
        max_bytes=options["max_bytes"],
    )
    if weighted:
        rows = np.asarray(context.query_weights) > 0
        return context.query_row(result.values), {
            "at_bound": result.at_bound[rows].all(axis=0),
            "trivial_bound": context.query_row(result.trivial_bound),
            "raw_values": context.query_row(result.raw_values),
        }
    details: dict[str, object] = {
        "at_bound": result.at_bound[0],
        "trivial_bound": result.trivial_bound[0],
        "raw_values": result.raw_values[0],
    }
    return result.values[0], details
