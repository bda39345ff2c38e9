"""Which rule each module of a supported model gets: the LRP rule table.

LRP needs a rule for every operation that is not linear in the token
embeddings. In a stock Hugging Face Transformer those operations sit in
three places, and each is handled without changing model code:

1. **Attention** (``Q Kᵀ``, softmax, ``A V``): every supported family calls
   transformers' attention interface, so the model is switched to
   :func:`.attention.lrp_attention` with ``set_attn_implementation`` for the
   pass and switched back afterwards.
2. **Modules** (norms, activation modules, linear layers): a forward hook
   replaces the module's output by the same value with the rule's gradient
   (:data:`MODULE_RULES`, keyed by class name).
3. **Operations written inline in a parent's forward** (Llama's gated product
   ``act(gate(x)) * up(x)``, RoBERTa's ``torch.tanh`` in the classifier
   head): hooks on the parent's children rewire exactly that operation
   (:func:`gated_product`, :func:`functional_activation`), listed per family.

Adding a family (about a page): read its ``modeling_*.py``; check that its
attention calls ``ALL_ATTENTION_FUNCTIONS`` with plain softmax attention;
list every module class with a non-linear or multiplicative forward that is
not already in :data:`MODULE_RULES`, and every inline non-linearity or
product, then register a :class:`Family`::

    register_family(Family(
        model_types=("mymodel",),   # config.model_type
        layers="layers",            # the blocks, from model.base_model
        inputs=None,                # module whose 1st input is token + position
        rules={
            "MyRMSNorm": rms_norm,                         # weight · x / rms(x)
            "MyMLP": gated_product("act_fn", "up_proj"),   # act(gate(x)) * up(x)
        },
    ))

An operation none of the helpers fits (e.g. a fused ``gate_up_proj`` split
inside the forward) needs a new helper of the same kind: a forward hook that
returns the same value with the rule's gradient (see :mod:`.rules`). Then add
the family to the conservation tests (``tests/test_lrp.py``): a
missing rule shows up there as relevance that is not conserved. Leaf modules
of an unknown class are refused (:func:`check_supported`), so a new
activation class cannot slip through with its plain gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from ...errors import ModelNotSupportedError
from .rules import epsilon_rule, identity_rule, layer_norm_rule, rms_norm_rule, uniform_rule


@dataclass
class Installer:
    """Collects the hooks installed for one LRP pass (all removed on exit)."""

    epsilon: float
    handles: list[RemovableHandle] = field(default_factory=list)
    installed: set[tuple[int, str]] = field(default_factory=set)

    def once(self, module: nn.Module, what: str) -> bool:
        """True the first time ``what`` is installed on ``module``."""
        key = (id(module), what)
        if key in self.installed:
            return False
        self.installed.add(key)
        return True

    def remove(self) -> None:
        while self.handles:
            self.handles.pop().remove()


#: A rule installs hooks on a module (and perhaps its children).
ModuleRule = Callable[[nn.Module, Installer], None]


def _first(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> Any:
    return args[0] if args else kwargs[name]


# ---- rules on a module's own output -------------------------------------


def epsilon_layer(module: nn.Module, installer: Installer) -> None:
    """Linear layers (``nn.Linear``, GPT-2's ``Conv1D``): ε-rule on the output."""
    if installer.epsilon == 0 or not installer.once(module, "epsilon"):
        return
    epsilon = installer.epsilon
    installer.handles.append(
        module.register_forward_hook(lambda _m, _args, out: epsilon_rule(out, epsilon))
    )


def activation(module: nn.Module, installer: Installer) -> None:
    """Element-wise activation modules: identity rule ``R_x = R_{f(x)}``."""
    if not installer.once(module, "identity"):
        return

    def hook(_module: nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> torch.Tensor:
        return identity_rule(args[0], output)

    installer.handles.append(module.register_forward_hook(hook))


def _normalisation(rule: Callable[[Any, torch.Tensor], torch.Tensor]) -> ModuleRule:
    def install(module: nn.Module, installer: Installer) -> None:
        if not installer.once(module, "norm"):
            return
        epsilon = installer.epsilon

        def hook(mod: nn.Module, args: tuple[Any, ...], _output: torch.Tensor) -> torch.Tensor:
            return epsilon_rule(rule(mod, args[0]), epsilon)

        installer.handles.append(module.register_forward_hook(hook))

    return install


layer_norm = _normalisation(layer_norm_rule)
rms_norm = _normalisation(rms_norm_rule)


# ---- rules on operations written inline in a parent's forward -------------


def gated_product(*factors: str) -> ModuleRule:
    """A parent computing a product of its children's outputs, e.g. Llama's MLP
    ``down(act(gate(x)) * up(x))``: uniform rule, each factor gets ``1/len(factors)``.

    Installed after the leaf rules, so the act's identity rule stays inside.
    """

    def install(module: nn.Module, installer: Installer) -> None:
        for name in factors:
            child = getattr(module, name)
            if installer.once(child, "uniform"):
                parts = len(factors)
                installer.handles.append(
                    child.register_forward_hook(
                        lambda _m, _a, out, parts=parts: uniform_rule(out, parts)
                    )
                )

    install.composite = True  # type: ignore[attr-defined]
    return install


def functional_activation(
    producer: str, consumer: str, fn: Callable[[torch.Tensor], torch.Tensor]
) -> ModuleRule:
    """A parent applying ``fn`` inline between two children, e.g. RoBERTa's head
    ``out_proj(tanh(dense(x)))``: identity rule on ``fn``.

    The producer's output ``z`` is kept; the consumer's input ``fn(z)`` is
    replaced by the same value with the identity rule's gradient to ``z``.
    """

    def install(module: nn.Module, installer: Installer) -> None:
        if not installer.once(module, "functional"):
            return
        kept: dict[str, torch.Tensor] = {}

        def keep(_m: nn.Module, _args: tuple[Any, ...], output: torch.Tensor) -> None:
            kept["z"] = output

        def rewire(
            _m: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> tuple[tuple[Any, ...], dict[str, Any]]:
            z = kept.pop("z", None)
            seen = _first(args, kwargs, "input")
            if z is None or z.shape != seen.shape or not _close(fn(z), seen):
                raise ModelNotSupportedError(
                    f"{type(module).__name__}: the input of {consumer!r} is not "
                    f"{getattr(fn, '__name__', 'fn')}({producer}(…)); its LRP rule does not fit."
                )
            return (identity_rule(z, seen), *args[1:]), kwargs

        child_in, child_out = getattr(module, producer), getattr(module, consumer)
        installer.handles.append(child_in.register_forward_hook(keep))
        installer.handles.append(child_out.register_forward_pre_hook(rewire, with_kwargs=True))

    install.composite = True  # type: ignore[attr-defined]
    return install


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Loose equality (a structural check that also holds in half precision)."""
    return torch.allclose(a.float(), b.float(), rtol=1e-2, atol=1e-3)


# ---- the table ---------------------------------------------------------------

#: Generic rules by module class name (every family).
MODULE_RULES: dict[str, ModuleRule] = {
    "Linear": epsilon_layer,
    "Conv1D": epsilon_layer,
    "LayerNorm": layer_norm,
    **dict.fromkeys(
        [
            "GELUActivation",
            "NewGELUActivation",
            "FastGELUActivation",
            "GELUTanh",
            "AccurateGELUActivation",
            "QuickGELUActivation",
            "ClippedGELUActivation",
            "SiLUActivation",
            "MishActivation",
            "ReLUSquaredActivation",
            "LinearActivation",
            "GELU",
            "SiLU",
            "Tanh",
            "ReLU",
            "LeakyReLU",
        ],
        activation,
    ),
}

#: Leaf modules whose plain gradient already is the LRP rule (or that are not
#: on the path from the embeddings to the logits): lookups, dropout (eval),
#: rotary tables, training losses.
PASSIVE = frozenset({"Embedding", "Dropout", "Identity"})
PASSIVE_SUFFIXES = ("RotaryEmbedding", "Loss")


@dataclass(frozen=True)
class Family:
    """LRP support for one Hugging Face model family.

    Attributes:
        model_types: ``config.model_type`` values it covers.
        layers: dotted path, from ``model.base_model``, to the list of blocks
            (their inputs are recorded as the per-layer relevance).
        inputs: dotted path, from ``model.base_model``, to the module whose
            first input is the full input vector (token + position + segment
            embeddings), or None when the token embedding is the whole input
            (rotary-position models).
        rules: extra rules by module class name (norms, inline products and
            non-linearities of this family).
    """

    model_types: tuple[str, ...]
    layers: str
    inputs: str | None = None
    rules: Mapping[str, ModuleRule] = field(default_factory=dict)


_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Add (or replace) LRP support for ``family.model_types``."""
    for model_type in family.model_types:
        _FAMILIES[model_type] = family
    return family


def supported_model_types() -> list[str]:
    """``config.model_type`` values LRP supports, sorted."""
    return sorted(_FAMILIES)


_BERT_LIKE = dict(layers="encoder.layer", inputs="embeddings.LayerNorm")
register_family(Family(model_types=("bert", "electra"), **_BERT_LIKE))
register_family(
    Family(
        model_types=("roberta",),
        **_BERT_LIKE,
        rules={
            "RobertaClassificationHead": functional_activation("dense", "out_proj", torch.tanh),
            "RobertaLMHead": functional_activation("dense", "layer_norm", torch.nn.functional.gelu),
        },
    )
)
register_family(
    Family(model_types=("distilbert",), layers="transformer.layer", inputs="embeddings.LayerNorm")
)
register_family(Family(model_types=("gpt2",), layers="h", inputs="drop"))
for _prefix, _type in (("Llama", "llama"), ("Qwen2", "qwen2"), ("Mistral", "mistral")):
    register_family(
        Family(
            model_types=(_type,),
            layers="layers",
            rules={
                f"{_prefix}RMSNorm": rms_norm,
                f"{_prefix}MLP": gated_product("act_fn", "up_proj"),
            },
        )
    )


def family_of(model: nn.Module) -> Family:
    """The :class:`Family` of ``model``, or a clear error naming the supported ones."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    family = _FAMILIES.get(str(model_type))
    if family is None:
        raise ModelNotSupportedError(
            f"LRP has no rules for model_type {model_type!r} ({type(model).__name__}); "
            f"supported: {', '.join(supported_model_types())}. To add a family, register a "
            "Family in attnwidget.relevance.lrp.families (its docstring shows how): name the "
            "norm, activation and product modules, then test conservation."
        )
    return family


def rule_for(module: nn.Module, family: Family) -> ModuleRule | None:
    """The rule of one module (family rules first), or None."""
    name = type(module).__name__
    return family.rules.get(name) or MODULE_RULES.get(name)


def check_supported(model: nn.Module) -> Family:
    """:func:`family_of`, plus a refusal of leaf modules of unknown classes."""
    family = family_of(model)
    unknown = sorted(
        {
            type(m).__name__
            for m in model.modules()
            if not any(True for _ in m.children())
            and rule_for(m, family) is None
            and type(m).__name__ not in PASSIVE
            and not type(m).__name__.endswith(PASSIVE_SUFFIXES)
        }
    )
    if unknown:
        raise ModelNotSupportedError(
            f"LRP has no rule for the module class(es) {', '.join(unknown)} in "
            f"{type(model).__name__}; add one to MODULE_RULES or the family's rules in "
            "attnwidget.relevance.lrp.families."
        )
    return family


def install_rules(model: nn.Module, family: Family, installer: Installer) -> None:
    """Install every module rule: leaf rules first, then composite ones."""
    rules = [(m, rule_for(m, family)) for m in model.modules()]
    for composite in (False, True):
        for module, rule in rules:
            if rule is not None and getattr(rule, "composite", False) == composite:
                rule(module, installer)


def submodule(model: nn.Module, path: str) -> nn.Module:
    """``model.base_model`` followed by a dotted attribute path."""
    module = getattr(model, "base_model", model)
    for part in path.split("."):
        module = module[int(part)] if part.isdigit() else getattr(module, part)
    return module
