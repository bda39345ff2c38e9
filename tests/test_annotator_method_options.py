"""Annotator(method_options=...): passed to explain() for the score overlay, checked up front."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny_models import build

import attnwidget
from attnwidget.annotations.alignment import align
from attnwidget.errors import InputError
from attnwidget.views import Annotator
from attnwidget.views.core.buffers import decode_float32

TEXT = "the keys to the cabinet are on the table"


def test_the_overlay_scores_use_the_method_options(tmp_path: Path) -> None:
    model, tokenizer = build("bert-cls")
    options = {"rollout": {"head_fusion": "max"}}
    ann = Annotator(
        [TEXT],
        store=tmp_path / "r.sqlite",
        annotator="ana",
        model=model,
        tokenizer=tokenizer,
        methods=["rollout"],
        method_options=options,
        show_scores=True,
    )
    words = decode_float32(ann.scores, ann.shape)[0]
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=["rollout"], method_options=options)
    default = attnwidget.explain(model, tokenizer, TEXT, methods=["rollout"])
    alignment = align(tokenizer, TEXT, input_ids=exp.input_ids)

    def summed(scores: np.ndarray) -> np.ndarray:
        token = np.asarray(scores, dtype=np.float64)
        return np.array([token[alignment.token_words == w].sum() for w in range(len(words))])

    np.testing.assert_allclose(words, summed(exp.scores["rollout"]), rtol=1e-5, atol=1e-7)
    assert not np.allclose(summed(default.scores["rollout"]), words)  # the option changed them


def test_bad_method_options_are_refused_before_any_item(tmp_path: Path) -> None:
    model, tokenizer = build("bert-cls")
    common = dict(store=tmp_path / "r.sqlite", annotator="ana", model=model, tokenizer=tokenizer)
    with pytest.raises(InputError, match="head_fusion"):
        Annotator(
            [TEXT], **common, method_options={"rollout": {"head_fusion": "sum"}}, show_scores=True
        )
    with pytest.raises(InputError, match="lrp"):  # not among the overlay's methods
        Annotator([TEXT], **common, methods=["raw"], method_options={"lrp": {}}, show_scores=True)
    with pytest.raises(InputError, match="add show_scores=True"):
        Annotator([TEXT], **common, method_options={"rollout": {"head_fusion": "max"}})
    with pytest.raises(TypeError, match="did you mean 'method_options'"):
        Annotator([TEXT], **common, method_option={}, show_scores=True)
