"""What of the attention a capture keeps (``keep``), reduced inside backward hooks.

A full capture keeps every layer's and head's attention and its gradient,
2·L·H·n² floats: 4.3 GB in float32 for a 4-layer, 8-head model at n = 4,096
and 137 GB for a 32-layer, 32-head 7B model. ``keep`` chooses less:

* ``"all"``: the (L, H, n, n) attention and gradient (views of single heads,
  LRP-style and value-based methods need them);
* ``"fused"``: the head mean of each layer (L, n, n), what rollout, flow and
  the flow view read, plus everything ``"rows"`` keeps;
* ``"rows"``: only rows: each layer's and head's query row (L, H, n) (raw
  attention), the rollout row for every top layer (Abnar & Zuidema 2020) and
  the gradient-weighted relevance row for every start layer (Chefer, Gur &
  Wolf 2021), propagated from the query down through the layers.

The reductions run in a tensor hook on each layer's attention probabilities
(``Tensor.register_hook`` receives the attention's gradient during the
backward pass): the hook reads the layer's attention and gradient, reduces
them and drops its reference, so the full (L, H, n, n) tensor never exists as
numpy at once. The backward pass reaches the layers from the last to the
first, which is exactly the order in which a row vector is propagated
through the products ``Â_L ⋯ Â_1`` (rollout) and ``(I + Ā_L) ⋯ (I + Ā_1)``
(gradient-weighted attention): ``v ← v·M_l``, n² work per layer instead of n³.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from attnwidget.errors import InputError, NonFiniteError

KEEPS: tuple[str, ...] = ("rows", "fused", "all")  # smallest first
#: keep=None keeps "all" while L·H·n² is at most this many floats (256 MiB in
#: float32 per (L, H, n, n) array: BERT-base at 512 tokens stays "all").
DEFAULT_KEEP_LIMIT = 2**26


def check_keep(keep: Any) -> str | None:
    """``keep`` as given (None or one of :data:`KEEPS`), or an InputError."""
    if keep is None or (isinstance(keep, str) and keep in KEEPS):
        return keep
    raise InputError(
        f"keep={keep!r} is not one of 'all', 'fused', 'rows' (or None for the default: "
        f"'all' while layers·heads·n² ≤ {DEFAULT_KEEP_LIMIT:,} floats, else the smallest "
        "mode the requested methods work from)."
    )


def default_keep(layers: int, heads: int, n: int, smallest: str) -> str:
    """The keep used for ``keep=None``, by size (limit: :data:`DEFAULT_KEEP_LIMIT` floats).

    "all" while ``layers·heads·n²`` is within the limit (2²⁶ floats, 256 MiB
    in float32), or when a requested method needs it (``smallest``, the
    smallest mode every requested method works from, see
    :func:`attnwidget.methods.keep.smallest_keep`); else "fused" while the
    head means, ``layers·n²``, are within it (the attention-matrix and flow
    views still work); else ``smallest``.
    """
    if layers * heads * n * n <= DEFAULT_KEEP_LIMIT or smallest == "all":
        return "all"
    return "fused" if layers * n * n <= DEFAULT_KEEP_LIMIT else smallest


#: Rows reduced at once: about this many floats per (B, H, rows, n) temporary.
CHUNK_FLOATS = 2**23


def row_spans(batch: int, heads: int, n: int) -> list[tuple[int, int]]:
    """Row ranges [start, stop) so that a (batch, heads, rows, n) block stays small."""
    size = max(1, CHUNK_FLOATS // max(1, batch * heads * n))
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def _head_mean(blocks: torch.Tensor) -> torch.Tensor:
    """(B, H, c, w) → (B, c, w), the mean over heads as one matrix product.

    A (1, H) @ (H, c·w) product per example: torch's CPU reduction over a
    middle axis is several times slower than this for the sizes seen here.
    """
    batch, heads = blocks.shape[:2]
    weights = torch.full((1, heads), 1.0 / heads, dtype=blocks.dtype, device=blocks.device)
    flat = blocks.reshape(batch, heads, -1)
    return (weights @ flat).reshape(batch, *blocks.shape[2:])


class LayerReducer:
    """Reduce each layer's (B, H, n, n) attention and its gradient as backward reaches it.

    ``attentions`` are the model's post-softmax maps (still in the autograd
    graph); ``starts`` (B, n) is each example's query as a distribution over
    positions (one-hot at the query row; an encoder–decoder query's
    cross-attention weights). Use as a context manager around the backward
    pass; :meth:`results` gives numpy arrays per example afterwards.
    Subclasses (:class:`attnwidget.capture.recompute.RecomputeReducer`) hold
    something else per layer and override :meth:`_blocks`.
    """

    def __init__(
        self,
        keep: str,
        attentions: Sequence[torch.Tensor],
        starts: torch.Tensor | None,
        *,
        shape: tuple[int, int, int, int] | None = None,
    ):
        self.keep = keep
        batch, self.layers, heads, n = shape or (
            attentions[0].shape[0],
            len(attentions),
            *attentions[0].shape[1:3],
        )
        self.heads, self.n = heads, n
        self._held: list[Any] = [a.detach() for a in attentions] or [None] * self.layers
        self._parked: dict[int, torch.Tensor | None] = {}
        self._next = self.layers - 1
        self._bad: str | None = None
        self._handles: list[Any] = []
        self._attentions = attentions
        self.full: list[np.ndarray | None] = [None] * self.layers
        self.full_grads: list[np.ndarray | None] = [None] * self.layers
        shape2 = (batch, self.layers)
        self.fused = np.zeros((*shape2, n, n), dtype=np.float32) if keep == "fused" else None
        self.rows = np.zeros((*shape2, heads, n), dtype=np.float32)
        self.grad_rows = np.zeros((*shape2, n), dtype=np.float32)
        self.rollout_rows = np.zeros((batch, 2, self.layers, n), dtype=np.float32)
        self._rollout = torch.zeros(batch, 2, self.layers, n, dtype=torch.float32)
        if starts is not None:
            self.set_starts(starts)

    #: True when :meth:`_blocks` yields gradients the reducer may overwrite.
    _scratch_grads = False

    def set_starts(self, starts: torch.Tensor) -> None:
        """(B, n) the queries, needed before the backward pass reaches the first layer."""
        self.starts = starts.detach().float()
        self._grad_vector = self.starts.clone()

    def __enter__(self) -> LayerReducer:
        for layer, attention in enumerate(self._attentions):
            if attention.requires_grad:
                self._handles.append(attention.register_hook(self._hook(layer)))
        self._attentions = ()  # the hooks and _held are the only references now
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if exc[0] is None:
            # Layers the gradient never reached (no path to the target) get a zero
            # gradient; then every layer has been reduced, in order.
            while self._next >= 0:
                self._parked.setdefault(self._next, None)
                self._drain()
        self._held = []
        self._parked = {}

    def _hook(self, layer: int) -> Any:
        def hook(grad: torch.Tensor) -> None:
            self._parked[layer] = grad.detach()
            self._drain()

        return hook

    def _drain(self) -> None:
        """Reduce parked layers while the next one (from the top) is available."""
        while self._next in self._parked:
            layer = self._next
            grad = self._parked.pop(layer)
            held = self._held[layer]
            self._held[layer] = None
            with torch.no_grad():
                self._reduce(layer, held, grad)
            self._next -= 1

    def _blocks(self, held: Any, grad: torch.Tensor | None) -> Any:
        """Yield ``(start, stop, A[:, :, start:stop, :w], dA[…])`` in float32.

        The columns from w on are all zero in these rows (a causal model's
        future keys); here w = n.
        """
        a = held.float()
        g = torch.zeros_like(a) if grad is None else grad.float()
        for start, stop in row_spans(a.shape[0], a.shape[1], a.shape[-1]):
            yield start, stop, a[:, :, start:stop], g[:, :, start:stop]

    def _note(self, a: torch.Tensor, g: torch.Tensor) -> None:
        if self._bad is None and not bool(torch.isfinite(a).all()):
            self._bad = "attention"
        if self._bad is None and not bool(torch.isfinite(g).all()):
            self._bad = "attention gradient"

    def _reduce(self, layer: int, held: Any, grad: torch.Tensor | None) -> None:
        if self.keep == "all":
            a = held.float()
            g = torch.zeros_like(a) if grad is None else grad.float()
            self._note(a, g)
            self.full[layer] = a.cpu().numpy()
            self.full_grads[layer] = g.cpu().numpy()
            return
        starts = self.starts
        rollout = self._rollout.to(starts.device)
        rollout[:, :, layer] = starts[:, None, :]
        tops = rollout[:, :, layer:]  # (B, 2, K, n): U[k] for every top layer k ≥ layer
        stepped = torch.zeros_like(tops)
        rows = torch.zeros(starts.shape[0], self.heads, self.n, device=starts.device)
        gained = torch.zeros_like(starts)
        for start, stop, a, g in self._blocks(held, grad):
            span, width = slice(start, stop), a.shape[-1]
            # Query rows of every head: starts @ A[h]  (B, H, n).
            if bool(starts[:, span].any()):  # one block for a one-hot query
                rows[..., :width] += (starts[:, None, None, span] @ a).squeeze(2)
            fused = _head_mean(a)  # (B, c, w)
            if self.fused is not None:
                self.fused[:, layer, span, :width] = fused.cpu().numpy()
            self._rollout_block(tops, stepped, fused, span)
            # Ā rows: mean over heads of (∂y/∂A ⊙ A)⁺ (Chefer et al. 2021), (B, c, w).
            product = g.mul_(a) if self._scratch_grads else torch.mul(g, a)
            weighted = _head_mean(product.clamp_(min=0.0))
            gained[:, :width] += (self._grad_vector[:, None, span] @ weighted).squeeze(1)
        # NaN/inf anywhere in A or dA reaches these sums (a matrix product with a
        # NaN is NaN even where it is multiplied by 0), so they are what is checked.
        self._note(rows, stepped)
        self._note(stepped, gained)
        self.rows[:, layer] = rows.cpu().numpy()
        rollout[:, :, layer:] = stepped
        self._rollout = rollout
        self.rollout_rows[:, :, layer:] = stepped.cpu().numpy()
        # Chefer et al.: R ← R + Ā_l·R, read from the query: v ← v·(I + Ā_l).
        self._grad_vector = self._grad_vector + gained
        self.grad_rows[:, layer] = self._grad_vector.cpu().numpy()

    @staticmethod
    def _rollout_block(
        tops: torch.Tensor, stepped: torch.Tensor, fused: torch.Tensor, span: slice
    ) -> None:
        """Add rows ``span`` of ``U·Â`` to ``stepped`` (Abnar & Zuidema 2020).

        ``Â = D⁻¹(0.5·W + 0.5·I)`` with D its row sums (residual, index 0) or
        ``D⁻¹W`` (no residual, index 1), as :func:`~attnwidget.methods.graph.add_residual`,
        applied without forming the n×n matrix: ``u·Â = 0.5·(u/d)·W + 0.5·(u/d)``;
        a row of W is only needed for the entries of u it multiplies.
        """
        sums, width = fused.sum(dim=-1), fused.shape[-1]  # (B, c); columns ≥ w are 0
        for index, residual in enumerate((True, False)):
            d = (0.5 * sums + 0.5 if residual else sums)[:, None, :]
            u = tops[:, index, :, span]  # (B, K, c)
            scaled = torch.where(d > 0, u / d.clamp(min=1e-30), 0.0)
            if residual:
                stepped[:, index, :, :width] += 0.5 * (scaled @ fused)
                stepped[:, index, :, span] += 0.5 * scaled
            else:
                stepped[:, index, :, :width] += scaled @ fused

    def check_finite(self) -> None:
        if self._bad is not None:
            raise NonFiniteError(
                f"the captured {self._bad} contains NaN/inf; run the model in float32 "
                "(half precision can overflow) and check its weights."
            )

    def results(self, b: int) -> dict[str, Any]:
        """Example ``b``'s kept arrays, as :class:`~.record.AttentionRecord` fields."""
        if self.keep == "all":
            return {
                "attentions": np.stack([f[b] for f in self.full], axis=0),  # type: ignore[index]
                "attention_grads": np.stack([f[b] for f in self.full_grads], axis=0),  # type: ignore[index]
            }
        return {
            "attentions": None,
            "attention_grads": None,
            "fused_attentions": None if self.fused is None else self.fused[b],
            "attention_rows": self.rows[b],
            "grad_attention_rows": self.grad_rows[b],
            "rollout_rows": self.rollout_rows[b],
        }
