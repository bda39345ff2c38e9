"""Jain & Wallace (2019), "Attention is not Explanation" (NAACL): two of their tests.

* :func:`rank_correlation`: per sentence, Kendall τ between attention and
  gradient importance and between attention and leave-one-out importance,
  over the words (special tokens left out).
* :func:`permutation_test`: how much the prediction moves when one layer's
  attention rows are randomly permuted over their keys during the forward pass.

Their third test, the adversarial attention search, is
:func:`attnwidget.diagnostics.adversarial_attention`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from attnwidget.diagnostics._intervene import intervention, random_permutation
from attnwidget.diagnostics._run import (
    check_layers,
    check_model,
    check_positive,
    layer_count,
    prepare,
    probabilities,
    progress_bar,
    summary_text,
    texts_and_labels,
    total_variation,
)
from attnwidget.errors import InputError

_GRADIENTS = ("input_x_gradient", "integrated_gradients")


def _describe(values: np.ndarray) -> dict[str, float]:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return {"mean": float("nan")}
    q = np.quantile(finite, [0.1, 0.25, 0.5, 0.75, 0.9])
    return {
        "mean": float(finite.mean()),
        "std": float(finite.std()),
        "p10": float(q[0]),
        "p25": float(q[1]),
        "median": float(q[2]),
        "p75": float(q[3]),
        "p90": float(q[4]),
    }


def _tau(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Kendall τ-b and its p-value; NaN for fewer than two items or a constant ranking."""
    from scipy.stats import kendalltau

    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan"), float("nan")
    result = kendalltau(a, b)
    return float(result.statistic), float(result.pvalue)


@dataclass
class RankCorrelation:
    """Kendall τ per sentence: attention vs gradient (``tau_gradient``) and vs leave-one-out.

    Arrays have one entry per sentence (NaN where a sentence has fewer than
    two words or a ranking is constant). ``layer``/``head`` say which
    attention was ranked (``head=None``: the mean over heads).
    """

    texts: list[str]
    tau_gradient: np.ndarray
    tau_loo: np.ndarray
    p_gradient: np.ndarray
    p_loo: np.ndarray
    layer: int
    head: int | None
    gradient: str

    def summary(self) -> dict[str, dict[str, float]]:
        """Mean, spread and quantiles of each τ, and the share of sentences with p < 0.05."""
        out = {}
        for name, tau, p in (
            ("gradient", self.tau_gradient, self.p_gradient),
            ("leave_one_out", self.tau_loo, self.p_loo),
        ):
            stats = _describe(tau)
            stats["share p<0.05"] = float(np.mean(p[np.isfinite(p)] < 0.05)) if p.size else 0.0
            out[name] = stats
        return out

    def to_dataframe(self) -> Any:
        """One row per sentence (pandas)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "text": self.texts,
                "tau_gradient": self.tau_gradient,
                "p_gradient": self.p_gradient,
                "tau_loo": self.tau_loo,
                "p_loo": self.p_loo,
            }
        )

    def __str__(self) -> str:
        head = "mean over heads" if self.head is None else f"head {self.head}"
        parts = [f"Kendall τ, layer {self.layer} ({head}), {len(self.texts)} sentences"]
        for name, stats in self.summary().items():
            label = (
                f"attention vs {self.gradient}"
                if name == "gradient"
                else ("attention vs leave-one-out (blank_out)")
            )
            parts.append(summary_text(label, stats))
        return "\n".join(parts)


def rank_correlation(
    model: Any,
    tokenizer: Any,
    examples: Iterable[Any],
    *,
    layer: int = -1,
    head: int | None = None,
    gradient: str = "input_x_gradient",
    absolute: bool = True,
    progress: bool = False,
) -> RankCorrelation:
    """Kendall τ between attention and gradient / leave-one-out importance (Jain & Wallace 2019).

    The attention ranked is the prediction row's (``[CLS]``, or the last token
    of a causal classifier) in ``layer`` (default: the last), averaged over
    heads, or head ``head``; with the defaults it is exactly the ``raw``
    method. Importance comes from :func:`attnwidget.explain`: ``gradient``
    (``"input_x_gradient"`` or ``"integrated_gradients"``) and ``blank_out``
    (leave one out: the drop in the predicted class's probability when the
    word is replaced by UNK). With ``absolute`` (the default, as Jain &
    Wallace rank gradient magnitudes and the output's total variation
    distance) the importance scores are ranked by magnitude; for two classes
    \\|blank_out\\| is exactly that TVD. τ is scipy's ``kendalltau`` (τ-b)
    over the words, special tokens left out.

    Args:
        examples: strings, or objects with ``.text`` (``demo.sentences(n, seed=...)``).
        progress: a tqdm bar over the sentences.

    Raises:
        InputError: unknown layer or head or gradient method, no examples, not a classifier.
    """
    from attnwidget.pipeline.explain import explain

    check_model(model)
    if gradient not in _GRADIENTS:
        raise InputError(f"gradient must be one of {', '.join(_GRADIENTS)}, not {gradient!r}.")
    texts = [text for text, _ in texts_and_labels(model, examples)]
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    taus: dict[str, list[float]] = {"g": [], "l": [], "pg": [], "pl": []}
    layer_index = head_index = None
    for text in progress_bar(texts, progress, "rank correlation"):
        # keep="all": the per-head maps are read below, whatever the text's length.
        exp = explain(model, tokenizer, text, methods=["raw", gradient, "blank_out"], keep="all")
        if layer_index is None:
            layer_index = check_layers(layer, exp.attentions.shape[0])[0]
            heads = exp.attentions.shape[1]
            if head is not None and (
                isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < heads
            ):
                raise InputError(
                    f"unknown head {head!r}: layer {layer_index} has {heads} heads (0 to "
                    f"{heads - 1}); head=None averages them."
                )
            head_index = head
        maps = exp.attentions[layer_index]
        heads_used = slice(None) if head_index is None else [head_index]
        rows = maps[heads_used, exp.query_index]
        attention = rows.mean(axis=0)
        words = [i for i, t in enumerate(np.asarray(exp.input_ids).tolist()) if t not in special]
        for key, pkey, method in (("g", "pg", gradient), ("l", "pl", "blank_out")):
            scores = np.asarray(exp.scores[method], dtype=float)
            if absolute:
                scores = np.abs(scores)
            tau, p = _tau(attention[words], scores[words])
            taus[key].append(tau)
            taus[pkey].append(p)
    assert layer_index is not None  # texts_and_labels refuses an empty list
    return RankCorrelation(
        texts=texts,
        tau_gradient=np.array(taus["g"]),
        tau_loo=np.array(taus["l"]),
        p_gradient=np.array(taus["pg"]),
        p_loo=np.array(taus["pl"]),
        layer=int(layer_index),
        head=head_index,
        gradient=gradient,
    )


@dataclass
class PermutationResult:
    """Output change under random permutations of one layer's attention rows.

    ``tvd`` and ``flipped`` are (sentences, permutations): the total variation
    distance between the original and the permuted predicted distribution,
    and whether the decision changed. ``max_attention`` is each sentence's
    largest head-mean weight in the layer's prediction row (Jain & Wallace
    stratify by it: peaked attention should matter more).
    """

    texts: list[str]
    tvd: np.ndarray
    flipped: np.ndarray
    max_attention: np.ndarray
    layer: int
    seed: int
    median_tvd: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.median_tvd = np.median(self.tvd, axis=1)

    def summary(self) -> dict[str, float]:
        """Per-sentence median TVD (mean, median), flip rate, sentences with any flip."""
        return {
            "sentences": len(self.texts),
            "permutations": int(self.tvd.shape[1]),
            "mean of median TVD": float(self.median_tvd.mean()),
            "median of median TVD": float(np.median(self.median_tvd)),
            "flip rate (all permutations)": float(self.flipped.mean()),
            "share of sentences with any flip": float(self.flipped.any(axis=1).mean()),
        }

    def to_dataframe(self) -> Any:
        """One row per sentence (pandas)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "text": self.texts,
                "median_tvd": self.median_tvd,
                "max_tvd": self.tvd.max(axis=1),
                "flip_rate": self.flipped.mean(axis=1),
                "max_attention": self.max_attention,
            }
        )

    def __str__(self) -> str:
        return summary_text(
            f"Permuted attention, layer {self.layer} (seed {self.seed})", self.summary()
        )


