"""Put a model in the state capture needs, and put it back exactly as it was.

Capture needs eval mode (no dropout on the attention we read), the eager
attention implementation (SDPA and flash kernels return no attention weights),
no parameter gradients (we differentiate with respect to embeddings and
attention only) and autograd switched on, also when the caller is inside
``torch.no_grad()`` or ``torch.inference_mode()``. Everything changed here is
restored on exit, also when the body raises.

A model is shared state, and so is every part it shares with other model
objects (``model`` and ``model.bert`` share modules and the config): capture
switches the attention implementation and LRP installs hooks, so two threads
explaining one model, or a model and its backbone, would see each other's
changes. :func:`capture_ready` therefore holds the re-entrant lock on all of
the model's parts (:func:`model_lock`, :mod:`.sharing`) for its whole body;
models that share nothing do not wait for each other. attnwidget never holds
two unrelated models' locks at once; code that nests ``capture_ready`` of two
such models must take them in the same order in every thread, as with any two
locks. Another thread's own forward and backward passes on the model are kept
off the changed state (:class:`.sharing.ForeignGuard`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from attnwidget.capture.sharing import ForeignGuard, all_configs, model_lock
from attnwidget.errors import ConcurrentUseError, ModelNotSupportedError

__all__ = ["all_configs", "attention_implementation", "autograd_on", "capture_ready", "model_lock"]


@contextmanager
def autograd_on() -> Iterator[None]:
    """Gradients recorded in the body whatever the caller's grad mode; restored after.

    ``torch.enable_grad()`` alone does not leave ``torch.inference_mode()``:
    tensors made there are inference tensors that autograd never records, so
    inference mode is switched off first (the documented nesting).
    """
    with torch.inference_mode(False), torch.enable_grad():
        yield


# Words in every torch error about inference tensors used by autograd
# ("... cannot be saved for backward", "... do not track version counter").
_INFERENCE_TENSOR = "inference tensor"
_LOAD_OUTSIDE = (
    "Load or build the model outside torch.inference_mode() (torch.no_grad() is fine "
    "for loading); explain() itself may be called inside inference_mode."
)


def _refuse_inference_parameters(model: torch.nn.Module) -> None:
    """Fail before changing anything when autograd cannot use the parameters."""
    for name, param in model.named_parameters():
        if param.is_inference():
            # Every linear layer saves its weight for the backward pass, so
            # nothing that needs a gradient can run; and a parameter whose
            # requires_grad we switched off could not be switched on again
            # outside inference mode (torch refuses it), so the model would
            # not come back as it was.
            raise ModelNotSupportedError(
                f"the model's parameter {name!r} is an inference tensor (the model was "
                "created or loaded inside torch.inference_mode()); autograd cannot save "
                "inference tensors for the backward pass that explain() needs. " + _LOAD_OUTSIDE
            )


@contextmanager
def capture_ready(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Context manager: eval mode, eager attention, frozen parameters; all restored.

    The body also runs with autograd on (:func:`autograd_on`) and holds the
    model's lock (:func:`model_lock`), so another thread's capture of the same
    model waits until this one has put the model back. Nested use on the same
    model in the same thread is fine (the lock is re-entrant).

    Raises:
        ModelNotSupportedError: the model's parameters (checked before anything
            changes) or buffers (seen when autograd meets them) are inference
            tensors, which autograd cannot save.
    """
    # The lock is taken before the snapshot: the snapshot must see the model
    # as another thread's capture left it, i.e. restored.
    with model_lock(model), _translate_inference_errors():
        _refuse_inference_parameters(model)
        with _prepared(model):
            with autograd_on():
                yield model


@contextmanager
def _translate_inference_errors() -> Iterator[None]:
    """torch's RuntimeError about inference tensors becomes a clear ModelNotSupportedError."""
    try:
        yield
    except RuntimeError as error:
        if _INFERENCE_TENSOR not in str(error).lower():
            raise
        raise ModelNotSupportedError(
            "a tensor the model uses (a parameter or a buffer such as a mask or position "
            "table) is an inference tensor, made inside torch.inference_mode(); autograd "
            "cannot save it for the backward pass that explain() needs. " + _LOAD_OUTSIDE
        ) from error


