"""How often each method's top-scored word is the grammatical subject.

Run: ``python bench/subject_rate.py [--n 500] [--seed 0]``. On held-out
subject–verb agreement sentences with attractors (``attnwidget.demo``), for
both demo models, every registered method is run through ``explain`` with the
gold verb number as target, and its highest-scored token among the words
(special tokens excluded) is compared with the subject's position. Prints a
markdown table; the README reports its output.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import attnwidget
from attnwidget import demo

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


def subject_rates(model_name: str, n: int, seed: int, methods: list[str]) -> dict[str, float]:
    model, tokenizer = demo.load(model_name)
    examples = demo.sentences(n, seed=seed, model=model_name)
    targets = [ex.label if model_name == "sva-encoder" else ex.verb for ex in examples]
    hits = dict.fromkeys(methods, 0)
    for ex, target in zip(examples, targets, strict=True):
        exp = attnwidget.explain(model, tokenizer, ex.text, target=target, methods=methods)
        words = np.flatnonzero(~np.isin(exp.input_ids, tokenizer.all_special_ids))
        for name in methods:
            top = words[np.argmax(exp.scores[name][words])]
            hits[name] += int(top == ex.subject_index)
    return {name: hits[name] / n for name in methods}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    methods = [m for m in METHODS if m in attnwidget.available_methods()]
    results = {}
    for model_name in ("sva-encoder", "sva-causal"):
        start = time.perf_counter()
        results[model_name] = subject_rates(model_name, args.n, args.seed, methods)
        print(f"({model_name}: {time.perf_counter() - start:.0f} s)")
    print(f"\nsubject top-1 rate, {args.n} held-out sentences with attractors (seed {args.seed})\n")
    print("| method | sva-encoder | sva-causal |")
    print("|---|---|---|")
    for name in methods:
        enc, dec = results["sva-encoder"][name], results["sva-causal"][name]
        print(f"| `{name}` | {enc:.1%} | {dec:.1%} |")


if __name__ == "__main__":
    main()
