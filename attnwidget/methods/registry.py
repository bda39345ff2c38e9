"""The method registry: every explanation method registered by name.

A method's array code lives in its own module as a pure function (e.g.
:func:`attnwidget.methods.rollout.rollout`). What is registered here is a small
adapter that turns the captured :class:`ScoreContext` into that function's
inputs and returns one relevance score per input token, shape (n,).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UnknownMethodError


@dataclass
class ScoreContext:
    """Everything one forward+backward pass captured, as float64 numpy arrays.

    Shapes: ``attentions`` and ``attention_grads`` (L, H, n, n);
    ``embeddings`` and ``embedding_grads`` (n, d). ``query_index`` is the row
    whose explanation is wanted (CLS, last position, or mask position).
    ``target_score`` maps a batch of input embeddings (B, n, d) (a torch
    tensor) to the target logit (B,), differentiably; ``target_probability``
    maps a batch of input ids (B, n) to the target's probability (B,). Both are
    None when the scores come from plain arrays (:meth:`Explanation.from_attentions`).
    From a model capture, ``target_score`` is a
    :class:`~attnwidget.relevance.rerun.TargetScore`, whose ``rerun(context)`` runs
    the example's forward+backward once more inside a caller's context manager
    (how "lrp" installs its rules).
    ``options`` maps a method name to keyword options for it.
    """

    attentions: np.ndarray
    query_index: int
    attention_grads: np.ndarray | None = None
    embeddings: np.ndarray | None = None
    embedding_grads: np.ndarray | None = None
    input_ids: np.ndarray | None = None
    blank_token_id: int | None = None
    keep_mask: np.ndarray | None = None  # (n,) bool: tokens that may be blanked out
    target_score: Callable[[Any], Any] | None = None
    target_probability: Callable[[np.ndarray], np.ndarray] | None = None
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    query_weights: np.ndarray | None = None

    def query_row(self, matrix: np.ndarray) -> np.ndarray:
        """Read the explained row out of an (n, n) relevance matrix.

        Normally row ``query_index``. For encoder–decoder models the query is
        a decoder position, which reads the encoder through cross-attention:
        ``query_weights`` (n,) is that distribution over encoder positions and
        the result is ``query_weights @ matrix``.
        """
        if self.query_weights is not None:
            return self.query_weights @ matrix
        return matrix[self.query_index]


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its name, what it needs, and how to score."""

    name: str
    score: Callable[[ScoreContext], np.ndarray]
    needs: frozenset[str]
    summary: str
    reference: str
    signed: bool = False  # True when scores can be negative (diverging colours)


_REGISTRY: dict[str, MethodSpec] = {}

#: What a capture can provide; ``needs`` must be a subset of this.
CAPABILITIES = frozenset(
    {"attentions", "attention_grads", "embedding_grads", "target_score", "target_probability"}
)


def register(
    name: str,
    *,
    needs: Iterable[str],
    summary: str,
    reference: str,
    signed: bool = False,
) -> Callable[[Callable[[ScoreContext], np.ndarray]], Callable[[ScoreContext], np.ndarray]]:
    """Decorator registering ``fn(context) -> scores (n,)`` under ``name``."""
    needs_set = frozenset(needs)
    unknown = needs_set - CAPABILITIES
    if unknown:
        raise ValueError(f"unknown needs {sorted(unknown)}; choose from {sorted(CAPABILITIES)}")

    def decorator(fn: Callable[[ScoreContext], np.ndarray]) -> Callable[[ScoreContext], np.ndarray]:
        if name in _REGISTRY:
            raise ValueError(f"a method named {name!r} is already registered")
        _REGISTRY[name] = MethodSpec(name, fn, needs_set, summary, reference, signed)
        return fn

    return decorator


def get_method(name: str) -> MethodSpec:
    """Look a method up by name; unknown names list the known ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownMethodError(
            f"unknown method {name!r}; known methods: {', '.join(available_methods())}."
        ) from None


def available_methods() -> list[str]:
    """Names of every registered method, in registration order."""
    return list(_REGISTRY)
