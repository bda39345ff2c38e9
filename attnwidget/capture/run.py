"""Run a Hugging Face model once (forward + backward) and capture attention records.

Inputs are grouped by token length and each group runs as one batch, so no
padding ever enters an attention map or a score. Gradients are taken with
``torch.autograd.grad`` with respect to the input embeddings and the
attention maps only, so nothing accumulates on the model's parameters.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..errors import InputError, ModelNotSupportedError, NonFiniteError
from .kinds import CAUSAL_LM, ENCODER, ENCODER_DECODER, MASKED_LM
from .record import AttentionRecord
from .targets import resolve_query_index, resolve_target
from .tokens import readable_token


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
) -> list[AttentionRecord]:
    """Capture one record per item (same order). The model must be capture-ready."""
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
            ),
            strict=True,
        ):
            records[i] = record
    return [r for r in records if r is not None]


def _device(model: Any) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


def _accepts(model: Any, name: str) -> bool:
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
    if batch[0].token_type_ids is not None and _accepts(model, "token_type_ids"):
        kwargs["token_type_ids"] = torch.tensor(
            [item.token_type_ids for item in batch], device=device
        )
    if batch[0].decoder_ids is not None:
        kwargs["decoder_input_ids"] = torch.tensor(
            [item.decoder_ids for item in batch], device=device
        )
    return kwargs


def _expand(kwargs: dict[str, Any], size: int) -> dict[str, Any]:
    """Repeat single-example keyword tensors to a batch of ``size``."""
    return {key: value.expand(size, *value.shape[1:]) for key, value in kwargs.items()}


def _self_attentions(outputs: Any, kind: str) -> tuple[torch.Tensor, ...]:
    name = "encoder_attentions" if kind == ENCODER_DECODER else "attentions"
    attentions = getattr(outputs, name, None)
    if not attentions or any(a is None for a in attentions):
        raise ModelNotSupportedError(
            "the model returned no attention weights even with the eager attention "
            "implementation; it may not use softmax attention (e.g. a state-space or "
            "linear-attention model) or not support output_attentions=True."
        )
    return tuple(attentions)


def _query_logits(logits: torch.Tensor, kind: str, rows: torch.Tensor) -> torch.Tensor:
    """Score vectors at each example's query row: (B, C) or (B, V)."""
    if kind == ENCODER:
        return logits
    return logits[torch.arange(logits.shape[0], device=logits.device), rows]


def _default_query(
    kind: str, ids: list[int], attention: np.ndarray, tokenizer: Any, decoder_length: int
) -> int:
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
    causal = n > 1 and float(np.triu(attention[0], k=1).max()) < 1e-9
    return n - 1 if causal else 0


def _blank_id(tokenizer: Any) -> int | None:
    for attr in ("unk_token_id", "mask_token_id", "pad_token_id", "eos_token_id"):
        value = getattr(tokenizer, attr, None)
        if isinstance(value, int):
            return value
    return None


def _to_numpy(tensor: torch.Tensor | None) -> np.ndarray:
    if tensor is None:
        raise ModelNotSupportedError("a gradient could not be computed through the model.")
    return tensor.detach().float().cpu().numpy()