@contextmanager
def _prepared(model: torch.nn.Module) -> Iterator[None]:
    """Eval mode, eager attention, frozen parameters, hooks snapshot; all restored."""
    # One walk over the modules serves every snapshot: explain() on a small
    # model is dominated by this bookkeeping otherwise.
    modules = list(model.modules())
    register_recorded_outputs(modules)
    modes = [module.training for module in modules]
    hooks = _hook_snapshot(modules)
    flags = [(param, param.requires_grad) for param in model.parameters()]
    implementations = [
        (config, config.__dict__.get("_attn_implementation_internal"))
        for config in all_configs(model, modules)
    ]
    # After the snapshot, so that restoring the hooks removes the guard's too.
    guard = ForeignGuard(modules, [param for param, _ in flags])
    try:
        with guard.changed():
            try:
                for module in modules:
                    # object.__setattr__ skips nn.Module's slow attribute routing;
                    # ``training`` is a plain attribute (this is what eval() sets).
                    object.__setattr__(module, "training", False)
                guard.freeze([param for param, _ in flags])
                _switch_to_eager(model)
                yield
            finally:
                # Everything is put back before the hooks (the guard's among
                # them) go: a waiting pass of another thread sees the model whole.
                guard.restore(flags)
                for module, mode in zip(modules, modes, strict=True):
                    object.__setattr__(module, "training", mode)
                for config, implementation in implementations:
                    if (
                        "_attn_implementation_internal" in config.__dict__
                        or implementation is not None
                    ):
                        config._attn_implementation_internal = implementation
                _restore_hooks(hooks)
    finally:
        guard.remove()
    if guard.disturbed:
        raise ConcurrentUseError(
            f"another thread ran a backward pass through {type(model).__name__}'s parameters "
            "while explain() had frozen them (requires_grad=False) for its own pass; that "
            "pass kept its gradients (the parameters were unfrozen for it), but this "
            "result could depend on the change, so none is returned. Run your training "
            "steps and explain() one after the other (or hold "
            "attnwidget.capture.state.model_lock(model) around your step), then call "
            "explain() again."
        )


def register_recorded_outputs(modules: list[torch.nn.Module]) -> None:
    """Redo what unpickling skips, so a pickled model returns its attention.

    transformers (5.x) records ``output_attentions`` only for model classes
    that its ``PreTrainedModel.__init__`` registered in this process (a
    registry keyed by class). A model unpickled in a fresh process (Dask
    workers, ``torch.load`` of a whole model, multiprocessing) never ran
    ``__init__`` there and would return no attention at all. Registering its
    classes' own ``_can_record_outputs`` is exactly what that ``__init__``
    would have done; older transformers versions keep no such registry.
    """
    try:
        from transformers import PreTrainedModel
        from transformers.utils.output_capturing import _CAN_RECORD_REGISTRY
    except ImportError:
        return
    for module in modules:
        if isinstance(module, PreTrainedModel) and not _CAN_RECORD_REGISTRY.get(module):
            recorded = getattr(module, "_can_record_outputs", None)
            if recorded:
                _CAN_RECORD_REGISTRY[module] = recorded


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
    configs = list(all_configs(model))
    setter = getattr(model, "set_attn_implementation", None)
    # Models that write attention inline (Falcon, MPNet, DeBERTa-v2) refuse the
    # switch: transformers only logs a warning and keeps e.g. "sdpa", whose
    # boolean mask such a model's eager path would then *add* to its logits
    # (seen: a Falcon whose captured attention looked past the diagonal). The
    # configs are set directly instead, so masks come in eager's additive form.
    can_set = getattr(model, "_can_set_attn_implementation", None)
    if callable(setter) and (not callable(can_set) or can_set()):
        try:
            setter("eager")
        except (ValueError, NotImplementedError, AttributeError, KeyError):
            pass  # fall back to setting the configs directly
        if all(getattr(c, "_attn_implementation", None) == "eager" for c in configs):
            return
    for config in configs:
        if hasattr(config, "_attn_implementation_internal"):
            config._attn_implementation_internal = "eager"


def attention_implementation(model: torch.nn.Module) -> Any:
    """The model's current attention implementation (for tests and messages)."""
    config = getattr(model, "config", None)
    return getattr(config, "_attn_implementation", None)
