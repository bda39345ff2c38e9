"""Register an attention function with transformers, on the versions that allow it.

Both relevance engines (AttnLRP in :mod:`.lrp`, Chefer et al.'s rules in
:mod:`.chefer`) run their rules inside an attention function registered with
transformers' ``AttentionInterface`` (and the eager mask with its mask
interface), so a stock model switches to it with
``set_attn_implementation`` and back. transformers added those interfaces in
4.53, but the BERT family calls its attention through them only from 5.0
(seen: on 4.57 an LRP pass never reaches the registered function), so the
relevance engines need transformers 5. Every other method works on the older
versions the package declares, so ``import attnwidget`` must not fail there.

Registration happens when an engine is first used, not at import:
``transformers.AttentionInterface`` lives in ``transformers.modeling_utils``,
whose import pulls in the model-loading machinery (seconds), which
``import attnwidget`` would otherwise pay whether or not LRP ever runs. Each
engine calls :func:`register_attention` with ``required=True`` before a pass,
which names the transformers version needed; the first successful call per
name registers, under a lock (two threads starting a pass at once register
once), and later calls return at once.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from attnwidget.errors import ModelNotSupportedError

#: The first transformers major version whose models all call the attention interface.
MINIMUM_MAJOR = 5

#: Keyword arguments of the attention interface that mean something other than
#: plain softmax attention (attention sinks, logit soft-capping, head masks):
#: every registered function here refuses them rather than ignore them.
UNSUPPORTED_KWARGS = ("s_aux", "softcap", "sinks", "head_mask")


def check_plain_attention(kwargs: dict[str, Any], reason: str, *, prefix: str = "") -> None:
    """Refuse the interface's keywords that are not plain softmax attention.

    Raises :class:`ModelNotSupportedError` ``f"{prefix}attention with {name!r} {reason}"``
    for the first of :data:`UNSUPPORTED_KWARGS` that ``kwargs`` sets.
    """
    for name in UNSUPPORTED_KWARGS:
        if kwargs.get(name) is not None:
            raise ModelNotSupportedError(f"{prefix}attention with {name!r} {reason}")


def default_scaling(query: Any, scaling: float | None) -> float:
    """The interface's ``scaling``, or 1/√d as transformers' eager functions use."""
    return float(query.shape[-1] ** -0.5) if scaling is None else scaling


def softmax_weights(logits: Any, like: Any) -> Any:
    """Softmax over the keys in at least float32, cast to ``like``'s dtype (eager's rule)."""
    import torch

    dtype = torch.promote_types(logits.dtype, torch.float32)
    return torch.softmax(logits, dim=-1, dtype=dtype).to(like.dtype)


def repeat_kv_heads(tensor: Any, heads: int) -> Any:
    """Grouped-query attention: repeat each key/value head (dim 1) to ``heads`` heads."""
    if tensor.shape[1] == heads:
        return tensor
    if heads % tensor.shape[1]:
        raise ModelNotSupportedError(
            f"{heads} query heads cannot share {tensor.shape[1]} key/value heads evenly."
        )
    return tensor.repeat_interleave(heads // tensor.shape[1], dim=1)


def eager_attention(
    query: Any, key: Any, value: Any, attention_mask: Any, scaling: float | None
) -> tuple[Any, Any]:
    """Plain eager softmax attention, no rule: what a pass outside the engine's thread gets.

    The model's config names the registered function for every thread, so a
    forward pass of another thread lands here while a relevance pass runs; it
    must get the numbers of transformers' eager attention (no dropout: the
    relevance engines run in eval mode, and another thread's training pass
    on a model being explained waits, see :mod:`attnwidget.capture.sharing`).
    Returns ``(output (B, n, H, d), attention (B, H, n, m))``.
    """
    import torch

    key = repeat_kv_heads(key, query.shape[1])
    value = repeat_kv_heads(value, query.shape[1])
    logits = torch.matmul(query, key.transpose(-1, -2)) * default_scaling(query, scaling)
    if attention_mask is not None:
        logits = logits + attention_mask
    weights = softmax_weights(logits, query)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


Hook = TypeVar("Hook", bound=Callable[..., Any])


def this_thread_only(hook: Hook) -> Hook:
    """``hook`` acting only in the thread that calls this; a no-op (None) in any other.

    Module hooks fire for every thread's pass, but a relevance pass runs in
    one thread (its attention function finds it through a context variable);
    another thread's forward pass on the same modules must see the plain
    model, not the rules. A forward hook or pre-hook returning None leaves
    the output or input as it is.
    """
    owner = threading.get_ident()

    @functools.wraps(hook)
    def scoped(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() != owner:
            return None
        return hook(*args, **kwargs)

    return scoped  # type: ignore[return-value]


def register_attention(name: str, function: Callable[..., Any], *, required: bool = True) -> bool:
    """Register ``function`` (and the eager mask) under ``name``; True when registered.

    Below transformers 5.0 nothing is registered: with ``required`` a
    :class:`ModelNotSupportedError` names the version the relevance methods
    need; without it the call returns False.
    """
    with _LOCK:
        if _REGISTERED.get(name) is function:
            return True
        registered = _register(name, function, required=required)
        if registered:
            _REGISTERED[name] = function
        return registered


#: Names registered in this process, with the function registered under each.
_REGISTERED: dict[str, Callable[..., Any]] = {}
_LOCK = threading.Lock()


def _register(name: str, function: Callable[..., Any], *, required: bool) -> bool:
    import transformers

    installed = transformers.__version__
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, eager_mask
    except ImportError as error:
        missing: ImportError | None = error
    else:
        missing = None
    if missing is not None or int(installed.split(".")[0]) < MINIMUM_MAJOR:
        if not required:
            return False
        raise ModelNotSupportedError(
            "lrp and chefer2021 need transformers>=5.0: their attention function is "
            "registered through transformers.AttentionInterface and masking_utils, "
            f"which every supported model calls only from 5.0; this is transformers "
            f"{installed}. Upgrade with `pip install -U 'transformers>=5.0'`; every "
            "other method works on this version."
        ) from missing
    AttentionInterface.register(name, function)
    AttentionMaskInterface.register(name, eager_mask)
    return True
