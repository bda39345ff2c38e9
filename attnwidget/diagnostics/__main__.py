"""Run every diagnostic on a demo model and print the numbers.

    python -m attnwidget.diagnostics [--n 200] [--seed 0] [--adversarial-n 50] [--steps 100]
                                     [--threads 1] [--progress]

Held-out sentences with attractors (``demo.sentences(n, seed=seed)``); the
adversarial search, the slowest, runs on the first ``--adversarial-n``.
"""

from __future__ import annotations

import argparse
import time

import torch

from attnwidget import demo
from attnwidget.diagnostics import (
    adversarial_attention,
    erasure_test,
    permutation_test,
    rank_correlation,
    uniform_baseline,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m attnwidget.diagnostics")
    parser.add_argument("--model", default="sva-encoder")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--adversarial-n", type=int, default=50)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (tiny models: 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, tokenizer = demo.load(args.model)
    data = demo.sentences(args.n, seed=args.seed, model=args.model)
    print(f"{args.model}: {args.n} held-out sentences with attractors, seed {args.seed}\n")
    runs = [
        lambda: rank_correlation(model, tokenizer, data, progress=args.progress),
        lambda: permutation_test(model, tokenizer, data, seed=args.seed, progress=args.progress),
        lambda: permutation_test(
            model, tokenizer, data, layer=0, seed=args.seed, progress=args.progress
        ),
        lambda: adversarial_attention(
            model,
            tokenizer,
            data[: args.adversarial_n],
            steps=args.steps,
            seed=args.seed,
            progress=args.progress,
        ),
        lambda: adversarial_attention(
            model,
            tokenizer,
            data[: args.adversarial_n],
            layer=0,
            rows="all",
            steps=args.steps,
            seed=args.seed,
            progress=args.progress,
        ),
        lambda: uniform_baseline(model, tokenizer, data, progress=args.progress),
        lambda: erasure_test(model, tokenizer, data, seed=args.seed, progress=args.progress),
        lambda: erasure_test(
            model, tokenizer, data, layer=0, rows="all", seed=args.seed, progress=args.progress
        ),
    ]
    for run in runs:
        start = time.perf_counter()
        result = run()
        print(f"{result}\n  ({time.perf_counter() - start:.1f} s)\n", flush=True)


if __name__ == "__main__":
    main()
