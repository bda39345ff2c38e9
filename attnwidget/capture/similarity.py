"""Capture a bare encoder (``AutoModel``) for sentence embeddings: pooling and cosine.

Sentence-transformers models (Reimers & Gurevych, 2019, Sentence-BERT) are a
bare Transformer whose last hidden states are pooled into one vector per
text: the mean over the attention mask ("mean", all-MiniLM-L6-v2's pooling)
or the first token ("cls"). Two texts are compared by the cosine of their
vectors. Each text runs on its own (a batch of one, so no padding enters the
mean); the explained scalar is the cosine as a function of one text's input
embeddings with the other text's pooled vector held fixed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnwidget.capture.record import AttentionRecord, ModelCall, SimilarityTarget
from attnwidget.capture.run import (
    Item,
    _model_inputs,
    blank_token_id,
    detached_numpy,
    model_device,
    self_attentions,
)
from attnwidget.capture.state import autograd_on
from attnwidget.capture.tokens import token_strings
from attnwidget.capture.values import ValueRecorder, output_weights, value_layouts
from attnwidget.errors import InputError, ModelNotSupportedError, NonFiniteError

#: The poolings :func:`pool` knows.
POOLINGS = ("mean", "cls")
#: The target that asks for the cosine similarity of two texts' embeddings.
SIMILARITY = "similarity"


def check_pooling(pooling: Any) -> str:
    """``pooling`` if it is one of :data:`POOLINGS`, else an :class:`InputError`."""
    if pooling not in POOLINGS:
        raise InputError(
            f"pooling={pooling!r} is not a pooling; use 'mean' (the mean of the last hidden "
            "states over the tokens, as sentence-transformers models such as "
            "all-MiniLM-L6-v2 do) or 'cls' (the first token's hidden state)."
        )
    return str(pooling)


def pool(hidden: torch.Tensor, pooling: str) -> torch.Tensor:
    """(B, n, d) last hidden states -> (B, d) embeddings (no padding: every token counts)."""
    if pooling == "mean":
        return hidden.mean(dim=1)
    return hidden[:, 0]


def pool_weights(n: int, pooling: str) -> np.ndarray:
    """(n,) weight of each position in the pooled vector: 1/n each (mean) or one-hot (cls)."""
    if pooling == "mean":
        return np.full(n, 1.0 / n)
    weights = np.zeros(n)
    weights[0] = 1.0
    return weights


def hidden_states(outputs: Any) -> torch.Tensor:
    """The last hidden states (B, n, d) of a bare model's output."""
    hidden = getattr(outputs, "last_hidden_state", None)
    if not isinstance(hidden, torch.Tensor):
        raise ModelNotSupportedError(
            "the model returned no last_hidden_state, so there is no embedding to pool; "
            "load the bare encoder with transformers.AutoModel."
        )
    return hidden


def cosine(pooled: torch.Tensor, other: torch.Tensor, *, held_norm: bool = False) -> torch.Tensor:
    """Cosine of each (B, d) row of ``pooled`` with the fixed vector ``other`` (d,): (B,).

    ``held_norm=True`` treats ``‖pooled‖`` as a constant: the same value, but
    the function is then linear in ``pooled`` (the start of a relevance pass,
    whose conservation needs it; the cosine itself is scale invariant, so
    ``pooled · ∇cos = 0``).
    """
    pooled = pooled.float()
    unit = other.float() / other.float().norm()
    norm = pooled.norm(dim=-1)
    if held_norm:
        norm = norm.detach()
    return (pooled @ unit) / norm


def similarity_values(outputs: Any, target: SimilarityTarget) -> torch.Tensor:
    """The cosine (B,) of each pooled output with ``target.other``, differentiable."""
    return cosine(pool(hidden_states(outputs), target.pooling), target.other)


