"""chefer2021 on ViT heads and layers the authors never had, by our extension of their rules.

Chefer, Gur & Wolf (CVPR 2021) wrote rules for BERT and for a ViT that
classifies from its CLS token. Three Hugging Face families go further, and
``attnwidget.relevance.chefer`` gives each the nearest rule of theirs:

* ``DeiTForImageClassificationWithTeacher``: ``(cls_logits +
  distillation_logits) / 2``: the division by a constant passes relevance,
  the sum of the two heads is split like a residual addition (re-normalised);
* ``BeitForImageClassification``: layer scale ``λ · x`` (a constant vector:
  passes, like the paper's scaling), relative position bias added to the
  attention logits (softmax passes relevance, so the bias changes no rule),
  mean of the patch tokens (a linear map with weights 1/N: α1β0), LayerNorm;
* ``Dinov2ForImageClassification`` (and ``...WithRegisters``): layer scale,
  then a linear layer on ``cat(CLS, mean of the patch tokens)``.

Each runs with conservation-like sanity (finite, special tokens 0, every
block's input carrying the unit relevance, the rollout's rows summing to 1),
equals the by-hand reference of ``test_chefer2021_vit_reference`` extended
by those same rules (its ``head`` branches; BEiT's relative position bias
rebuilt by hand at the default grid), and leaves the model exactly as it
was. What still has no rule is refused, naming the operation and AttnLRP.

For BEiT the CLS row (the score) is nearly flat by construction: its head
never reads the CLS token, so hardly any relevance reaches the CLS query;
the reference comparison there is of the whole rollout matrix and R^{A_l}.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_chefer2021_vit_reference import (
    VitReference,
    build,
    compare,
    picture,
    processor,
    randomise,
    rollout,
    scores,
)
from test_restoration import assert_restored, snapshot

import attnwidget
from attnwidget.capture.image import _model_kwargs
from attnwidget.capture.record import ModelCall
from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.chefer import chefer_rules
from attnwidget.relevance.rerun_image import ImageTargetScore

FAMILIES = {"deit-teacher": 2, "beit": 1, "dinov2": 1, "dinov2-registers": 3}


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("size", [32, 48])
def test_each_head_runs_the_rules_and_leaves_the_model_as_it_was(family: str, size: int) -> None:
    model = build(family)
    randomise(model, seed=5)
    model.train()  # not the capture's state: it must come back as it was
    before = snapshot(model)
    proc, image = processor(size), picture(size)
    exp = scores(model, proc, image, start=1)
    ours, specials = exp.scores["chefer2021"], FAMILIES[family]
    assert exp.special_tokens == list(range(specials))
    assert len(ours) == specials + (size // 4) ** 2
    assert np.all(np.isfinite(ours)) and np.all(ours >= 0) and np.all(ours[:specials] == 0)
    maps = exp.details["chefer2021"]["layer_maps"]
    # Images follow the authors' ViT code: I + Ā_l with rows not normalised (≥ 1).
    assert exp.details["chefer2021"]["row_normalise"] is False
    assert np.all(np.isfinite(maps)) and np.all(maps.sum(-1) >= 1.0 - 1e-12)
    assert np.all(rollout(exp).sum(-1) >= 1.0 - 1e-12)
    relevance = exp.details["chefer2021"]["attention_relevance"]
    assert np.all(np.isfinite(relevance)) and np.abs(relevance).max() > 1e-2
    assert_restored(model, before)
    assert all(p.grad is None for p in model.parameters())
    # Conservation: the rules (α1β0, the re-normalised splits, the halved matmuls)
    # hand every block's input the relevance the head leaves, up to the stabiliser:
    # the unit started at the target logit, less what the mean's α1β0 drops (a
    # feature negative at every pooled token has no positive share, and the
    # weights 1/N no negative part to carry it; see rules.TokenMean).
    pixels = proc(images=image, return_tensors="pt")["pixel_values"]
    call = ModelCall(model, "image", _model_kwargs(model, pixels), 0, exp.target_id, [])
    run = ImageTargetScore(call).rerun(chefer_rules)
    totals = [float(r.sum()) for r in run.state.block_relevance]
    assert len(totals) == 3 and np.allclose(totals, totals[-1], atol=1e-4), totals
    assert 0.5 < totals[-1] < 1 + 1e-6, totals
    if size == 32:  # (the reference builds BEiT's position bias at the default grid)
        assert np.isclose(totals[-1], head_total(model, pixels, exp.target_id), atol=1e-4)
    if family == "deit-teacher":  # no mean: the whole unit
        assert np.allclose(totals, 1.0, atol=1e-4), totals
    assert_restored(model, before)


def head_total(model, pixels, target: int) -> float:
    """The relevance the head passes to the last block (1 without a mean), by hand:
    1 less the classifier's relevance on features no pooled token has positive."""
    ref = VitReference(model)
    acts = ref.forward(pixels)
    with torch.no_grad():
        return float(ref.head_relevance(acts, target).sum())


# BEiT at the default grid only: the reference rebuilds its relative position
# bias there (not interpolated to other sizes).
CASES = [(f, size) for f in FAMILIES for size in (32, 48) if f != "beit" or size == 32]


@pytest.mark.parametrize(("family", "size"), CASES)
@pytest.mark.parametrize("start", [1, 0])
def test_each_head_equals_the_reference_extended_by_the_same_rules(
    family: str, size: int, start: int
) -> None:
    model = build(family)
    randomise(model, seed=5)
    for seed in (0, 1):
        gaps = compare(model, size, start, seed, row=family != "beit")
        assert gaps["matrix64"] < 1e-7 and gaps["cam64"] < 1e-6, gaps  # R^A kept in float32
        if family != "beit":
            assert gaps["gap64"] < 1e-4 and gaps["raw64"] < 1e-7, gaps


# ---- what still has no rule ----------------------------------------------------------------


def max_pooled_vit():
    """A ViT classifying the maximum over tokens: no rule of the paper (or ours)."""
    import transformers as tf

    class MaxPooled(tf.ViTForImageClassification):
        def forward(self, pixel_values=None, **kwargs):
            out = self.vit(pixel_values, **kwargs)
            logits = self.classifier(out.last_hidden_state.amax(dim=1))
            return tf.modeling_outputs.ImageClassifierOutput(
                logits=logits, attentions=out.attentions
            )

    model = build("vit")
    other = MaxPooled(model.config).eval()
    other.load_state_dict(model.state_dict())
    return other


def test_a_head_without_a_rule_is_refused_naming_the_operation() -> None:
    model = max_pooled_vit()
    before = snapshot(model)
    with pytest.raises(ModelNotSupportedError, match=r"AmaxBackward0 \(no rule\).*attnlrp"):
        attnwidget.explain(model, processor(), picture(), methods=["chefer2021"])
    assert_restored(model, before)
    options = {"chefer2021": {"relevance": "attnlrp"}}
    exp = attnwidget.explain(
        model, processor(), picture(), methods=["chefer2021"], method_options=options
    )
    assert np.all(np.isfinite(exp.scores["chefer2021"]))
    assert_restored(model, before)
