"""Run a Hugging Face model once (forward + backward) and capture attention records.

Inputs are grouped by token length and each group runs as one batch, so no
padding ever enters an attention map or a score. Gradients are taken with
``torch.autograd.grad`` with respect to the input embeddings only, so nothing
accumulates on the model's parameters; each attention map's gradient is read
by a tensor hook during that backward pass and reduced to what ``keep`` asks
for (:mod:`.keep`).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from attnwidget.capture import recompute
from attnwidget.capture.keep import LayerReducer, default_keep
from attnwidget.capture.kinds import CAUSAL_LM, ENCODER, ENCODER_DECODER, MASKED_LM
from attnwidget.capture.recompute import RecomputeReducer
from attnwidget.capture.record import AttentionRecord, ModelCall
from attnwidget.capture.state import autograd_on
from attnwidget.capture.targets import resolve_query_index, resolve_target
from attnwidget.capture.tokens import readable_token, token_strings
from attnwidget.capture.values import ValueRecorder, output_weights, value_layouts
from attnwidget.errors import InputError, ModelNotSupportedError, NonFiniteError


@dataclass
class Item:
    """One tokenised input waiting to be captured."""

    input_ids: list[int]
    token_type_ids: list[int] | None
    sentence_b_start: int | None
    decoder_ids: list[int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def group_key(self) -> tuple[int, int]:
        return len(self.input_ids), len(self.decoder_ids or ())


def capture(
    model: Any,
    tokenizer: Any,
    items: Sequence[Item],
    *,
    kind: str,
    target: Any,
    query_index: int | None,
    readable: bool = True,
    values: bool = False,
    keep: str | None = "all",
    smallest_keep: str = "all",
) -> list[AttentionRecord]:
    """Capture one record per item (same order). The model must be capture-ready.

    ``values=True`` also records each head's value vectors and output-projection
    slice (``head_values``, ``head_output_weights``; :mod:`.values`), with forward
    hooks present for that one forward pass only. ``keep`` is what of the
    attention is kept ("all", "fused", "rows"; :mod:`.keep`); None chooses per
    same-length group with :func:`.keep.default_keep`, which falls back to
    ``smallest_keep`` for long inputs.
    """
    groups: dict[tuple[int, int], list[int]] = {}
    for index, item in enumerate(items):
        groups.setdefault(item.group_key, []).append(index)
    records: list[AttentionRecord | None] = [None] * len(items)
    for indices in groups.values():
        batch = [items[i] for i in indices]
        for i, record in zip(
            indices,
            _capture_group(
                model,
                tokenizer,
                batch,
                kind=kind,
                target=target,
                query_index=query_index,
                readable=readable,
                values=values,
                keep=keep,
                smallest_keep=smallest_keep,
            ),
            strict=True,
        ):
            records[i] = record
    return [r for r in records if r is not None]


def model_device(model: Any) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


def forward_accepts(model: Any, name: str) -> bool:
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _model_inputs(model: Any, batch: Sequence[Item], device: torch.device) -> dict[str, Any]:
    """Keyword arguments other than the embeddings, for a same-length batch."""
    n = len(batch[0].input_ids)
    kwargs: dict[str, Any] = {
        "attention_mask": torch.ones(len(batch), n, dtype=torch.long, device=device)
    }
    if batch[0].token_type_ids is not None and forward_accepts(model, "token_type_ids"):
        kwargs["token_type_ids"] = torch.tensor(
            [item.token_type_ids for item in batch], device=device
        )
    if batch[0].decoder_ids is not None:
        kwargs["decoder_input_ids"] = torch.tensor(
            [item.decoder_ids for item in batch], device=device
        )
    return kwargs


def expand_inputs(kwargs: dict[str, Any], size: int) -> dict[str, Any]:
    """Repeat single-example keyword tensors to a batch of ``size``."""
    return {key: value.expand(size, *value.shape[1:]) for key, value in kwargs.items()}


def self_attentions(outputs: Any, kind: str) -> tuple[torch.Tensor, ...]:
    name = "encoder_attentions" if kind == ENCODER_DECODER else "attentions"
    attentions = getattr(outputs, name, None)
    if not attentions or any(a is None for a in attentions):
        raise ModelNotSupportedError(
            "the model returned no attention weights even with the eager attention "
            "implementation; it may not use softmax attention (e.g. a state-space or "
            "linear-attention model) or not support output_attentions=True."
        )
    return tuple(attentions)


def query_logits(logits: torch.Tensor, kind: str, rows: torch.Tensor) -> torch.Tensor:
    """Score vectors at each example's query row: (B, C) or (B, V)."""
    if kind == ENCODER:
        return logits
    return logits[torch.arange(logits.shape[0], device=logits.device), rows]


