"""Faithfulness of every method on the shipped demo models (subject–verb agreement).

Run: ``python bench/faithfulness.py [--n 500] [--seed 0] [--models sva-encoder sva-causal]``.

For each demo model and each of ``n`` held-out sentences with attractors
(``attnwidget.demo.sentences(n, seed=seed)``), every method explains the gold
target (the encoder's class label, the causal LM's agreeing verb) through
:func:`attnwidget.explain`. Candidate tokens are the words: special tokens
and the query position itself are left out (for the causal LM the query is
the last word; rollout-like methods give it a share by construction).

* **Subject top-1 rate**: how often the highest-scored word is the subject's
  head noun (``subject_index``).
* **Perturbation AUC** (Chefer et al., CVPR 2021, section 5): the words are
  replaced by ``[UNK]`` (positions and length stay as they are; deleting words
  would shift every position and mix two effects) in order of the method's
  scores, most relevant first (*positive*, lower is better) or least relevant
  first (*negative*, higher is better), 0 %, 10 %, …, 90 % of the words
  (``round(f·m)`` of the m words at fraction f). At each step, over all
  sentences: **accuracy** (the encoder predicts the gold class; the causal LM
  scores the agreeing verb above the other one) and the mean **target
  probability** (softmax over all classes / the whole vocabulary). AUC = the
  trapezoid rule over the fractions 0 … 0.9 (x in fractions), ×100, so a
  curve that stays at 1 gives 90. ``random`` (a seeded random order) is the
  reference a method should beat. The curves come from
  :func:`attnwidget.metrics.perturbation_curve_tokens` (least relevant first:
  ascending scores, ties by position).

Prints markdown tables; :func:`evaluate` returns the numbers (used by
``tests/test_faithfulness.py``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np
import torch

import attnwidget
from attnwidget import demo
from attnwidget.metrics import (
    FRACTIONS,
    area_under_curve,
    perturbation_curve_tokens,
    removal_order,
)

METHODS = [
    "raw",
    "rollout",
    "flow",
    "grad_attention",
    "input_x_gradient",
    "integrated_gradients",
    "blank_out",
    "lrp",
    "chefer2021",
]


@dataclass
class Result:
    """Per-method numbers for one model."""

    subject_rate: dict[str, float] = field(default_factory=dict)
    # curves[(method, order)] = (accuracy per fraction, probability per fraction)
    curves: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def auc(self, method: str, order: str, metric: str) -> float:
        accuracy, probability = self.curves[(method, order)]
        return area_under_curve(accuracy if metric == "accuracy" else probability)


def _targets(model_name: str, example: demo.SVAExample) -> str:
    return example.label if model_name == "sva-encoder" else example.verb


def _scorer(model, tokenizer, model_name: str, target: str):
    """ids (B, n) -> (B, 2): whether each prediction is right, and the target probability."""
    if model_name == "sva-encoder":
        gold = model.config.label2id[target]

        def score(ids: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                probs = model(input_ids=torch.as_tensor(ids)).logits.float().softmax(-1)
            return np.stack([(probs.argmax(-1) == gold).numpy(), probs[:, gold].numpy()], 1)

        return score
    verbs = {
        "is": tokenizer.convert_tokens_to_ids("is"),
        "are": tokenizer.convert_tokens_to_ids("are"),
    }
    gold, other = verbs[target], verbs["are" if target == "is" else "is"]

    def score(ids: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            logits = model(input_ids=torch.as_tensor(ids)).logits[:, -1].float()
        probs = logits.softmax(-1)
        return np.stack([(logits[:, gold] > logits[:, other]).numpy(), probs[:, gold].numpy()], 1)

    return score


def evaluate(
    model_name: str,
    n: int,
    seed: int,
    methods: list[str] | None = None,
    options: dict[str, dict] | None = None,
) -> Result:
    """Subject rates and perturbation curves of ``methods`` (+ ``random``) on one demo model.

    ``options`` are per-method options for :func:`attnwidget.explain`.
    """
    methods = list(METHODS if methods is None else methods)
    model, tokenizer = demo.load(model_name)
    model.eval()
    examples = demo.sentences(n, seed=seed, model=model_name)
    rng = np.random.default_rng(seed)
    blank = tokenizer.unk_token_id
    hits = dict.fromkeys(methods, 0)
    # sums[(method, order)]: (fractions, 2) accuracy and probability summed over sentences
    sums = {
        (m, o): np.zeros((len(FRACTIONS), 2))
        for m in [*methods, "random"]
        for o in ("positive", "negative")
    }
    for example in examples:
        target = _targets(model_name, example)
        exp = attnwidget.explain(
            model, tokenizer, example.text, target=target, methods=methods, method_options=options
        )
        is_word = ~np.isin(exp.input_ids, tokenizer.all_special_ids)
        is_word[exp.query_index] = False
        words = np.flatnonzero(is_word)
        score = _scorer(model, tokenizer, model_name, target)
        for name in methods:
            scores = exp.scores[name]
            top = words[removal_order(scores[words], positive=True)[0]]
            hits[name] += int(top == example.subject_index)
            for kind in ("positive", "negative"):
                curve = perturbation_curve_tokens(
                    score,
                    exp.input_ids,
                    scores,
                    replacement_id=blank,
                    candidates=words,
                    positive=kind == "positive",
                )
                sums[(name, kind)] += curve.values
        shuffled = rng.permutation(words)
        for kind, order in (("positive", shuffled), ("negative", shuffled[::-1])):
            curve = perturbation_curve_tokens(
                score, exp.input_ids, order=order, replacement_id=blank
            )
            sums[("random", kind)] += curve.values
    result = Result(subject_rate={m: hits[m] / len(examples) for m in methods})
    for key, total in sums.items():
        result.curves[key] = (total[:, 0] / len(examples), total[:, 1] / len(examples))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", default=["sva-encoder", "sva-causal"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    methods = [m for m in METHODS if m in attnwidget.available_methods()]
    for model_name in args.models:
        start = time.perf_counter()
        result = evaluate(model_name, args.n, args.seed, methods)
        print(f"\n## {model_name}: {args.n} held-out sentences with attractors, seed {args.seed}")
        print(f"({time.perf_counter() - start:.0f} s; words replaced by [UNK])\n")
        print(
            "| method | subject top-1 | AUC acc. pos. ↓ | AUC acc. neg. ↑ "
            "| AUC prob. pos. ↓ | AUC prob. neg. ↑ |"
        )
        print("|---|---|---|---|---|---|")
        for name in [*methods, "random"]:
            rate = f"{result.subject_rate[name]:.1%}" if name in result.subject_rate else "–"
            cells = [
                f"{result.auc(name, order, metric):.1f}"
                for metric in ("accuracy", "probability")
                for order in ("positive", "negative")
            ]
            print(f"| `{name}` | {rate} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
