"""Each head's value vectors and output-projection slice, read with forward hooks.

Effective attention (Brunner et al., 2020) and norm-based attention (Kobayashi
et al., 2020) need, for every layer l and head h, the value matrix
``T = X W_V + b_V`` of that head (n × d_v, the value projection's own output,
bias included) and the head's slice of the output projection ``W_O^h``
(d_v × d, the rows of ``W_O`` that multiply that head's output; the bias of
``W_O`` is not part of it). :class:`ValueRecorder` hooks the value
projections during the capture's one forward pass (nothing else runs and the
hooks are removed on exit); :func:`output_weights` copies the ``W_O`` slices.

Layouts read (found by the modules' structure, not their class names):

- BERT family (BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA): ``self.value`` and
  ``output.dense`` (``nn.Linear``) under the attention module;
- DistilBERT: ``v_lin`` and ``out_lin``;
- GPT-2: the fused ``c_attn`` (its last third is the value) and ``c_proj``
  (``Conv1D``, ``x @ W`` orientation);
- Llama-style (Llama, Qwen2, Mistral, Gemma, …): ``v_proj`` and ``o_proj``,
  with grouped-query attention: query head h reads key/value head
  ``h // (H / H_kv)``, the order of transformers' ``repeat_kv``.

Any other layout raises :class:`ModelNotSupportedError` naming the module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch

from attnwidget.errors import ModelNotSupportedError

_SUPPORTED = (
    "BERT-style self.value + output.dense, DistilBERT's v_lin + out_lin, GPT-2's "
    "c_attn + c_proj, Llama-style v_proj + o_proj"
)


@dataclass(frozen=True)
class ValueLayout:
    """Where one attention layer keeps its value and output projections."""

    name: str  # the attention module's path in the model
    value: torch.nn.Module  # hooked: its output holds the values (bias included)
    value_start: int  # the values are output[..., value_start:value_start + kv_heads * head_dim]
    output: torch.nn.Module  # the output projection W_O
    output_is_linear: bool  # nn.Linear (weight is out × in) rather than Conv1D (in × out)
    heads: int
    kv_heads: int
    head_dim: int

    def head_values(self, output: torch.Tensor) -> torch.Tensor:
        """(B, n, ·) value-projection output → (B, H, n, d_v), kv heads repeated."""
        width = self.kv_heads * self.head_dim
        values = output[..., self.value_start : self.value_start + width]
        batch, n = values.shape[:2]
        values = values.reshape(batch, n, self.kv_heads, self.head_dim).transpose(1, 2)
        return values.repeat_interleave(self.heads // self.kv_heads, dim=1)

    def output_slices(self) -> np.ndarray:
        """float32 (H, d_v, d): each head's rows of W_O in ``x @ W`` orientation."""
        # nn.Module.__getattr__ is typed Tensor | Module; a projection's weight is a Parameter.
        weight = cast(torch.Tensor, self.output.weight).detach().float().cpu()
        weight = weight.T if self.output_is_linear else weight  # (H·d_v, d)
        if weight.shape[0] != self.heads * self.head_dim:
            raise ModelNotSupportedError(
                f"the output projection of {self.name} takes {weight.shape[0]} inputs, not "
                f"{self.heads} heads × {self.head_dim}; its layout cannot be read."
            )
        return weight.reshape(self.heads, self.head_dim, -1).numpy().copy()


def _linear(module: Any, *names: str) -> list[torch.nn.Linear] | None:
    found = [getattr(module, name, None) for name in names]
    linear = [m for m in found if isinstance(m, torch.nn.Linear)]
    return linear if len(linear) == len(found) else None


def _is_conv1d(module: Any) -> bool:
    return type(module).__name__ == "Conv1D" and getattr(module, "weight", None) is not None


