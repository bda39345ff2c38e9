"""The paper's LRP rules (attnwidget.relevance.chefer): conservation, halving,
structure recognition, errors, and the relevance="attnlrp" option.

Each rule is checked against its definition written out here (sums over
explicit contributions), not against another call of our code.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_chefer2021_reference import randomise
from tiny_models import build

import attnwidget
from attnwidget.capture.record import ModelCall
from attnwidget.errors import InputError, ModelNotSupportedError
from attnwidget.relevance.chefer import chefer_rules
from attnwidget.relevance.chefer.attention import AttentionCalls, active_pass, chefer_attention
from attnwidget.relevance.chefer.rules import alpha_beta, matmul_split, residual_add
from attnwidget.relevance.rerun import TargetScore

TEXT = "the keys to the cabinet are on the table"


def relevance_of(output: torch.Tensor, seed: torch.Tensor, *inputs: torch.Tensor) -> tuple:
    """Run the relevance pass: the gradient of each input for ``seed`` at ``output``."""
    return torch.autograd.grad(output, inputs, seed)


# ---- the rules, one by one -------------------------------------------------------------


def test_alpha_beta_is_the_positive_contribution_share() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 5, generator=g, dtype=torch.float64)
    r = torch.rand(3, 4, generator=g, dtype=torch.float64)
    (r_x,) = relevance_of(alpha_beta(x, x @ w.T + 1.0, w), r, x)
    # z_ij = x_i w_ji; each output j shares R_j among the positive z_ij.
    contrib = (x.detach()[:, None, :] * w[None]).clamp(min=0)  # (rows, out, in)
    share = contrib / contrib.sum(-1, keepdim=True)
    expected = (share * r[:, :, None]).sum(1)
    assert torch.allclose(r_x, expected, atol=1e-7)
    assert torch.allclose(r_x.sum(), r.sum(), atol=1e-7)  # conserved (bias ignored)


def test_residual_addition_is_renormalised_to_the_incoming_total() -> None:
    g = torch.Generator().manual_seed(1)
    a = torch.randn(2, 4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, 4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    r = torch.randn(2, 4, 3, generator=g, dtype=torch.float64)
    r_a, r_b = relevance_of(residual_add(a, b), r, a, b)
    for i in range(2):  # per example: the whole (positions × features) tensor
        share_a = (a[i] * r[i] / (a[i] + b[i])).detach()
        share_b = (b[i] * r[i] / (a[i] + b[i])).detach()
        sa, sb, total = share_a.sum(), share_b.sum(), r[i].sum()
        assert torch.allclose(r_a[i].sum() + r_b[i].sum(), total, atol=1e-6)
        assert torch.allclose(r_a[i], share_a * (sa.abs() / (sa.abs() + sb.abs())) * total / sa)
        assert torch.allclose(r_b[i], share_b * (sb.abs() / (sa.abs() + sb.abs())) * total / sb)


def test_matmul_split_halves_the_gradient_times_input_parts() -> None:
    g = torch.Generator().manual_seed(2)
    a = torch.rand(2, 3, 4, generator=g, dtype=torch.float64, requires_grad=True) + 0.1
    b = torch.rand(2, 4, 5, generator=g, dtype=torch.float64, requires_grad=True) + 0.1
    r = torch.rand(2, 3, 5, generator=g, dtype=torch.float64)
    r_a, r_b = relevance_of(matmul_split(a, b, 0.5), r, a, b)
    parts = a.detach()[..., :, :, None] * b.detach()[..., None, :, :]  # (2, i, k, j)
    frac = parts / parts.sum(-2, keepdim=True) * r[..., :, None, :]
    assert torch.allclose(r_a, frac.sum(-1) / 2)
    assert torch.allclose(r_b, frac.sum(-3) / 2)
    assert torch.allclose(r_a.sum(), r.sum() / 2) and torch.allclose(r_b.sum(), r.sum() / 2)


def test_attention_halves_at_each_matmul_and_passes_softmax() -> None:
    g = torch.Generator().manual_seed(3)
    q, k, v = (
        torch.rand(1, 2, 4, 3, generator=g, dtype=torch.float64, requires_grad=True)
        for _ in range(3)
    )
    module = torch.nn.Module()
    token = active_pass().set(AttentionCalls())  # a pass in this context: the rules apply
    try:
        out, weights = chefer_attention(module, q, k, v, None, scaling=0.5)
    finally:
        active_pass().reset(token)
    r = torch.rand(out.shape, generator=g, dtype=torch.float64)
    r_a, r_q, r_k, r_v = relevance_of(out, r, weights, q, k, v)
    total = r.sum()
    assert torch.allclose(r_a.sum(), total / 2) and torch.allclose(r_v.sum(), total / 2)
    assert torch.allclose(r_q.sum(), total / 4) and torch.allclose(r_k.sum(), total / 4)
    # The value is the eager one.
    expected = torch.softmax(0.5 * q @ k.transpose(-1, -2), -1) @ v
    assert torch.allclose(out, expected.transpose(1, 2))


# ---- on models ----------------------------------------------------------------------------


def target_score(model, tokenizer, kind: str = "encoder", target: int = 1) -> TargetScore:
    ids = tokenizer(TEXT)["input_ids"]
    row = 0 if kind == "encoder" else len(ids) - 1
    mask = {"attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
    return TargetScore(ModelCall(model, kind, mask, row, target, ids))


def build_copy(family: str):
    """Renamed copies of RoBERTa's blocks (XLM-R, CamemBERT): recognised by structure."""
    import transformers as tf

    roberta, tokenizer = build("roberta-cls")
    config_cls, model_cls = {
        "xlm-roberta-cls": (tf.XLMRobertaConfig, tf.XLMRobertaForSequenceClassification),
        "camembert-cls": (tf.CamembertConfig, tf.CamembertForSequenceClassification),
    }[family]
    return model_cls(config_cls(**roberta.config.to_dict())), tokenizer


