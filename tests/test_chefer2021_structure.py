"""chefer2021's paper rules recognise modules by what they compute, not by their names.

A BERT classifier whose every class is renamed (subclasses under new names, a
new ``model_type``) and whose leaf modules are copies written out under other
names (a dense layer calling ``F.linear``, a LayerNorm calling
``F.layer_norm``, a GELU) must give the same scores, bit for bit, as the
original. XLM-R and CamemBERT (RoBERTa's code under other names) must equal
the authors' algorithm recomputed by hand (``test_chefer2021_reference``).
A family the paper's rules do not cover (Mixtral's router) and an affine
module whose matrix is not a readable parameter are refused naming the
module, leaving the model as it was.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import torch
from test_chefer2021_reference import TEXTS, compare, randomise
from test_chefer2021_rules import snapshot
from tiny_models import build
from torch import nn

import attnwidget
from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.chefer import paper_rules

TEXT = "the keys to the cabinet are on the table"


# ---- copies of BERT's leaf modules under other names --------------------------------


class Dense(nn.Module):
    """A linear layer written out (not an ``nn.Linear``)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        super().__init__()
        self.weight, self.bias = nn.Parameter(weight.clone()), nn.Parameter(bias.clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, self.weight, self.bias)


class DenseInOut(nn.Module):
    """A linear layer keeping its weight (in, out), as GPT-2's Conv1D does."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        super().__init__()
        self.kernel = nn.Parameter(weight.T.contiguous())
        self.bias = nn.Parameter(bias.clone())

    @property
    def weight(self) -> torch.Tensor:
        return self.kernel

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.kernel + self.bias


class Norm(nn.Module):
    """A LayerNorm written out."""

    def __init__(self, stock: nn.LayerNorm) -> None:
        super().__init__()
        self.weight = nn.Parameter(stock.weight.detach().clone())
        self.bias = nn.Parameter(stock.bias.detach().clone())
        self.shape, self.eps = stock.normalized_shape, stock.eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.layer_norm(x, self.shape, self.weight, self.bias, self.eps)


class Squash(nn.Module):
    """BERT's GELU under another name."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(x)


