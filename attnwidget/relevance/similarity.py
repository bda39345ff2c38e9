"""Re-run one text of a sentence pair: the cosine similarity as the target score.

The similarity counterpart of :class:`~attnwidget.relevance.rerun.TargetScore`
for a bare encoder (:mod:`attnwidget.capture.similarity`). The target is
``s(x) = cos(pool(h(x)), v)``: ``h(x)`` the last hidden states of the
explained text, ``v`` the other text's pooled embedding, held fixed.

* Integrated gradients (Sundararajan et al., 2017) take ``s`` itself, so
  completeness reads ``Σ IG = s(x) − s(baseline)``.
* Blank-out (Abnar & Zuidema, 2020) reports the drop of ``s`` when a token is
  replaced (:meth:`SimilarityScore.probability`; there is no probability).
* LRP and chefer2021 re-run the text with their rules. The cosine is scale
  invariant in the pooled vector ``p`` (``p · ∇_p s = 0``), so relevance
  conserved through it would sum to 0; as for a dot-product similarity
  (Eberle et al., 2022, BiLRP, explain ``pᵀv`` the same way) the norm
  ``‖p‖`` is held constant, which leaves the value and makes ``s`` linear in
  the hidden states: ``s = Σ_{i,k} h_{ik} w_{ik}`` with
  ``w_{ik} = π_i v̂_k / ‖p‖`` (``π_i`` the pooling weight, 1/n for the mean).
  AttnLRP (Achtibat et al., 2024) passes this linear map by its gradient
  (ε-rule without bias: ``R_{ik} = h_{ik} w_{ik}``, summing to ``s``);
  Chefer, Gur & Wolf (2021) start from a unit relevance at the target and
  pass every linear map by their α1β0 rule, so the head gets that rule
  (``R_{ik} ∝ (h_{ik} w_{ik})⁺`` for same-signed terms, summing to 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnwidget.capture.record import ModelCall
from attnwidget.capture.run import expand_inputs, model_device
from attnwidget.capture.similarity import cosine, hidden_states, pool, pool_weights
from attnwidget.capture.state import capture_ready
from attnwidget.relevance.chefer.engine import CheferRecorder
from attnwidget.relevance.chefer.rules import alpha_beta
from attnwidget.relevance.rerun import TargetScore


class SimilarityScore(TargetScore):
    """``points (B, n, d) -> (cosine similarities (B,), gradients (B, n, d))`` for one text.

    Calling it runs the model on a batch of input embeddings of the explained
    text (integrated gradients); :meth:`probability` gives the similarity of
    token-id variants (blank-out); :meth:`rerun` runs the text once more inside
    a relevance context (LRP, chefer2021), starting the relevance as the module
    docstring says.
    """

    def __init__(self, call: ModelCall) -> None:
        if call.similarity is None:
            raise ValueError("SimilarityScore needs a ModelCall with a similarity target.")
        super().__init__(call)
        self.similarity = call.similarity

    def _values(
        self, inputs: torch.Tensor, *, state: Any = None, **extra: Any
    ) -> tuple[Any, torch.Tensor]:
        size = inputs.shape[0]
        out = self.model(
            inputs_embeds=inputs, return_dict=True, **expand_inputs(self.kwargs, size), **extra
        )
        hidden = hidden_states(out)
        pooled = pool(hidden, self.similarity.pooling)
        if state is None:  # the cosine itself (gradients, integrated gradients)
            return out, cosine(pooled, self.similarity.other)
        value = cosine(pooled, self.similarity.other, held_norm=True)
        if not isinstance(state, CheferRecorder):  # AttnLRP: the linear map's gradient
            return out, value
        # Chefer et al.: α1β0 on the linear map h -> s, weights π_i v̂_k / ‖p‖.
        n = hidden.shape[1]
        unit = self.similarity.other.float() / self.similarity.other.float().norm()
        norms = pooled.float().norm(dim=-1).detach()
        weights = torch.as_tensor(pool_weights(n, self.similarity.pooling), device=hidden.device)
        matrix = (weights.float()[:, None] * unit[None, :]).reshape(1, -1)
        flat = hidden.float().reshape(size, -1)
        # One output row per example: each is its own linear map (its own norm).
        rows = [
            alpha_beta(flat[b : b + 1], value[b : b + 1, None], matrix / norms[b])[:, 0]
            for b in range(size)
        ]
        return out, torch.cat(rows)

    def probability(self, ids: np.ndarray) -> np.ndarray:
        """``ids (B, n) -> similarity (B,)``, float64: what blank-out compares."""
        with capture_ready(self.model), torch.no_grad():
            batch = torch.as_tensor(ids, device=model_device(self.model))
            out = self.model(
                inputs_embeds=self.model.get_input_embeddings()(batch),
                return_dict=True,
                **expand_inputs(self.kwargs, batch.shape[0]),
            )
            pooled = pool(hidden_states(out), self.similarity.pooling).double()
            other = self.similarity.other.double()
            values = (pooled @ other) / (pooled.norm(dim=-1) * other.norm())
        return values.cpu().numpy()
