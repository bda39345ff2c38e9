"""Re-run one captured example: its target logit, probability and a second pass.

Integrated gradients evaluates the target logit at many points between a
baseline and the input embeddings; blank-out asks for the target's
probability with tokens replaced; LRP runs the example's forward+backward
once more with its rules installed. All of them re-run the model of a
:class:`~attnwidget.capture.record.ModelCall` the capture left in its record.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attnwidget.capture.record import ModelCall
from attnwidget.capture.run import (
    detached_numpy,
    expand_inputs,
    model_device,
    query_logits,
    self_attentions,
)
from attnwidget.capture.state import capture_ready


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

    def __init__(self, call: ModelCall) -> None:
        self.call = call
        self.model, self.kind, self.kwargs = call.model, call.kind, call.kwargs
        self.row, self.target_id, self.input_ids = call.row, call.target_id, list(call.input_ids)

    def _values(
        self, inputs: torch.Tensor, *, state: Any = None, **extra: Any
    ) -> tuple[Any, torch.Tensor]:
        """The model's output and the target score (B,); ``state`` is what a
        :meth:`rerun` context yielded (None outside one; subclasses whose score
        is computed after the model, e.g. a similarity, start relevance by it)."""
        size = inputs.shape[0]
        out = self.model(
            inputs_embeds=inputs, return_dict=True, **expand_inputs(self.kwargs, size), **extra
        )
        rows = torch.full((size,), self.row, device=inputs.device)
        return out, query_logits(out.logits, self.kind, rows)[:, self.target_id].float()

    def __call__(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # capture_ready: the model's lock (another thread may be re-running it
        # with LRP rules installed), its capture state, and autograd on even
        # inside torch.no_grad()/inference_mode(); so the inputs are made inside.
        with capture_ready(self.model):
            device = model_device(self.model)
            dtype = self.model.get_input_embeddings().weight.dtype
            inputs = torch.tensor(points, dtype=dtype, device=device).requires_grad_(True)
            _, values = self._values(inputs)
            (grad,) = torch.autograd.grad(values.sum(), [inputs])
        return values.detach().cpu().numpy(), grad.detach().float().cpu().numpy()

    def rerun(self, context: Callable[[Any], AbstractContextManager[Any]]) -> Rerun:
        """Forward+backward of this example inside ``context(model)``.

        The model is made capture-ready first (its lock held; eval, eager
        attention, frozen parameters, autograd on; all restored), then
        ``context(model)`` is entered, the target logit computed with attention
        weights and differentiated with respect to the input embeddings and
        every attention map.
        """
        with capture_ready(self.model), context(self.model) as state:
            # Made inside capture_ready: under torch.inference_mode() a tensor
            # made outside would be an inference tensor autograd cannot use.
            ids = torch.tensor([self.input_ids], device=model_device(self.model))
            with torch.no_grad():
                embeds = self.model.get_input_embeddings()(ids)
            embeds = embeds.detach().requires_grad_(True)
            outputs, values = self._values(embeds, state=state, output_attentions=True)
            attentions = self_attentions(outputs, self.kind)
            grads = torch.autograd.grad(values[0], [embeds, *attentions], allow_unused=True)
        attention_grads = [
            torch.zeros_like(a) if g is None else g
            for a, g in zip(attentions, grads[1:], strict=True)
        ]
        return Rerun(
            embeddings=detached_numpy(embeds)[0],
            embedding_grads=detached_numpy(grads[0])[0],
            attentions=np.stack([detached_numpy(a)[0] for a in attentions]),
            attention_grads=np.stack([detached_numpy(g)[0] for g in attention_grads]),
            value=float(values[0].detach()),
            state=state,
        )


def target_probability(call: ModelCall) -> Callable[[np.ndarray], np.ndarray]:
    """``ids (B, n) -> probability of the target (B,)`` for one example."""
    model, kind, kwargs, row, target_id = (
        call.model,
        call.kind,
        call.kwargs,
        call.row,
        call.target_id,
    )
    device = model_device(model)
    embedding_layer = model.get_input_embeddings()

    def probability(ids: np.ndarray) -> np.ndarray:
        # The model's lock and capture state (eval, eager), as for every re-run.
        with capture_ready(model), torch.no_grad():
            batch = torch.as_tensor(ids, device=device)
            out = model(
                inputs_embeds=embedding_layer(batch),
                return_dict=True,
                **expand_inputs(kwargs, batch.shape[0]),
            )
            rows = torch.full((batch.shape[0],), row, device=device)
            # float64: a confident model's p ≈ 0.9999 changes by less than float32
            # resolves (~6e-8 near 1), which would score most tokens exactly 0.
            probs = query_logits(out.logits, kind, rows).double().softmax(dim=-1)
        return probs[:, target_id].cpu().numpy()

    return probability
