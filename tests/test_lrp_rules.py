"""Each AttnLRP rule on a small module, against relevance computed by hand.

The implementation works in gradient × input form: the backward pass is
seeded with ``R_out / out`` at a module's output, and the relevance of an
input ``x`` is read as ``x ⊙ ∂/∂x``. The expected values are written out from
the rule's formula in relevance form (divide by the output, redistribute,
multiply by the input), independently of that trick.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from attnwidget.relevance.lrp.attention import AttentionLedger, active_pass, lrp_attention
from attnwidget.relevance.lrp.families import (
    Installer,
    activation,
    epsilon_layer,
    install_rules,
    layer_norm,
    rms_norm,
    roles,
)
from attnwidget.relevance.lrp.inline import InlineRules
from attnwidget.relevance.lrp.rules import uniform_rule


@pytest.fixture(autouse=True)
def _float64():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def relevance_through(module: nn.Module, x: torch.Tensor, r_out: torch.Tensor, rule, eps: float):
    """Install ``rule`` on ``module`` and return (output, input relevance) for ``r_out``."""
    installer = Installer(epsilon=eps)
    rule(module, installer)
    try:
        x = x.clone().requires_grad_(True)
        out = module(x)
        seed = torch.where(out == 0, 0.0, r_out / torch.where(out == 0, 1.0, out))
        (grad,) = torch.autograd.grad(out, [x], grad_outputs=seed.detach())
    finally:
        installer.remove()
    assert not module._forward_hooks
    return out.detach(), (x * grad).detach()


# ---- linear layer: ε-rule -----------------------------------------------------


def test_linear_epsilon_rule_by_hand() -> None:
    # z = W x + b = [1+2+1, 2-1+0] = [4, 1]; R_z = z (relevance of the output itself).
    layer = nn.Linear(2, 2)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, 1.0], [2.0, -0.5]]))
        layer.bias.copy_(torch.tensor([1.0, 0.0]))
    x = torch.tensor([1.0, 2.0])
    z, r_x = relevance_through(layer, x, torch.tensor([4.0, 1.0]), epsilon_layer, eps=1.0)
    assert torch.allclose(z, torch.tensor([4.0, 1.0]))
    # R_z / (z + ε) = [4/5, 1/2];  R_x0 = 1·(1·0.8 + 2·0.5) = 1.8;  R_x1 = 2·(1·0.8 − 0.5·0.5) = 1.1
    assert torch.allclose(r_x, torch.tensor([1.8, 1.1]))
    # the bias keeps 1·0.8, ε keeps ε·(0.8 + 0.5): 1.8 + 1.1 + 0.8 + 1.3 = 5 = Σ R_z
    assert r_x.sum() + 0.8 + 1.3 == pytest.approx(5.0)


@pytest.mark.parametrize("eps", [0.0, 0.05, 2.0])
def test_linear_epsilon_rule_formula(eps: float) -> None:
    torch.manual_seed(0)
    layer = nn.Linear(5, 4)
    x, r_out = torch.randn(3, 5), torch.randn(3, 4)
    z, r_x = relevance_through(layer, x, r_out, epsilon_layer, eps)
    stabilised = z + eps * torch.where(z >= 0, 1.0, -1.0)
    expected = x * ((r_out / stabilised) @ layer.weight)
    assert torch.allclose(r_x, expected, atol=1e-12)


# ---- softmax rule and the two matmuls of attention ------------------------------


def test_softmax_rule_by_hand() -> None:
    # One query, two keys, d = 1, scaling 1: logits X = q·k = [0, ln 3], A = [1/4, 3/4].
    # Values v = [4, 4/3] make O = A v = 1 + 1 = 2; with R_O = O = 2 the A V rule gives
    # R_A = A ⊙ v ⊙ R_O / (2 O) = [1/4·4, 3/4·4/3] · 2/4 = [1/2, 1/2] and R_V the same.
    # Softmax rule: R_X = X ⊙ (R_A − A ⊙ Σ R_A) = [0, ln 3 · (1/2 − 3/4)] = [0, −ln 3 / 4].
    # Q Kᵀ rule: R_q = Σ_j q k_j R_X,j / (2 q k_j) = Σ_j R_X,j / 2 = −ln 3 / 8, and
    # R_k = [0, −ln 3 / 8]: the softmax's bias absorbed Σ R_A − Σ R_X = 1 + ln 3 / 4.
    q = torch.tensor([[[[1.0]]]], requires_grad=True)
    k = torch.tensor([[[[0.0], [math.log(3.0)]]]], requires_grad=True)
    v = torch.tensor([[[[4.0], [4.0 / 3.0]]]], requires_grad=True)
    r_x, r_a, r_q, r_k, r_v, ledger = _attention_relevance(q, k, v, r_o=torch.tensor(2.0))
    assert torch.allclose(r_a, torch.tensor([0.5, 0.5]))
    assert torch.allclose(r_v.flatten(), torch.tensor([0.5, 0.5]))
    assert torch.allclose(r_q.flatten(), torch.tensor([-math.log(3.0) / 8]))
    assert torch.allclose(r_k.flatten(), torch.tensor([0.0, -math.log(3.0) / 8]))
    assert float(ledger.logit_relevance[0].sum()) == pytest.approx(-math.log(3.0) / 4)
    assert float(r_x.sum()) == pytest.approx(-math.log(3.0) / 4)


def _attention_relevance(q, k, v, r_o, mask=None, scaling=1.0):
    """Run the LRP attention function with the output relevance r_o."""
    ledger = AttentionLedger()
    token = active_pass().set(ledger)
    module = nn.Module().eval()
    try:
        out, weights = lrp_attention(module, q, k, v, mask, scaling=scaling)
        weights.retain_grad()
        seed = r_o / out
        grads = torch.autograd.grad(out, [q, k, v, weights], grad_outputs=seed)
    finally:
        active_pass().reset(token)
    r_q, r_k, r_v, r_a = (t * g for t, g in zip([q, k, v, weights], grads, strict=True))
    r_x = ledger.logit_relevance[0]
    return r_x, r_a.detach().flatten(), r_q.detach(), r_k.detach(), r_v.detach(), ledger


def test_attention_rules_match_their_formulas_on_random_heads() -> None:
    torch.manual_seed(1)
    heads, n, d, scaling = 2, 4, 3, 0.7
    q = torch.randn(1, heads, n, d, requires_grad=True)
    k = torch.randn(1, heads, n, d, requires_grad=True)
    v = torch.randn(1, heads, n, d, requires_grad=True)
    r_o = torch.randn(1, n, heads, d)  # the function returns (B, n, H, d)
    _, r_a, r_q, r_k, r_v, ledger = _attention_relevance(q, k, v, r_o, scaling=scaling)
    # by the formulas, per head, in relevance form (no gradients anywhere):
    q0, k0, v0 = q.detach()[0], k.detach()[0], v.detach()[0]
    p = q0 @ k0.transpose(-1, -2)  # (H, n, n)
    x = scaling * p
    a = torch.softmax(x, dim=-1)
    o = a @ v0
    ro = r_o[0].transpose(0, 1)  # (H, n, d)
    ratio = ro / (2 * o)
    exp_r_a = a * (ratio @ v0.transpose(-1, -2))  # R_A[i,j] = Σ_d A_ij v_jd R_O,id / 2 O_id
    exp_r_v = v0 * (a.transpose(-1, -2) @ ratio)  # R_v[j,d] = Σ_i A_ij v_jd R_O,id / 2 O_id
    exp_r_x = x * (exp_r_a - a * exp_r_a.sum(-1, keepdim=True))
    half = exp_r_x / (2 * p)  # R_P = R_X (a scalar scaling passes relevance on)
    exp_r_q = q0 * (half @ k0)
    exp_r_k = k0 * (half.transpose(-1, -2) @ q0)
    assert torch.allclose(r_a, exp_r_a.flatten(), atol=1e-10)
    assert torch.allclose(r_v[0], exp_r_v, atol=1e-10)
    assert torch.allclose(ledger.logit_relevance[0][0], exp_r_x.sum(-1), atol=1e-10)
    assert torch.allclose(r_q[0], exp_r_q, atol=1e-10)
    assert torch.allclose(r_k[0], exp_r_k, atol=1e-10)
    # the two matmul rules conserve; the softmax rule does not
    assert float(r_a.sum() + r_v.sum()) == pytest.approx(float(r_o.sum()), abs=1e-10)
    assert float(r_q.sum() + r_k.sum()) == pytest.approx(float(exp_r_x.sum()), abs=1e-10)


def test_masked_positions_get_no_relevance() -> None:
    torch.manual_seed(2)
    n = 4
    q, k, v = (torch.randn(1, 1, n, 2, requires_grad=True) for _ in range(3))
    mask = torch.triu(torch.full((n, n), torch.finfo(torch.float64).min), diagonal=1)[None, None]
    r_x, r_a, *_ = _attention_relevance(q, k, v, torch.randn(1, n, 1, 2), mask=mask)
    upper = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1).flatten()
    assert torch.all(r_a[upper] == 0)
    assert torch.isfinite(r_x).all()


# ---- element-wise products: uniform rule -----------------------------------------


def test_uniform_rule_splits_a_product_in_half_by_hand() -> None:
    a = torch.tensor([2.0, 3.0], requires_grad=True)
    b = torch.tensor([4.0, -1.0], requires_grad=True)
    out = uniform_rule(a) * uniform_rule(b)  # [8, -3]; R_out = out
    ga, gb = torch.autograd.grad(out, [a, b], grad_outputs=torch.ones(2))
    assert torch.allclose(a * ga, torch.tensor([4.0, -1.5]))
    assert torch.allclose(b * gb, torch.tensor([4.0, -1.5]))


class GatedMLP(nn.Module):
    """Llama's MLP shape: down(act(gate(x)) * up(x)), no biases."""

    def __init__(self) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(3, 5, bias=False)
        self.up_proj = nn.Linear(3, 5, bias=False)
        self.down_proj = nn.Linear(5, 3, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def run_with_rules(module: nn.Module, x: torch.Tensor, r_out: torch.Tensor):
    """Leaf rules by role and the inline rules, one pass seeded with ``R_out / out``."""
    installer = Installer(epsilon=0.0)
    install_rules(module, installer, roles(module))
    try:
        with InlineRules(installer.state):
            out = module(x)
            (grad,) = torch.autograd.grad(out, [x], grad_outputs=r_out / out)
    finally:
        installer.remove()
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in module.modules())
    return out, grad