def _capture_group(
    model: Any,
    tokenizer: Any,
    batch: Sequence[Item],
    *,
    kind: str,
    target: Any,
    query_index: int | None,
    readable: bool,
) -> list[AttentionRecord]:
    device = _device(model)
    embedding_layer = model.get_input_embeddings()
    ids = torch.tensor([item.input_ids for item in batch], device=device)
    kwargs = _model_inputs(model, batch, device)
    with torch.no_grad():
        embeds = embedding_layer(ids)
    embeds = embeds.detach().requires_grad_(True)
    with torch.enable_grad():
        outputs = model(inputs_embeds=embeds, output_attentions=True, return_dict=True, **kwargs)
    self_attn = _self_attentions(outputs, kind)
    first_layer = self_attn[0].detach().float().cpu().numpy()

    n = ids.shape[1]
    decoder_length = len(batch[0].decoder_ids or ())
    query_rows, target_ids, labels = [], [], []
    logits = outputs.logits
    for b, item in enumerate(batch):
        limit = decoder_length if kind == ENCODER_DECODER else n
        if query_index is None:
            query_rows.append(
                _default_query(kind, item.input_ids, first_layer[b], tokenizer, decoder_length)
            )
        else:
            query_rows.append(resolve_query_index(query_index, 0, limit))
    rows = torch.tensor(query_rows, device=device)
    scores = _query_logits(logits, kind, rows).float()
    if not torch.isfinite(scores).all():
        raise NonFiniteError("the model's logits contain NaN/inf; run it in float32.")
    for b in range(len(batch)):
        target_id, label = resolve_target(
            target, scores[b].detach().cpu().numpy(), kind=kind, model=model, tokenizer=tokenizer
        )
        target_ids.append(target_id)
        labels.append(label)
    chosen = scores[
        torch.arange(len(batch), device=device), torch.tensor(target_ids, device=device)
    ]
    grads = torch.autograd.grad(chosen.sum(), [embeds, *self_attn], allow_unused=True)
    embed_grads, attn_grads = grads[0], grads[1:]
    attn_grads = tuple(
        torch.zeros_like(a) if g is None else g for a, g in zip(self_attn, attn_grads, strict=True)
    )

    attn_np = np.stack([_to_numpy(a) for a in self_attn], axis=1)  # (B, L, H, n, n)
    grad_np = np.stack([_to_numpy(g) for g in attn_grads], axis=1)
    for name, array in (("attention", attn_np), ("attention gradient", grad_np)):
        if not np.isfinite(array).all():
            raise NonFiniteError(
                f"the captured {name} contains NaN/inf; run the model in float32 "
                "(half precision can overflow) and check its weights."
            )
    embeds_np = _to_numpy(embeds)
    embed_grads_np = _to_numpy(embed_grads)
    logits_np = scores.detach().cpu().numpy()
    decoder_attn = cross_attn = None
    if kind == ENCODER_DECODER:
        decoder_attn = np.stack([_to_numpy(a) for a in outputs.decoder_attentions], axis=1)
        cross_attn = np.stack([_to_numpy(a) for a in outputs.cross_attentions], axis=1)

    records = []
    for b, item in enumerate(batch):
        raw_tokens = tokenizer.convert_ids_to_tokens(item.input_ids)
        special = np.array(
            tokenizer.get_special_tokens_mask(item.input_ids, already_has_special_tokens=True),
            dtype=bool,
        )
        tokens = (
            [
                readable_token(t, tokenizer, special=s)
                for t, s in zip(raw_tokens, special, strict=True)
            ]
            if readable
            else list(raw_tokens)
        )
        single = {key: value[b : b + 1] for key, value in kwargs.items()}
        record = AttentionRecord(
            kind=kind,
            input_ids=np.asarray(item.input_ids, dtype=np.int64),
            raw_tokens=list(raw_tokens),
            tokens=tokens,
            special_mask=special,
            attentions=attn_np[b],
            attention_grads=grad_np[b],
            embeddings=embeds_np[b],
            embedding_grads=embed_grads_np[b],
            logits=logits_np[b],
            target_id=target_ids[b],
            target_label=labels[b],
            query_index=query_rows[b],
            sentence_b_start=item.sentence_b_start,
            blank_token_id=_blank_id(tokenizer),
            target_score=TargetScore(
                model, kind, single, query_rows[b], target_ids[b], item.input_ids
            ),
            target_probability=_make_target_probability(
                model, kind, single, query_rows[b], target_ids[b]
            ),
        )
        if kind == ENCODER_DECODER:
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


