"""Which rule each module of a model gets, from its structure.

LRP needs a rule for every operation that is not linear in the token
embeddings. In a stock Hugging Face Transformer those operations sit in three
places, and each is handled without changing model code or naming a family:

1. **Attention** (``Q Kᵀ``, softmax, ``A V``): a model whose attention modules
   call transformers' attention interface (``ALL_ATTENTION_FUNCTIONS``) is
   switched to :func:`.attention.lrp_attention` with ``set_attn_implementation``
   for the pass and switched back afterwards.
2. **Leaf modules** (norms, activations, linear layers, routers): their role is
   decided by :func:`.structure.leaf_role` (type, then a probe of what the
   module computes), and a forward hook replaces the module's output by the same
   value with the rule's gradient (:func:`install_rules`).
3. **Operations written inline** in a parent's ``forward`` (gated products,
   fused ``gate_up_proj`` halves, ``torch.tanh`` in a head, ``F.linear`` on
   expert weights): :mod:`.inline` applies the rule of each torch operation as
   it runs, and refuses one without a rule, naming the module.

Mixture-of-experts layers (Mixtral): the router is a leaf module that returns
a top-k selection, and its outputs are held constant (the routing weights
scale each expert's output like fixed coefficients; which experts were chosen
is not explained). The experts are stored as 3-D weight tensors, not
``nn.Linear`` modules, and dispatched by ``config._experts_implementation``;
for the pass it is set to ``"eager"`` (and restored), whose loop runs
``F.linear`` per expert (ε-rule), ``act(gate) * up`` (identity and uniform
rules) and the product with the constant routing weight (linear).

Attention written inline in the module (MPNet, Falcon, DeBERTa-v2's
disentangled attention in transformers 5) gets the same rules operation by
operation (:mod:`.inline_attention`).

So there is no per-family table: a renamed copy of a supported architecture
works as it is. Families that cannot be supported are refused by the same
checks, naming the module that blocks them: attention logits from a fused
product (Bloom's ``baddbmm``), a softmax that is not over square attention
logits, attention variants without a rule (sinks, logit soft-capping),
encoder-decoder models.

Adding a family: build a tiny config of it in ``tests/tiny_models.py`` and add
it to the conservation tests (``tests/test_lrp.py``); if it is refused, the
message names the module and the operation that needs a rule (a new role in
:mod:`.structure` or a new operation in :mod:`.inline`). A missing rule shows
up in the conservation test as relevance that is not conserved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from attnwidget.relevance.attention_interface import this_thread_only
from attnwidget.relevance.lrp.inline import InlineState
from attnwidget.relevance.lrp.rules import epsilon_rule, identity_rule
from attnwidget.relevance.lrp.structure import (
    ACTIVATION,
    LAYER_NORM,
    LINEAR,
    OPEN,
    RMS_NORM,
    ROUTER,
    Role,
    leaf_role,
)


@dataclass
class Installer:
    """Collects the hooks installed for one LRP pass (all removed on exit)."""

    epsilon: float
    handles: list[RemovableHandle] = field(default_factory=list)
    state: InlineState | None = None

    def __post_init__(self) -> None:
        if self.state is None:
            self.state = InlineState(epsilon=self.epsilon)

    def remove(self) -> None:
        while self.handles:
            self.handles.pop().remove()


#: The rule of one leaf module: ``(module, args, output) -> output`` with the rule's gradient.
OutputRule = Callable[[nn.Module, tuple[Any, ...], Any], Any]


def _epsilon(output: Any, epsilon: float) -> Any:
    return epsilon_rule(output, epsilon) if isinstance(output, torch.Tensor) else output


def _linear_rule(epsilon: float, _role: Role) -> OutputRule:
    """Linear layers (``nn.Linear``, GPT-2's ``Conv1D``, affine maps): ε-rule on the output."""
    return lambda _m, _args, out: _epsilon(out, epsilon)


def _activation_rule(_epsilon_value: float, _role: Role) -> OutputRule:
    """Element-wise activations: identity rule ``R_x = R_{f(x)}``."""
    return lambda _m, args, out: identity_rule(args[0], out)


def _rms_norm_rule(epsilon: float, _role: Role) -> OutputRule:
    """RMSNorm ``c ⊙ x / rms(x)`` with rms constant is diagonal in x: identity rule, then ε."""
    return lambda _m, args, out: _epsilon(identity_rule(args[0], out), epsilon)


def _layer_norm_rule(epsilon: float, role: Role) -> OutputRule:
    """LayerNorm with σ constant: ``γ ⊙ (x − mean)/σ + β`` recomputed, ε-rule on it."""

    def rule(module: nn.Module, args: tuple[Any, ...], _out: Any) -> Any:
        x = args[0]
        eps = role.epsilon if role.epsilon is not None else getattr(module, "eps", 1e-5)
        centred = x - x.mean(dim=-1, keepdim=True)
        std = (centred.pow(2).mean(dim=-1, keepdim=True) + eps).sqrt().detach()
        y = centred / std
        weight: Any = getattr(module, "weight", None)  # a tensor when role.gain names it
        bias = getattr(module, "bias", None)
        if role.gain == "weight":
            y = y * weight
        elif role.gain == "1+weight":
            y = y * (1 + weight)
        if isinstance(bias, torch.Tensor) and bias.shape == y.shape[-1:]:
            y = y + bias
        return _epsilon(y, epsilon)

    return rule


def _router_rule(_epsilon_value: float, _role: Role) -> OutputRule:
    """Routers: outputs as constants (routing weights are fixed coefficients)."""

    def rule(_m: nn.Module, _args: tuple[Any, ...], out: Any) -> Any:
        return type(out)(t.detach() if isinstance(t, torch.Tensor) else t for t in out)

    return rule


_RULES: dict[str, Callable[[float, Role], OutputRule]] = {
    LINEAR: _linear_rule,
    ACTIVATION: _activation_rule,
    RMS_NORM: _rms_norm_rule,
    LAYER_NORM: _layer_norm_rule,
    ROUTER: _router_rule,
}


def _install(module: nn.Module, installer: Installer, rule: OutputRule | None) -> None:
    """Hooks that suspend :mod:`.inline` inside the module and apply its rule on its output."""
    state = installer.state
    assert state is not None

    def enter(_m: nn.Module, _args: tuple[Any, ...]) -> None:
        state.stack.append(module)
        state.suspended += 1

    def leave(mod: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        try:  # output None: the module raised (always_call), nothing to rewrite
            return None if rule is None or output is None else rule(mod, args, output)
        finally:
            state.suspended -= 1
            if state.stack and state.stack[-1] is module:
                state.stack.pop()

    # always_call: the stack and the suspension unwind even if the module raises
    # and the model catches it (rules must not stay off for the rest of the pass).
    # Only in this thread: another thread's pass on the model stays plain.
    installer.handles.append(module.register_forward_pre_hook(this_thread_only(enter)))
    installer.handles.append(
        module.register_forward_hook(this_thread_only(leave), always_call=True)
    )


def _track(module: nn.Module, installer: Installer) -> None:
    """Hooks that keep the module stack (for messages) without suspending anything."""
    state = installer.state
    assert state is not None

    def enter(_m: nn.Module, _args: tuple[Any, ...]) -> None:
        state.stack.append(module)

    def leave(_m: nn.Module, _args: tuple[Any, ...], _output: Any) -> None:
        if state.stack and state.stack[-1] is module:
            state.stack.pop()

    installer.handles.append(module.register_forward_pre_hook(this_thread_only(enter)))
    installer.handles.append(
        module.register_forward_hook(this_thread_only(leave), always_call=True)
    )


def roles(model: nn.Module) -> dict[str, Role]:
    """The :class:`~.structure.Role` of every leaf module by path (raises for an unknown one)."""
    return {
        name or type(model).__name__: leaf_role(module, name or type(model).__name__)
        for name, module in model.named_modules()
        if next(module.children(), None) is None
    }


def install_rules(model: nn.Module, installer: Installer, leaf_roles: dict[str, Role]) -> None:
    """Install the leaf rules and the module tracking :mod:`.inline` reports with."""
    state = installer.state
    assert state is not None
    for name, module in model.named_modules():
        path = name or type(model).__name__
        state.names[id(module)] = path
        role = leaf_roles.get(path)
        if role is None:
            _track(module, installer)
        elif role.kind == OPEN:
            _track(module, installer)
        else:
            make = _RULES.get(role.kind)
            _install(module, installer, None if make is None else make(installer.epsilon, role))


def layer_norm(module: nn.Module, installer: Installer) -> None:
    """Install the LayerNorm rule on one module (used on single modules in tests)."""
    _install(module, installer, _layer_norm_rule(installer.epsilon, leaf_role(module, "norm")))


def rms_norm(module: nn.Module, installer: Installer) -> None:
    """Install the RMSNorm rule on one module."""
    _install(module, installer, _rms_norm_rule(installer.epsilon, Role(RMS_NORM, "")))


def activation(module: nn.Module, installer: Installer) -> None:
    """Install the identity rule on one element-wise activation module."""
    _install(module, installer, _activation_rule(installer.epsilon, Role(ACTIVATION, "")))


def epsilon_layer(module: nn.Module, installer: Installer) -> None:
    """Install the ε-rule on one linear module."""
    _install(module, installer, _linear_rule(installer.epsilon, Role(LINEAR, "")))


#: ``config.model_type`` of the families the conservation tests cover (tests/test_lrp.py).
#: Other models with the same building blocks work too; this list is what is tested.
TESTED_MODEL_TYPES = (
    "albert",
    "bert",
    "camembert",
    "deberta-v2",
    "distilbert",
    "electra",
    "falcon",
    "gemma",
    "gpt2",
    "gpt_neox",
    "llama",
    "mistral",
    "mixtral",
    "mpnet",
    "opt",
    "phi3",
    "qwen2",
    "roberta",
    "xlm-roberta",
)


def supported_model_types() -> list[str]:
    """``config.model_type`` values whose LRP conservation is tested, sorted."""
    return sorted(TESTED_MODEL_TYPES)