def _layout(name: str, torch_module: torch.nn.Module) -> ValueLayout | None:
    """The layout of ``torch_module`` if it is one attention layer this module can read."""
    # Each family keeps its sizes and projections as plain attributes, which
    # nn.Module's __getattr__ types as Tensor | Module: read them untyped.
    module: Any = torch_module
    inner: Any = getattr(module, "self", None)
    out: Any = getattr(module, "output", None)
    if (
        not name.endswith("crossattention")
        and _linear(inner, "query", "key", "value")
        and _linear(out, "dense")
    ):
        heads = int(inner.num_attention_heads)
        return ValueLayout(
            name, inner.value, 0, out.dense, True, heads, heads, int(inner.attention_head_size)
        )
    if _linear(module, "q_lin", "k_lin", "v_lin", "out_lin"):
        heads = int(module.n_heads)
        return ValueLayout(
            name, module.v_lin, 0, module.out_lin, True, heads, heads, module.dim // heads
        )
    if _is_conv1d(getattr(module, "c_attn", None)) and _is_conv1d(getattr(module, "c_proj", None)):
        if getattr(module, "is_cross_attention", False):
            return None
        heads, size = int(module.num_heads), int(module.split_size)
        return ValueLayout(
            name, module.c_attn, 2 * size, module.c_proj, False, heads, heads, size // heads
        )
    layers = _linear(module, "q_proj", "k_proj", "v_proj", "o_proj")
    if layers and getattr(module, "v_norm", None) is None:
        head_dim = int(getattr(module, "head_dim", 0) or 0)
        if head_dim <= 0:
            return None
        heads = layers[3].in_features // head_dim
        kv_heads = layers[2].out_features // head_dim
        if kv_heads <= 0 or heads % kv_heads:
            return None
        return ValueLayout(name, layers[2], 0, layers[3], True, heads, kv_heads, head_dim)
    return None


def value_layouts(model: torch.nn.Module, num_layers: int | None = None) -> list[ValueLayout]:
    """One :class:`ValueLayout` per self-attention layer, in the model's order.

    Raises :class:`ModelNotSupportedError` naming the first attention module
    whose layout is not read, or when the layouts found do not match the
    ``num_layers`` attention maps the model returns (not checked when None).
    """
    layouts, unread = [], []
    for name, module in model.named_modules():
        layout = _layout(name, module)
        if layout is not None:
            layouts.append(layout)
        elif type(module).__name__.endswith("Attention") and not any(
            name.startswith(f"{known.name}.") for known in layouts
        ):
            unread.append(f"{name} ({type(module).__name__})")
    if layouts and not unread and num_layers in (None, len(layouts)):
        return layouts
    where = unread[0] if unread else f"{len(layouts)} attention layers for {num_layers} maps"
    raise ModelNotSupportedError(
        f"effective_attention and attention_norm need each head's value vectors, but the "
        f"value and output projections of {where} cannot be read (layouts read: "
        f"{_SUPPORTED}); request other methods for {type(model).__name__}."
    )


class ValueRecorder:
    """Forward hooks recording every head's values during one forward pass.

    ``with ValueRecorder(layouts) as recorder: model(...)`` then
    :meth:`head_values` is float32 (B, L, H, n, d_v). The hooks are removed
    on exit, also when the body raises.
    """

    def __init__(self, layouts: list[ValueLayout]) -> None:
        self.layouts = layouts
        self._values: list[torch.Tensor | None] = [None] * len(layouts)
        self._handles: list[Any] = []

    def _hook(self, index: int):
        layout = self.layouts[index]

        def record(_module: Any, _inputs: Any, output: torch.Tensor) -> None:
            self._values[index] = layout.head_values(output.detach())

        return record

    def __enter__(self) -> ValueRecorder:
        for index, layout in enumerate(self.layouts):
            self._handles.append(layout.value.register_forward_hook(self._hook(index)))
        return self

    def __exit__(self, *_exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def head_values(self) -> np.ndarray:
        pairs = zip(self.layouts, self._values, strict=True)
        missing = [layout.name for layout, value in pairs if value is None]
        if missing:
            raise ModelNotSupportedError(
                f"the value projection of {missing[0]} did not run in the forward pass; "
                "its values cannot be read."
            )
        values = [v.float().cpu().numpy() for v in self._values]  # type: ignore[union-attr]
        return np.stack(values, axis=1)


def output_weights(layouts: list[ValueLayout]) -> np.ndarray:
    """float32 (L, H, d_v, d): every head's slice of its layer's output projection."""
    return np.stack([layout.output_slices() for layout in layouts])