def test_gated_mlp_rules_by_formula_and_conservation() -> None:
    torch.manual_seed(3)
    mlp = GatedMLP()
    x = torch.randn(2, 3, requires_grad=True)
    r_out = torch.randn(2, 3)
    out, grad = run_with_rules(mlp, x, r_out)
    # by hand: z-rule on down, half to each factor, identity through SiLU, z-rule on gate/up
    with torch.no_grad():
        g, u = mlp.gate_proj(x), mlp.up_proj(x)
        h = torch.nn.functional.silu(g)
        m = h * u
        r_m = m * ((r_out / out) @ mlp.down_proj.weight)
        r_h = r_u = r_m / 2
        r_g = r_h  # identity rule
        expected = x * ((r_g / g) @ mlp.gate_proj.weight + (r_u / u) @ mlp.up_proj.weight)
    x = x.detach()
    assert torch.allclose(x * grad, expected, atol=1e-10)
    assert float((x * grad).sum()) == pytest.approx(float(r_out.sum()), abs=1e-10)


# ---- element-wise non-linearity: identity rule ----------------------------------


@pytest.mark.parametrize("module", [nn.GELU(), nn.SiLU(), nn.Tanh()])
def test_identity_rule_passes_relevance_unchanged(module: nn.Module) -> None:
    torch.manual_seed(4)
    x = torch.randn(6)
    x[0] = 0.0  # f(0) = 0: no relevance, no NaN
    r_out = torch.randn(6)
    r_out[0] = 0.0
    _, r_x = relevance_through(module, x, r_out, activation, eps=0.0)
    assert torch.allclose(r_x, r_out, atol=1e-12)