def default_query(
    kind: str, ids: list[int], attention: np.ndarray | None, tokenizer: Any, decoder_length: int
) -> int:
    """The row a model's prediction is read from when the user names none.

    Causal LMs: the last token; encoder–decoders: the last decoder position;
    masked LMs: the (first) mask token; classifiers: CLS, or the last token
    when the first layer's attention shows a causal backbone (a GPT-2
    classifier pools its last token). ``attention`` is the first layer's
    (H, n, n) map of the example.
    """
    n = len(ids)
    if kind == CAUSAL_LM:
        return n - 1
    if kind == ENCODER_DECODER:
        return decoder_length - 1
    if kind == MASKED_LM:
        mask_id = getattr(tokenizer, "mask_token_id", None)
        if mask_id is None or mask_id not in ids:
            raise InputError(
                f"a masked LM explains a masked position, but the text has no "
                f"{getattr(tokenizer, 'mask_token', '[MASK]')} token; add one or pass query_index."
            )
        return ids.index(mask_id)
    # Classifiers: CLS first for bidirectional encoders; a causal backbone
    # (e.g. GPT-2 classifier) pools the last token instead.
    if attention is None:
        raise TypeError("default_query: a classifier's row needs its first layer's attention.")
    causal = n > 1 and float(np.triu(attention[0], k=1).max()) < 1e-9
    return n - 1 if causal else 0


def blank_token_id(tokenizer: Any) -> int | None:
    for attr in ("unk_token_id", "mask_token_id", "pad_token_id", "eos_token_id"):
        value = getattr(tokenizer, attr, None)
        if isinstance(value, int):
            return value
    return None


def detached_numpy(tensor: torch.Tensor | None) -> np.ndarray:
    """``tensor`` as a float32 array on the CPU (an absent gradient is a clear error)."""
    if tensor is None:
        raise ModelNotSupportedError("a gradient could not be computed through the model.")
    return tensor.detach().float().cpu().numpy()


def _recomputing(
    model: Any, kind: str, keep: str | None, smallest: str, batch: int, n: int
) -> RecomputeReducer | None:
    """The sdpa-and-recompute reducer (:mod:`.recompute`) when it applies, else None."""
    if not recompute.ENABLED:
        return None
    layouts = recompute.recompute_layouts(model, kind, n)
    if layouts is None:
        return None
    mode = keep or default_keep(len(layouts), layouts[0].heads, n, smallest)
    return None if mode == "all" else RecomputeReducer(mode, layouts, batch, n)


def _starts(
    query_rows: list[int], n: int, cross_attn: np.ndarray | None, device: torch.device
) -> torch.Tensor:
    """(B, n) each example's query as a distribution over its n positions.

    One-hot at the query row; an encoder–decoder query is a decoder position
    and reads the encoder through the last cross-attention layer, so its
    start is that head-mean row (the record's ``query_weights``).
    """
    if cross_attn is not None:
        weights = np.stack([cross_attn[b][-1].mean(axis=0)[q] for b, q in enumerate(query_rows)])
        return torch.tensor(weights, dtype=torch.float32, device=device)
    starts = torch.zeros(len(query_rows), n, dtype=torch.float32, device=device)
    starts[torch.arange(len(query_rows)), torch.tensor(query_rows)] = 1.0
    return starts


