"""attnwidget.diagnostics: each attention intervention against a hand computation, the
experiments on the demo model and a tiny GPT-2 classifier, restoration and bad input."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from transformers import (
    BartConfig,
    BartForSequenceClassification,
    BertConfig,
    BertForSequenceClassification,
    GPT2Config,
    GPT2ForSequenceClassification,
    PretrainedConfig,
)

from attnwidget import demo, diagnostics
from attnwidget.diagnostics import _intervene as iv
from attnwidget.diagnostics import _run as run
from attnwidget.diagnostics.jain_wallace import _tau
from attnwidget.errors import InputError

#: transformers >= 5.0: every supported family calls transformers.AttentionInterface.
HAS_INTERFACE = iv.register(required=False)
needs_interface = pytest.mark.skipif(
    not HAS_INTERFACE, reason="the diagnostics need transformers.AttentionInterface (>=5.0)"
)

TEXTS = ["the keys to the cabinet", "the author that the critics praise", "the dog"]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # Tiny models: a second torch thread only spins against the machine's other work.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def sva():
    return demo.load("sva-encoder")


@pytest.fixture(scope="module")
def tiny_bert(sva):
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(sva[1]),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        initializer_range=0.5,  # outputs large enough to see every edit
        attn_implementation="eager",
    )
    return BertForSequenceClassification(config).eval(), sva[1]


@pytest.fixture(scope="module")
def tiny_gpt2():
    _, tokenizer = demo.load("sva-causal")
    torch.manual_seed(1)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_embd=16,
        n_layer=2,
        n_head=2,
        n_positions=64,
        pad_token_id=tokenizer.pad_token_id,
        attn_implementation="eager",
    )
    return GPT2ForSequenceClassification(config).eval(), tokenizer


def hand_bert_logits(model, ids, layer, change):
    """The BERT classifier's logits with ``layer``'s self-attention written out here."""
    bert, heads = model.bert, model.config.num_attention_heads
    n, hidden = ids.shape[1], model.config.hidden_size
    d = hidden // heads
    with torch.no_grad():
        h = bert.embeddings(input_ids=ids)
        for index, block in enumerate(bert.encoder.layer):
            if index != layer:
                h = block(h)
                h = h[0] if isinstance(h, tuple) else h
                continue
            sa = block.attention.self

            def split(x):
                return x.view(1, n, heads, d).transpose(1, 2)

            q, k, v = split(sa.query(h)), split(sa.key(h)), split(sa.value(h))
            weights = torch.softmax(q @ k.transpose(-1, -2) / d**0.5, dim=-1)
            weights = change(weights)
            context = (weights @ v).transpose(1, 2).reshape(1, n, hidden)
            a = block.attention.output(context, h)
            h = block.output(block.intermediate(a), a)
        return model.classifier(bert.pooler(h))


def run_edit(model, tokenizer, text, edits):
    with iv.intervention(model):
        (example,) = run.prepare(model, tokenizer, [text])
        return run.forward(model, example, edits)


def erase(key, row):
    def change(w):
        w = w.clone()
        w[..., row, key] = 0
        return w / w.sum(-1, keepdim=True)

    return change


@needs_interface
@pytest.mark.parametrize("layer", [0, 1])
def test_interventions_match_a_hand_written_layer(tiny_bert, layer):
    model, tokenizer = tiny_bert
    text = TEXTS[0]
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    n = ids.shape[1]
    plain = hand_bert_logits(model, ids, layer, lambda w: w)
    with torch.no_grad():
        assert torch.allclose(plain, model(input_ids=ids).logits, atol=1e-5)
    reverse = torch.arange(n - 1, -1, -1, dtype=torch.float32).expand(1, 2, n, n)
    cases = [
        (iv.uniform, lambda w: torch.full_like(w, 1.0 / n)),
        (lambda w, a: iv.permute_keys(w, a, reverse), lambda w: w.flip(-1)),
        (iv.remove_key(2, None), erase(2, slice(None))),
        (iv.remove_key(3, torch.arange(n) == 0), erase(3, 0)),
    ]
    for edit, change in cases:
        expected = hand_bert_logits(model, ids, layer, change)
        got = run_edit(model, tokenizer, text, {layer: edit})
        assert torch.allclose(got, expected, atol=1e-5)
        assert float((got - plain).abs().max()) > 1e-3


@needs_interface
def test_public_results_match_the_hand_computation(tiny_bert):
    model, tokenizer = tiny_bert
    ids = tokenizer(TEXTS[0], return_tensors="pt")["input_ids"]
    n = ids.shape[1]
    p = hand_bert_logits(model, ids, 1, lambda w: w).double().softmax(-1)
    q = hand_bert_logits(model, ids, 1, lambda w: torch.full_like(w, 1 / n)).double().softmax(-1)
    result = diagnostics.uniform_baseline(model, tokenizer, TEXTS[:1], layers=1)
    assert result.labels is None and result.layers == [1]
    assert result.tvd[0] == pytest.approx(float(0.5 * (p - q).abs().sum()), abs=1e-6)

    erased = diagnostics.erasure_test(model, tokenizer, TEXTS[:1], layer=1)
    top = int(erased.top[0])
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True)
    row = out.attentions[1][0, :, 0].mean(0)
    assert top == int(torch.argmax(row[1:-1])) + 1  # words only: [CLS] and [SEP] never erased
    q = hand_bert_logits(model, ids, 1, erase(top, 0)).double().softmax(-1)[0]
    m = (p[0] + q) / 2
    jsd = 0.5 * float((p[0] * (p[0] / m).log()).sum() + (q * (q / m).log()).sum())
    assert erased.jsd_top[0] == pytest.approx(jsd, rel=1e-4, abs=1e-9)
    assert erased.random[0] not in (0, n - 1, top)


@needs_interface
@pytest.mark.parametrize("family", ["tiny_bert", "tiny_gpt2"])
def test_identity_permutation_and_one_token_uniform_change_nothing(family, request):
    model, tokenizer = request.getfixturevalue(family)
    with iv.intervention(model):
        (example,) = run.prepare(model, tokenizer, [TEXTS[1]])
        n = example.ids.shape[1]
        order = torch.arange(n, dtype=torch.float32).expand(1, 2, n, n)
        plain = run.forward(model, example)
        for layer in (0, 1):
            edit = {layer: lambda w, a: iv.permute_keys(w, a, order)}
            assert torch.allclose(run.forward(model, example, edit), plain, atol=1e-6)
        one = run.Example("x", example.ids[:, :1], {"attention_mask": torch.ones(1, 1)}, 0, [0])
        everywhere = dict.fromkeys(range(2), iv.uniform)
        assert torch.allclose(run.forward(model, one, everywhere), run.forward(model, one))


@needs_interface
def test_causal_masks_are_respected(tiny_gpt2):
    model, tokenizer = tiny_gpt2
    with iv.intervention(model):
        (example,) = run.prepare(model, tokenizer, [TEXTS[0]])
        n = example.ids.shape[1]
        assert example.query == n - 1  # a causal classifier pools its last token
        with iv.edited({0: iv.uniform}) as state:
            model(input_ids=example.ids)
        expected = torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None]
        assert torch.allclose(state.weights[0][0, 1], expected)
        with iv.edited() as state:
            model(input_ids=example.ids)
        original = state.weights[1][0]
        generator = torch.Generator().manual_seed(0)
        with iv.edited({1: iv.random_permutation(generator)}) as state:
            model(input_ids=example.ids)
        permuted = state.weights[1][0]
        for i in range(n):  # each row: the same weights over keys 0 … i, reordered
            before, after = original[:, i, : i + 1], permuted[:, i, : i + 1]
            assert torch.equal(before.sort(-1).values, after.sort(-1).values)
        assert not torch.equal(original, permuted)
        assert torch.all(torch.triu(permuted, 1) == 0)
        assert torch.allclose(permuted.sum(-1), torch.ones(2, n))


def test_kendall_tau_of_identical_rankings_is_one():
    x = np.array([0.1, 0.5, 0.2, 0.9])
    assert _tau(x, x * 3 + 1)[0] == pytest.approx(1.0)
    assert _tau(x, -x)[0] == pytest.approx(-1.0)
    assert np.isnan(_tau(x, np.ones(4))[0])


def snapshot(model):
    return (
        model.config._attn_implementation,
        [m.training for m in model.modules()],
        [p.requires_grad for p in model.parameters()],
        [
            (len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks))
            for m in model.modules()
        ],
    )


@needs_interface
def test_demo_model_experiments_and_restoration(sva):
    model, tokenizer = sva
    model.train()  # the flags must come back as the caller left them
    before = snapshot(model)
    data = demo.sentences(20, seed=0)
    try:
        tau = diagnostics.rank_correlation(model, tokenizer, data[:8])
        assert snapshot(model) == before
        finite = tau.tau_gradient[np.isfinite(tau.tau_gradient)]
        assert finite.size and np.all(np.abs(finite) <= 1) and tau.layer == 3
        assert "Kendall" in str(tau) and len(tau.to_dataframe()) == 8

        perm = diagnostics.permutation_test(model, tokenizer, data, layer=0, permutations=10)
        assert perm.tvd.shape == (20, 10) and np.all(perm.tvd >= 0) and perm.tvd.max() > 0
        again = diagnostics.permutation_test(model, tokenizer, data, layer=0, permutations=10)
        assert np.array_equal(perm.tvd, again.tvd)  # seeded

        adv = diagnostics.adversarial_attention(
            model, tokenizer, data[:3], epsilon=0.01, steps=30, seed=0
        )
        assert np.all(adv.tvd <= 0.01) and np.all(adv.jsd > 0) and not adv.flipped.any()
        assert adv.attention[0].shape == adv.original[0].shape

        uni = diagnostics.uniform_baseline(model, tokenizer, data)
        summary = uni.summary()
        # The shipped weights: 20 of 20 here (and 500 of 500 on demo.sentences(500,
        # seed=7)); 0.9 allows 2 errors, a retrain truly at 99 % makes 0.2 ± 0.44
        # (binomial sd). Uniform attention: 0.65 here, 0.648 on those 500, so 20 of 20
        # (what would fail the second line) has probability 0.648**20 ≈ 2e-4; chance is 0.5.
        assert summary["accuracy (original)"] >= 0.9
        assert summary["accuracy (uniform)"] < summary["accuracy (original)"]

        era = diagnostics.erasure_test(model, tokenizer, data, layer=0, rows="all")
        # Flip rates, top word vs random word: 0.75 vs 0 here, 0.45-0.75 vs 0 on the
        # seeds 1-5 of 20 sentences, 0.61 vs 0 on 500 (a random word never flips one).
        assert era.flip_top.mean() > era.flip_random.mean()
        assert "flip rate" in str(era)
        assert snapshot(model) == before
    finally:
        model.eval()


@needs_interface
def test_gpt2_classifier_runs_every_experiment(tiny_gpt2):
    model, tokenizer = tiny_gpt2
    before = snapshot(model)
    data = TEXTS[:2]
    assert diagnostics.rank_correlation(model, tokenizer, data, layer=0, head=1).head == 1
    assert diagnostics.permutation_test(model, tokenizer, data, permutations=4).tvd.shape == (2, 4)
    adv = diagnostics.adversarial_attention(model, tokenizer, data, steps=5, epsilon=0.05)
    assert np.all(adv.tvd <= 0.05)
    assert diagnostics.uniform_baseline(model, tokenizer, data, layers=[0]).tvd.shape == (2,)
    assert diagnostics.erasure_test(model, tokenizer, data).top.shape == (2,)
    assert snapshot(model) == before


class BagForSequenceClassification(torch.nn.Module):
    """A classifier with no attention at all."""

    def __init__(self):
        super().__init__()
        self.config = PretrainedConfig(num_labels=2)
        self.embed = torch.nn.EmbeddingBag(1000, 2)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        return SimpleNamespace(logits=self.embed(input_ids))


@needs_interface
def test_bad_input_is_refused_with_the_fix(sva):
    model, tokenizer = sva
    data = TEXTS[:1]
    before = snapshot(model)
    with pytest.raises(InputError, match=r"unknown layer 4.*0 to 3"):
        diagnostics.permutation_test(model, tokenizer, data, layer=4)
    with pytest.raises(InputError, match="unknown layer"):
        diagnostics.uniform_baseline(model, tokenizer, data, layers=[0, -5])
    with pytest.raises(InputError, match="unknown head"):
        diagnostics.rank_correlation(model, tokenizer, data, head=9)
    with pytest.raises(InputError, match="epsilon must be a positive number"):
        diagnostics.adversarial_attention(model, tokenizer, data, epsilon=0)
    with pytest.raises(InputError, match="permutations must be an integer >= 1"):
        diagnostics.permutation_test(model, tokenizer, data, permutations=0)
    with pytest.raises(InputError, match="n >= 1"):
        diagnostics.erasure_test(model, tokenizer, [])
    with pytest.raises(InputError, match="rows must be one of"):
        diagnostics.erasure_test(model, tokenizer, data, rows="some")
    with pytest.raises(InputError, match="no softmax attention"):
        diagnostics.uniform_baseline(BagForSequenceClassification(), tokenizer, data)
    bare = BertForSequenceClassification(model.config).bert
    with pytest.raises(InputError, match="AutoModelForSequenceClassification"):
        diagnostics.uniform_baseline(bare, tokenizer, data)
    bart = BartForSequenceClassification(
        BartConfig(
            vocab_size=len(tokenizer),
            d_model=8,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=8,
            decoder_ffn_dim=8,
        )
    )
    with pytest.raises(InputError, match="encoder–decoder classifier"):
        diagnostics.erasure_test(bart, tokenizer, data)
    assert snapshot(model) == before  # refused mid-experiment, restored all the same
    assert run.fmt(0.123456) == "0.1235" and run.fmt(12345.6) == "1.235e+04"


@pytest.mark.skipif(HAS_INTERFACE, reason="the diagnostics run on this transformers")
def test_older_transformers_is_refused_naming_the_upgrade(sva):
    import transformers

    from attnwidget.errors import ModelNotSupportedError

    model, tokenizer = sva
    before = snapshot(model)
    upgrade = r"pip install -U 'transformers>=5.0'"
    with pytest.raises(ModelNotSupportedError, match=upgrade) as error:
        diagnostics.uniform_baseline(model, tokenizer, TEXTS[:1])
    assert transformers.__version__ in str(error.value)
    assert snapshot(model) == before
