"""Put a model in the state capture needs, and put it back exactly as it was.

Capture needs eval mode (no dropout on the attention we read), the eager
attention implementation (SDPA and flash kernels return no attention weights)
and no parameter gradients (we differentiate with respect to embeddings and
attention only). Everything changed here is restored on exit, also when the
body raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch


def _all_configs(model: torch.nn.Module, modules: list[torch.nn.Module] | None = None) -> list[Any]:
    """Every config object reachable from the model (sub-configs included), once each."""
    seen: dict[int, Any] = {}
    pending = [getattr(m, "config", None) for m in (modules or model.modules())]
    while pending:
        config = pending.pop()
        if config is None or id(config) in seen or not hasattr(config, "to_dict"):
            continue
        seen[id(config)] = config
        for key in getattr(config, "sub_configs", {}) or {}:
            pending.append(getattr(config, key, None))
    return list(seen.values())


@contextmanager
def capture_ready(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Context manager: eval mode, eager attention, frozen parameters; all restored."""
    # One walk over the modules serves every snapshot: explain() on a small
    # model is dominated by this bookkeeping otherwise.
    modules = list(model.modules())
    modes = [module.training for module in modules]
    hooks = _hook_snapshot(modules)
    flags = [(param, param.requires_grad) for param in model.parameters()]
    implementations = [
        (config, config.__dict__.get("_attn_implementation_internal"))
        for config in _all_configs(model, modules)
    ]
    try:
        for module in modules:
            # object.__setattr__ skips nn.Module's slow attribute routing;
            # ``training`` is a plain attribute (this is what eval() sets).
            object.__setattr__(module, "training", False)
        for param, flag in flags:
            if flag:
                param.requires_grad_(False)
        _switch_to_eager(model)
        yield model
    finally:
        _restore_hooks(hooks)
        for param, flag in flags:
            if param.requires_grad != flag:
                param.requires_grad_(flag)
        for module, mode in zip(modules, modes, strict=True):
            object.__setattr__(module, "training", mode)
        for config, implementation in implementations:
            if "_attn_implementation_internal" in config.__dict__ or implementation is not None:
                config._attn_implementation_internal = implementation


# Hook registries of torch modules. transformers installs output-capturing
# hooks lazily on the first forward that asks for attentions and marks the
# model with ``_output_capturing_hooks_installed``; both are undone so the
# model's hooks are exactly what they were (transformers reinstalls its hooks
# when it next needs them).
_HOOK_DICTS = (
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_backward_hooks",
    "_backward_pre_hooks",
)
_HOOK_MARK = "_output_capturing_hooks_installed"


def _hook_snapshot(
    modules: list[torch.nn.Module],
) -> list[tuple[torch.nn.Module, dict[str, set], Any]]:
    snapshot = []
    for module in modules:
        keys = {name: set(getattr(module, name, {}) or {}) for name in _HOOK_DICTS}
        snapshot.append((module, keys, module.__dict__.get(_HOOK_MARK, _MISSING)))
    return snapshot


def _restore_hooks(snapshot: list[tuple[torch.nn.Module, dict[str, set], Any]]) -> None:
    for module, keys, mark in snapshot:
        for name, before in keys.items():
            registry = getattr(module, name, None)
            if registry:
                for key in set(registry) - before:
                    del registry[key]
        if mark is _MISSING:
            module.__dict__.pop(_HOOK_MARK, None)
        else:
            module.__dict__[_HOOK_MARK] = mark


_MISSING = object()


def _switch_to_eager(model: torch.nn.Module) -> None:
    setter = getattr(model, "set_attn_implementation", None)
    if callable(setter):
        try:
            setter("eager")
            return
        except (ValueError, NotImplementedError, AttributeError):
            pass  # fall back to setting the configs directly
    for config in _all_configs(model):
        if hasattr(config, "_attn_implementation_internal"):
            config._attn_implementation_internal = "eager"


def attention_implementation(model: torch.nn.Module) -> Any:
    """The model's current attention implementation (for tests and messages)."""
    config = getattr(model, "config", None)
    return getattr(config, "_attn_implementation", None)
