"""Install Chefer, Gur & Wolf's LRP rules on a stock model for one pass.

:func:`chefer_rules` is a context manager: inside it, one ordinary forward
pass and one backward pass seeded with gradient 1 at the target logit (the
authors' one-hot start) compute the paper's relevance as the gradient
(Chefer, Gur & Wolf, CVPR 2021; rules in :mod:`.rules`). The blocks are
recognised by structure, not by ``config.model_type``:

* **leaf modules**: each one's role is decided from what it computes, not
  its class name (:mod:`.leaves`, using AttnLRP's structure detection):
  linear layers (``nn.Linear``, GPT-2's ``Conv1D``, a Linear copied under
  another name) get the α1β0 rule; LayerNorm, RMSNorm and element-wise
  activations pass relevance unchanged (forward hooks that return the same
  value wrapped in the rule); a router or a module without a role is refused;
* **attention**: transformers' attention interface is switched to
  :func:`.attention.chefer_attention` (matmul splits, halving);
* **operations written inline** in a parent's forward are rewired where they
  are consumed (:mod:`.inline`): before a LayerNorm, a linear layer or a
  block (a child of a ``ModuleList``) runs, and on the model's logits, the
  tensor is *resolved*: its value is rebuilt from tensors the pass already
  knows (outputs of rules, block inputs) with each inline operation replaced
  by its rule, and used instead only if it is identical. ``a + b`` gets
  :func:`.rules.residual_add` (BERT's ``LayerNorm(dense(x) + input)``,
  GPT-2's and ViT's ``x + attn(ln_1(x))``); ``tanh``/``gelu``/``relu``
  (RoBERTa's classification head) pass relevance; ``a · b`` of two known
  tensors (Llama's gated MLP) gets the product split; slices, selections
  and concatenations are replayed.

Decoders are our extension: the authors defined rules for BERT and ViT
only. Our choices, each the nearest rule of theirs: pre-LN residual
additions (GPT-2, Llama) get the same re-normalised split; RMSNorm passes
relevance unchanged like LayerNorm; a gated product ``act(gate(x)) · up(x)``
is split like the attention matmuls (halved, :func:`.rules.product_split`);
a rotary position embedding passes relevance unchanged to the projection it
rotates (:func:`.attention._unrotate`).

Vision heads and layers beyond the authors' ViT (which classifies from the
CLS token) are our extension too, by the same principle (:mod:`.inline`):
a product with, or a division by, a constant passes relevance unchanged,
as the paper passes the attention's scaling (BEiT's and Dinov2's layer
scale ``λ · x``; DeiT-with-teacher's ``(cls + distillation) / 2``, whose
sum of the two heads' logits gets the re-normalised two-input split); a
mean over tokens (BEiT's pooling, Dinov2's ``cat(CLS, mean of patches)``)
is a linear map with weights 1/N and gets α1β0 (:func:`.rules.token_mean`);
a bias added to the attention logits before softmax (BEiT's relative
position bias) changes no rule, since softmax passes relevance.

After the forward, every operation between the target and the first block's
input is checked: rules, permutations, selections, reshapes and fan-out only
(:data:`STRUCTURAL`). Anything else would receive its plain gradient, which
is not the paper's relevance, so the pass is refused with
:class:`ModelNotSupportedError` naming it. Leaf modules without a rule
and encoder-decoder models are refused before anything is installed. On
exit, also after an error, the attention implementation and the hooks are
what they were.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from attnwidget.capture.state import all_configs
from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.attention_interface import this_thread_only
from attnwidget.relevance.chefer.attention import (
    _HINT,
    IMPLEMENTATION,
    AttentionCalls,
    active_pass,
    register,
)
from attnwidget.relevance.chefer.inline import resolve
from attnwidget.relevance.chefer.leaves import ALPHA_BETA, UNCHANGED, LeafRule, paper_rules
from attnwidget.relevance.chefer.rules import NODE_NAMES, alpha_beta, pass_through

#: Autograd nodes whose plain gradient moves, selects or sums relevance
#: correctly: permutations, selections, reshapes, concatenation and fan-out.
STRUCTURAL = frozenset(
    {
        "ViewBackward0",
        "UnsafeViewBackward0",
        "ReshapeAliasBackward0",
        "AliasBackward0",
        "TransposeBackward0",
        "TransposeBackward1",
        "TBackward0",
        "PermuteBackward0",
        "SelectBackward0",
        "SliceBackward0",
        "IndexBackward0",
        "IndexSelectBackward0",
        "CloneBackward0",
        "ExpandBackward0",
        "SqueezeBackward0",
        "SqueezeBackward1",
        "SqueezeBackward2",
        "UnsqueezeBackward0",
        "SplitBackward0",
        "SplitWithSizesBackward0",
        "UnbindBackward0",
        "CatBackward0",
        "StackBackward0",
        "ToCopyBackward0",
    }
)

_WHY = {
    "AddBackward0": "an addition whose two inputs are not both outputs of rules (a residual "
    "connection this engine could not match)",
    "MulBackward0": "a product neither of two outputs of rules nor with a constant",
    "DivBackward0": "a division not by a constant",
    "MeanBackward0": "a mean over all elements, not over tokens",
    "MeanBackward1": "a mean whose input this engine could not rebuild",
    "AccumulateGrad": "the input embeddings, reached without passing the first block",
}


@dataclass
class CheferRecorder:
    """What one pass of the paper's rules records.

    ``calls``: the attention modules in call order; ``blocks``: the blocks
    (``ModuleList`` children holding an attention module) in call order;
    ``block_inputs``: the (resolved) input tensor of each block, whose
    gradient is its relevance; ``block_relevance`` is filled in the backward
    pass, one tensor of shape (B, n) per block.
    """

    calls: AttentionCalls = field(default_factory=AttentionCalls)
    blocks: list[nn.Module] = field(default_factory=list)
    block_relevance: list[torch.Tensor | None] = field(default_factory=list)
    #: (block, its resolved input, attention calls made before it ran), per call
    _candidates: list[tuple[nn.Module, torch.Tensor, int]] = field(default_factory=list)
    _known: dict[int, tuple[Any, torch.Tensor]] = field(default_factory=dict)

    # ---- tensors the pass knows -------------------------------------------

    def keep(self, tensor: torch.Tensor, node: Any = None) -> torch.Tensor:
        """Remember ``tensor`` as the one to use for ``node`` (default: its own)."""
        node = tensor.grad_fn if node is None else node
        if node is not None:
            self._known[id(node)] = (node, tensor)
        return tensor

    def _tensor_of(self, node: Any) -> torch.Tensor | None:
        entry = self._known.get(id(node)) if node is not None else None
        return entry[1] if entry is not None and entry[0] is node else None

    def resolve(self, tensor: Any) -> Any:
        """``tensor``, or the same value carrying the rules of the inline operations
        that produced it (residual additions, activations, scalings, means;
        :func:`.inline.resolve`)."""
        return resolve(tensor, self._tensor_of, self.keep)

    def release(self) -> None:
        """Drop the references to the pass's tensors."""
        self._known.clear()
        self._candidates.clear()


