"""Wiegreffe & Pinter (2019)'s seed baseline on the demo encoder.

Trains ``sva-encoder`` again with seeds 1 and 2 (the shipped model is seed
0; each run is ``attnwidget.demo.train.train_model`` with only the seed
changed, about two minutes on one thread) and prints
:func:`attnwidget.diagnostics.seed_variance` over the three models on
held-out sentences, for the first and the last layer, beside the
adversarial search's JSD on the same sentences for comparison.

Run: ``python bench/seeds.py [--n 200] [--seeds 1 2] [--steps 1500]``.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

from attnwidget import demo, diagnostics
from attnwidget.demo.train import TrainSettings, accuracy, train_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=TrainSettings.steps)
    parser.add_argument("--adversarial-n", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    shipped, tokenizer = demo.load("sva-encoder")
    models = [shipped]
    for seed in args.seeds:
        start = time.perf_counter()
        model, _ = train_model("sva-encoder", TrainSettings(seed=seed, steps=args.steps))
        print(f"seed {seed}: trained in {time.perf_counter() - start:.0f} s")
        models.append(model)
    held_out = demo.grammar.generate(500, seed=0, split="test", attractors=True)
    for seed, model in zip([0, *args.seeds], models, strict=True):
        print(f"seed {seed}: accuracy {accuracy(model, tokenizer, held_out):.1%} (500 held-out)")
    data = demo.sentences(args.n, seed=0)
    for layer in (0, -1):
        print()
        print(diagnostics.seed_variance(models, tokenizer, data, layer=layer))
        adversarial = diagnostics.adversarial_attention(
            shipped, tokenizer, data[: args.adversarial_n], layer=layer
        )
        jsd = np.asarray(adversarial.to_dataframe()["jsd"], dtype=float)
        first = args.adversarial_n
        print(f"  adversarial search (seed 0, first {first}): mean JSD {jsd.mean():.4g}")


if __name__ == "__main__":
    main()
