"""chefer2021 on Falcon: refused clearly, never a raw autograd error, the model left as it was.

Falcon writes its attention inline (not through transformers' attention
interface) and changes its fused projections' outputs in place; the paper's
rules must refuse it by name, pointing to AttnLRP relevance, which does run.
"""

from __future__ import annotations

import pytest
from test_chefer2021_rules import snapshot
from tiny_models import build

import attnwidget
from attnwidget.errors import ModelNotSupportedError


@pytest.mark.parametrize("family", ["falcon-lm", "falcon-alibi-lm", "falcon-new-lm"])
def test_falcon_is_refused_by_name_and_attnlrp_relevance_runs(family: str) -> None:
    model, tokenizer = build(family)
    before = snapshot(model)
    with pytest.raises(ModelNotSupportedError, match="attnlrp"):
        attnwidget.explain(model, tokenizer, "the cat sat on the mat", methods=["chefer2021"])
    assert snapshot(model) == before
    exp = attnwidget.explain(
        model,
        tokenizer,
        "the cat sat on the mat",
        methods=["chefer2021"],
        method_options={"chefer2021": {"relevance": "attnlrp"}},
    )
    assert exp.details["chefer2021"]["relevance"] == "attnlrp"
    assert snapshot(model) == before
