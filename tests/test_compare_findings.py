"""What attnwidget.compare finds on the shipped demo models, where it holds with a margin.

``bench/compare_models.py`` measures every method's agreement and faithfulness
on 60 held-out inputs per model (the tables in docs/guide/compare.md). This
test re-measures a few methods with a loop of :func:`attnwidget.compare` on 24
held-out sentences per text model and 48 images (seed 0) and asserts only the
orderings that are far from their noise there. On six disjoint subsets of the
same sizes (``python bench/compare_models.py --n 24 --subsets 6 --seed 1``,
``--n 48 --models shapes-vit`` for the images) the smallest gaps were (mean ±
sd over the six in brackets):

* sva-deceptive: ρ(input_x_gradient, blank_out) − ρ(raw, input_x_gradient) 0.381
  (mean 0.479 ± 0.12 sd); ρ(lrp, integrated_gradients) − ρ(raw, lrp) 0.888
  (1.014 ± 0.10); ρ(lrp, blank_out) − ρ(raw, blank_out) 0.743 (0.809 ± 0.07);
  top-1 overlap of lrp with blank_out minus raw with lrp 0.667 (0.834 ± 0.09);
  comprehensiveness AOPC of input_x_gradient − raw 0.217 (0.295 ± 0.06), of
  lrp − raw 0.383 (0.501 ± 0.08), of lrp − chefer2021 0.408 (0.518 ± 0.07);
  probability AUC (least relevant first) of lrp − raw 27.7 (40.4 ± 7.1);
* sva-encoder: comprehensiveness of raw − input_x_gradient 0.226 (0.376 ± 0.10);
  ρ(lrp, integrated_gradients) − ρ(raw, lrp) 0.494 (0.695 ± 0.12);
* sva-causal: accuracy AUC (most relevant first) of raw − lrp 14.2 (20.6 ± 4.6);
* shapes-vit: ρ(raw, rollout) − ρ(raw, input_x_gradient) 0.263 (0.330 ± 0.06);
  probability AUC (most relevant first) of input_x_gradient − raw 13.4
  (17.8 ± 4.6); (least relevant first) of raw − input_x_gradient 19.2
  (25.3 ± 3.6) and of rollout − input_x_gradient 13.2 (21.1 ± 4.4). Rollout's
  positive AUC below input_x_gradient's is not asserted: 11.8 (16.7 ± 5.7) on
  48 images, 5.9 on one of six 24-image subsets.

Here (seed 0) the same gaps are 0.546, 1.019, 0.861, 0.917, 0.317, 0.542, 0.567,
47.7 (sva-deceptive), 0.462, 0.815 (sva-encoder), 24.8 (sva-causal) and 0.326,
28.2, 30.6, 28.5 (shapes-vit); the whole test takes about 15 CPU seconds.
Every threshold below sits under the smallest gap and 2.8 sd or more under the
mean. Each assertion can fail: an attention penalty that no longer hides the
subject (raw would agree with lrp and be as comprehensive), a compare that
compared or removed the wrong tokens (the special tokens, or the reversed
order), a method that lost its rules (lrp's agreement with integrated
gradients), or a perturbation that removed the wrong patches would break it.
What does not hold with a margin is not asserted: rollout, on sva-deceptive,
is neither with the attention methods nor with the gradient ones (its
comprehensiveness is 0.45, between raw's 0.03 and lrp's 0.58; docs/guide/compare.md).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import attnwidget
from attnwidget import demo

#: Inputs per model: sentences, and images (whose 0/1 curves are noisier).
COUNT = {"text": 24, "image": 48}
METHODS = {
    "sva-deceptive": [
        "raw",
        "input_x_gradient",
        "blank_out",
        "lrp",
        "integrated_gradients",
        "chefer2021",
    ],
    "sva-encoder": ["raw", "input_x_gradient", "integrated_gradients", "lrp"],
    "sva-causal": ["raw", "lrp"],
    "shapes-vit": ["raw", "rollout", "input_x_gradient"],
}
METRICS = {
    "sva-deceptive": ["comprehensiveness_aopc", "perturbation_prob_auc_neg"],
    "sva-encoder": ["comprehensiveness_aopc"],
    "sva-causal": ["perturbation_auc_pos"],
    "shapes-vit": ["perturbation_prob_auc_pos", "perturbation_prob_auc_neg"],
}


def measure(name: str) -> dict:
    """Means over the inputs: ("rho" | "top1", a, b) and (metric, method) -> value."""
    model, tokenizer = demo.load(name)
    if name == "shapes-vit":
        inputs = [r.image for r in demo.images(COUNT["image"], seed=0, split="test")]
    else:
        inputs = [s.text for s in demo.sentences(COUNT["text"], seed=0, model=name)]
    methods = METHODS[name]
    values: dict = {}
    threads = torch.get_num_threads()
    # One thread, as evaluate runs: two threads on a busy 2-core machine spin.
    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # integrated gradients' convergence notes
        for item in inputs:
            c = attnwidget.compare(model, tokenizer, item, methods=methods, metrics=METRICS[name])
            for i, a in enumerate(methods):
                for b in methods[i + 1 :]:
                    for key, metric in (("rho", "spearman"), ("top1", "top1")):
                        value = float(c.agreement[metric].loc[a, b])
                        values.setdefault((key, a, b), []).append(value)
                        values.setdefault((key, b, a), []).append(value)
            for method in methods:
                for metric in METRICS[name]:
                    values.setdefault((metric, method), []).append(
                        float(c.faithfulness.loc[method, metric])
                    )
    torch.set_num_threads(threads)
    return {key: float(np.nanmean(v)) for key, v in values.items()}


@pytest.fixture(scope="module")
def deceptive() -> dict:
    return measure("sva-deceptive")


@pytest.fixture(scope="module")
def encoder() -> dict:
    return measure("sva-encoder")


def test_on_sva_deceptive_raw_attention_disagrees_with_the_gradient_and_lrp_methods(
    deceptive: dict,
) -> None:
    m = deceptive
    # Here (seed 0): see the assertion messages; gaps on the six subsets in the docstring.
    assert (
        m[("rho", "raw", "input_x_gradient")] < m[("rho", "input_x_gradient", "blank_out")] - 0.15
    ), m
    assert m[("rho", "raw", "lrp")] < m[("rho", "lrp", "integrated_gradients")] - 0.5, m
    assert m[("rho", "raw", "blank_out")] < m[("rho", "lrp", "blank_out")] - 0.4, m
    assert m[("top1", "raw", "lrp")] < m[("top1", "lrp", "blank_out")] - 0.4, m


def test_on_sva_deceptive_the_attention_methods_are_unfaithful(deceptive: dict) -> None:
    m = deceptive
    compr = "comprehensiveness_aopc"
    assert m[(compr, "raw")] < m[(compr, "input_x_gradient")] - 0.1, m
    assert m[(compr, "raw")] < m[(compr, "lrp")] - 0.2, m
    assert m[(compr, "chefer2021")] < m[(compr, "lrp")] - 0.2, m
    neg = "perturbation_prob_auc_neg"
    assert m[(neg, "raw")] < m[(neg, "lrp")] - 15, m


def test_on_sva_encoder_input_x_gradient_is_the_unfaithful_one(encoder: dict) -> None:
    m = encoder
    compr = "comprehensiveness_aopc"
    assert m[(compr, "input_x_gradient")] < m[(compr, "raw")] - 0.1, m
    assert m[("rho", "raw", "lrp")] < m[("rho", "lrp", "integrated_gradients")] - 0.25, m


def test_on_sva_causal_lrp_removes_what_matters_first() -> None:
    m = measure("sva-causal")
    assert m[("perturbation_auc_pos", "lrp")] < m[("perturbation_auc_pos", "raw")] - 5, m


def test_on_shapes_vit_the_attention_maps_agree_and_are_faithful() -> None:
    m = measure("shapes-vit")
    assert m[("rho", "raw", "input_x_gradient")] < m[("rho", "raw", "rollout")] - 0.1, m
    pos, neg = "perturbation_prob_auc_pos", "perturbation_prob_auc_neg"
    assert m[(pos, "raw")] < m[(pos, "input_x_gradient")] - 5, m
    assert m[(neg, "input_x_gradient")] < m[(neg, "raw")] - 10, m
    assert m[(neg, "input_x_gradient")] < m[(neg, "rollout")] - 8, m