# ---- LayerNorm and RMSNorm: normaliser constant ----------------------------------


def test_layer_norm_rule_by_hand() -> None:
    # x = [1, 2, 4, 5]: mean 3, centred [-2, -1, 1, 2], σ = sqrt(2.5 + eps); γ = [1, 2, 0.5, 1],
    # β = 0, so y = [-2, -2, 0.5, 2] / σ. With R_y = y the z-rule gives
    # R_x_i = Σ_j x_i M_ji = x_i (γ_i − mean γ) / σ, mean γ = 1.125.
    norm = nn.LayerNorm(4, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, 0.5, 1.0]))
        norm.bias.zero_()
    x = torch.tensor([1.0, 2.0, 4.0, 5.0])
    y, r_x = relevance_through(norm, x, norm(x).detach(), layer_norm, eps=0.0)
    sigma = math.sqrt(2.5 + 1e-5)
    assert torch.allclose(y, torch.tensor([-2.0, -2.0, 0.5, 2.0]) / sigma)
    assert torch.allclose(r_x, torch.tensor([-0.125, 1.75, -2.5, -0.625]) / sigma)
    assert float(r_x.sum()) == pytest.approx(-1.5 / sigma)  # = Σ y, since β = 0


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_layer_norm_rule_formula_with_bias(eps: float) -> None:
    torch.manual_seed(5)
    norm = nn.LayerNorm(6)
    with torch.no_grad():
        norm.weight.normal_()
        norm.bias.normal_()
    x, r_out = torch.randn(3, 6) * 2 + 1, torch.randn(3, 6)
    y, r_x = relevance_through(norm, x, r_out, layer_norm, eps)
    # y = M x + β per row, M = (I − 1/d) diag... as a matrix: M_ji = (δ_ji − 1/d) γ_j / σ
    d = 6
    expected = []
    for row, r, out in zip(x, r_out, y, strict=True):
        sigma = torch.sqrt(row.var(unbiased=False) + norm.eps)
        m = (torch.eye(d) - 1.0 / d) * norm.weight[:, None] / sigma  # rows j, columns i
        stabilised = out + eps * torch.where(out >= 0, 1.0, -1.0)
        expected.append(row * (m.T @ (r / stabilised)))
    assert torch.allclose(r_x, torch.stack(expected), atol=1e-10)


class RMSNorm(nn.Module):
    """The Llama RMSNorm forward (weight · x / rms(x))."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d))
        self.variance_epsilon = 1e-6

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * (x * scale)


def test_rms_norm_rule_is_the_identity_per_element() -> None:
    # With rms constant the map is diagonal, y_i = (w_i / rms) x_i, so R_x = R_y element-wise.
    torch.manual_seed(6)
    norm = RMSNorm(5)
    x, r_out = torch.randn(2, 5), torch.randn(2, 5)
    y, r_x = relevance_through(norm, x, r_out, rms_norm, eps=0.0)
    assert torch.allclose(y, norm(x).detach())
    assert torch.allclose(r_x, r_out, atol=1e-12)


def test_rules_leave_values_unchanged() -> None:
    torch.manual_seed(7)
    norm, x = nn.LayerNorm(8), torch.randn(3, 8)
    installer = Installer(epsilon=0.01)
    layer_norm(norm, installer)
    ruled = norm(x)
    installer.remove()
    assert np.allclose(ruled.detach().numpy(), norm(x).detach().numpy(), atol=1e-12)