@dataclass
class Rerun:
    """One example's forward+backward run inside a caller's context manager.

    ``embeddings``/``embedding_grads`` (n, d), ``attentions``/``attention_grads``
    (L, H, n, n) as float32 numpy, ``value`` the target logit, and ``state``
    whatever the context manager yielded. Gradients are those the model had
    inside the context (e.g. modified by LRP rules).
    """

    embeddings: np.ndarray
    embedding_grads: np.ndarray
    attentions: np.ndarray
    attention_grads: np.ndarray
    value: float
    state: Any


class TargetScore:
    """``points (B, n, d) -> (target logits (B,), gradients (B, n, d))`` for one example.

    Calling it runs the model on a batch of input embeddings (integrated
    gradients). :meth:`rerun` runs the example itself once more inside a
    caller-given context manager (e.g. one that installs LRP rules).
    """

    def __init__(
        self,
        model: Any,
        kind: str,
        kwargs: dict[str, Any],
        row: int,
        target_id: int,
        input_ids: Sequence[int],
    ) -> None:
        self.model, self.kind, self.kwargs = model, kind, kwargs
        self.row, self.target_id, self.input_ids = row, target_id, list(input_ids)

    def _values(self, inputs: torch.Tensor, **extra: Any) -> tuple[Any, torch.Tensor]:
        size = inputs.shape[0]
        out = self.model(
            inputs_embeds=inputs, return_dict=True, **_expand(self.kwargs, size), **extra
        )
        rows = torch.full((size,), self.row, device=inputs.device)
        return out, _query_logits(out.logits, self.kind, rows)[:, self.target_id].float()

    def __call__(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        device = _device(self.model)
        dtype = self.model.get_input_embeddings().weight.dtype
        inputs = torch.tensor(points, dtype=dtype, device=device).requires_grad_(True)
        with torch.enable_grad():
            _, values = self._values(inputs)
            (grad,) = torch.autograd.grad(values.sum(), [inputs])
        return values.detach().cpu().numpy(), grad.detach().float().cpu().numpy()

    def rerun(self, context: Callable[[Any], AbstractContextManager[Any]]) -> Rerun:
        """Forward+backward of this example inside ``context(model)``.

        The model is made capture-ready first (eval, eager attention, frozen
        parameters; all restored), then ``context(model)`` is entered, the
        target logit computed with attention weights and differentiated with
        respect to the input embeddings and every attention map.
        """
        from .state import capture_ready

        device = _device(self.model)
        ids = torch.tensor([self.input_ids], device=device)
        with capture_ready(self.model), context(self.model) as state:
            with torch.no_grad():
                embeds = self.model.get_input_embeddings()(ids)
            embeds = embeds.detach().requires_grad_(True)
            with torch.enable_grad():
                outputs, values = self._values(embeds, output_attentions=True)
                attentions = _self_attentions(outputs, self.kind)
                grads = torch.autograd.grad(values[0], [embeds, *attentions], allow_unused=True)
        attention_grads = [
            torch.zeros_like(a) if g is None else g
            for a, g in zip(attentions, grads[1:], strict=True)
        ]
        return Rerun(
            embeddings=_to_numpy(embeds)[0],
            embedding_grads=_to_numpy(grads[0])[0],
            attentions=np.stack([_to_numpy(a)[0] for a in attentions]),
            attention_grads=np.stack([_to_numpy(g)[0] for g in attention_grads]),
            value=float(values[0].detach()),
            state=state,
        )


def _make_target_probability(
    model: Any, kind: str, kwargs: dict[str, Any], row: int, target_id: int
):
    """``ids (B, n) -> probability of the target (B,)`` for one example."""
    device = _device(model)
    embedding_layer = model.get_input_embeddings()

    def probability(ids: np.ndarray) -> np.ndarray:
        batch = torch.as_tensor(ids, device=device)
        with torch.no_grad():
            out = model(
                inputs_embeds=embedding_layer(batch),
                return_dict=True,
                **_expand(kwargs, batch.shape[0]),
            )
            rows = torch.full((batch.shape[0],), row, device=device)
            probs = _query_logits(out.logits, kind, rows).float().softmax(dim=-1)
        return probs[:, target_id].cpu().numpy()

    return probability
