"""Tests of the shipped subject–verb agreement demo models (attnwidget.demo)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoModelForSequenceClassification,
    AutoTokenizer,
)

from attnwidget import demo
from attnwidget.demo import grammar

NAMES = ("sva-encoder", "sva-causal")
AUTO_CLASS = {"sva-encoder": AutoModelForSequenceClassification, "sva-causal": AutoModelForCausalLM}
OPPOSITE = {"singular": "plural", "plural": "singular"}
NOUNS_OF = {"singular": grammar.SINGULAR_NOUNS, "plural": grammar.PLURAL_NOUNS}


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every attempt to open a network connection fail loudly."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="module")
def loaded() -> dict[str, tuple[object, object]]:
    return {name: demo.load(name) for name in NAMES}


def test_available_lists_every_model() -> None:
    # The two text models here; the shipped ViT has tests/test_demo_vision.py.
    seq2seq = {
        f"seq2seq-{kind}"
        for kind in ("dot", "general", "additive", "location", "scaled_dot", "cosine", "local-p")
    }
    assert set(demo.DEMO_MODELS) == {*NAMES, "shapes-vit", "sva-deceptive", *seq2seq}
    assert demo.available() == dict(demo.DEMO_MODELS)
    assert all(isinstance(d, str) and d for d in demo.available().values())


@pytest.mark.parametrize("name", NAMES)
def test_load_offline(name: str, no_network: None) -> None:
    model, tokenizer = demo.load(name)
    assert not model.training
    assert tokenizer.convert_tokens_to_ids("[UNK]") == tokenizer.unk_token_id
    if name == "sva-encoder":
        assert type(model).__name__ == "BertForSequenceClassification"
        assert model.config.id2label == {0: "singular", 1: "plural"}
        assert model.config.label2id == {"singular": 0, "plural": 1}
    else:
        assert type(model).__name__ == "GPT2LMHeadModel"
    assert model.config.num_hidden_layers >= 4


@pytest.mark.parametrize("name", NAMES)
def test_auto_classes_load_offline_with_eager_attention(name: str, no_network: None) -> None:
    path = demo.model_path(name)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AUTO_CLASS[name].from_pretrained(
        path, local_files_only=True, attn_implementation="eager"
    )
    model.eval()
    enc = tokenizer("The keys to the cabinet", return_tensors="pt")
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    if name == "sva-encoder":
        assert tokens == ["[CLS]", "the", "keys", "to", "the", "cabinet", "[SEP]"]
    else:
        assert tokens == ["[BOS]", "the", "keys", "to", "the", "cabinet"]
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    n = len(tokens)
    assert len(out.attentions) == model.config.num_hidden_layers
    for layer in out.attentions:
        assert layer.shape == (1, model.config.num_attention_heads, n, n)
        torch.testing.assert_close(layer.sum(-1), torch.ones(1, layer.shape[1], n))


@pytest.mark.parametrize("name", NAMES)
def test_saved_config_does_not_pin_attention_implementation(name: str) -> None:
    config = json.loads((demo.model_path(name) / "config.json").read_text())
    assert config.get("attn_implementation") is None
    assert config.get("_attn_implementation") is None


def test_causal_tokenizer_gives_the_model_no_token_types() -> None:
    # GPT-2 adds token type embeddings when given token_type_ids; the causal
    # demo model was trained without them (transformers < 5 returned them
    # unless the saved config names the model's inputs).
    tokenizer = demo.load("sva-causal")[1]
    encoding = tokenizer("the keys to the cabinet", "are")
    assert set(encoding) == {"input_ids", "attention_mask"}


@torch.no_grad()
def _predicted_numbers(model, tokenizer, texts: list[str]) -> list[str]:
    enc = tokenizer(texts, padding=True, return_tensors="pt")
    logits = model(**enc).logits
    if logits.dim() == 2:
        return [model.config.id2label[int(i)] for i in logits.argmax(-1)]
    last = enc["attention_mask"].sum(1) - 1  # right padding: the last real token
    is_id, are_id = tokenizer.convert_tokens_to_ids(["is", "are"])
    final = logits[torch.arange(len(texts)), last]
    return [
        "plural" if final[i, are_id] > final[i, is_id] else "singular" for i in range(len(texts))
    ]


@pytest.mark.parametrize("name", NAMES)
def test_held_out_accuracy_with_attractors(name: str, loaded) -> None:
    model, tokenizer = loaded[name]
    examples = demo.sentences(500, seed=0, split="test", model=name, attractors=True)
    assert len(examples) == 500 and all(ex.attractor_indices for ex in examples)
    predicted = _predicted_numbers(model, tokenizer, [ex.text for ex in examples])
    acc = sum(p == ex.label for p, ex in zip(predicted, examples, strict=True)) / len(examples)
    # Margin, not one run's figure: the shipped weights get 500 of 500 (demo-models page). 0.95
    # allows 25 errors; a retrain that is truly 99 % accurate makes 5 ± 2.2 (binomial
    # sd) and passes with the bound 9 sd away, while chance (two classes) is 0.5.
    assert acc >= 0.95, f"{name}: held-out accuracy with attractors {acc:.3f}"


@pytest.mark.parametrize("name", NAMES)
def test_predictions_follow_the_subject_not_the_attractors(name: str, loaded) -> None:
    """Swapping the subject's number flips the prediction; swapping attractors' does not."""
    model, tokenizer = loaded[name]
    other_form = {n.singular: n.plural for n in grammar.NOUNS} | {
        n.plural: n.singular for n in grammar.NOUNS
    }
    examples = demo.sentences(200, seed=2, model=name)
    original, subject_swapped, attractors_swapped = [], [], []
    for ex in examples:
        tokens = tokenizer.convert_ids_to_tokens(tokenizer(ex.text)["input_ids"])
        a, b = list(tokens), list(tokens)
        a[ex.subject_index] = other_form[a[ex.subject_index]]
        for i in ex.attractor_indices:
            b[i] = other_form[b[i]]
        specials = set(tokenizer.all_special_tokens)
        original.append(ex.text)
        subject_swapped.append(" ".join(t for t in a if t not in specials))
        attractors_swapped.append(" ".join(t for t in b if t not in specials))
    p0 = _predicted_numbers(model, tokenizer, original)
    p1 = _predicted_numbers(model, tokenizer, subject_swapped)
    p2 = _predicted_numbers(model, tokenizer, attractors_swapped)
    # The shipped models: 200 of 200 on both counts; 0.95 allows 10 misses, as for
    # the accuracy above (a model at 99 % misses 2 ± 1.4). A model that read the
    # attractors' number would flip on p2 wherever the swap changes it: all 200.
    assert sum(x != y for x, y in zip(p0, p1, strict=True)) / len(p0) >= 0.95
    assert sum(x == y for x, y in zip(p0, p2, strict=True)) / len(p0) >= 0.95


def test_causal_model_predicts_agreeing_verb_token(loaded) -> None:
    model, tokenizer = loaded["sva-causal"]
    examples = demo.sentences(50, seed=1, model="sva-causal")
    hits = 0
    for ex in examples:
        enc = tokenizer(ex.text, return_tensors="pt")
        with torch.no_grad():
            next_id = int(model(**enc).logits[0, -1].argmax())
        hits += tokenizer.convert_ids_to_tokens(next_id) == ex.verb
    # The verb is the top next token, not just is > are. Shipped: 50 of 50; 0.9 allows
    # 5 misses of 50 (a model at 98 % misses 1 ± 1).
    assert hits / len(examples) >= 0.9


@pytest.mark.parametrize("name", NAMES)
def test_indices_point_at_subject_and_attractors(name: str, loaded) -> None:
    _, tokenizer = loaded[name]
    all_nouns = grammar.SINGULAR_NOUNS | grammar.PLURAL_NOUNS
    for attractors in (True, False, None):
        for ex in demo.sentences(200, seed=5, model=name, attractors=attractors):
            assert ex.verb == {"singular": "is", "plural": "are"}[ex.label]
            tokens = tokenizer.convert_ids_to_tokens(tokenizer(ex.text)["input_ids"])
            assert tokenizer.unk_token not in tokens
            assert tokens[ex.subject_index] in NOUNS_OF[ex.label]
            # The subject is the first noun of the sentence (time phrases use other nouns).
            assert not any(t in all_nouns for t in tokens[: ex.subject_index])
            # Attractors: exactly the nouns of the other number after the subject.
            expected = tuple(
                i
                for i, t in enumerate(tokens)
                if i > ex.subject_index and t in NOUNS_OF[OPPOSITE[ex.label]]
            )
            assert ex.attractor_indices == expected
            assert ex.n_attractors == len(expected)
            if attractors is not None:
                assert bool(ex.attractor_indices) == attractors


def test_sentences_are_deterministic() -> None:
    a = demo.sentences(100, seed=3)
    assert a == demo.sentences(100, seed=3)
    assert a != demo.sentences(100, seed=4)
    assert len({ex.text for ex in a}) == 100
    assert demo.sentences(0, seed=3) == []
    causal = demo.sentences(100, seed=3, model="sva-causal")
    assert [ex.text for ex in causal] == [ex.text for ex in a]
    assert {ex.label for ex in a} == {"singular", "plural"}
    assert max(ex.n_attractors for ex in a) >= 2


def test_train_and_test_splits_are_disjoint() -> None:
    from attnwidget.demo.train import TrainSettings

    settings = TrainSettings()
    training = grammar.generate(
        settings.n_train, seed=settings.seed, split="train", attractors=None, unique=False
    )
    train_texts = {s.text for s in training}
    for attractors in (True, False, None):
        test = demo.sentences(1000, seed=0, split="test", attractors=attractors)
        assert not train_texts & {ex.text for ex in test}
    # Test sentences put a subject noun next to a first following noun (lemmas: "key"
    # stands for "keys" too) that training never puts after that subject.
    lemma = {form: n.singular for n in grammar.NOUNS for form in (n.singular, n.plural)}

    def pairs(sentences: list[grammar.Sentence]) -> set[tuple[str, str]]:
        return {
            (lemma[s.words[s.subject]], lemma[s.words[s.nouns[0]]]) for s in sentences if s.nouns
        }

    test = grammar.generate(1000, seed=0, split="test", attractors=True)
    assert not pairs(training) & pairs(test)
    novel = [s for s in test if s.nouns[0] == s.attractors[0]]
    assert len(novel) > 0.6 * len(test)  # mostly, that first noun is an attractor


def test_shipped_files_are_small_and_tracked() -> None:
    total = 0
    for name in NAMES:
        path = demo.model_path(name)
        for required in ("config.json", "model.safetensors", "tokenizer.json"):
            assert (path / required).is_file(), f"{name}: {required} missing"
        total += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    assert total < 5 * 1024 * 1024, f"demo model files take {total} bytes"
    repo = Path(demo.__file__).resolve().parents[2]
    if shutil.which("git") is None or not (repo / ".git").exists():
        pytest.skip("not a git checkout")
    result = subprocess.run(
        ["git", "check-ignore", "-q", str(demo.model_path(NAMES[0]) / "model.safetensors")],
        cwd=repo,
        check=False,
    )
    assert result.returncode == 1, "demo model files are git-ignored"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": -1}, "non-negative"),
        ({"n": 2.5}, "non-negative"),
        ({"seed": "0"}, "seed"),
        ({"split": "dev"}, "train, test"),
        ({"model": "bert"}, "sva-causal, sva-deceptive, sva-encoder"),
        ({"attractors": "yes"}, "attractors"),
        ({"attractors": 1}, "attractors"),
    ],
)
def test_sentences_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"n": 3, "seed": 0} | kwargs
    with pytest.raises(ValueError, match=match):
        demo.sentences(args.pop("n"), **args)


def test_load_rejects_unknown_name() -> None:
    with pytest.raises(ValueError, match="sva-causal, sva-deceptive, sva-encoder"):
        demo.load("gpt2")
    with pytest.raises(ValueError, match="available"):
        demo.model_path("sva")


@pytest.mark.parametrize("name", NAMES)
def test_training_is_deterministic(name: str) -> None:
    from attnwidget.demo.train import TrainSettings, train_model

    threads = torch.get_num_threads()
    settings = TrainSettings(seed=7, steps=4, n_train=256, batch_size=16, warmup=2)
    first, _ = train_model(name, settings)
    second, _ = train_model(name, settings)
    other, _ = train_model(name, TrainSettings(seed=8, steps=4, n_train=256, batch_size=16))
    a, b, c = first.state_dict(), second.state_dict(), other.state_dict()
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert any(not torch.equal(a[k], c[k]) for k in a)
    assert torch.get_num_threads() == threads  # global torch state restored
