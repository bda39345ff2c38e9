"""Long inputs with fast attention: recompute each layer's attention in row blocks.

With ``keep="fused"`` or ``"rows"`` nothing needs all of a layer's (H, n, n)
attention at once, so the model can run with scaled-dot-product attention
(``attn_implementation="sdpa"``: fused kernels that never materialise the
softmax, flash attention on GPUs) instead of eager attention. The hooks of
:mod:`.qk` read each layer's queries and keys (rotated as the model rotates
them) and a forward hook its values; a tensor hook on the input of the output
projection receives ``dO``, the target's gradient with respect to the
attention output of every head, during the backward pass. There, block by
block of query rows, ``A = softmax(scale·QKᵀ + causal mask)`` and
``∂y/∂A = dO·Vᵀ`` (since ``O = A·V``) are recomputed and reduced exactly as
:class:`~.keep.LayerReducer` reduces the eager attention.

Used for causal language models with Llama-style attention (q_proj, k_proj,
v_proj, o_proj; rotary positions; grouped-query attention) and a plain causal
mask; anything else keeps the eager path (:func:`recompute_layouts`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from attnwidget.capture.keep import LayerReducer, row_spans
from attnwidget.capture.kinds import CAUSAL_LM
from attnwidget.capture.qk import QKLayout, _heads_first, _Recorder, _rotate, qk_layouts
from attnwidget.capture.state import all_configs
from attnwidget.errors import ModelNotSupportedError

#: False sends every capture through eager attention (tests compare the two paths).
ENABLED = True


def recompute_layouts(model: Any, kind: str, n: int) -> list[QKLayout] | None:
    """The layers' layouts when this path reproduces the model's attention, else None."""
    if kind != CAUSAL_LM or not getattr(model, "_supports_sdpa", False):
        return None
    try:
        layouts = qk_layouts(model)
    except ModelNotSupportedError:
        return None
    config = model.config
    window = getattr(config, "sliding_window", None)
    if isinstance(window, int) and 0 < window < n:
        return None
    ok = all(
        layout.kind == "llama"
        and layout.causal
        and getattr(layout.module, "o_proj", None) is not None
        and getattr(layout.module, "v_proj", None) is not None
        for layout in layouts
    )
    return layouts if ok else None


@contextmanager
def sdpa(model: Any) -> Iterator[None]:
    """Run the body with scaled-dot-product attention; the previous setting restored."""
    configs = [c for c in all_configs(model) if hasattr(c, "_attn_implementation_internal")]
    before = [c.__dict__.get("_attn_implementation_internal") for c in configs]
    try:
        for config in configs:
            config._attn_implementation_internal = "sdpa"
        yield
    finally:
        for config, value in zip(configs, before, strict=True):
            config._attn_implementation_internal = value


class _QKVRecorder(_Recorder):
    """The queries and keys of :mod:`.qk`, plus each layer's values and its dO hook."""

    def __init__(self, layouts: list[QKLayout], reducer: RecomputeReducer) -> None:
        super().__init__(layouts)
        self.v: list[torch.Tensor | None] = [None] * len(layouts)
        self.reducer = reducer

    def __enter__(self) -> _QKVRecorder:
        super().__enter__()
        for index, layout in enumerate(self.layouts):
            module: Any = layout.module  # a Llama-style attention: v_proj, o_proj
            self.handles.append(module.v_proj.register_forward_hook(self._values(index)))
            self.handles.append(module.o_proj.register_forward_pre_hook(self._output(index)))
        return self

    def _values(self, index: int) -> Any:
        layout = self.layouts[index]

        def record(_module: Any, _inputs: Any, output: torch.Tensor) -> None:
            self.v[index] = _heads_first(output.detach(), 0, layout.kv_heads, layout.head_dim)

        return record

    def _output(self, index: int) -> Any:
        def record(_module: Any, args: tuple) -> None:
            heads_output = args[0]
            self.reducer.hold(index, self)
            if heads_output.requires_grad:
                heads_output.register_hook(self.reducer._hook(index))

        return record


class RecomputeReducer(LayerReducer):
    """:class:`~.keep.LayerReducer` fed by recomputed attention (see the module docstring).

    Use :meth:`recording` around the forward pass (the model runs with sdpa),
    :meth:`~.keep.LayerReducer.set_starts` once the queries are known, then
    the reducer itself around the backward pass.
    """

    _scratch_grads = True  # dA blocks are made here, so they may be overwritten

    def __init__(self, keep: str, layouts: list[QKLayout], batch: int, n: int) -> None:
        shape = (batch, len(layouts), layouts[0].heads, n)
        super().__init__(keep, (), None, shape=shape)
        self.layouts = layouts

    @contextmanager
    def recording(self, model: Any) -> Iterator[None]:
        with sdpa(model), _QKVRecorder(self.layouts, self):
            yield

    def hold(self, index: int, recorder: _QKVRecorder) -> None:
        """Take layer ``index``'s q, k, v and rotary (cos, sin) from the recorder."""
        layout = self.layouts[index]
        q, k, v = recorder.q[index], recorder.k[index], recorder.v[index]
        if q is None or k is None or v is None:
            raise ModelNotSupportedError(
                f"the q, k or v projection of {layout.name} did not run before its output "
                "projection; its attention cannot be recomputed."
            )
        q, k = _rotate(layout, q, k, recorder.rotary[index])
        recorder.q[index] = recorder.k[index] = recorder.v[index] = None
        self._held[index] = (q, k, v)

    def _blocks(self, held: Any, grad: torch.Tensor | None) -> Iterator[tuple]:
        q, k, v = (t.float() for t in held)
        layout = self.layouts[self._next]
        repeat = layout.heads // layout.kv_heads
        if repeat > 1:  # grouped-query attention: query head h reads kv head h // repeat
            k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        batch, heads, n, size = q.shape
        if grad is None:
            d_out = torch.zeros_like(q)
        else:  # o_proj's input is (B, n, H·d), heads major
            d_out = grad.float().reshape(batch, n, heads, size).transpose(1, 2)
        q = q * layout.scale
        spans = row_spans(batch, heads, n)
        size = spans[0][1] - spans[0][0]
        future = torch.ones(size, size, dtype=torch.bool, device=q.device).triu_(1)
        for start, stop in spans:
            # Rows start…stop-1 attend to keys 0…stop-1 only (causal): later
            # columns are 0 and not computed; the diagonal block is masked.
            scores = q[:, :, start:stop] @ k[:, :, :stop].transpose(-1, -2)
            block = future[: stop - start, : stop - start]
            scores[..., start:stop].masked_fill_(block, float("-inf"))
            weights = torch.softmax(scores, dim=-1)
            yield start, stop, weights, d_out[:, :, start:stop] @ v[:, :, :stop].transpose(-1, -2)
