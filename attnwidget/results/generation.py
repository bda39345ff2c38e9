"""The :class:`GenerationExplanation` record returned by :func:`attnwidget.explain_generation`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnwidget.errors import InputError
from attnwidget.results.explanation import Explanation


@dataclass
class GenerationExplanation:
    """Scores of every generated token over the tokens before it.

    T generated tokens (steps). Causal LMs: the columns of :attr:`scores` are
    the prompt's tokens followed by the generated ones but the last
    (``tokens``, N = len(prompt_tokens) + T - 1); step t sees the first
    ``prefix_lengths[t] = len(prompt_tokens) + t`` of them, and its row holds
    NaN beyond that (ragged rows in one float32 (T, N) array). Encoder–decoder
    models: the columns are the source tokens (every step sees all of them).

    Attributes:
        prompt_tokens, prompt_ids: the prompt as the model read it (special
            tokens included; for encoder–decoders the source).
        generated_tokens, generated_ids: the T generated tokens (readable) and ids.
        tokens: the column labels of ``scores`` (see above).
        scores: method -> float32 (T, len(tokens)); NaN where a step has no
            such position. Row t equals ``step(t).scores[method]``.
        source_scores: method -> float32 (T, len(prompt_tokens)): the prompt's
            (source's) part of each row.
        prefix_tokens: the decoder-prefix positions: causal LMs the generated
            tokens but the last; encoder–decoders the decoder start token then
            the generated tokens but the last (T positions).
        prefix_scores: method -> float32 (T, len(prefix_tokens)), NaN beyond a
            step's prefix: the contribution of the tokens generated before
            (causal LMs: the rest of each row of ``scores``). Encoder–decoders:
            the same method run on the decoder's self-attention and the
            gradient at the decoder's input embeddings, kept apart from the
            source's contribution through cross-attention; only methods that
            need nothing else (raw, rollout, flow, grad_attention,
            input_x_gradient) have prefix scores.
        prefix_lengths: columns of ``scores`` (causal) or ``prefix_scores``
            (encoder–decoder) that step t sees.
        probabilities: float32 (T,), each generated token's probability at its step.
        kind: "causal-lm" or "encoder-decoder".
        methods: the method names, in order.
        text: the generated text (decoded).
        raw_tokens, special_mask: the tokenizer's own strings of the columns
            (``tokens``) and which of them are special tokens.
        steps: the T per-step explanations (:meth:`step`).
    """

    prompt_tokens: list[str]
    prompt_ids: np.ndarray
    generated_tokens: list[str]
    generated_ids: np.ndarray
    tokens: list[str]
    scores: dict[str, np.ndarray]
    source_scores: dict[str, np.ndarray]
    prefix_tokens: list[str]
    prefix_scores: dict[str, np.ndarray]
    prefix_lengths: list[int]
    probabilities: np.ndarray
    kind: str
    methods: list[str]
    text: str
    raw_tokens: list[str] = field(default_factory=list)
    special_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    steps: list[Explanation] = field(repr=False, default_factory=list)

    @property
    def num_steps(self) -> int:
        return len(self.generated_tokens)

    def step(self, t: int) -> Explanation:
        """Step t (negative counts from the end) as an ordinary :class:`Explanation`.

        Its scores are those of ``explain(model, tokenizer, prompt +
        generated[:t], target=generated[t])`` (encoder–decoders:
        ``decoder_text=generated[:t]``), usable in every view.
        """
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
            raise InputError(f"step index must be an int, got {type(t).__name__}.")
        if not -self.num_steps <= t < self.num_steps:
            raise InputError(f"step {t} is out of range for {self.num_steps} generated tokens.")
        return self.steps[int(t)]

    def __len__(self) -> int:
        return self.num_steps

    def __repr__(self) -> str:
        return (
            f"GenerationExplanation(kind={self.kind!r}, prompt={len(self.prompt_tokens)} tokens, "
            f"generated={self.generated_tokens!r}, methods=[{', '.join(self.methods)}])"
        )
