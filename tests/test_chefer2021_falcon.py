"""chefer2021 on Falcon: refused clearly where the paper's rules do not reach, run where they do.

Falcon-7B's parallel blocks add the attention output to the MLP's in place
(``mlp_output += attention_output``), a residual the engine cannot match: the
paper's rules must refuse it by name, pointing to AttnLRP relevance, which
does run. Falcon's ALiBi variant (RW-1B, sequential blocks) depends on the
transformers release: older 5.x releases write its attention inline (refused
the same way); newer ones fold ALiBi into the additive mask passed to the
attention interface, a bias in the mask's place like BEiT's relative position
bias, and there the rules apply and relevance is conserved through each block.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_chefer2021_reference import randomise
from test_chefer2021_rules import snapshot, target_score
from tiny_models import build, falcon_alibi_through_interface

import attnwidget
from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.chefer import chefer_rules

TEXT = "the cat sat on the mat"


def refused(family: str) -> bool:
    return family != "falcon-alibi-lm" or not falcon_alibi_through_interface()


@pytest.mark.parametrize("family", ["falcon-lm", "falcon-alibi-lm", "falcon-new-lm"])
def test_falcon_is_refused_by_name_or_runs_and_attnlrp_relevance_runs(family: str) -> None:
    model, tokenizer = build(family)
    before = snapshot(model)
    if refused(family):
        with pytest.raises(ModelNotSupportedError, match="attnlrp"):
            attnwidget.explain(model, tokenizer, TEXT, methods=["chefer2021"])
    else:
        exp = attnwidget.explain(model, tokenizer, TEXT, methods=["chefer2021"])
        assert np.isfinite(exp.scores["chefer2021"]).all()
        assert np.abs(exp.scores["chefer2021"]).max() > 0
    assert snapshot(model) == before
    exp = attnwidget.explain(
        model,
        tokenizer,
        TEXT,
        methods=["chefer2021"],
        method_options={"chefer2021": {"relevance": "attnlrp"}},
    )
    assert exp.details["chefer2021"]["relevance"] == "attnlrp"
    assert snapshot(model) == before


def test_alibi_in_the_mask_conserves_relevance_through_every_block() -> None:
    """Where ALiBi reaches the attention interface as the mask: a one-hot start
    carries a total relevance of 1 into every block, and the attention relevance
    is a share of it (halved at A·V), as for the other causal LMs."""
    if not falcon_alibi_through_interface():
        pytest.skip(
            "this transformers writes Falcon's ALiBi attention inline, which chefer2021 "
            "refuses (tested above)"
        )
    model, tokenizer = build("falcon-alibi-lm")
    randomise(model, seed=3)
    run = target_score(model, tokenizer, "causal-lm").rerun(chefer_rules)
    totals = [float(r.sum()) for r in run.state.block_relevance]
    assert len(totals) == model.config.num_hidden_layers
    assert np.allclose(totals, 1.0, atol=1e-4), totals
    per_layer = run.attention_grads.sum(axis=(1, 2, 3))
    assert np.all(np.abs(per_layer) <= 0.5 + 1e-4) and np.abs(per_layer).max() > 1e-3
    # causal: no relevance above the diagonal
    assert np.all(np.triu(np.abs(run.attention_grads).max(axis=(0, 1)), k=1) == 0)