@contextmanager
def chefer_rules(model: nn.Module) -> Iterator[CheferRecorder]:
    """Context manager: the model's gradients are the paper's LRP relevance.

    Use it around one forward pass (eval mode, batch of one; the thread that
    entered it) and one backward pass from the target logit with gradient 1.
    The gradient that reaches each returned attention map is then ``R^{A_l}``
    (B, H, n, n). Raises :class:`ModelNotSupportedError` for structures the
    rules do not cover (before installing anything for leaf modules without
    a rule; after the forward, from the path check, for inline operations).
    """
    register()  # names the transformers version needed, before anything changes
    if getattr(getattr(model, "config", None), "is_encoder_decoder", False):
        raise ModelNotSupportedError(
            f"{type(model).__name__} is an encoder-decoder model; the rules of Chefer, Gur & "
            "Wolf (2021) cover self-attention in encoders (and our extension, decoders), "
            "not cross-attention. Use an encoder-only or decoder-only model."
        )
    rules = paper_rules(model)  # refuses a module without a rule, before any change
    configs = all_configs(model)
    saved = [(c, c.__dict__.get("_attn_implementation_internal", _MISSING)) for c in configs]
    recorder = CheferRecorder()
    recorder.calls.known = recorder._tensor_of
    handles: list[RemovableHandle] = []
    token = None
    try:
        _switch(model, configs)
        _install(model, recorder, handles, rules)
        token = active_pass().set(recorder.calls)
        yield recorder
    finally:
        if token is not None:
            active_pass().reset(token)
        for handle in handles:
            handle.remove()
        recorder.release()
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


