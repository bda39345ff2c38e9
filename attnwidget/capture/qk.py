"""Every head's queries and keys, read with forward hooks, for the neuron view.

The neuron view (Vig 2019) shows what one head computes from one query: the
query vector q_i of the selected token, every key vector k_j, their
element-wise products q_i ∘ k_j, the scores ``s_ij = scale · q_i · k_j`` and
the softmax weights. :func:`query_keys` runs a stock Hugging Face model once
and reads q and k from the outputs of its own query and key projections with
forward hooks: no model code is forked or patched, and the model is left
exactly as it was (hooks removed and training flags restored by
:func:`~attnwidget.capture.capture_ready`, ours removed in ``finally``).

Layouts read (found by the modules' structure, not their class names):

- BERT family (BERT, RoBERTa, XLM-R, ELECTRA): ``self.query`` / ``self.key``
  (``nn.Linear``) under each attention module; absolute positions only
  (relative-position terms would add to the scores);
- GPT-2: the fused ``c_attn`` (``Conv1D``; the first third is q, the second
  k), scaled as the model scales (``scale_attn_weights``,
  ``scale_attn_by_inverse_layer_idx``);
- Llama-style (Llama, Qwen2, Mistral, …): ``q_proj`` / ``k_proj`` with
  grouped-query attention (query head h reads key head ``h // (H / H_kv)``,
  the order of transformers' ``repeat_kv``) and rotary position embeddings
  (Su et al. 2021). The rotation is the model's own: a pre-hook on the
  attention module reads the ``(cos, sin)`` the model hands it (or, in older
  transformers, the output of the module's ``rotary_emb``) and the model's
  own ``apply_rotary_pos_emb`` turns the hooked q and k into the rotated
  ones the scores are made of. Both are kept: rotation is what makes
  ``q · k`` depend on the distance between the tokens.

Anything else (q/k norms, logit soft-capping, other attention layouts) raises
:class:`~attnwidget.errors.ModelNotSupportedError` naming the module.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attnwidget.capture.state import capture_ready
from attnwidget.errors import InputError, ModelNotSupportedError

_SUPPORTED = "BERT-style self.query/self.key, GPT-2's c_attn, Llama-style q_proj/k_proj"


@dataclass(frozen=True)
class QKLayout:
    """Where one attention layer keeps its query and key projections."""

    name: str  # the attention module's path in the model
    kind: str  # "bert", "gpt2" or "llama"
    module: torch.nn.Module  # the module whose forward gets the rotary (cos, sin)
    query: torch.nn.Module  # hooked: its output holds the queries
    key: torch.nn.Module  # hooked: its output holds the keys (may be ``query``)
    key_start: int  # keys are key-output[..., key_start : key_start + kv_heads * head_dim]
    heads: int
    kv_heads: int
    head_dim: int
    scale: float  # scores = scale · q · k
    causal: bool


@dataclass(frozen=True)
class QueryKeys:
    """What :func:`query_keys` read: float32 arrays (L, H, n, d), kv heads repeated.

    ``q`` and ``k`` are the projections' outputs (bias included) before any
    rotation; ``q_rotated`` and ``k_rotated`` are what the scores are made of
    (the same arrays when the model has no rotary embeddings, ``rotary``
    False). ``scale[l]`` multiplies ``q · k`` in layer l; ``causal``: key j is
    masked for query i < j.
    """

    tokens: list[str]
    q: np.ndarray
    k: np.ndarray
    q_rotated: np.ndarray
    k_rotated: np.ndarray
    scale: np.ndarray
    causal: bool
    rotary: bool
    kv_heads: int

    @property
    def num_layers(self) -> int:
        return int(self.q.shape[0])

    @property
    def num_heads(self) -> int:
        return int(self.q.shape[1])

    def scores(self, layer: int) -> np.ndarray:
        """float32 (H, n, n): ``scale · q_i · k_j`` of every head, before the mask."""
        q = self.q_rotated[layer].astype(np.float64)
        k = self.k_rotated[layer].astype(np.float64)
        return (np.einsum("hid,hjd->hij", q, k) * float(self.scale[layer])).astype(np.float32)

    def mask(self) -> np.ndarray:
        """bool (n, n): True where query i may attend to key j."""
        n = len(self.tokens)
        return np.tril(np.ones((n, n), bool)) if self.causal else np.ones((n, n), bool)

    def weights(self, layer: int) -> np.ndarray:
        """float32 (H, n, n): softmax over the keys of the masked scores."""
        scores = np.where(self.mask(), self.scores(layer).astype(np.float64), -np.inf)
        scores = scores - scores.max(axis=-1, keepdims=True)
        exp = np.exp(scores)
        return (exp / exp.sum(axis=-1, keepdims=True)).astype(np.float32)


def _linear(module: Any, *names: str) -> list[torch.nn.Linear] | None:
    found = [getattr(module, name, None) for name in names]
    linear = [m for m in found if isinstance(m, torch.nn.Linear)]
    return linear if len(linear) == len(found) else None


def _is_conv1d(module: Any) -> bool:
    return type(module).__name__ == "Conv1D" and getattr(module, "weight", None) is not None


def _scale(module: Any, head_dim: int) -> float:
    scaling = getattr(module, "scaling", None)
    if isinstance(scaling, (int, float)):
        return float(scaling)
    scale = 1.0
    if getattr(module, "scale_attn_weights", True):  # GPT-2 in older transformers
        scale = head_dim**-0.5
    if getattr(module, "scale_attn_by_inverse_layer_idx", False):
        scale /= float(module.layer_idx + 1)
    return scale


def _layout(name: str, torch_module: torch.nn.Module, config: Any) -> QKLayout | None:
    """The layout of ``torch_module`` if it is one self-attention layer read here."""
    # Each family keeps its sizes and projections as plain attributes, which
    # nn.Module's __getattr__ types as Tensor | Module: read them untyped.
    module: Any = torch_module
    inner: Any = getattr(module, "self", None)
    if not name.endswith("crossattention") and _linear(inner, "query", "key", "value"):
        kind = getattr(inner, "position_embedding_type", None) or getattr(
            config, "position_embedding_type", "absolute"
        )
        if kind != "absolute":
            raise ModelNotSupportedError(
                f"{name} uses position_embedding_type={kind!r}: its scores add relative-position "
                "terms to q·k, so the neuron view's scores would not be the head's."
            )
        heads, size = int(inner.num_attention_heads), int(inner.attention_head_size)
        causal = bool(getattr(inner, "is_causal", False) or getattr(config, "is_decoder", False))
        return QKLayout(
            name,
            "bert",
            inner,
            inner.query,
            inner.key,
            0,
            heads,
            heads,
            size,
            _scale(inner, size),
            causal,
        )
    if _is_conv1d(getattr(module, "c_attn", None)) and _is_conv1d(getattr(module, "c_proj", None)):
        if getattr(module, "is_cross_attention", False):
            return None
        heads, width = int(module.num_heads), int(module.split_size)
        size = width // heads
        return QKLayout(
            name, "gpt2", module, module.c_attn, module.c_attn, width, heads, heads, size,
            _scale(module, size), True,
        )  # fmt: skip
    layers = _linear(module, "q_proj", "k_proj", "v_proj", "o_proj")
    if layers:
        for part in ("q_norm", "k_norm"):
            if getattr(module, part, None) is not None:
                raise ModelNotSupportedError(
                    f"{name} normalises its queries and keys ({part}) after the projections; "
                    f"the neuron view reads {_SUPPORTED} without such norms."
                )
        if getattr(config, "attn_logit_softcapping", None):
            raise ModelNotSupportedError(
                f"{name}: the model soft-caps its attention logits, so its scores are not "
                "scale · q·k; the neuron view cannot show them."
            )
        head_dim = int(getattr(module, "head_dim", 0) or 0)
        if head_dim <= 0:
            return None
        heads = layers[0].out_features // head_dim
        kv_heads = layers[1].out_features // head_dim
        if kv_heads <= 0 or heads % kv_heads:
            return None
        causal = bool(getattr(module, "is_causal", True))
        return QKLayout(
            name, "llama", module, layers[0], layers[1], 0, heads, kv_heads, head_dim,
            _scale(module, head_dim), causal,
        )  # fmt: skip
    return None


def qk_layouts(model: torch.nn.Module) -> list[QKLayout]:
    """One :class:`QKLayout` per self-attention layer, in the model's order.

    Raises :class:`ModelNotSupportedError` naming the first attention module
    whose layout is not read.
    """
    layouts: list[QKLayout] = []
    unread: list[str] = []
    for name, module in model.named_modules():
        if any(name.startswith(f"{known.name}.") for known in layouts):
            continue
        layout = _layout(name, module, model.config)
        if layout is not None:
            layouts.append(layout)
        elif type(module).__name__.endswith("Attention"):
            unread.append(f"{name} ({type(module).__name__})")
    if layouts and not unread:
        return layouts
    where = unread[0] if unread else f"{type(model).__name__} (no attention layer found)"
    raise ModelNotSupportedError(
        f"the neuron view needs each head's queries and keys, but the query and key "
        f"projections of {where} cannot be read (layouts read: {_SUPPORTED})."
    )


def _heads_first(rows: torch.Tensor, start: int, heads: int, size: int) -> torch.Tensor:
    """(1, n, ·) projection output → (1, heads, n, size)."""
    part = rows[..., start : start + heads * size]
    return part.reshape(rows.shape[0], rows.shape[1], heads, size).transpose(1, 2)


class _Recorder:
    """Hooks on every layer's projections (and rotary inputs) for one forward pass."""

    def __init__(self, layouts: list[QKLayout]) -> None:
        self.layouts = layouts
        self.q: list[torch.Tensor | None] = [None] * len(layouts)
        self.k: list[torch.Tensor | None] = [None] * len(layouts)
        self.rotary: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(layouts)
        self.handles: list[Any] = []

    def __enter__(self) -> _Recorder:
        for index, layout in enumerate(self.layouts):
            self.handles.append(layout.query.register_forward_hook(self._projection(index)))
            if layout.kind == "llama":
                self.handles.append(
                    layout.module.register_forward_pre_hook(self._rotary(index), with_kwargs=True)
                )
                inner = getattr(layout.module, "rotary_emb", None)  # transformers < 4.48
                if isinstance(inner, torch.nn.Module):
                    self.handles.append(inner.register_forward_hook(self._inner_rotary(index)))
            if layout.key is not layout.query:
                self.handles.append(layout.key.register_forward_hook(self._projection(index, True)))
        return self

    def __exit__(self, *_exc: Any) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()

    def _projection(self, index: int, key_only: bool = False):
        layout = self.layouts[index]

        def record(_module: Any, _inputs: Any, output: torch.Tensor) -> None:
            out = output.detach()
            if not key_only:
                self.q[index] = _heads_first(out, 0, layout.heads, layout.head_dim)
            if key_only or layout.key is layout.query:
                start = layout.key_start
                self.k[index] = _heads_first(out, start, layout.kv_heads, layout.head_dim)

        return record

    def _rotary(self, index: int):
        def record(_module: Any, args: tuple, kwargs: dict) -> None:
            found = kwargs.get("position_embeddings")
            if found is None and len(args) > 1 and isinstance(args[1], tuple):
                found = args[1]
            if found is not None:
                self.rotary[index] = (found[0].detach(), found[1].detach())

        return record

    def _inner_rotary(self, index: int):
        def record(_module: Any, _inputs: Any, output: Any) -> None:
            if self.rotary[index] is None and isinstance(output, tuple) and len(output) == 2:
                self.rotary[index] = (output[0].detach(), output[1].detach())

        return record