@pytest.mark.parametrize(
    "family, kind",
    [
        ("bert-cls", "encoder"),
        ("roberta-cls", "encoder"),
        ("xlm-roberta-cls", "encoder"),
        ("camembert-cls", "encoder"),
        ("electra-cls", "encoder"),
        ("distilbert-cls", "encoder"),
        ("bert-mlm", "masked-lm"),
        ("gpt2-lm", "causal-lm"),
        ("gpt2-cls", "encoder"),
        ("llama-lm", "causal-lm"),
        ("qwen2-lm", "causal-lm"),
        ("mistral-lm", "causal-lm"),
    ],
)
def test_relevance_is_conserved_through_every_block(family: str, kind: str) -> None:
    """A one-hot start: every block's input carries a total relevance of 1."""
    model, tokenizer = (
        build_copy(family) if "-roberta" in family or "camem" in family else build(family)
    )
    randomise(model, seed=3)
    run = target_score(model, tokenizer, kind).rerun(chefer_rules)
    recorder = run.state
    assert len(recorder.blocks) == model.config.num_hidden_layers
    totals = [float(r.sum()) for r in recorder.block_relevance]
    assert np.allclose(totals, 1.0, atol=1e-4), totals
    # The attention relevance is a share of it (halved at A·V).
    per_layer = run.attention_grads.sum(axis=(1, 2, 3))
    assert np.all(np.abs(per_layer) <= 0.5 + 1e-4) and np.abs(per_layer).max() > 1e-3


def test_causal_relevance_stays_below_the_diagonal() -> None:
    model, tokenizer = build("gpt2-lm")
    randomise(model, seed=4)
    run = target_score(model, tokenizer, "causal-lm").rerun(chefer_rules)
    assert np.all(np.triu(np.abs(run.attention_grads).max(axis=(0, 1)), k=1) == 0)


def snapshot(model: torch.nn.Module) -> list:
    """Everything an error must leave as it was: hooks, modes, flags, attention."""
    state = [getattr(model.config, "_attn_implementation", None)]
    for module in model.modules():
        hooks = [
            sorted(getattr(module, name))
            for name in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks")
        ]
        state.append((type(module).__name__, module.training, hooks))
    state += [p.requires_grad for p in model.parameters()]
    return state


