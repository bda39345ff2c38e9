"""Is attention explanation? The debate's experiments, run on a sequence classifier.

* Jain & Wallace (2019), "Attention is not Explanation": :func:`rank_correlation`
  (Kendall τ between attention and gradient / leave-one-out importance),
  :func:`permutation_test` (randomly permuted attention) and
  :func:`adversarial_attention` (attention far from the original by JS
  divergence, the prediction within ε).
* Wiegreffe & Pinter (2019), "Attention is not not Explanation":
  :func:`uniform_baseline` (uniform attention, accuracy vs the original) and
  :func:`seed_variance` (attention across models trained with other seeds)
  and :func:`guided_mlp` (the model's frozen attention guiding a
  context-free classifier, against uniform and learned weights).
* Serrano & Smith (2019), "Is Attention Interpretable?": :func:`erasure_test`
  (erase the highest-attention token vs a random one).

The interventions edit the attention probabilities during the forward pass
through an attention function registered with transformers'
``AttentionInterface`` (:mod:`._intervene`; transformers ≥ 5.0), with no
model code forked; the model's attention implementation, hooks, training
flags and parameter flags are restored afterwards. Results are small
dataclasses with ``summary()``, ``to_dataframe()`` (pandas) and a printed
form. ``python -m attnwidget.diagnostics`` runs them all on the
``sva-encoder`` demo model.

Example::

    from attnwidget import demo, diagnostics

    model, tokenizer = demo.load("sva-encoder")
    data = demo.sentences(200, seed=0)
    print(diagnostics.uniform_baseline(model, tokenizer, data))
"""

from __future__ import annotations

from attnwidget.diagnostics.adversarial import AdversarialResult, adversarial_attention
from attnwidget.diagnostics.guided import GuidedResult, guided_mlp
from attnwidget.diagnostics.jain_wallace import (
    PermutationResult,
    RankCorrelation,
    permutation_test,
    rank_correlation,
)
from attnwidget.diagnostics.seeds import SeedVarianceResult, seed_variance
from attnwidget.diagnostics.serrano_smith import ErasureResult, erasure_test
from attnwidget.diagnostics.wiegreffe_pinter import UniformResult, uniform_baseline

__all__ = [
    "AdversarialResult",
    "ErasureResult",
    "GuidedResult",
    "PermutationResult",
    "RankCorrelation",
    "SeedVarianceResult",
    "UniformResult",
    "adversarial_attention",
    "erasure_test",
    "guided_mlp",
    "permutation_test",
    "rank_correlation",
    "seed_variance",
    "uniform_baseline",
]
