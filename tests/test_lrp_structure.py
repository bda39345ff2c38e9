"""Roles by structure: each leaf module's rule from what it computes, inline operations' rules.

Small hand-built modules (no class name LRP knows) against relevance written
out by hand in relevance form (Achtibat et al., 2024: uniform rule on
products, identity rule on element-wise functions and on RMSNorm with the rms
held constant, ε-rule on linear maps).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
from torch import nn

from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.lrp.families import Installer, install_rules, roles
from attnwidget.relevance.lrp.inline import InlineRules
from attnwidget.relevance.lrp.structure import leaf_role


@pytest.fixture(autouse=True)
def _float64():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def relevance(module: nn.Module, x: torch.Tensor, r_out: torch.Tensor) -> torch.Tensor:
    """Input relevance ``x ⊙ ∂/∂x`` of one pass seeded with ``R_out / out``."""
    installer = Installer(epsilon=0.0)
    install_rules(module, installer, roles(module))
    x = x.clone().requires_grad_(True)
    try:
        with InlineRules(installer.state):
            out = module(x)
            (grad,) = torch.autograd.grad(out, [x], grad_outputs=(r_out / out).detach())
    finally:
        installer.remove()
    return (x * grad).detach()


# ---- leaf roles from a probe ---------------------------------------------------------


class Scaled(nn.Module):
    """An RMSNorm under an unknown name: Gemma's ``(1 + w) ⊙ x / rms(x)``."""

    def __init__(self, d: int, offset: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d))
        self.offset = offset

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)
        return (self.offset + self.weight) * (x * scale)


class Centred(nn.Module):
    """A LayerNorm written out under another name."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d))
        self.bias = nn.Parameter(torch.randn(d))
        self.eps = 1e-5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = x - x.mean(-1, keepdim=True)
        return c / torch.sqrt(c.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight + self.bias


class Squash(nn.Module):
    """An element-wise activation nobody registered: x · tanh(softplus(x)) (Mish)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.tanh(nn.functional.softplus(x))


class Router(nn.Module):
    """Top-2 routing like Mixtral's: (logits, weights, indices)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 6))

    def forward(self, x: torch.Tensor):
        logits = x @ self.weight.T
        top, index = logits.softmax(-1).topk(2, dim=-1)
        return logits, top / top.sum(-1, keepdim=True), index


@pytest.mark.parametrize(
    ("module", "kind"),
    [
        (Scaled(6, 0.0), "rms_norm"),
        (Scaled(6, 1.0), "rms_norm"),
        (Centred(6), "layer_norm"),
        (Squash(), "activation"),
        (Router(), "router"),
        (nn.ReLU6(), "activation"),
    ],
)
def test_roles_are_recognised_by_what_the_module_computes(module: nn.Module, kind: str) -> None:
    assert leaf_role(module, "m").kind == kind


def test_layer_norm_copy_gets_its_weight_and_the_rule_of_nn_layer_norm() -> None:
    torch.manual_seed(1)
    copy, stock = Centred(6), nn.LayerNorm(6)
    with torch.no_grad():
        stock.weight.copy_(copy.weight)
        stock.bias.copy_(copy.bias)
    x, r_out = torch.randn(3, 6) * 2 + 1, torch.randn(3, 6)
    assert leaf_role(copy, "m").gain == "weight"
    assert torch.allclose(relevance(copy, x, r_out), relevance(stock, x, r_out), atol=1e-10)


def test_rms_norm_with_one_plus_weight_passes_relevance_unchanged() -> None:
    # rms constant: y_i = (1 + w_i)/rms · x_i is diagonal, so R_x = R_y element-wise
    torch.manual_seed(2)
    x, r_out = torch.randn(2, 6), torch.randn(2, 6)
    assert torch.allclose(relevance(Scaled(6, 1.0), x, r_out), r_out, atol=1e-12)


def test_a_leaf_with_no_role_is_refused_naming_it() -> None:
    mlp = nn.Sequential(nn.Linear(4, 4), nn.Softmax(dim=-1), nn.Linear(4, 4))
    with pytest.raises(ModelNotSupportedError, match=r"role of 1 \(Softmax\)"):
        roles(mlp)


# ---- inline operations ------------------------------------------------------------


class FusedGatedMLP(nn.Module):
    """Phi-3's MLP: one projection, its halves multiplied after an activation."""

    def __init__(self) -> None:
        super().__init__()
        self.gate_up_proj = nn.Linear(3, 10, bias=False)
        self.down_proj = nn.Linear(5, 3, bias=False)
        self.activation_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(up * self.activation_fn(gate))


def test_fused_gate_up_gets_the_uniform_rule_on_both_halves() -> None:
    torch.manual_seed(3)
    mlp, x, r_out = FusedGatedMLP(), torch.randn(2, 3), torch.randn(2, 3)
    r_x = relevance(mlp, x, r_out)
    with torch.no_grad():  # by hand, in relevance form
        z = mlp.gate_up_proj(x)
        g, u = z.chunk(2, dim=-1)
        m = u * nn.functional.silu(g)
        out = mlp.down_proj(m)
        r_m = m * ((r_out / out) @ mlp.down_proj.weight)  # z-rule on down_proj
        r_z = torch.cat([r_m / 2, r_m / 2], dim=-1)  # half to each factor; identity via SiLU
        expected = x * ((r_z / z) @ mlp.gate_up_proj.weight)
    assert torch.allclose(r_x, expected, atol=1e-10)
    assert float(r_x.sum()) == pytest.approx(float(r_out.sum()), abs=1e-10)  # conservative