def _capture_group(
    model: Any,
    tokenizer: Any,
    batch: Sequence[Item],
    *,
    kind: str,
    target: Any,
    query_index: int | None,
    readable: bool,
    values: bool = False,
    keep: str | None = "all",
    smallest_keep: str = "all",
) -> list[AttentionRecord]:
    # Autograd on whatever the caller's grad mode (torch.no_grad(),
    # torch.inference_mode()): capture() is public and may run outside
    # capture_ready. Every tensor below that enters autograd is made here.
    with autograd_on():
        device = model_device(model)
        embedding_layer = model.get_input_embeddings()
        ids = torch.tensor([item.input_ids for item in batch], device=device)
        kwargs = _model_inputs(model, batch, device)
        with torch.no_grad():
            embeds = embedding_layer(ids)
        embeds = embeds.detach().requires_grad_(True)
        layouts = value_layouts(model) if values else []
        n = ids.shape[1]
        # keep="fused"/"rows" on a Llama-style causal LM: sdpa, attention recomputed.
        fast = None if values else _recomputing(model, kind, keep, smallest_keep, len(batch), n)
        with ValueRecorder(layouts) as recorder, fast.recording(model) if fast else nullcontext():
            outputs = model(
                inputs_embeds=embeds, output_attentions=fast is None, return_dict=True, **kwargs
            )
        self_attn = () if fast else self_attentions(outputs, kind)
        if values:
            value_layouts(model, len(self_attn))  # as many layouts as attention maps
        # Only the first head of the first layer is read (a causal backbone's test).
        first_layer = (
            self_attn[0][:, :1].detach().float().cpu().numpy() if kind == ENCODER else None
        )

        decoder_length = len(batch[0].decoder_ids or ())
        query_rows: list[int] = []
        target_ids: list[int] = []
        labels: list[str] = []
        default_rows: list[int | None] = []
        logits = outputs.logits
        for b, item in enumerate(batch):
            limit = decoder_length if kind == ENCODER_DECODER else n
            first = None if first_layer is None else first_layer[b]
            if query_index is None:
                row = default_query(kind, item.input_ids, first, tokenizer, decoder_length)
                default_rows.append(row)
            else:
                default_rows.append(
                    None
                    if kind == MASKED_LM
                    else default_query(kind, item.input_ids, first, tokenizer, decoder_length)
                )
                row = resolve_query_index(query_index, 0, limit)
            query_rows.append(row)
        rows = torch.tensor(query_rows, device=device)
        scores = query_logits(logits, kind, rows).float()
        if not torch.isfinite(scores).all():
            raise NonFiniteError("the model's logits contain NaN/inf; run it in float32.")
        for b in range(len(batch)):
            target_id, label = resolve_target(
                target,
                scores[b].detach().cpu().numpy(),
                kind=kind,
                model=model,
                tokenizer=tokenizer,
            )
            target_ids.append(target_id)
            labels.append(label)
        chosen = scores[
            torch.arange(len(batch), device=device), torch.tensor(target_ids, device=device)
        ]
        decoder_attn = cross_attn = None
        if kind == ENCODER_DECODER:
            decoder_attn = np.stack([detached_numpy(a) for a in outputs.decoder_attentions], axis=1)
            cross_attn = np.stack([detached_numpy(a) for a in outputs.cross_attentions], axis=1)
        starts = _starts(query_rows, n, cross_attn, device)
        if fast is None:
            mode = keep or default_keep(len(self_attn), self_attn[0].shape[1], n, smallest_keep)
            reducer = LayerReducer(mode, self_attn, starts)
        else:
            mode, reducer = fast.keep, fast
            reducer.set_starts(starts)
        # From here the hooks hold the only references to the attention maps
        # (autograd keeps what the backward pass needs and frees it as it goes).
        del self_attn, outputs, logits, first_layer
        with reducer:
            (embed_grads,) = torch.autograd.grad(chosen.sum(), [embeds], allow_unused=True)
    reducer.check_finite()
    embeds_np = detached_numpy(embeds)
    embed_grads_np = detached_numpy(embed_grads)
    logits_np = scores.detach().cpu().numpy()
    head_values = recorder.head_values() if values else None  # (B, L, H, n, d_v)
    head_outputs = output_weights(layouts) if values else None  # (L, H, d_v, d), shared

    records = []
    for b, item in enumerate(batch):
        raw_tokens, tokens, special = token_strings(tokenizer, item.input_ids, readable)
        single = {key: value[b : b + 1] for key, value in kwargs.items()}
        record = AttentionRecord(
            kind=kind,
            input_ids=np.asarray(item.input_ids, dtype=np.int64),
            raw_tokens=list(raw_tokens),
            tokens=tokens,
            special_mask=special,
            **reducer.results(b),
            embeddings=embeds_np[b],
            embedding_grads=embed_grads_np[b],
            logits=logits_np[b],
            target_id=target_ids[b],
            target_label=labels[b],
            query_index=query_rows[b],
            sentence_b_start=item.sentence_b_start,
            blank_token_id=blank_token_id(tokenizer),
            call=ModelCall(model, kind, single, query_rows[b], target_ids[b], item.input_ids),
            keep=mode,
            default_query_index=default_rows[b],
        )
        if head_values is not None:
            record.head_values = head_values[b]
            record.head_output_weights = head_outputs
        if kind == ENCODER_DECODER:
            assert decoder_attn is not None and cross_attn is not None  # stacked above
            decoder_ids = item.decoder_ids or []
            dec_raw = tokenizer.convert_ids_to_tokens(decoder_ids)
            record.decoder_tokens = [
                readable_token(t, tokenizer, special=i in tokenizer.all_special_ids)
                if readable
                else t
                for t, i in zip(dec_raw, decoder_ids, strict=True)
            ]
            record.decoder_attentions = decoder_attn[b]
            record.cross_attentions = cross_attn[b]
            # The decoder query reads the encoder through the last cross-attention layer.
            record.query_weights = cross_attn[b][-1].mean(axis=0)[query_rows[b]]
        records.append(record)
    return records