def _rotate(layout: QKLayout, q: torch.Tensor, k: torch.Tensor, cos_sin: Any):
    """q, k rotated by the model's own ``apply_rotary_pos_emb``."""
    apply = getattr(sys.modules.get(type(layout.module).__module__), "apply_rotary_pos_emb", None)
    if cos_sin is None or apply is None:
        raise ModelNotSupportedError(
            f"{layout.name} ({type(layout.module).__name__}): its rotary position embeddings "
            "could not be read (no (cos, sin) reached the attention module, or its modelling "
            "module has no apply_rotary_pos_emb)."
        )
    cos, sin = cos_sin
    try:
        return apply(q, k, cos, sin)
    except TypeError:  # transformers < 4.48: apply_rotary_pos_emb(q, k, cos, sin, position_ids)
        n = q.shape[-2]
        return apply(q, k, cos, sin, torch.arange(n, device=q.device)[None])


def query_keys(model: Any, tokenizer: Any, text: str) -> QueryKeys:
    """Run ``model`` once on ``text`` and return every head's q and k.

    Raises:
        InputError: ``text`` is not a non-empty string.
        ModelNotSupportedError: an attention layout that is not read (see the
            module docstring), or a sliding window shorter than the text.
    """
    if not isinstance(text, str) or not text:
        raise InputError(f"text must be a non-empty string, not {text!r}.")
    layouts = qk_layouts(model)
    encoded = tokenizer(text, return_tensors="pt")
    ids = encoded["input_ids"]
    n = int(ids.shape[1])
    window = getattr(model.config, "sliding_window", None)
    if layouts[0].kind == "llama" and isinstance(window, int) and 0 < window < n:
        raise ModelNotSupportedError(
            f"the text has {n} tokens, more than the model's sliding window of {window}: "
            "its masks are not plain causal ones; use a shorter text."
        )
    device = next(model.parameters()).device
    takes = inspect.signature(model.forward).parameters
    inputs = {k: v.to(device) for k, v in encoded.items() if k in takes or k == "input_ids"}
    with capture_ready(model), torch.no_grad(), _Recorder(layouts) as recorder:
        model(**inputs)
    qs: list[np.ndarray] = []
    ks: list[np.ndarray] = []
    q_rot: list[np.ndarray] = []
    k_rot: list[np.ndarray] = []
    for index, layout in enumerate(layouts):
        q, k = recorder.q[index], recorder.k[index]
        if q is None or k is None:
            raise ModelNotSupportedError(
                f"the query or key projection of {layout.name} did not run in the forward pass."
            )
        rq, rk = q, k
        if layout.kind == "llama":
            rq, rk = _rotate(layout, q, k, recorder.rotary[index])
        repeat = layout.heads // layout.kv_heads
        for out, value in ((qs, q), (ks, k), (q_rot, rq), (k_rot, rk)):
            if value.shape[1] != layout.heads:
                value = value.repeat_interleave(repeat, dim=1)
            out.append(value[0].float().cpu().numpy())
    tokens = [str(t) for t in tokenizer.convert_ids_to_tokens(ids[0].tolist())]
    rotary = layouts[0].kind == "llama"
    return QueryKeys(
        tokens=tokens,
        q=np.stack(qs),
        k=np.stack(ks),
        q_rotated=np.stack(q_rot),
        k_rotated=np.stack(k_rot),
        scale=np.array([layout.scale for layout in layouts], np.float64),
        causal=all(layout.causal for layout in layouts),
        rotary=rotary,
        kv_heads=layouts[0].kv_heads,
    )