class TanhHead(nn.Module):
    """A classifier head with ``torch.tanh`` written inline (RoBERTa, XLM-R, CamemBERT)."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = nn.Linear(4, 4, bias=False)
        self.out_proj = nn.Linear(4, 2, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out_proj(torch.tanh(self.dense(x)))


def test_inline_tanh_gets_the_identity_rule() -> None:
    torch.manual_seed(4)
    head, x, r_out = TanhHead(), torch.randn(3, 4), torch.randn(3, 2)
    r_x = relevance(head, x, r_out)
    with torch.no_grad():
        z = head.dense(x)
        h = torch.tanh(z)
        out = head.out_proj(h)
        r_h = h * ((r_out / out) @ head.out_proj.weight)
        expected = x * ((r_h / z) @ head.dense.weight)  # R_z = R_h
    assert torch.allclose(r_x, expected, atol=1e-10)


class InlineNorm(nn.Module):
    """A normalisation written inline in a parent: no rule, refused naming the parent."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        return h / h.norm(dim=-1, keepdim=True)


def test_inline_operation_without_a_rule_is_refused_naming_the_module() -> None:
    module = InlineNorm()
    with pytest.raises(ModelNotSupportedError, match=r"InlineNorm \(InlineNorm\): it runs"):
        relevance(module, torch.randn(2, 4), torch.randn(2, 4))
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in module.modules())
    assert torch._C._len_torch_function_stack() == 0  # the mode is off again


def test_a_layer_norm_over_two_dimensions_is_refused_naming_it() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm((2, 2)))
    with pytest.raises(ModelNotSupportedError, match=r"1 \(LayerNorm\) normalises over more"):
        roles(model)


# ---- a renamed copy of a supported architecture ------------------------------------


def renamed(model: nn.Module) -> nn.Module:
    """Every transformers module class renamed: leaf classes copied under a new name
    (same code, no relation to the original class), the others subclassed under a new
    name; ``model_type`` changed too. (The PreTrainedModel classes keep theirs: their
    output recording is set up per class.)"""
    from transformers import PreTrainedModel

    for module in model.modules():
        cls = type(module)
        if not cls.__module__.startswith("transformers.") or isinstance(module, PreTrainedModel):
            continue
        leaf = next(module.children(), None) is None
        if leaf and cls.__bases__ == (nn.Module,) and "super()." not in inspect.getsource(cls):
            body = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
            module.__class__ = type(f"Copied{len(body)}", (nn.Module,), body)
        else:
            module.__class__ = type(f"Renamed{cls.__name__[::-1]}", (cls,), {})
    model.config.model_type = "my-own-architecture"
    return model


@pytest.mark.parametrize(
    "family",
    [
        "llama-lm",
        "gemma-lm",
        "gpt-neox-lm",
        "albert-cls",
        "mpnet-cls",  # attention written inline, from here on
        "falcon-lm",
        "deberta-v2-cls",
    ],
)
def test_a_renamed_copy_gets_the_same_relevance(family: str) -> None:
    from test_lrp import TEXT, randomise
    from tiny_models import build

    import attnwidget

    torch.set_default_dtype(torch.float32)
    results = []
    for rename in (False, True):
        model, tokenizer = build(family)
        randomise(model, 0, biases=True)
        if rename:
            renamed(model)
            names = {type(m).__name__ for m in model.modules()}
            norms = {n for n in names if "Norm" in n and not hasattr(torch.nn, n)}
            assert not norms  # no model class name says "norm" any more (torch's may)
        exp = attnwidget.explain(
            model, tokenizer, TEXT, methods=["lrp"], method_options={"lrp": {"epsilon": 0.0}}
        )
        results.append(exp.details["lrp"])
    plain, copy = results
    assert plain["target_score"] == copy["target_score"]
    for key in ("input_relevance", "layer_relevance", "attention_relevance"):
        assert np.array_equal(plain[key], copy[key]), key


class TwoInputs(nn.Module):
    """A leaf the probe cannot call with one tensor: checked as it runs."""

    def forward(self, x: torch.Tensor, power: float) -> torch.Tensor:
        return x.pow(power)


class UsesTwoInputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.odd = TwoInputs()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.odd(self.proj(x), 2.0)


def test_a_leaf_the_probe_cannot_call_is_checked_as_it_runs() -> None:
    model = UsesTwoInputs()
    assert roles(model)["odd"].kind == "open"
    with pytest.raises(ModelNotSupportedError, match=r"odd \(TwoInputs\): it runs .*pow"):
        relevance(model, torch.randn(2, 4), torch.randn(2, 4))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_roles_are_the_same_in_half_precision(dtype: torch.dtype) -> None:
    from test_lrp import LRP_FAMILIES
    from tiny_models import build

    for family in LRP_FAMILIES:
        model, _ = build(family)
        full = {path: role.kind for path, role in roles(model).items()}
        half = {path: role.kind for path, role in roles(model.to(dtype)).items()}
        assert half == full, family
