"""Re-run one captured image: target logit and gradient at any pixels, and a second pass.

The image counterpart of :mod:`.rerun`. Integrated gradients evaluates the
target logit at pixel tensors between a baseline image and the input;
occlusion (blank-out) asks for the target's probability with patches
replaced; LRP and Chefer et al.'s relevance run the image's forward+backward
once more inside a context manager that installs their rules. All re-run the
:class:`~attnwidget.capture.record.ModelCall` of an image record
(``kind="image"``, ``kwargs["pixel_values"]`` (1, 3, H, W)).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import torch

from attnwidget.capture.image import PatchLeaf
from attnwidget.capture.record import ModelCall
from attnwidget.capture.state import capture_ready
from attnwidget.relevance.rerun import Rerun


class ImageTargetScore:
    """The target logit of one image as a function of its pixels.

    ``self(pixels)`` maps float (B, 3, H, W) numpy pixels to ``(target logits
    (B,), gradients (B, 3, H, W))``; :meth:`probability` to the target's
    softmax probability (B,); :meth:`rerun` runs the image itself again inside
    a caller's context manager. Every call holds the model's lock and capture
    state (eval mode, eager attention, frozen weights, autograd on).
    """

    def __init__(self, call: ModelCall) -> None:
        self.call = call
        self.model, self.target_id, self.row = call.model, call.target_id, call.row
        self.kwargs = {k: v for k, v in call.kwargs.items() if k != "pixel_values"}

    @property
    def pixel_values(self) -> np.ndarray:
        """float32 (3, H, W): the pixels the model read for this image."""
        return self.call.kwargs["pixel_values"][0].detach().float().cpu().numpy()

    def _logits(self, pixels: torch.Tensor, **extra: Any) -> Any:
        return self.model(pixel_values=pixels, return_dict=True, **self.kwargs, **extra)

    def _tensor(self, pixels: np.ndarray) -> torch.Tensor:
        parameter = next(self.model.parameters())
        return torch.as_tensor(np.asarray(pixels), dtype=parameter.dtype, device=parameter.device)

    def __call__(self, pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with capture_ready(self.model):
            inputs = self._tensor(pixels).requires_grad_(True)
            values = self._logits(inputs).logits[:, self.target_id].float()
            (grad,) = torch.autograd.grad(values.sum(), [inputs])
        return values.detach().cpu().numpy(), grad.detach().float().cpu().numpy()

    def probability(self, pixels: np.ndarray) -> np.ndarray:
        """The target's probability (B,) for a batch of pixel tensors (B, 3, H, W)."""
        with capture_ready(self.model), torch.no_grad():
            logits = self._logits(self._tensor(pixels)).logits.double()
        # float64, as for text: changes of a confident p near 1 survive.
        return logits.softmax(dim=-1)[:, self.target_id].cpu().numpy()

    def rerun(self, context: Callable[[Any], AbstractContextManager[Any]]) -> Rerun:
        """Forward+backward of this image inside ``context(model)``.

        As :meth:`attnwidget.relevance.rerun.TargetScore.rerun`; the
        "embeddings" are the patch projections (special tokens' rows zero),
        as in the capture (:mod:`attnwidget.capture.image`).
        """
        leaf = PatchLeaf()
        with capture_ready(self.model), context(self.model) as state:
            pixels = self.call.kwargs["pixel_values"].detach()
            handle = self.model.get_input_embeddings().register_forward_hook(leaf)
            try:
                outputs = self._logits(pixels, output_attentions=True)
            finally:
                handle.remove()
            value = outputs.logits[0, self.target_id].float()
            attentions = list(outputs.attentions)
            grads = torch.autograd.grad(value, [leaf.leaf, *attentions], allow_unused=True)
        n = attentions[0].shape[-1]
        assert leaf.leaf is not None  # set by the forward hook
        patches = leaf.leaf[0].detach().float().cpu().numpy()
        patch_grads = (
            np.zeros_like(patches) if grads[0] is None else grads[0][0].float().cpu().numpy()
        )
        specials = n - patches.shape[0]
        embeddings = np.zeros((n, patches.shape[1]), np.float32)
        embedding_grads = np.zeros_like(embeddings)
        embeddings[specials:], embedding_grads[specials:] = patches, patch_grads
        return Rerun(
            embeddings=embeddings,
            embedding_grads=embedding_grads,
            attentions=np.stack([a[0].detach().float().cpu().numpy() for a in attentions]),
            attention_grads=np.stack(
                [
                    np.zeros(a.shape[1:], np.float32)
                    if g is None
                    else g[0].detach().float().cpu().numpy()
                    for a, g in zip(attentions, grads[1:], strict=True)
                ]
            ),
            value=float(value.detach()),
            state=state,
        )