def embed(model: Any, item: Item, pooling: str) -> torch.Tensor:
    """One text's pooled embedding (d,), detached (the model must be capture-ready)."""
    device = model_device(model)
    ids = torch.tensor([item.input_ids], device=device)
    with torch.no_grad():
        embeds = model.get_input_embeddings()(ids)
        outputs = model(
            inputs_embeds=embeds, return_dict=True, **_model_inputs(model, [item], device)
        )
        vector = pool(hidden_states(outputs), pooling)[0].float()
    if not torch.isfinite(vector).all() or float(vector.norm()) == 0.0:
        raise NonFiniteError(
            "a pooled embedding is NaN/inf or zero, so no cosine similarity exists; run the "
            "model in float32 and check its weights."
        )
    return vector.detach()


def capture_bare(
    model: Any,
    tokenizer: Any,
    item: Item,
    *,
    similarity: SimilarityTarget | None,
    readable: bool = True,
    values: bool = False,
) -> AttentionRecord:
    """One text's record: attention, and with ``similarity`` the cosine's gradients.

    With a :class:`SimilarityTarget`, one forward and one backward pass give
    the gradient of ``cos(pool(h(x)), other)`` with respect to the input
    embeddings and every attention map, and the record's ``call`` re-runs it
    (integrated gradients, blank-out, LRP); ``logits`` is the similarity (1,).
    Without one (attention only), ``attention_grads``, ``embedding_grads`` and
    ``call`` are None and ``logits`` is empty. ``query_index`` is 0 and
    ``target_id`` 0 either way. The model must be capture-ready.
    """
    with autograd_on():
        device = model_device(model)
        ids = torch.tensor([item.input_ids], device=device)
        kwargs = _model_inputs(model, [item], device)
        with torch.no_grad():
            embeds = model.get_input_embeddings()(ids)
        embeds = embeds.detach().requires_grad_(similarity is not None)
        layouts = value_layouts(model) if values else []
        with ValueRecorder(layouts) as recorder:
            outputs = model(
                inputs_embeds=embeds, output_attentions=True, return_dict=True, **kwargs
            )
        attentions = self_attentions(outputs, "encoder")
        if values:
            value_layouts(model, len(attentions))  # as many layouts as attention maps
        value = attention_grads = embedding_grads = None
        if similarity is not None:
            value = similarity_values(outputs, similarity)
            if not torch.isfinite(value).all():
                raise NonFiniteError("the similarity is NaN/inf; run the model in float32.")
            grads = torch.autograd.grad(value.sum(), [embeds, *attentions], allow_unused=True)
            embedding_grads = detached_numpy(grads[0])[0]
            attention_grads = np.stack(
                [
                    np.zeros(a.shape[1:], np.float32) if g is None else detached_numpy(g)[0]
                    for a, g in zip(attentions, grads[1:], strict=True)
                ]
            )
    attention = np.stack([detached_numpy(a)[0] for a in attentions])
    for name, array in (("attention", attention), ("attention gradient", attention_grads)):
        if array is not None and not np.isfinite(array).all():
            raise NonFiniteError(
                f"the captured {name} contains NaN/inf; run the model in float32 "
                "(half precision can overflow) and check its weights."
            )
    raw, shown, special = token_strings(tokenizer, item.input_ids, readable)
    record = AttentionRecord(
        kind="embedding",
        input_ids=np.asarray(item.input_ids, dtype=np.int64),
        raw_tokens=raw,
        tokens=shown,
        special_mask=special,
        attentions=attention,
        attention_grads=attention_grads,
        embeddings=detached_numpy(embeds)[0],
        embedding_grads=embedding_grads,
        logits=np.zeros(0, np.float32) if value is None else detached_numpy(value),
        target_id=0,
        target_label="similarity" if similarity is not None else None,
        query_index=0,
        blank_token_id=blank_token_id(tokenizer),
    )
    if similarity is not None:
        record.call = ModelCall(
            model, "embedding", kwargs, 0, 0, item.input_ids, similarity=similarity
        )
    if values:
        record.head_values = recorder.head_values()[0]
        record.head_output_weights = output_weights(layouts)
    return record
