"""Capture for generation: decode a continuation, then record every step at once.

Step t of a generation explains token ``generated[t]`` given the prompt and
``generated[:t]``. Decoder self-attention is causal, so one forward pass over
the whole sequence (prompt + ``generated[:-1]``) holds every step's attention:
row ``p - 1`` and every row above it read only the first ``p`` positions, so
the top-left ``p × p`` block of the full pass is the attention of the ``p``
tokens run alone. Gradients differ per step (each step differentiates its own
target logit), so the sequence is repeated once per step in a batch (in
chunks) and each copy differentiates its own step's logit: one backward per
step, batched. Each step's slice is returned as an ordinary
:class:`~attnwidget.capture.record.AttentionRecord`, exactly what
:func:`~attnwidget.capture.run.capture` records for that prefix alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attnwidget.capture.kinds import CAUSAL_LM, ENCODER_DECODER
from attnwidget.capture.record import AttentionRecord, ModelCall
from attnwidget.capture.run import (
    Item,
    _model_inputs,
    blank_token_id,
    detached_numpy,
    model_device,
    self_attentions,
)
from attnwidget.capture.state import autograd_on
from attnwidget.capture.targets import resolve_target
from attnwidget.capture.tokens import readable_token, token_strings
from attnwidget.capture.values import ValueRecorder, output_weights, value_layouts
from attnwidget.errors import InputError, NonFiniteError

#: Steps differentiated in one batch (each copy holds the whole sequence).
STEP_BATCH = 8


@dataclass
class StepCapture:
    """One step's record and, for encoder–decoders, its decoder-side arrays.

    ``decoder_embeddings``/``decoder_embedding_grads`` (m, d) and
    ``decoder_attention_grads`` (L, H, m, m) (m = t + 1 decoder positions) are
    what the decoder-prefix scores read; None for causal LMs and when no
    gradient was taken.
    """

    record: AttentionRecord
    decoder_ids: list[int] | None = None
    decoder_embeddings: np.ndarray | None = None
    decoder_embedding_grads: np.ndarray | None = None
    decoder_attention_grads: np.ndarray | None = None


def _forward(model: Any, item: Item, device: torch.device) -> torch.Tensor:
    """The logits at the last (decoder) position for one item, no gradient."""
    kwargs = _model_inputs(model, [item], device)
    ids = torch.tensor([item.input_ids], device=device)
    with torch.no_grad():
        out = model(input_ids=ids, return_dict=True, use_cache=False, **kwargs)
    return out.logits[0, -1].float()


def _extend(item: Item, kind: str, token: int) -> Item:
    """``item`` with one more token appended to the (decoder) sequence."""
    if kind == ENCODER_DECODER:
        return Item(item.input_ids, item.token_type_ids, None, [*(item.decoder_ids or []), token])
    types = None if item.token_type_ids is None else [*item.token_type_ids, 0]
    return Item([*item.input_ids, token], types, None)


def decode(
    model: Any,
    item: Item,
    *,
    kind: str,
    max_new_tokens: int,
    stop_ids: Sequence[int],
    do_sample: bool,
    seed: int | None,
) -> list[int]:
    """Greedy (argmax) or sampled continuation of ``item``, stopping after a stop id.

    Sampling draws from the full softmax of the logits (temperature 1, no
    top-k or top-p) with a ``torch.Generator`` seeded with ``seed`` (the
    default generator when None). The model must be capture-ready (eval).
    """
    device = model_device(model)
    generator = None
    if do_sample and seed is not None:
        generator = torch.Generator(device=device)
        generator.manual_seed(int(seed))
    tokens: list[int] = []
    for _ in range(max_new_tokens):
        logits = _forward(model, item, device)
        if not torch.isfinite(logits).all():
            raise NonFiniteError("the model's logits contain NaN/inf; run it in float32.")
        if do_sample:
            probabilities = torch.softmax(logits, dim=-1)
            token = int(torch.multinomial(probabilities, 1, generator=generator)[0])
        else:
            token = int(torch.argmax(logits))
        tokens.append(token)
        item = _extend(item, kind, token)
        if token in stop_ids:
            break
    return tokens


def capture_steps(
    model: Any,
    tokenizer: Any,
    item: Item,
    generated: Sequence[int],
    *,
    kind: str,
    gradients: bool,
    values: bool,
    readable: bool = True,
) -> list[StepCapture]:
    """One record per generated token: step t explains ``generated[t]``.

    ``item`` is the prompt (causal LMs: the prompt's ids; encoder–decoders:
    the source, with ``decoder_ids`` the decoder start token). With
    ``gradients=False`` one forward pass gives every step (attention-only
    methods) and the records' gradients are zeros; otherwise each step's
    target logit is differentiated in a batch of copies (:data:`STEP_BATCH`).
    The model must be capture-ready.
    """
    steps = len(generated)
    if kind == ENCODER_DECODER:
        full = Item(
            item.input_ids, item.token_type_ids, None, [*(item.decoder_ids or []), *generated[:-1]]
        )
        rows = list(range(steps))
    else:
        full = Item(
            [*item.input_ids, *generated[:-1]],
            None if item.token_type_ids is None else item.token_type_ids + [0] * (steps - 1),
            None,
        )
        rows = [len(item.input_ids) - 1 + t for t in range(steps)]
    chunk = STEP_BATCH if gradients else 1
    out: list[StepCapture] = []
    for start in range(0, steps, chunk):
        indices = list(range(start, min(start + chunk, steps))) if gradients else list(range(steps))
        out.extend(
            _capture_chunk(
                model,
                tokenizer,
                full,
                generated,
                indices,
                rows,
                kind=kind,
                gradients=gradients,
                values=values,
                readable=readable,
            )
        )
        if not gradients:
            break
    return out


def _capture_chunk(
    model: Any,
    tokenizer: Any,
    full: Item,
    generated: Sequence[int],
    indices: list[int],
    rows: list[int],
    *,
    kind: str,
    gradients: bool,
    values: bool,
    readable: bool,
) -> list[StepCapture]:
    batch = len(indices) if gradients else 1
    with autograd_on():
        device = model_device(model)
        embedding_layer = model.get_input_embeddings()
        kwargs = _model_inputs(model, [full] * batch, device)
        ids = torch.tensor([full.input_ids] * batch, device=device)
        with torch.no_grad():
            embeds = embedding_layer(ids)
            decoder_embeds = None
            if kind == ENCODER_DECODER:
                decoder_ids = kwargs.pop("decoder_input_ids")
                decoder_embeds = embedding_layer(decoder_ids)
        embeds = embeds.detach().requires_grad_(gradients)
        if decoder_embeds is not None:
            decoder_embeds = decoder_embeds.detach().requires_grad_(gradients)
            kwargs["decoder_inputs_embeds"] = decoder_embeds
        layouts = value_layouts(model) if values else []
        context = torch.enable_grad() if gradients else torch.no_grad()
        with context, ValueRecorder(layouts) as recorder:
            outputs = model(
                inputs_embeds=embeds,
                output_attentions=True,
                return_dict=True,
                use_cache=False,
                **kwargs,
            )
        self_attn = self_attentions(outputs, kind)
        if values:
            value_layouts(model, len(self_attn))
        decoder_attn = tuple(outputs.decoder_attentions) if kind == ENCODER_DECODER else ()
        logits = outputs.logits.float()
        step_rows = torch.tensor([rows[i] for i in indices], device=device)
        chosen_logits = logits[torch.arange(len(indices), device=device) % batch, step_rows]
        if not torch.isfinite(chosen_logits).all():
            raise NonFiniteError("the model's logits contain NaN/inf; run it in float32.")
        grads: dict[str, Any] = {}
        if gradients:
            targets = torch.tensor([int(generated[i]) for i in indices], device=device)
            chosen = chosen_logits[torch.arange(batch, device=device), targets]
            wrt = [embeds, *self_attn]
            if decoder_embeds is not None:
                wrt += [decoder_embeds, *decoder_attn]
            found = torch.autograd.grad(chosen.sum(), wrt, allow_unused=True)
            got = [torch.zeros_like(w) if g is None else g for w, g in zip(wrt, found, strict=True)]
            layers = len(self_attn)
            grads["embeds"] = detached_numpy(got[0])
            grads["attn"] = np.stack([detached_numpy(g) for g in got[1 : 1 + layers]], axis=1)
            if decoder_embeds is not None:
                grads["dec_embeds"] = detached_numpy(got[1 + layers])
                grads["dec_attn"] = np.stack([detached_numpy(g) for g in got[2 + layers :]], axis=1)
    attn = np.stack([detached_numpy(a) for a in self_attn], axis=1)  # (B, L, H, N, N)
    if not np.isfinite(attn).all() or not all(np.isfinite(g).all() for g in grads.values()):
        raise NonFiniteError(
            "the captured attention or its gradient contains NaN/inf; run the model in float32 "
            "(half precision can overflow) and check its weights."
        )
    embeds_np = detached_numpy(embeds)
    logits_np = chosen_logits.detach().cpu().numpy()
    head_values = recorder.head_values() if values else None
    head_outputs = output_weights(layouts) if values else None
    cross = dec_attn = dec_embeds_np = None
    if kind == ENCODER_DECODER:
        dec_attn = np.stack([detached_numpy(a) for a in decoder_attn], axis=1)
        cross = np.stack([detached_numpy(a) for a in outputs.cross_attentions], axis=1)
        dec_embeds_np = detached_numpy(decoder_embeds)
    source_raw, source_shown, source_special = token_strings(tokenizer, full.input_ids, readable)
    blank = blank_token_id(tokenizer)
    captured = []
    for k, step in enumerate(indices):
        b = k if gradients else 0
        row, target_id = rows[step], int(generated[step])
        _, label = resolve_target(
            target_id, logits_np[k], kind=kind, model=model, tokenizer=tokenizer
        )
        if kind == ENCODER_DECODER:
            assert full.decoder_ids is not None  # an encoder–decoder item has its decoder ids
            n, m = len(full.input_ids), step + 1  # the whole source; the decoder prefix
            step_item = Item(full.input_ids, full.token_type_ids, None, full.decoder_ids[:m])
        else:
            n = m = row + 1
            types = None if full.token_type_ids is None else full.token_type_ids[:n]
            step_item = Item(full.input_ids[:n], types, None)
        call_kwargs = _model_inputs(model, [step_item], device)
        zeros = np.zeros((attn.shape[1], attn.shape[2], n, n), dtype=np.float32)
        record = AttentionRecord(
            kind=kind,
            input_ids=np.asarray(step_item.input_ids, dtype=np.int64),
            raw_tokens=source_raw[:n],
            tokens=source_shown[:n],
            special_mask=source_special[:n],
            attentions=attn[b, :, :, :n, :n].copy(),
            attention_grads=grads["attn"][k, :, :, :n, :n].copy() if gradients else zeros,
            embeddings=embeds_np[b, :n].copy(),
            embedding_grads=(
                grads["embeds"][k, :n].copy() if gradients else np.zeros_like(embeds_np[b, :n])
            ),
            logits=logits_np[k],
            target_id=target_id,
            target_label=label,
            query_index=row if kind == CAUSAL_LM else step,
            blank_token_id=blank,
            call=ModelCall(model, kind, call_kwargs, row, target_id, step_item.input_ids),
        )
        if head_values is not None:
            record.head_values = head_values[b, :, :, :n].copy()
            record.head_output_weights = head_outputs
        capture = StepCapture(record)
        if kind == ENCODER_DECODER:
            assert full.decoder_ids is not None and dec_embeds_np is not None
            assert dec_attn is not None and cross is not None  # stacked above
            decoder_ids = list(full.decoder_ids[:m])
            raw = tokenizer.convert_ids_to_tokens(decoder_ids)
            specials = set(tokenizer.all_special_ids)
            record.decoder_tokens = [
                readable_token(t, tokenizer, special=i in specials) if readable else t
                for t, i in zip(raw, decoder_ids, strict=True)
            ]
            record.decoder_attentions = dec_attn[b, :, :, :m, :m].copy()
            record.cross_attentions = cross[b, :, :, :m].copy()
            record.query_weights = record.cross_attentions[-1].mean(axis=0)[step]
            capture.decoder_ids = decoder_ids
            capture.decoder_embeddings = dec_embeds_np[b, :m].copy()
            if gradients:
                capture.decoder_embedding_grads = grads["dec_embeds"][k, :m].copy()
                capture.decoder_attention_grads = grads["dec_attn"][k, :, :, :m, :m].copy()
        captured.append(capture)
    return captured


def check_ids(ids: Sequence[Any], vocab: int, what: str) -> list[int]:
    """Token ids as ints in ``0 … vocab - 1``, or an :class:`InputError` naming the bad one."""
    out = []
    for value in ids:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise InputError(f"{what} must be a string or a list of token ids (ints).")
        if not 0 <= int(value) < vocab:
            raise InputError(f"{what} holds token id {int(value)}; ids run 0 … {vocab - 1}.")
        out.append(int(value))
    return out
