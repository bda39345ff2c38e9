"""What AttentionMatrixView draws from: an explanation's per-head attention
(``attentions``, (L, H, n, n)) or its head-fused attention
(``fused_attentions``, (L, n, n): the mean over heads of each layer, what
``explain(..., keep="fused")`` keeps), one (n, n) matrix at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget._arrays import non_finite_summary
from attnwidget.errors import AttentionShapeError, InputError, NonFiniteError
from attnwidget.methods.sinks import ignored_keys_note

#: The head value that selects the mean over heads (the fused matrix).
MEAN = "mean"


@dataclass(frozen=True)
class MatrixSource:
    """The attention of one explanation, by layer and head."""

    tokens: list[str]
    attentions: np.ndarray | None  # (L, H, n, n) or None
    fused: np.ndarray | None  # (L, n, n) or None
    note: str = ""  # which keys were left out of every row (the caption says it)

    @property
    def num_layers(self) -> int:
        array = self.attentions if self.attentions is not None else self.fused
        assert array is not None
        return int(array.shape[0])

    @property
    def num_heads(self) -> int:
        """Heads that can be shown one by one (0: only their mean is kept)."""
        return 0 if self.attentions is None else int(self.attentions.shape[1])

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def kept(self) -> str:
        """Which attribute the matrices come from (said in the page)."""
        return "attentions" if self.attentions is not None else "fused_attentions"

    def matrix(self, layer: int, head: int | str) -> np.ndarray:
        """float32 (n, n): head ``head`` of layer ``layer``, or their mean (``"mean"``)."""
        if head == MEAN:
            if self.fused is not None:
                return np.asarray(self.fused[layer], dtype=np.float32)
            assert self.attentions is not None
            return self.attentions[layer].mean(axis=0, dtype=np.float32)
        assert self.attentions is not None
        return np.asarray(self.attentions[layer, int(head)], dtype=np.float32)


def source_of(explanation: Any, what: str = "AttentionMatrixView") -> MatrixSource:
    """The matrices of ``explanation``, checked; a clear error when none is kept."""
    tokens = getattr(explanation, "tokens", None)
    if tokens is None or isinstance(tokens, str):
        raise InputError(
            f"{what} needs an attnwidget.Explanation (from attnwidget.explain or "
            f"Explanation.from_attentions), got {type(explanation).__name__}."
        )
    tokens = [str(t) for t in tokens]
    n = len(tokens)
    # With ignored keys (explain(..., ignore_keys=...)): the renormalised rows.
    kept = getattr(explanation, "renormalised_attentions", None)
    if kept is None:
        kept = getattr(explanation, "attentions", None)
    attentions = _array(kept, 4, n, "attentions", "(L, H, n, n)")
    fused = _array(
        getattr(explanation, "fused_attentions", None), 3, n, "fused_attentions", "(L, n, n)"
    )
    if attentions is None and fused is None:
        rows = getattr(explanation, "attention_rows", None) is not None
        kept = " (it keeps only attention rows: keep='rows')" if rows else ""
        raise InputError(
            f"{what} draws whole attention matrices, but this explanation keeps none{kept}. "
            "Explain with keep='fused' (each layer's head mean) or keep='all' (every head)."
        )
    if attentions is not None and fused is not None and attentions.shape[0] != fused.shape[0]:
        raise AttentionShapeError(
            f"attentions has {attentions.shape[0]} layers but fused_attentions has "
            f"{fused.shape[0]}; they must come from the same model."
        )
    note = ignored_keys_note(getattr(explanation, "ignored_keys", None) or [], tokens)
    return MatrixSource(tokens=tokens, attentions=attentions, fused=fused, note=note)


def _array(value: Any, ndim: int, n: int, name: str, shape: str) -> np.ndarray | None:
    if value is None:
        return None
    array = np.asarray(value)
    if array.ndim != ndim or array.shape[-2:] != (n, n) or array.shape[0] == 0:
        raise AttentionShapeError(
            f"{name} has shape {tuple(array.shape)}; expected {shape} with n = {n} tokens."
        )
    if array.dtype != np.float32:
        array = array.astype(np.float32)
    # Checked layer by layer: a copy of all of it would double the memory.
    for layer in range(array.shape[0]):
        if not np.isfinite(array[layer]).all():
            raise NonFiniteError(
                f"{name}[{layer}] holds {non_finite_summary(array[layer])}; the matrix view "
                "draws finite weights only."
            )
    return array