def _first(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> tuple[Any, bool]:
    """The first input and whether it was passed positionally."""
    return (args[0], True) if args else (kwargs.get(name), False)


def _resolving_pre_hook(recorder: CheferRecorder, name: str, on_block: bool = False) -> Callable:
    def hook(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        value, positional = _first(args, kwargs, name)
        resolved = recorder.resolve(value)
        if on_block and isinstance(resolved, torch.Tensor) and resolved.requires_grad:
            if resolved.grad_fn is None or recorder._tensor_of(resolved.grad_fn) is None:
                # A node of our own (identity), so that the block's residual addition
                # finds its input, also when it is a leaf (Llama's input embeddings);
                # the path check still walks through it to whatever produced it.
                resolved = pass_through(resolved, resolved)
            recorder.keep(resolved)
            recorder._candidates.append((module, resolved, len(recorder.calls.modules)))
        if resolved is value:
            return args, kwargs
        if positional:
            return (resolved, *args[1:]), kwargs
        return args, {**kwargs, name: resolved}

    return hook


def _install(
    model: nn.Module,
    recorder: CheferRecorder,
    handles: list[RemovableHandle],
    rules: dict[str, LeafRule],
) -> None:
    # Every hook acts only in this thread: another thread's pass on the model
    # (module hooks fire for any thread) stays plain and records nothing here.
    scoped = this_thread_only
    for name, module in model.named_modules():
        rule = rules.get(name or type(model).__name__)
        if rule is not None and rule.kind == ALPHA_BETA:

            def linear(mod: nn.Module, args: tuple, out: torch.Tensor, rule: LeafRule = rule):
                return recorder.keep(alpha_beta(args[0], out, rule.weight(mod)))

            handles.append(
                module.register_forward_pre_hook(
                    scoped(_resolving_pre_hook(recorder, "input")), with_kwargs=True
                )
            )
            handles.append(module.register_forward_hook(scoped(linear)))
        elif rule is not None and rule.kind == UNCHANGED:

            def unchanged(_mod: nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
                return recorder.keep(pass_through(args[0], out))

            handles.append(
                module.register_forward_pre_hook(
                    scoped(_resolving_pre_hook(recorder, "input")), with_kwargs=True
                )
            )
            handles.append(module.register_forward_hook(scoped(unchanged)))
        elif isinstance(module, nn.ModuleList):
            for block in module:
                hook = _resolving_pre_hook(recorder, "hidden_states", on_block=True)
                handles.append(block.register_forward_pre_hook(scoped(hook), with_kwargs=True))
    handles.append(
        model.register_forward_hook(scoped(lambda _m, _a, out: _check(model, recorder, out)))
    )


def _check(model: nn.Module, recorder: CheferRecorder, output: Any) -> Any:
    """After the forward: find the blocks, resolve the logits (the inline operations
    of a head, such as DeiT's ``(cls + distillation) / 2``) and check every
    operation on the path. Returns the output, its logits resolved."""
    called = recorder.calls.modules
    if not called:
        raise ModelNotSupportedError(
            f"{type(model).__name__} never called transformers' attention interface, so the "
            f"paper's attention rules could not be installed; {_HINT}"
        )
    # Each attention call's block: the innermost ModuleList child that started before
    # it and holds it, i.e. the latest such call (ALBERT runs one shared layer,
    # inside a layer group, once per layer: one block per use, as in LRP).
    boundary, used = None, set()
    for index, attention in enumerate(called):
        found = [
            number
            for number, (block, _, start) in enumerate(recorder._candidates)
            if start <= index and any(m is attention for m in block.modules())
        ]
        if not found or found[-1] in used:  # none, or a second attention in one block call
            break
        used.add(found[-1])
        block, tensor, _ = recorder._candidates[found[-1]]
        recorder.blocks.append(block)
        recorder.block_relevance.append(None)

        def keep(grad: torch.Tensor, index: int = index) -> None:
            recorder.block_relevance[index] = grad.detach().sum(dim=-1)

        tensor.register_hook(keep)
        if index == 0:
            boundary = tensor.grad_fn
    if len(recorder.blocks) != len(called):
        raise ModelNotSupportedError(
            f"{type(model).__name__}: found {len(recorder.blocks)} blocks for {len(called)} "
            f"attention calls; the paper's rules need one self-attention per block; {_HINT}"
        )
    # A bare encoder (sentence embeddings) has no logits: the relevance starts at
    # its last hidden states, where the similarity's rule hands it over
    # (attnwidget.relevance.similarity).
    name = "logits" if getattr(output, "logits", None) is not None else "last_hidden_state"
    logits = getattr(output, name, None)
    if not isinstance(logits, torch.Tensor) or logits.grad_fn is None:
        raise ModelNotSupportedError(
            f"{type(model).__name__} returned no differentiable logits; the paper's rules "
            "start from a classifier or language-model head (or, for a bare encoder, "
            "from its last hidden states)."
        )
    resolved = recorder.resolve(logits)
    if resolved is not logits:  # the same values (checked), carrying the head's rules
        setattr(output, name, resolved)
        logits = resolved
    unknown = _foreign_nodes(logits.grad_fn, boundary)
    if unknown:
        reasons = "; ".join(f"{name} ({_WHY.get(name, 'no rule')})" for name in unknown)
        raise ModelNotSupportedError(
            f"{type(model).__name__}: between the first block and the logits there are "
            f"operations without a rule of Chefer, Gur & Wolf (2021): {reasons}. Their plain "
            f"gradient is not the paper's relevance. {_HINT[0].upper()}{_HINT[1:]}"
        )
    return output


def _foreign_nodes(start: Any, boundary: Any) -> list[str]:
    """Names of autograd nodes above ``boundary`` that are neither rules nor structural."""
    allowed = NODE_NAMES | STRUCTURAL
    seen: set[int] = {id(boundary)}
    stack, foreign = [start], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        name = type(node).__name__
        if name not in allowed:
            foreign.add(name)
            continue
        stack.extend(parent for parent, _ in node.next_functions)
    return sorted(foreign)
