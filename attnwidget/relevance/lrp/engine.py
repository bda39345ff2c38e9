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

from attnwidget.capture.state import all_configs
from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.attention_interface import this_thread_only
from attnwidget.relevance.lrp.attention import (
    IMPLEMENTATION,
    AttentionLedger,
    active_pass,
    register,
)
from attnwidget.relevance.lrp.families import Installer, install_rules, roles
from attnwidget.relevance.lrp.inline import InlineRules
from attnwidget.relevance.lrp.rules import DEFAULT_EPSILON


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
    last block's output (the residual stream); ``sources``: the outputs of the
    other embedding lookups the model adds to the token embeddings (positions,
    segments), whose relevance is the position share of the input.

    A block is a module held in an ``nn.ModuleList`` inside which an attention
    call happened (the innermost such module, so ALBERT's shared layer counts
    once per use); its input is probed each time it runs.
    """

    epsilon: float
    ledger: AttentionLedger = field(default_factory=AttentionLedger)
    layers: list[Probe] = field(default_factory=list)
    sources: list[Probe] = field(default_factory=list)

    def source_relevance(self) -> torch.Tensor | None:
        """(B, n) relevance of the position and segment embeddings, or None if there are none."""
        total = None
        for probe in self.sources:
            value = probe.relevance()
            if value is None:
                continue
            value = value if value.ndim >= 2 else value.unsqueeze(0)
            total = value if total is None else total + value
        return total


def _hidden(value: Any) -> torch.Tensor:
    return value[0] if isinstance(value, (tuple, list)) else value


@contextmanager
def lrp_rules(model: nn.Module, *, epsilon: float = DEFAULT_EPSILON) -> Iterator[LRPRecorder]:
    """Context manager: the model computes AttnLRP relevance as input × gradient.

    Use it around one forward pass (eval mode, frozen parameters as
    :func:`attnwidget.capture.capture_ready` leaves them, batch of one or more
    same-length inputs, in the thread that entered the context: the attention
    function finds the pass through a context variable) and a backward pass
    from the target logit. Every leaf module's role is decided first
    (:func:`.families.roles`); a module without one raises
    :class:`ModelNotSupportedError` before anything is changed. Restores the
    attention (and experts) implementation of every config and removes every
    hook on exit, also after an error.

    Args:
        model: a stock Hugging Face model (encoder or decoder).
        epsilon: ε of the ε-rule on linear layers and norms (0 gives LRP-0,
            the plain gradient × input on them).

    Yields:
        An :class:`LRPRecorder`, filled during the forward and backward pass.
    """
    if epsilon < 0:
        raise ValueError(f"epsilon={epsilon} must be ≥ 0.")
    register()  # names the transformers version needed, before anything changes
    config = getattr(model, "config", None)
    if getattr(config, "is_encoder_decoder", False):
        raise ModelNotSupportedError(
            f"LRP covers encoder-only and decoder-only models; {type(model).__name__} is an "
            "encoder-decoder model (its cross-attention has no LRP bookkeeping here)."
        )
    leaf_roles = roles(model)  # raises for a module without a role, before any change
    configs = all_configs(model)
    saved = [
        (c, name, c.__dict__.get(name, _MISSING))
        for c in configs
        for name in ("_attn_implementation_internal", "_experts_implementation_internal")
    ]
    recorder = LRPRecorder(epsilon=float(epsilon))
    installer = Installer(epsilon=float(epsilon))
    state = installer.state
    assert state is not None  # Installer always makes one
    recorder.ledger.inline = state
    state.ledger = recorder.ledger  # softmax attention written inline
    token = None
    try:
        _switch(model, configs)
        install_rules(model, installer, leaf_roles)
        _install_probes(model, recorder, installer)
        token = active_pass().set(recorder.ledger)
        with InlineRules(state):
            yield recorder
    finally:
        if token is not None:
            active_pass().reset(token)
        installer.remove()
        for config_, name, value in saved:
            if value is _MISSING:
                config_.__dict__.pop(name, None)
            else:
                config_.__dict__[name] = value


_MISSING = object()


def _switch(model: nn.Module, configs: list[Any]) -> None:
    for config in configs:
        # Mixture-of-experts layers dispatch on this; the eager loop is what the
        # inline rules see (F.linear per expert, the gated product, the weights).
        if "_experts_implementation_internal" in config.__dict__:
            config.__dict__["_experts_implementation_internal"] = "eager"
    setter = getattr(model, "set_attn_implementation", None)
    # Models that compute attention inline (MPNet, Falcon, DeBERTa-v2) cannot switch:
    # transformers then only logs a warning and keeps e.g. "sdpa", whose boolean mask
    # Falcon's eager path would add to its logits; the configs are set directly instead,
    # so masks come from the registered eager (additive) mask function.
    can_set = getattr(model, "_can_set_attn_implementation", None)
    if callable(setter) and (not callable(can_set) or can_set()):
        try:
            setter(IMPLEMENTATION)
        except (ValueError, NotImplementedError, AttributeError, KeyError):
            pass  # fall back to setting the configs directly
        if all(getattr(c, "_attn_implementation", None) == IMPLEMENTATION for c in configs):
            return
    for config in configs:
        if hasattr(config, "_attn_implementation_internal"):
            config._attn_implementation_internal = IMPLEMENTATION


def _install_probes(model: nn.Module, recorder: LRPRecorder, installer: Installer) -> None:
    """Block inputs (per attention-holding block call) and embedding-lookup outputs."""
    ledger = recorder.ledger
    blocks = {id(m) for lst in model.modules() if isinstance(lst, nn.ModuleList) for m in lst}
    frames: list[dict[str, Any]] = []
    done: list[tuple[Probe, Probe]] = []

    def before(_m: nn.Module, args: tuple, kwargs: dict) -> None:
        probe = Probe()
        hidden = args[0] if args else kwargs.get("hidden_states")
        if isinstance(hidden, torch.Tensor):
            probe.watch(hidden)
        frames.append({"probe": probe, "start": ledger.calls, "claimed": 0})

    def after(_m: nn.Module, _args: tuple, _kwargs: dict, output: Any) -> None:
        if not frames:
            return
        frame = frames.pop()
        inside = ledger.calls - frame["start"]
        if inside - frame["claimed"] > 0:  # an attention call of its own: a layer
            out = Probe()
            hidden = _hidden(output)
            if isinstance(hidden, torch.Tensor):
                out.watch(hidden)
            done.append((frame["probe"], out))
            recorder.layers = [p for p, _ in done] + [done[-1][1]]
        if frames:
            frames[-1]["claimed"] += inside

    get_inputs = getattr(model, "get_input_embeddings", None)
    inputs = get_inputs() if callable(get_inputs) else None

    state = installer.state
    assert state is not None  # Installer always makes one

    def source(_m: nn.Module, _args: tuple, output: Any) -> None:
        # read where the lookup joins the input (see inline.InlineRules._addition)
        if isinstance(output, torch.Tensor) and output.is_floating_point():
            if torch.is_grad_enabled():
                state.pending[id(output)] = output

    def joined(value: torch.Tensor, total: torch.Tensor) -> None:
        probe = Probe(value=value.detach())
        total.register_hook(probe._keep)
        recorder.sources.append(probe)

    state.on_source = joined

    # Only in this thread: another thread's pass on the model records nothing here.
    before, after = this_thread_only(before), this_thread_only(after)
    source = this_thread_only(source)
    for module in model.modules():
        if id(module) in blocks:
            installer.handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
            installer.handles.append(module.register_forward_hook(after, with_kwargs=True))
        if isinstance(module, nn.Embedding) and module is not inputs:
            installer.handles.append(module.register_forward_hook(source))
