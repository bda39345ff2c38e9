"""Install AttnLRP's rules on a stock model for one pass, and take them off again.

:func:`lrp_rules` is a context manager: inside it, one ordinary forward and
backward pass of the model (seeded with gradient 1 on the target logit)
computes AttnLRP relevance as input × gradient (Achtibat et al., ICML 2024).
On exit, also after an error, the attention implementation and the model's
hooks are exactly what they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ...capture.state import _all_configs
from .attention import IMPLEMENTATION, AttentionLedger, active_pass, register
from .families import Family, Installer, check_supported, install_rules, submodule
from .rules import DEFAULT_EPSILON

register()


@dataclass
class Probe:
    """A tensor seen in the forward pass and the gradient it got in the backward."""

    value: torch.Tensor | None = None
    grad: torch.Tensor | None = None

    def watch(self, tensor: torch.Tensor) -> None:
        self.value = tensor.detach()
        if tensor.requires_grad:
            tensor.register_hook(self._keep)

    def _keep(self, grad: torch.Tensor) -> None:
        self.grad = grad.detach()

    def relevance(self) -> torch.Tensor | None:
        """``value ⊙ grad`` summed over the last dimension, or None if unseen."""
        if self.value is None or self.grad is None:
            return None
        return (self.value * self.grad).sum(dim=-1)


@dataclass
class LRPRecorder:
    """What an LRP pass records besides the embeddings and attention gradients.

    ``ledger``: per-layer relevance of the attention logits (see
    :mod:`.attention`); ``layers``: one probe per block input plus one for the
    last block's output (the residual stream); ``inputs``: the full input
    vector (token + position + segment embeddings) when the family adds
    position embeddings, else None.
    """

    family: Family
    epsilon: float
    ledger: AttentionLedger = field(default_factory=AttentionLedger)
    layers: list[Probe] = field(default_factory=list)
    inputs: Probe | None = None


def _hidden(value: Any) -> torch.Tensor:
    return value[0] if isinstance(value, (tuple, list)) else value


@contextmanager
def lrp_rules(model: nn.Module, *, epsilon: float = DEFAULT_EPSILON) -> Iterator[LRPRecorder]:
    """Context manager: the model computes AttnLRP relevance as input × gradient.

    Use it around one forward pass (eval mode, batch of one or more
    same-length inputs, in the thread that entered the context: the attention
    function finds the pass through a context variable) and a backward pass
    from the target logit. Raises
    :class:`ModelNotSupportedError` for a family without rules. Restores the
    attention implementation of every config and removes every hook on exit.

    Args:
        model: a stock Hugging Face model of a supported family.
        epsilon: ε of the ε-rule on linear layers and norms (0 gives LRP-0,
            the plain gradient × input on them).

    Yields:
        An :class:`LRPRecorder`, filled during the forward and backward pass.
    """
    if epsilon < 0:
        raise ValueError(f"epsilon={epsilon} must be ≥ 0.")
    family = check_supported(model)
    configs = _all_configs(model)
    saved = [(c, c.__dict__.get("_attn_implementation_internal", _MISSING)) for c in configs]
    recorder = LRPRecorder(family=family, epsilon=float(epsilon))
    installer = Installer(epsilon=float(epsilon))
    token = None
    try:
        _switch(model, configs)
        install_rules(model, family, installer)
        _install_probes(model, family, recorder, installer)
        token = active_pass().set(recorder.ledger)
        yield recorder
    finally:
        if token is not None:
            active_pass().reset(token)
        installer.remove()
        for config, value in saved:
            if value is _MISSING:
                config.__dict__.pop("_attn_implementation_internal", None)
            else:
                config._attn_implementation_internal = value


_MISSING = object()


def _switch(model: nn.Module, configs: list[Any]) -> None:
    setter = getattr(model, "set_attn_implementation", None)
    if callable(setter):
        try:
            setter(IMPLEMENTATION)
            return
        except (ValueError, NotImplementedError, AttributeError, KeyError):
            pass  # fall back to setting the configs directly
    for config in configs:
        if hasattr(config, "_attn_implementation_internal"):
            config._attn_implementation_internal = IMPLEMENTATION


def _install_probes(
    model: nn.Module, family: Family, recorder: LRPRecorder, installer: Installer
) -> None:
    blocks = list(submodule(model, family.layers))
    recorder.layers = [Probe() for _ in range(len(blocks) + 1)]
    for probe, block in zip(recorder.layers, blocks, strict=False):

        def before(_m: nn.Module, args: tuple, kwargs: dict, probe: Probe = probe) -> None:
            probe.watch(args[0] if args else kwargs["hidden_states"])

        installer.handles.append(block.register_forward_pre_hook(before, with_kwargs=True))

    def after(_m: nn.Module, _args: tuple, output: Any) -> None:
        recorder.layers[-1].watch(_hidden(output))

    installer.handles.append(blocks[-1].register_forward_hook(after))
    if family.inputs is not None:
        recorder.inputs = Probe()
        target = submodule(model, family.inputs)

        def inputs(_m: nn.Module, args: tuple, kwargs: dict) -> None:
            recorder.inputs.watch(args[0] if args else next(iter(kwargs.values())))

        installer.handles.append(target.register_forward_pre_hook(inputs, with_kwargs=True))
