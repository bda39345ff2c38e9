"""One API with one name per role: "did you mean" for misspelt keywords, and the
renamed keywords (and attnwidget.lrp) still working for one release, with a
DeprecationWarning, giving exactly what the new names give.

Real models throughout: the shipped demo encoder and causal LM.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import attnwidget
from attnwidget import demo
from attnwidget._keywords import unknown_keywords_message
from attnwidget.errors import InputError
from attnwidget.metrics import average_precision, segmentation_scores

TEXT = "the keys to the cabinet are on the table"
PROMPT = "the keys to the cabinet"
PACKAGE = Path(attnwidget.__file__).parent


@pytest.fixture(scope="module")
def encoder():
    return demo.load("sva-encoder")


@pytest.fixture(scope="module")
def causal():
    return demo.load("sva-causal")


def _one_deprecation(record: list[warnings.WarningMessage]) -> str:
    """The single DeprecationWarning recorded, raised at this test file's call site."""
    deprecations = [w for w in record if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1, [str(w.message) for w in record]
    assert deprecations[0].filename == __file__  # points at the caller, not at attnwidget
    return str(deprecations[0].message)


def _same_explanation(a: attnwidget.Explanation, b: attnwidget.Explanation) -> None:
    assert a.tokens == b.tokens and a.target_id == b.target_id
    assert a.scores.keys() == b.scores.keys()
    for name in a.scores:
        assert np.array_equal(a.scores[name], b.scores[name]), name


# ---- did you mean ------------------------------------------------------------


def test_explain_names_the_keyword_meant(encoder) -> None:
    model, tokenizer = encoder
    with pytest.raises(TypeError) as error:
        attnwidget.explain(model, tokenizer, TEXT, method=["raw"])
    message = str(error.value)
    assert "explain() got unexpected keyword argument 'method'" in message
    assert "did you mean 'methods'?" in message
    assert "method_options" in message  # the valid keywords are listed


def test_explain_generation_names_the_keyword_meant(causal) -> None:
    model, tokenizer = causal
    with pytest.raises(TypeError, match=r"did you mean 'methods'\?"):
        attnwidget.explain_generation(model, tokenizer, PROMPT, method=["raw"])
    with pytest.raises(TypeError, match=r"did you mean 'max_new_tokens'\?"):
        attnwidget.explain_generation(model, tokenizer, PROMPT, max_tokens=2)


def test_evaluate_names_the_keyword_meant(encoder) -> None:
    model, tokenizer = encoder
    with pytest.raises(TypeError, match=r"evaluate\(\).*did you mean 'methods'\?"):
        attnwidget.evaluate(model, tokenizer, [TEXT], method=["raw"], metrics=["auprc"])
    with pytest.raises(TypeError, match=r"did you mean 'metrics'\?"):
        attnwidget.evaluate(model, tokenizer, [TEXT], methods=["raw"], metric=["auprc"])


def test_explain_lrp_names_the_keyword_meant_and_refuses_methods(encoder) -> None:
    model, tokenizer = encoder
    with pytest.raises(TypeError, match=r"explain_lrp\(\).*did you mean 'target'\?"):
        attnwidget.explain_lrp(model, tokenizer, TEXT, traget=0)
    with pytest.raises(TypeError, match=r"did you mean 'epsilon'\?"):
        attnwidget.explain_lrp(model, tokenizer, TEXT, epsilom=0.0)
    with pytest.raises(TypeError, match="drop methods="):
        attnwidget.explain_lrp(model, tokenizer, TEXT, methods=["raw"])


def test_views_use_the_same_helper(encoder) -> None:
    from attnwidget.views.core.base import constructor_options

    model, tokenizer = encoder
    exp = attnwidget.explain(model, tokenizer, TEXT)
    with pytest.raises(TypeError) as error:
        attnwidget.SaliencyView(exp, method="raw")
    expected = unknown_keywords_message(
        "SaliencyView", ["method"], constructor_options(attnwidget.SaliencyView)
    )
    assert str(error.value) == expected
    assert "did you mean 'methods'?" in expected


def test_no_close_name_lists_what_is_taken() -> None:
    message = unknown_keywords_message("f", ["zzz", "methd"], ["methods", "target"])
    assert message.startswith("f() got unexpected keyword arguments 'zzz', 'methd'")
    assert "'zzz' (did" not in message and "'methd' (did you mean 'methods'?)" in message
    assert message.endswith("it takes: methods, target.")


# ---- explain_lrp and the deprecated attnwidget.lrp -----------------------------


def test_explain_lrp_is_explain_with_the_method(encoder) -> None:
    model, tokenizer = encoder
    alone = attnwidget.explain_lrp(model, tokenizer, TEXT, target=1, epsilon=0.0)
    via = attnwidget.explain(
        model, tokenizer, TEXT, target=1, methods=["lrp"], method_options={"lrp": {"epsilon": 0.0}}
    )
    _same_explanation(alone, via)
    assert alone.method_options["lrp"] == via.method_options["lrp"]


def test_lrp_alias_warns_and_gives_the_same(encoder) -> None:
    model, tokenizer = encoder
    new = attnwidget.explain_lrp(model, tokenizer, TEXT, embeddings="input")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        old = attnwidget.lrp(model, tokenizer, TEXT, embeddings="input")
    message = _one_deprecation(record)
    assert "attnwidget.explain_lrp()" in message
    _same_explanation(old, new)
    for key in ("attention_relevance", "input_relevance", "layer_relevance"):
        assert np.array_equal(old.details["lrp"][key], new.details["lrp"][key]), key
    assert "lrp" in attnwidget.available_methods()  # the method keeps its registered name


def test_methods_do_not_import_the_pipeline() -> None:
    # The methods take arrays; the pipeline, above them, drives models.
    offenders = []
    for path in sorted((PACKAGE / "methods").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            offenders += [
                f"{path.relative_to(PACKAGE)}: {n}"
                for n in names
                if n.startswith(("attnwidget.pipeline", "attnwidget.views"))
            ]
    assert offenders == []


# ---- renamed keywords ------------------------------------------------------------


def test_explain_generation_prompt_is_now_text(causal) -> None:
    model, tokenizer = causal
    new = attnwidget.explain_generation(
        model, tokenizer, text=PROMPT, max_new_tokens=2, methods=["raw"]
    )
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        old = attnwidget.explain_generation(
            model, tokenizer, prompt=PROMPT, max_new_tokens=2, methods=["raw"]
        )
    message = _one_deprecation(record)
    assert "prompt=" in message and "use text=" in message
    assert list(old.generated_ids) == list(new.generated_ids)
    assert old.prompt_tokens == new.prompt_tokens
    for name in new.scores:  # NaN where a step has no such position
        assert np.array_equal(old.scores[name], new.scores[name], equal_nan=True), name
    with pytest.raises(TypeError, match="got both text= and its old name prompt="):
        attnwidget.explain_generation(model, tokenizer, text=PROMPT, prompt=PROMPT)


def _evaluate(encoder, keyword: str = "examples", **kwargs):
    """evaluate on three demo sentences, the data passed as ``keyword``."""
    model, tokenizer = encoder
    rows = [
        {"id": f"s{i}", "text": s.text, "label": s.label}
        for i, s in enumerate(demo.sentences(3, seed=5))
    ]
    options = {"methods": ["rollout"], "metrics": ["comprehensiveness_aopc"], "progress": False}
    return attnwidget.evaluate(model, tokenizer, **{keyword: rows}, **options, **kwargs)


def test_evaluate_data_is_now_examples(encoder) -> None:
    new = _evaluate(encoder)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        old = _evaluate(encoder, keyword="data")
    message = _one_deprecation(record)
    assert "data=" in message and "use examples=" in message
    pd.testing.assert_frame_equal(old.per_example, new.per_example)


def test_evaluate_target_predicted_is_now_none(encoder) -> None:
    new = _evaluate(encoder, target=None)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        old = _evaluate(encoder, target="predicted")
    message = _one_deprecation(record)
    assert "target='predicted'" in message and "use target=None" in message
    pd.testing.assert_frame_equal(old.per_example, new.per_example)
    assert old.config == new.config  # same settings, so a results file still resumes
    labelled = _evaluate(encoder, target="label")
    assert labelled.config["target"] == "label"
    with pytest.raises(InputError, match=r"use None .* or 'label'"):
        _evaluate(encoder, target="gold")


# ---- metrics raise InputError ----------------------------------------------------


def test_segmentation_metrics_raise_input_error() -> None:
    with pytest.raises(InputError, match="3 scores for 4 labels"):
        average_precision(np.zeros(3), np.zeros(4, dtype=bool))
    with pytest.raises(InputError, match="1 maps for 2 masks"):
        segmentation_scores([np.zeros((2, 2))], [np.zeros((2, 2), bool)] * 2)
    with pytest.raises(InputError, match=r"shape \(2, 2\) for a mask of shape \(3, 3\)"):
        segmentation_scores([np.zeros((2, 2))], [np.zeros((3, 3), bool)])
