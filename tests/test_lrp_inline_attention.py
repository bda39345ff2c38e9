"""AttnLRP through softmax attention written inline (as MPNet, Falcon and DeBERTa-v2 do).

A small module computes ``softmax(q·kᵀ/√d + B) · v`` itself, with a constant
relative-position bias ``B``; its relevance is written out by hand in relevance
form (Achtibat et al., 2024): ε-rule (ε = 0) on the projections, uniform rule
on ``q·kᵀ`` and ``A·v``, the softmax rule ``R_X = X ⊙ (R_A − A ⊙ Σ_j R_A,j)``,
and the bias keeping ``B ⊙ (R_X / X)``, its own share of the logits.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.lrp.attention import AttentionLedger
from attnwidget.relevance.lrp.families import Installer, install_rules, roles
from attnwidget.relevance.lrp.inline import InlineRules


@pytest.fixture(autouse=True)
def _float64():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


class InlineAttention(nn.Module):
    """One head of softmax attention written inline, with a constant logit bias."""

    def __init__(self, d: int, n: int, scaled_in_place: bool) -> None:
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.bias = torch.randn(n, n)  # a plain attribute: not a parameter, not an input
        self.scaled_in_place = scaled_in_place
        self.attention: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(self.q(x), self.k(x).transpose(-1, -2))
        if self.scaled_in_place:  # Falcon: scaled in place, bias added to a new tensor
            scores /= math.sqrt(x.shape[-1])
            logits = scores + self.bias
        else:  # MPNet: scaled out of place, bias added in place
            logits = scores / math.sqrt(x.shape[-1])
            logits += self.bias
        self.attention = nn.functional.softmax(logits, dim=-1)
        return self.attention @ self.v(x)


def lrp_pass(module: nn.Module, x: torch.Tensor, r_out: torch.Tensor):
    """Input relevance, the attention map's relevance and the ledger of one pass."""
    installer = Installer(epsilon=0.0)
    ledger = AttentionLedger()
    installer.state.ledger = ledger
    install_rules(module, installer, roles(module))
    x = x.clone().requires_grad_(True)
    try:
        with InlineRules(installer.state):
            out = module(x)
            attention = module.attention
            grads = torch.autograd.grad(out, [x, attention], grad_outputs=(r_out / out).detach())
    finally:
        installer.remove()
    return (x * grads[0]).detach(), (attention * grads[1]).detach(), ledger


@pytest.mark.parametrize("scaled_in_place", [False, True])
def test_inline_attention_relevance_by_hand(scaled_in_place: bool) -> None:
    torch.manual_seed(7)
    n, d = 4, 3
    module = InlineAttention(d, n, scaled_in_place)
    x, r_out = torch.randn(1, n, d), torch.randn(1, n, d)
    r_x, r_a, ledger = lrp_pass(module, x, r_out)
    with torch.no_grad():  # by hand, in relevance form
        q, k, v = module.q(x), module.k(x), module.v(x)
        s = q @ k.transpose(-1, -2) / math.sqrt(d)
        logits = s + module.bias
        a = torch.softmax(logits, dim=-1)
        out = a @ v
        g = r_out / out
        r_attention = a * (g @ v.transpose(-1, -2)) / 2  # uniform rule on A·v
        r_v = v * (a.transpose(-1, -2) @ g) / 2
        # softmax rule: R_X = X ⊙ (R_A − A ⊙ Σ_j R_A,j), i.e. this gradient at X
        g_logits = r_attention - a * r_attention.sum(-1, keepdim=True)
        r_s = s * g_logits  # the bias keeps module.bias * g_logits
        # uniform rule on P = q·kᵀ: R_P = R_s (the 1/√d scale is linear), halved
        g_p = r_s / (q @ k.transpose(-1, -2)) / 2
        r_q = q * (g_p @ k)
        r_k = k * (g_p.transpose(-1, -2) @ q)
        expected = sum(
            x * ((r / z) @ layer.weight)
            for r, z, layer in ((r_q, q, module.q), (r_k, k, module.k), (r_v, v, module.v))
        )
    assert torch.allclose(r_a, r_attention, atol=1e-10)  # the returned map carries R^A
    assert torch.allclose(r_x, expected, atol=1e-10)
    assert ledger.calls == 1
    # the ledger holds the input-dependent part of the logits' relevance, bias excluded
    assert torch.allclose(ledger.logit_relevance[0], r_s.sum(-1), atol=1e-10)
    bias_share = float((module.bias * g_logits).sum())
    assert abs(bias_share) > 1e-3  # the bias does take a share
    absorbed = float(r_attention.sum() - ledger.logit_relevance[0].sum())
    assert float(r_out.sum()) == pytest.approx(float(r_x.sum()) + absorbed, abs=1e-10)


class RouterInline(nn.Module):
    """A router written inline: softmax over 3 experts, not square attention logits."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(4, 3, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.gate(x), dim=-1)


def test_an_inline_softmax_that_is_not_attention_is_refused() -> None:
    with pytest.raises(ModelNotSupportedError, match=r"inner \(RouterInline\).*square"):
        lrp_pass(_Keep(RouterInline()), torch.randn(2, 5, 4), torch.randn(2, 5, 3))


class _Keep(nn.Module):
    """Exposes ``attention`` for lrp_pass (the router's output)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.attention: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.attention = self.inner(x)
        return self.attention
