"""Which methods agree and which are faithful on the shipped demo models (issue 22).

Run: ``python bench/compare_models.py`` (about 80 s on one thread; ``--n``
inputs per model, ``--models``, ``--subsets k`` for the orderings over k
disjoint subsets, ``--threads``).

Text models (``sva-encoder``, ``sva-causal``, ``sva-deceptive``): the methods
of :data:`TEXT_METHODS` explain the predicted class (the encoder's number, the
causal LM's next token) of ``n`` held-out sentences with attractors
(``demo.sentences(n, seed=seed)``) through :func:`attnwidget.evaluate`, whose
faithfulness metrics are the ones :func:`attnwidget.compare` computes for one
input (ERASER's comprehensiveness and sufficiency AOPC, DeYoung et al. 2020;
Chefer, Gur & Wolf's 2021 perturbation AUCs; removed words replaced by
``[UNK]``) and whose ``result.agreement`` is the mean over the sentences of
compare's agreement figures on the words (special tokens and the query
position left out). ``shapes-vit``: a loop of :func:`attnwidget.compare` over
``n`` held-out images (``demo.images(n, seed=seed)``) with the methods of
:data:`IMAGE_METRICS`' table, :data:`IMAGE_METHODS` (``chefer2021`` with the
authors' ViT setting ``start_layer=1``), agreement over the 64 patches and
patch perturbation AUCs; the intervals are :func:`attnwidget.metrics.bootstrap_ci`
of the per-image values (95 %, 1,000 resamples, seed 0), as evaluate's.

Printed per model: the mean Spearman ρ of every pair (a methods × methods
table), each pair's mean Spearman ρ, Kendall τ-b and top-1/3/5/20 % overlaps
with the interval of ρ, and each method's faithfulness means with intervals.

``--subsets k`` draws ``k·n`` inputs with ``--seed`` (so the k subsets of n
are disjoint), measures each subset alone and prints, for each ordering of
:data:`ORDERINGS`, its gap on every subset and the smallest
(``tests/test_compare_findings.py`` asserts the orderings far from their
noise, at thresholds under these gaps).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse
import sys
import time
import warnings
from collections.abc import Sequence

import pandas as pd
import torch

import attnwidget
from attnwidget import demo
from attnwidget.evaluation import FAITHFULNESS, evaluate
from attnwidget.metrics import AGREEMENT_METRICS, bootstrap_ci

TEXT_MODELS = ("sva-encoder", "sva-causal", "sva-deceptive")
MODELS = (*TEXT_MODELS, "shapes-vit")
#: The default methods, then LRP-based, path and ablation methods.
TEXT_METHODS = [
    "raw",
    "rollout",
    "grad_attention",
    "input_x_gradient",
    "integrated_gradients",
    "blank_out",
    "lrp",
    "chefer2021",
]
IMAGE_METHODS = [
    "raw",
    "rollout",
    "grad_attention",
    "chefer2021",
    "input_x_gradient",
    "integrated_gradients",
    "blank_out",
    "lrp",
]
IMAGE_OPTIONS = {"chefer2021": {"start_layer": 1}}
IMAGE_METRICS = [
    "perturbation_auc_pos",
    "perturbation_auc_neg",
    "perturbation_prob_auc_pos",
    "perturbation_prob_auc_neg",
]
SHORT = {
    "comprehensiveness_aopc": "compr. ↑",
    "sufficiency_aopc": "suff. ↓",
    "perturbation_auc_pos": "AUC pos. ↓",
    "perturbation_auc_neg": "AUC neg. ↑",
    "perturbation_prob_auc_pos": "prob. AUC pos. ↓",
    "perturbation_prob_auc_neg": "prob. AUC neg. ↑",
}

#: (model, name, lower figure, higher figure): a figure is ("agreement", metric,
#: method, other) or ("faithfulness", metric, method); the ordering says the
#: first is below the second. The gap (second − first) is printed per subset.
ORDERINGS: list[tuple[str, str, tuple, tuple]] = [
    (
        "sva-deceptive",
        "ρ(raw, input_x_gradient) < ρ(input_x_gradient, blank_out)",
        ("agreement", "spearman", "raw", "input_x_gradient"),
        ("agreement", "spearman", "input_x_gradient", "blank_out"),
    ),
    (
        "sva-deceptive",
        "ρ(raw, lrp) < ρ(lrp, integrated_gradients)",
        ("agreement", "spearman", "raw", "lrp"),
        ("agreement", "spearman", "integrated_gradients", "lrp"),
    ),
    (
        "sva-deceptive",
        "ρ(raw, blank_out) < ρ(lrp, blank_out)",
        ("agreement", "spearman", "raw", "blank_out"),
        ("agreement", "spearman", "blank_out", "lrp"),
    ),
    (
        "sva-deceptive",
        "top-1(raw, lrp) < top-1(lrp, blank_out)",
        ("agreement", "top1", "raw", "lrp"),
        ("agreement", "top1", "blank_out", "lrp"),
    ),
    (
        "sva-deceptive",
        "compr.(raw) < compr.(input_x_gradient)",
        ("faithfulness", "comprehensiveness_aopc", "raw"),
        ("faithfulness", "comprehensiveness_aopc", "input_x_gradient"),
    ),
    (
        "sva-deceptive",
        "compr.(raw) < compr.(lrp)",
        ("faithfulness", "comprehensiveness_aopc", "raw"),
        ("faithfulness", "comprehensiveness_aopc", "lrp"),
    ),
    (
        "sva-deceptive",
        "compr.(chefer2021) < compr.(lrp)",
        ("faithfulness", "comprehensiveness_aopc", "chefer2021"),
        ("faithfulness", "comprehensiveness_aopc", "lrp"),
    ),
    (
        "sva-deceptive",
        "prob. AUC neg.(raw) < prob. AUC neg.(lrp)",
        ("faithfulness", "perturbation_prob_auc_neg", "raw"),
        ("faithfulness", "perturbation_prob_auc_neg", "lrp"),
    ),
    (
        "sva-encoder",
        "compr.(input_x_gradient) < compr.(raw)",
        ("faithfulness", "comprehensiveness_aopc", "input_x_gradient"),
        ("faithfulness", "comprehensiveness_aopc", "raw"),
    ),
    (
        "sva-encoder",
        "ρ(raw, lrp) < ρ(lrp, integrated_gradients)",
        ("agreement", "spearman", "raw", "lrp"),
        ("agreement", "spearman", "integrated_gradients", "lrp"),
    ),
    (
        "sva-causal",
        "AUC pos.(lrp) < AUC pos.(raw)",
        ("faithfulness", "perturbation_auc_pos", "lrp"),
        ("faithfulness", "perturbation_auc_pos", "raw"),
    ),
    (
        "shapes-vit",
        "ρ(raw, input_x_gradient) < ρ(raw, rollout)",
        ("agreement", "spearman", "raw", "input_x_gradient"),
        ("agreement", "spearman", "raw", "rollout"),
    ),
    (
        "shapes-vit",
        "prob. AUC pos.(raw) < prob. AUC pos.(input_x_gradient)",
        ("faithfulness", "perturbation_prob_auc_pos", "raw"),
        ("faithfulness", "perturbation_prob_auc_pos", "input_x_gradient"),
    ),
    (
        "shapes-vit",
        "prob. AUC neg.(input_x_gradient) < prob. AUC neg.(raw)",
        ("faithfulness", "perturbation_prob_auc_neg", "input_x_gradient"),
        ("faithfulness", "perturbation_prob_auc_neg", "raw"),
    ),
    (
        "shapes-vit",
        "prob. AUC pos.(rollout) < prob. AUC pos.(input_x_gradient)",
        ("faithfulness", "perturbation_prob_auc_pos", "rollout"),
        ("faithfulness", "perturbation_prob_auc_pos", "input_x_gradient"),
    ),
    (
        "shapes-vit",
        "prob. AUC neg.(input_x_gradient) < prob. AUC neg.(rollout)",
        ("faithfulness", "perturbation_prob_auc_neg", "input_x_gradient"),
        ("faithfulness", "perturbation_prob_auc_neg", "rollout"),
    ),
]


class Measured:
    """One model's figures on one set of inputs: agreement and faithfulness summaries.

    ``agreement``: DataFrame indexed by (metric, method, other), each pair once in
    method order, columns mean/low/high/count/dropped (``result.agreement``'s);
    ``faithfulness``: indexed by (method, metric), the same columns.
    """

    def __init__(self, methods: list[str], agreement: pd.DataFrame, faithfulness: pd.DataFrame):
        self.methods, self.agreement, self.faithfulness = methods, agreement, faithfulness

    def value(self, figure: tuple) -> float:
        if figure[0] == "agreement":
            _, metric, a, b = figure
            if self.methods.index(a) > self.methods.index(b):
                a, b = b, a
            return float(self.agreement.loc[(metric, a, b), "mean"])
        _, metric, method = figure
        return float(self.faithfulness.loc[(method, metric), "mean"])


def measure_text(name: str, texts: Sequence[str], threads: int, methods: list[str]) -> Measured:
    model, tokenizer = demo.load(name)
    result = evaluate(
        model,
        tokenizer,
        list(texts),
        methods=methods,
        metrics=list(FAITHFULNESS),
        torch_threads=threads,
        progress=False,
        keep_model=False,
    )
    return Measured(methods, result.agreement, result.summary)


def measure_images(records: Sequence, threads: int, methods: list[str]) -> Measured:
    model, processor = demo.load("shapes-vit")
    torch.set_num_threads(threads)
    pairs = [(a, b) for i, a in enumerate(methods) for b in methods[i + 1 :]]
    agreement: dict[tuple[str, str, str], list[float]] = {
        (metric, a, b): [] for metric in AGREEMENT_METRICS for a, b in pairs
    }
    faithfulness: dict[tuple[str, str], list[float]] = {
        (m, metric): [] for m in methods for metric in IMAGE_METRICS
    }
    options = {m: o for m, o in IMAGE_OPTIONS.items() if m in methods}
    for record in records:
        comparison = attnwidget.compare(
            model, processor, record.image, methods=methods, method_options=options
        )
        for metric, a, b in agreement:
            agreement[(metric, a, b)].append(float(comparison.agreement[metric].loc[a, b]))
        assert comparison.faithfulness is not None
        for method, metric in faithfulness:
            faithfulness[(method, metric)].append(
                float(comparison.faithfulness.loc[method, metric])
            )
    return Measured(
        methods,
        _summary(agreement, ["metric", "method", "other"]),
        _summary(faithfulness, ["method", "metric"]),
    )


def _summary(values: dict[tuple, list[float]], names: list[str]) -> pd.DataFrame:
    rows = [tuple(bootstrap_ci(v)) for v in values.values()]
    index = pd.MultiIndex.from_tuples(list(values), names=names)
    return pd.DataFrame.from_records(
        rows, columns=["mean", "low", "high", "count", "dropped"], index=index
    )


def inputs(name: str, n: int, seed: int) -> list:
    if name == "shapes-vit":
        return demo.images(n, seed=seed, split="test")
    return [s.text for s in demo.sentences(n, seed=seed, model=name)]


def measure(name: str, items: Sequence, threads: int, methods: list[str] | None = None) -> Measured:
    """``methods``: a subset (default: every method of the model's kind)."""
    every = IMAGE_METHODS if name == "shapes-vit" else TEXT_METHODS
    chosen = every if methods is None else [m for m in every if m in methods]
    if name == "shapes-vit":
        return measure_images(items, threads, chosen)
    return measure_text(name, items, threads, chosen)


def report(name: str, found: Measured, n: int, seed: int, took: tuple[float, float]) -> None:
    what = "images" if name == "shapes-vit" else "sentences with attractors"
    print(f"\n## {name}: {n} held-out {what}, seed {seed} ({took[0]:.0f} s, {took[1]:.0f} CPU s)\n")
    methods = found.methods
    print("Mean Spearman ρ over the inputs (the words / patches each compared):\n")
    print("| | " + " | ".join(f"`{m}`" for m in methods) + " |")
    print("|---" * (len(methods) + 1) + "|")
    for a in methods:
        cells = [
            "1" if a == b else f"{found.value(('agreement', 'spearman', a, b)):.2f}"
            for b in methods
        ]
        print(f"| `{a}` | " + " | ".join(cells) + " |")
    print("\nEach pair, mean over the inputs (ρ with its 95 % bootstrap interval):\n")
    print("| pair | Spearman ρ | Kendall τ-b | top-1 | top-3 | top-5 | top-20 % |")
    print("|---|---|---|---|---|---|---|")
    for i, a in enumerate(methods):
        for b in methods[i + 1 :]:
            rho = found.agreement.loc[("spearman", a, b)]
            cells = [f"{rho['mean']:.2f} [{rho['low']:.2f}, {rho['high']:.2f}]"]
            cells += [
                f"{found.value(('agreement', metric, a, b)):.2f}"
                for metric in AGREEMENT_METRICS[1:]
            ]
            print(f"| `{a}`–`{b}` | " + " | ".join(cells) + " |")
    metrics = list(dict.fromkeys(found.faithfulness.index.get_level_values("metric")))
    print("\nFaithfulness, mean [95 % bootstrap interval] over the inputs:\n")
    print("| method | " + " | ".join(SHORT.get(m, m) for m in metrics) + " |")
    print("|---" * (len(metrics) + 1) + "|")
    for method in methods:
        cells = []
        for metric in metrics:
            cell = found.faithfulness.loc[(method, metric)]
            digits = 3 if metric.endswith("aopc") else 1
            cells.append(
                f"{cell['mean']:.{digits}f} [{cell['low']:.{digits}f}, {cell['high']:.{digits}f}]"
            )
        print(f"| `{method}` | " + " | ".join(cells) + " |")


def subsets(models: list[str], n: int, k: int, seed: int, threads: int) -> None:
    print(f"\n## Orderings on {k} disjoint subsets of {n} (one draw of {k * n}, seed {seed})\n")
    print("| model | ordering | " + " | ".join(f"gap {i + 1}" for i in range(k)) + " | smallest |")
    print("|---|---|" + "---|" * (k + 1))
    for name in models:
        chosen = [o for o in ORDERINGS if o[0] == name]
        if not chosen:
            continue
        # Only the methods the orderings name: a method's figures do not depend
        # on which others run beside it.
        named = {m for o in chosen for figure in o[2:] for m in figure[2:]}
        items = inputs(name, n * k, seed)
        found = [measure(name, items[i * n : (i + 1) * n], threads, named) for i in range(k)]
        for _, label, low, high in chosen:
            gaps = [f.value(high) - f.value(low) for f in found]
            cells = " | ".join(f"{g:.3f}" for g in gaps)
            print(f"| {name} | {label} | {cells} | {min(gaps):.3f} |", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="inputs per model (default 60)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument(
        "--subsets", type=int, default=0, help="k: the orderings on k disjoint subsets of n"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # e.g. integrated gradients' convergence notes
    if args.subsets:
        subsets(args.models, args.n, args.subsets, args.seed, args.threads)
        return 0
    print(f"# compare on the demo models: n = {args.n} per model, seed {args.seed}")
    for name in args.models:
        start, cpu = time.perf_counter(), time.process_time()
        found = measure(name, inputs(name, args.n, args.seed), args.threads)
        took = (time.perf_counter() - start, time.process_time() - cpu)
        report(name, found, args.n, args.seed, took)
    return 0


if __name__ == "__main__":
    sys.exit(main())
