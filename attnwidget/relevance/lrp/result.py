"""One AttnLRP pass for one captured example: :func:`run_lrp` and its :class:`LRPResult`."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.lrp.engine import LRPRecorder, lrp_rules
from attnwidget.relevance.lrp.rules import DEFAULT_EPSILON


@dataclass
class LRPResult:
    """One AttnLRP pass (Achtibat et al., ICML 2024) for one input and target.

    The target logit ``y`` is the relevance put at the output; every array
    below is a share of it (float64).

    Attributes:
        token_relevance: (n,) relevance of each token embedding, summed over
            the embedding dimension: the ``lrp`` score.
        input_relevance: (n,) relevance of the whole input vector at each
            position (token + position + segment embeddings); equal to
            ``token_relevance`` for models that add nothing to the token
            embedding (rotary or ALiBi positions: Llama, Gemma, GPT-NeoX, ...).
        attention_relevance: (L, H, n, n) ``R^{A_l} = A_l ⊙ ∂^{LRP}y/∂A_l``,
            the relevance of each attention weight (what flowed through the
            softmax output of head h from query i to key j).
        logit_relevance: (L, H, n) relevance of the input-dependent part of the
            attention logits (``scaling · q_i·k_j``, plus DeBERTa's content-position
            terms) summed over keys j: the softmax rule's input without the
            constants added to it (mask, relative-position bias, ALiBi).
        layer_relevance: (L+1, n) relevance of the residual stream at the
            input of each block (row l) and at the last block's output (row L);
            NaN when the model keeps its blocks outside an ``nn.ModuleList``.
        target_score: the target logit y.
        epsilon: the ε used.
    """

    token_relevance: np.ndarray
    input_relevance: np.ndarray
    attention_relevance: np.ndarray
    logit_relevance: np.ndarray
    layer_relevance: np.ndarray
    target_score: float
    epsilon: float

    @property
    def position_relevance(self) -> np.ndarray:
        """(n,) relevance taken by position and segment embeddings (input − token)."""
        return self.input_relevance - self.token_relevance

    @property
    def softmax_absorbed(self) -> np.ndarray:
        """(L,) relevance the softmax rule's bias absorbs per layer: Σ R^A − Σ R^X
        (with the share of constants added to the logits, e.g. a relative-position
        bias or ALiBi: their gradient × value, which reaches no input)."""
        return self.attention_relevance.sum(axis=(1, 2, 3)) - self.logit_relevance.sum(axis=(1, 2))

    @property
    def unexplained(self) -> float:
        """``y − Σ input_relevance``: what biases, ε and the softmax rule absorbed."""
        return float(self.target_score - self.input_relevance.sum())

    def details(self) -> dict[str, Any]:
        """The extras :func:`attnwidget.explain` stores under ``details["lrp"]``."""
        return {
            "attention_relevance": self.attention_relevance.astype(np.float32),
            "layer_relevance": self.layer_relevance.astype(np.float32),
            "input_relevance": self.input_relevance.astype(np.float32),
            "position_relevance": self.position_relevance.astype(np.float32),
            "softmax_absorbed": self.softmax_absorbed.astype(np.float32),
            "target_score": self.target_score,
            "relevance_sum": float(self.token_relevance.sum()),
            "unexplained": self.unexplained,
            "epsilon": self.epsilon,
        }


def run_lrp(target_score: Any, *, epsilon: float = DEFAULT_EPSILON) -> LRPResult:
    """Run one AttnLRP pass for a captured example.

    Args:
        target_score: the ``target_score`` of an :class:`AttentionRecord` or
            :class:`ScoreContext` from :func:`attnwidget.explain` (it knows the
            model, the input, the query row and the target, and can re-run
            them; see :class:`attnwidget.relevance.rerun.TargetScore`).
        epsilon: ε of the ε-rule on linear layers and norms (≥ 0; 0 is LRP-0).

    Results are cached per example and ε (``lrp`` and ``chefer2021`` in one
    :func:`explain` call share one pass).
    """
    rerun = getattr(target_score, "rerun", None)
    if rerun is None:
        raise ModelNotSupportedError(
            "LRP re-runs the model with its rules installed, so it needs a model: "
            "use attnwidget.explain(model, tokenizer, text, methods=['lrp'])."
        )
    key = float(epsilon)
    cache = _CACHE.setdefault(target_score, {})
    if key not in cache:
        cache.clear()
        run = rerun(lambda model: lrp_rules(model, epsilon=key))
        recorder: LRPRecorder = run.state
        token = (run.embeddings.astype(np.float64) * run.embedding_grads).sum(axis=-1)
        sources = recorder.source_relevance()
        layers = []
        for probe in recorder.layers:
            value = probe.relevance()
            layers.append(np.zeros_like(token) if value is None else _np(value)[0])
        if not layers:  # no block held in an nn.ModuleList: per-layer relevance unknown
            layers = [np.full_like(token, np.nan)] * (run.attentions.shape[0] + 1)
        heads_and_rows = run.attentions.shape[1:3]
        if len(recorder.ledger.logit_relevance) != run.attentions.shape[0]:
            raise ModelNotSupportedError(
                f"The LRP pass saw {len(recorder.ledger.logit_relevance)} attention "
                f"softmaxes but the model returned {run.attentions.shape[0]} attention "
                "maps, so the maps cannot be matched to the relevance through them."
            )
        logits = [  # (B, H, n), or (B·H, n) where a model folds heads into the batch
            np.zeros(heads_and_rows) if r is None else _np(r).reshape(-1, *heads_and_rows)[0]
            for r in recorder.ledger.logit_relevance
        ]
        attention = run.attentions.astype(np.float64) * run.attention_grads
        _check_maps_on_path(attention, np.stack(logits))
        cache[key] = LRPResult(
            token_relevance=token,
            input_relevance=token.copy() if sources is None else token + _np(sources)[0],
            attention_relevance=attention,
            logit_relevance=np.stack(logits),
            layer_relevance=np.stack(layers),
            target_score=run.value,
            epsilon=key,
        )
    return cache[key]


def _check_maps_on_path(attention: np.ndarray, logits: np.ndarray) -> None:
    """Refuse when a returned attention map is not the softmax the relevance went through.

    Relevance reaches a layer's logits only through its softmax output, so logits
    with relevance and a map without any mean the model returned another tensor
    (seen: XLNet), and ``attention_relevance`` would be silently zero.
    """
    for layer in range(attention.shape[0]):
        if np.abs(logits[layer]).sum() > 0 and not np.any(attention[layer]):
            raise ModelNotSupportedError(
                f"Relevance reached the attention logits of layer {layer}, but not the "
                "attention map the model returned for it: the map is not the softmax "
                "output the model computes with, so its relevance cannot be read."
            )


_CACHE: weakref.WeakKeyDictionary[Any, dict[float, LRPResult]] = weakref.WeakKeyDictionary()


def _np(tensor: Any) -> np.ndarray:
    return tensor.detach().double().cpu().numpy()