def permutation_test(
    model: Any,
    tokenizer: Any,
    examples: Iterable[Any],
    *,
    layer: int = -1,
    permutations: int = 100,
    seed: int = 0,
    progress: bool = False,
) -> PermutationResult:
    """Randomly permute ``layer``'s attention during the forward pass (Jain & Wallace 2019).

    Every row of every head of the layer gets its own uniformly random
    permutation over the keys it may attend to (its mask's keys; all of them
    for one unpadded sentence in an encoder, keys ≤ i in a causal model),
    drawn from a ``torch.Generator`` seeded with ``seed``; the other layers
    run as usual (their inputs change when the layer is not the last). Each
    sentence is run ``permutations`` times.

    Raises:
        InputError: unknown layer, permutations < 1, no examples, not a classifier.
    """
    check_model(model)
    check_positive("permutations", permutations)
    generator = torch.Generator().manual_seed(int(seed))
    with intervention(model):
        prepared = prepare(model, tokenizer, examples)
        index = check_layers(layer, layer_count(model, prepared[0]))[0]
        tvds, flips, peaks = [], [], []
        for example in progress_bar(prepared, progress, "permutation"):
            from attnwidget.diagnostics._intervene import edited

            with edited() as state, torch.no_grad():
                original = model(input_ids=example.ids, **example.kwargs).logits.double()
            original = original.softmax(-1)
            row = state.weights[index][0, :, example.query].float().mean(0)
            peaks.append(float(row.max()))
            edit = random_permutation(generator)
            permuted = probabilities(model, example, {index: edit}, copies=permutations)
            tvds.append(total_variation(permuted, original).cpu().numpy())
            flips.append((permuted.argmax(-1) != original.argmax(-1)).cpu().numpy())
    return PermutationResult(
        texts=[e.text for e in prepared],
        tvd=np.stack(tvds),
        flipped=np.stack(flips),
        max_attention=np.array(peaks),
        layer=index,
        seed=int(seed),
    )
