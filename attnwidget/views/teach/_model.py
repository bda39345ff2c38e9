"""One head's queries, keys and values from a real model, for the calculator.

Forward hooks on a layer's query, key and value projections (``nn.Linear``
modules named ``query``/``key``/``value`` as in BERT, RoBERTa and ELECTRA, or
``q_lin``/``k_lin``/``v_lin`` as in DistilBERT) read their outputs during one
forward pass; the head's slice of each is that head's q, k and v. No model
code is forked or patched: the hooks are removed and the modules' training
flags put back in ``finally``, so the model is left exactly as it was.

Scaled dot-product attention over these q and k (Vaswani et al. 2017) is what
such a head computes; models whose scores add anything else (relative
position terms, rotary embeddings applied after the projection, ALiBi) are
refused, because the calculator's steps would not be the model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.errors import InputError, ModelNotSupportedError

#: Names of the three projections, per family: (query, key, value).
PROJECTIONS: tuple[tuple[str, str, str], ...] = (
    ("query", "key", "value"),
    ("q_lin", "k_lin", "v_lin"),
)


@dataclass(frozen=True)
class HeadInputs:
    """What :func:`head_inputs` read: tokens and the head's q, k, v (float64, (n, d_head))."""

    tokens: list[str]
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    causal: bool
    layer: int
    head: int
    heads: int


def attention_modules(model: Any) -> list[tuple[Any, Any, Any]]:
    """Every layer's (query, key, value) projections, in the model's order."""
    import torch

    found: list[tuple[Any, Any, Any]] = []
    for _name, module in model.named_modules():
        for names in PROJECTIONS:
            parts = [getattr(module, n, None) for n in names]
            if all(isinstance(p, torch.nn.Linear) for p in parts):
                query, key, value = parts
                found.append((query, key, value))
                break
    return found


def _heads(model: Any) -> int:
    config = model.config
    for name in ("num_attention_heads", "n_heads", "n_head"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ModelNotSupportedError(f"{type(model).__name__}: its config names no number of heads.")


def _index(value: Any, size: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{what} must be an int, not {value!r}.")
    if not -size <= value < size:
        raise InputError(
            f"{what}={value} is out of range: the model has {size} ({what}s 0..{size - 1})."
        )
    return int(value) % size


def head_inputs(model: Any, tokenizer: Any, text: str, *, layer: int, head: int) -> HeadInputs:
    """Run ``model`` once on ``text`` and return ``layer``'s ``head``'s q, k, v."""
    import torch

    position_type = getattr(model.config, "position_embedding_type", "absolute")
    if position_type not in (None, "absolute"):
        raise ModelNotSupportedError(
            f"{type(model).__name__} uses position_embedding_type={position_type!r}: its scores "
            "add relative-position terms to qᵀk, so the calculator's steps would not be the head's."
        )
    layers = attention_modules(model)
    if not layers:
        names = ", ".join("/".join(p) for p in PROJECTIONS)
        raise ModelNotSupportedError(
            f"{type(model).__name__} has no separate query, key and value projections "
            f"(nn.Linear modules named {names}); AttentionCalculator.from_model reads BERT-style "
            "encoders (BERT, RoBERTa, ELECTRA, DistilBERT)."
        )
    layer = _index(layer, len(layers), "layer")
    heads = _heads(model)
    head = _index(head, heads, "head")
    encoded = tokenizer(text, return_tensors="pt")
    captured: dict[str, torch.Tensor] = {}
    handles = []
    modes = {module: module.training for module in model.modules()}
    try:
        for name, module in zip("qkv", layers[layer], strict=True):

            def hook(_m: Any, _inputs: Any, output: Any, name: str = name) -> None:
                captured[name] = output.detach()

            handles.append(module.register_forward_hook(hook))
        model.eval()  # no dropout on the hidden states the projections read
        with torch.no_grad():
            model(**encoded)
    finally:
        for handle in handles:
            handle.remove()
        for module, training in modes.items():
            module.training = training
    width = captured["q"].shape[-1]
    if width % heads:
        raise ModelNotSupportedError(f"projection width {width} is not divisible by {heads} heads.")
    size = width // heads

    def part(name: str) -> np.ndarray:
        rows = captured[name][0].double().cpu().numpy()
        return rows[:, head * size : (head + 1) * size].copy()

    ids = encoded["input_ids"][0].tolist()
    tokens = [str(t) for t in tokenizer.convert_ids_to_tokens(ids)]
    causal = bool(getattr(model.config, "is_decoder", False))
    return HeadInputs(tokens, part("q"), part("k"), part("v"), causal, layer, head, heads)