class LowRank(nn.Module):
    """An affine map whose matrix is a product (B A), not its ``weight`` parameter."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(2, d))
        self.up = nn.Parameter(torch.randn(d, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight.T @ self.up.T


def _swap(model: nn.Module, make) -> None:
    """Replace every leaf ``make`` returns a copy for (by its parent's attribute)."""
    for name, module in list(model.named_modules()):
        replacement = make(module)
        if replacement is not None and name:
            parent, _, attr = name.rpartition(".")
            setattr(model.get_submodule(parent), attr, replacement)


def renamed(model: nn.Module, dense: type = Dense) -> nn.Module:
    """``model`` rebuilt from BERT's code under other names, with written-out leaves.

    Every ``Bert*`` class is subclassed as ``Tiny*`` and the model built while
    BERT's module refers to the subclasses (so the classes it builds inside are
    the renamed ones), under a config of a new ``model_type``; then the weights
    are loaded and the leaves replaced by the copies above.
    """
    import transformers.models.bert.modeling_bert as bert

    renames = {
        name: type(name.replace("Bert", "Tiny"), (cls,), {})
        for name, cls in vars(bert).items()
        if name.startswith("Bert") and isinstance(cls, type) and issubclass(cls, nn.Module)
    }
    config_cls = type("TinyConfig", (type(model.config),), {"model_type": "tiny-renamed"})
    settings = {k: v for k, v in model.config.to_dict().items() if k != "model_type"}
    with mock.patch.multiple(bert, **renames):
        other = renames[type(model).__name__](config_cls(**settings))
    other.load_state_dict(model.state_dict())
    other.eval()

    def leaf(module: nn.Module) -> nn.Module | None:
        if isinstance(module, nn.Linear):
            return dense(module.weight.detach(), module.bias.detach())
        if isinstance(module, nn.LayerNorm):
            return Norm(module)
        if type(module).__name__ == "GELUActivation":
            return Squash()
        return None

    _swap(other, leaf)
    return other


def chefer(model: nn.Module, tokenizer, text: str = TEXT):
    return attnwidget.explain(model, tokenizer, text, methods=["chefer2021"])


def test_a_renamed_copy_of_bert_scores_bit_identically() -> None:
    model, tokenizer = build("bert-cls")
    randomise(model, seed=11)
    other = renamed(model)
    # Nothing left that a list of class names or of model types would know.
    names = {type(m).__name__ for m in other.modules()}
    assert not names & {"Linear", "LayerNorm", "GELUActivation", "BertLayer"}
    assert other.config.model_type == "tiny-renamed" and "TinyLayer" in names
    assert sum(isinstance(m, Dense) for m in other.modules()) == 14
    for text in TEXTS:
        ours, theirs = chefer(other, tokenizer, text), chefer(model, tokenizer, text)
        assert np.array_equal(ours.scores["chefer2021"], theirs.scores["chefer2021"])
        r_ours = ours.details["chefer2021"]["attention_relevance"]
        r_theirs = theirs.details["chefer2021"]["attention_relevance"]
        assert np.array_equal(r_ours, r_theirs) and np.abs(r_theirs).max() > 1e-3


def test_a_transposed_weight_layout_gets_the_same_rule() -> None:
    """Weights kept (in, out) under another name: α1β0 reads the probe-found layout."""
    model, tokenizer = build("bert-cls")
    randomise(model, seed=12)
    other = renamed(model, dense=DenseInOut)
    rules = paper_rules(other)
    dense = [path for path, m in other.named_modules() if isinstance(m, DenseInOut)]
    assert len(dense) == 14 and all(rules[p].transposed for p in dense)
    ours, theirs = chefer(other, tokenizer), chefer(model, tokenizer)
    # x @ Wᵀ computed from another memory layout: equal up to float32 rounding
    assert np.allclose(ours.scores["chefer2021"], theirs.scores["chefer2021"], atol=1e-6)


# ---- RoBERTa's code under other names: XLM-R and CamemBERT ---------------------------


def camembert_cls():
    import transformers as tf

    xlmr, tokenizer = build("xlm-roberta-cls")
    config = tf.CamembertConfig(**xlmr.config.to_dict())
    return tf.CamembertForSequenceClassification(config), tokenizer


@pytest.mark.parametrize("family", ["xlm-roberta-cls", "camembert-cls"])
@pytest.mark.parametrize("start", [0, -1])
def test_xlmr_and_camembert_equal_the_authors_algorithm(family: str, start: int) -> None:
    model, tokenizer = camembert_cls() if family == "camembert-cls" else build(family)
    assert model.config.model_type in {"xlm-roberta", "camembert"}
    randomise(model, seed=7)
    # In float64 as well: the rules divide by sums that nearly cancel, so a float32
    # forward drifts ~1e-5 in the raw scores (see test_chefer2021_reference), which
    # min–max over word scores spread by 0.024 turns into 4e-4 on the second text;
    # in float64 the comparison is of the rules, not of float32 rounding.
    spreads = [compare(model, tokenizer, text, start) for text in TEXTS[:1]]
    spreads += [compare(model.double(), tokenizer, text, start) for text in TEXTS]
    assert max(spreads) > 1e-3


def test_camembert_masked_lm_runs_the_paper_rules() -> None:
    model, tokenizer = build("camembert-mlm")
    randomise(model, seed=8)
    text = f"the keys to the {tokenizer.mask_token} are on the table"
    exp = chefer(model, tokenizer, text)
    scores = exp.scores["chefer2021"]
    assert exp.details["chefer2021"]["relevance"] == "paper"
    assert scores.sum() == pytest.approx(1.0, abs=1e-5) and np.ptp(scores) > 1e-3


# ---- what the paper's rules do not cover ----------------------------------------------


def test_a_router_is_refused_naming_it_and_the_model_is_unchanged() -> None:
    model, tokenizer = build("mixtral-lm")
    model.train()
    before = snapshot(model)
    pattern = r"model\.layers\.0\.mlp\.gate \(MixtralTopKRouter\).*router.*relevance.*attnlrp"
    with pytest.raises(ModelNotSupportedError, match=pattern):
        chefer(model, tokenizer)
    assert snapshot(model) == before
    # AttnLRP relevance, which has a rule for routers, is the way the message names.
    exp = attnwidget.explain(
        model,
        tokenizer,
        TEXT,
        methods=["chefer2021"],
        method_options={"chefer2021": {"relevance": "attnlrp"}},
    )
    assert exp.scores["chefer2021"].sum() == pytest.approx(1.0, abs=1e-5)
    assert snapshot(model) == before


def test_an_affine_leaf_without_a_readable_matrix_is_refused() -> None:
    model, tokenizer = build("bert-cls")
    model.bert.encoder.layer[0].attention.output.dense = LowRank(32)
    before = snapshot(model)
    with pytest.raises(
        ModelNotSupportedError, match=r"attention\.output\.dense \(LowRank\).*not the map's matrix"
    ):
        chefer(model, tokenizer)
    assert snapshot(model) == before


def test_an_encoder_decoder_model_is_refused_before_anything_changes() -> None:
    model, tokenizer = build("bart")
    before = snapshot(model)
    with pytest.raises(ModelNotSupportedError, match="encoder-decoder"):
        attnwidget.explain(model, tokenizer, TEXT, methods=["chefer2021"])
    assert snapshot(model) == before


# ---- blocks found per attention call; the Explorer's trial pass --------------------------


def test_albert_shared_layer_is_one_block_per_use() -> None:
    """ALBERT runs one layer (inside a layer group, both ModuleList children) once per
    hidden layer: one block per use, each input carrying the whole relevance."""
    import transformers as tf

    from attnwidget.capture.record import ModelCall
    from attnwidget.relevance.chefer import chefer_rules
    from attnwidget.relevance.rerun import TargetScore

    model, tokenizer = build("albert-cls")
    model = tf.AlbertForSequenceClassification(
        model.config.__class__(**{**model.config.to_dict(), "num_hidden_layers": 3})
    )
    randomise(model, seed=9)
    ids = tokenizer(TEXT)["input_ids"]
    mask = {"attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
    run = TargetScore(ModelCall(model, "encoder", mask, 0, 1, ids)).rerun(chefer_rules)
    blocks = run.state.blocks
    assert len(blocks) == 3 and all(b is blocks[0] for b in blocks)
    assert type(blocks[0]).__name__ == "AlbertLayer"
    totals = [float(r.sum()) for r in run.state.block_relevance]
    assert np.allclose(totals, 1.0, atol=1e-4), totals
    assert np.all(np.abs(run.attention_grads.sum(axis=(1, 2, 3))) > 1e-3)


@pytest.mark.parametrize(
    ("family", "refusal"),
    [("bert-cls", None), ("opt-lm", r"AddBackward0"), ("mixtral-lm", r"MixtralTopKRouter")],
)
def test_a_trial_pass_refuses_what_a_pass_would_and_restores_the_model(
    family: str, refusal: str | None
) -> None:
    from attnwidget.relevance.chefer import check_runs

    model, _ = build(family)
    model.train()
    before = snapshot(model)
    if refusal is None:
        check_runs(model)
    else:
        with pytest.raises(ModelNotSupportedError, match=refusal):
            check_runs(model)
    assert snapshot(model) == before
