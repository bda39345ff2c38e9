"""Exceptions and warnings raised by attnwidget.

Every error subclasses a built-in (``ValueError``, ``TypeError``, ...) so that
callers who already catch those keep working; the message always names the
problem and how to fix it.
"""

from __future__ import annotations


class AttnWidgetError(Exception):
    """Base class for every error attnwidget raises on purpose."""


class InputError(AttnWidgetError, ValueError):
    """The text, target or options given to :func:`attnwidget.explain` are unusable."""


class AttentionShapeError(AttnWidgetError, ValueError):
    """An attention array does not have the shape its tokens require."""


class NonFiniteError(AttnWidgetError, ValueError):
    """Attention, gradients or embeddings contain NaN or infinity."""


class UnknownMethodError(AttnWidgetError, KeyError):
    """A method name that is not registered."""

    def __str__(self) -> str:  # KeyError would otherwise repr() the message.
        return str(self.args[0]) if self.args else ""


class ModelNotSupportedError(AttnWidgetError, TypeError):
    """The model cannot give what a method needs (e.g. no attention weights)."""


class TooLargeError(AttnWidgetError, MemoryError):
    """A computation would need more memory than is sensible to allocate."""


class AttentionRowSumWarning(UserWarning):
    """Attention rows do not sum to 1 (rollout and flow re-normalise them)."""


class TruncationWarning(UserWarning):
    """The input was truncated to the model's maximum length."""


class ConvergenceWarning(UserWarning):
    """Integrated gradients hit ``max_steps`` with the completeness gap above tolerance."""


class ConcurrentUseError(AttnWidgetError, RuntimeError):
    """Another thread used a model while attnwidget held it, in a way that could change
    this call's result (e.g. a backward pass reaching parameters frozen for the call)."""