def test_a_leaf_module_without_a_role_is_refused_before_anything_changes() -> None:
    """A softmax module where BERT's activation was: no rule of the paper fits it."""
    model, tokenizer = build("bert-cls")
    model.bert.encoder.layer[1].intermediate.intermediate_act_fn = torch.nn.Softmax(dim=-1)
    model.train()  # not the capture's state: it must come back as it was
    before = snapshot(model)
    with pytest.raises(
        ModelNotSupportedError, match=r"chefer2021.*intermediate\.intermediate_act_fn \(Softmax\)"
    ):
        attnwidget.explain(model, tokenizer, TEXT, methods=["chefer2021"])
    assert snapshot(model) == before


def test_an_activation_class_by_what_it_computes() -> None:
    """GPT-2 with ReLU6, a class no name list of ours held: an element-wise activation,
    so relevance passes it unchanged and is conserved through both blocks."""
    import transformers as tf

    _, tokenizer = build("gpt2-lm")
    config = tf.GPT2Config(
        vocab_size=len(tokenizer), n_embd=16, n_layer=2, n_head=2, activation_function="relu6"
    )
    model = tf.GPT2LMHeadModel(config)
    assert isinstance(model.transformer.h[0].mlp.act, torch.nn.ReLU6)
    randomise(model, seed=6)
    run = target_score(model, tokenizer, "causal-lm").rerun(chefer_rules)
    totals = [float(r.sum()) for r in run.state.block_relevance]
    assert len(totals) == 2 and np.allclose(totals, 1.0, atol=1e-4), totals


def test_an_inline_operation_without_a_rule_is_refused_after_the_forward() -> None:
    """A BERT whose activation is a plain function (SiLU) applied inline: its gradient
    would be taken as relevance, so the path check refuses it and restores the model."""
    model, tokenizer = build("bert-cls")
    intermediate = model.bert.encoder.layer[1].intermediate
    del intermediate.intermediate_act_fn  # the GELU module, replaced by a function
    intermediate.intermediate_act_fn = torch.nn.functional.silu
    model.train()  # not the capture's state: it must come back as it was
    before = snapshot(model)
    with pytest.raises(ModelNotSupportedError, match=r"SiluBackward0.*attnlrp"):
        attnwidget.explain(model, tokenizer, TEXT, methods=["chefer2021"])
    assert snapshot(model) == before


def test_option_errors_name_the_fix() -> None:
    model, tokenizer = build("bert-cls")
    with pytest.raises(InputError, match="relevance"):
        attnwidget.explain(
            model,
            tokenizer,
            TEXT,
            methods=["chefer2021"],
            method_options={"chefer2021": {"epsilon": 0.1}},
        )
    with pytest.raises(InputError, match="'paper', 'attnlrp'"):
        attnwidget.explain(
            model,
            tokenizer,
            TEXT,
            methods=["chefer2021"],
            method_options={"chefer2021": {"relevance": "lrp"}},
        )


def test_attnlrp_option_keeps_the_previous_definition() -> None:
    """relevance="attnlrp": R^A of the AttnLRP pass per unit target logit, rolled out."""
    model, tokenizer = build("bert-cls")
    randomise(model, seed=5)
    exp = attnwidget.explain(
        model,
        tokenizer,
        TEXT,
        methods=["lrp", "chefer2021"],
        method_options={"chefer2021": {"relevance": "attnlrp"}},
    )
    d = exp.details["lrp"]
    unit = d["attention_relevance"].astype(np.float64) / d["target_score"]
    grads = exp.attention_grads.astype(np.float64)
    n = len(exp.tokens)
    joint = np.eye(n)
    for g, r in zip(grads, unit, strict=True):
        bar = np.eye(n) + np.clip(g * r, 0, None).mean(0)
        joint = (bar / bar.sum(-1, keepdims=True)) @ joint
    assert np.allclose(exp.scores["chefer2021"], joint[exp.query_index], atol=1e-5)
    assert exp.details["chefer2021"]["relevance"] == "attnlrp"
    paper = attnwidget.explain(model, tokenizer, TEXT, methods=["chefer2021"])
    assert paper.details["chefer2021"]["relevance"] == "paper"
    assert not np.allclose(paper.scores["chefer2021"], exp.scores["chefer2021"], atol=1e-3)


def test_a_successful_pass_leaves_the_model_as_it_was() -> None:
    model, tokenizer = build("gpt2-lm")
    model.train()
    before = snapshot(model)
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=["chefer2021"])
    assert exp.scores["chefer2021"].sum() == pytest.approx(1.0, abs=1e-5)
    assert snapshot(model) == before
