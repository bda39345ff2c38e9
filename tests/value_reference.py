"""An independent reading of each head's values, for the effective-attention and
attention-norm tests: from the model's own weights and its hidden states
(``output_hidden_states``), with explicit loops, no attnwidget capture code.

For layer l the attention reads ``X = norm(hidden_states[l])`` (pre-LN models:
GPT-2's ``ln_1``, Llama's ``input_layernorm``; post-LN BERT family: the hidden
state itself). A head's values are ``X W_V + b_V`` restricted to its columns;
``f_h(x) = v W_O^h`` with ``W_O^h`` the head's rows of the output projection.
"""

from __future__ import annotations

import numpy as np
import torch

import attnwidget
from attnwidget.capture import capture_ready

#: Families the value capture reads, and a tiny model of each (tests/tiny_models.py).
FAMILIES = (
    "bert-cls",
    "roberta-cls",
    "xlm-roberta-cls",
    "electra-cls",
    "distilbert-cls",
    "gpt2-lm",
    "llama-lm",
    "qwen2-lm",  # Llama-style with a value bias
)
#: A text long enough that n > d_v = 8 (the tiny models' head size).
LONG = "the cat sat on the mat and the dog ran to the park today"


def _np(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().double().cpu().numpy()


def model_run(model, input_ids) -> tuple[np.ndarray, list[torch.Tensor]]:
    """(L, H, n, n) attention and the hidden states of one input, eager attention."""
    ids = torch.tensor([list(input_ids)])
    with capture_ready(model), torch.no_grad():
        out = model(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            output_attentions=True,
            output_hidden_states=True,
            return_dict=True,
        )
    attentions = np.stack([_np(a[0]) for a in out.attentions])
    return attentions, list(out.hidden_states)


def reference_values(model, input_ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(attentions (L,H,n,n), values (L,H,n,d_v), W_O (L,H,d_v,d))`` read by hand."""
    attentions, hidden = model_run(model, input_ids)
    num_layers, heads, n, _ = attentions.shape
    base = model.base_model
    values, outputs = [], []
    for layer in range(num_layers):
        h = hidden[layer][0]
        if hasattr(base, "encoder"):  # BERT family (post-LN: the layer reads h itself)
            block = base.encoder.layer[layer].attention
            x = _np(h)
            w_v, b_v = _np(block.self.value.weight).T, _np(block.self.value.bias)
            w_o = _np(block.output.dense.weight).T  # (H·d_v, d)
            kv_heads = heads
        elif hasattr(base, "transformer"):  # DistilBERT (post-LN: reads h itself)
            block = base.transformer.layer[layer].attention
            x = _np(h)
            w_v, b_v = _np(block.v_lin.weight).T, _np(block.v_lin.bias)
            w_o = _np(block.out_lin.weight).T
            kv_heads = heads
        elif hasattr(base, "h"):  # GPT-2: Conv1D weights are (in, out); values: last third
            block = base.h[layer]
            with torch.no_grad():
                x = _np(block.ln_1(h))
            d = x.shape[1]
            w_v = _np(block.attn.c_attn.weight)[:, 2 * d :]
            b_v = _np(block.attn.c_attn.bias)[2 * d :]
            w_o = _np(block.attn.c_proj.weight)
            kv_heads = heads
        else:  # Llama-style: grouped-query attention, no value bias
            block = base.layers[layer]
            with torch.no_grad():
                x = _np(block.input_layernorm(h))
            w_v = _np(block.self_attn.v_proj.weight).T
            bias = block.self_attn.v_proj.bias
            b_v = np.zeros(w_v.shape[1]) if bias is None else _np(bias)
            w_o = _np(block.self_attn.o_proj.weight).T
            kv_heads = model.config.num_key_value_heads
        d_v = w_o.shape[0] // heads
        layer_values = np.zeros((heads, n, d_v))
        layer_outputs = np.zeros((heads, d_v, w_o.shape[1]))
        for head in range(heads):
            source = head // (heads // kv_heads)  # the kv head this query head reads
            cols = slice(source * d_v, (source + 1) * d_v)
            for j in range(n):
                layer_values[head, j] = x[j] @ w_v[:, cols] + b_v[cols]
            layer_outputs[head] = w_o[head * d_v : (head + 1) * d_v]
        values.append(layer_values)
        outputs.append(layer_outputs)
    return attentions, np.stack(values), np.stack(outputs)


def explained(model, tokenizer, text: str, methods, **options):
    return attnwidget.explain(model, tokenizer, text, methods=list(methods), **options)
