"""The cost of ``compare()`` against one ``explain()`` and the bound issue 22 sets.

Run: ``python bench/compare.py`` (options: ``--threads 2 --repeats 5 --long 512``).

:func:`attnwidget.compare` with its defaults (``attnwidget.DEFAULT_METHODS``
and every faithfulness metric) explains the input once with every method and
then re-runs the model on the perturbed copies the metrics need, all in one
batched pass (:mod:`attnwidget.evaluation._batcher`). The goal: compare costs
no more than the explanation plus one forward pass per perturbed copy,
``compare ≤ explain + n_copies × forward``. For each input, measured in the
same run and alternated (each figure the best of ``--repeats``):

* ``forward``: one plain forward pass of the model in eval mode under
  ``torch.no_grad()`` on that input;
* ``explain``: ``attnwidget.explain(model, tokenizer, text, methods=DEFAULT_METHODS)``;
* ``compare``: ``attnwidget.compare(model, tokenizer, text)``;
* the perturbed copies: ``requested`` from the metric definitions (per
  method, ERASER's unchanged input + 5 comprehensiveness + 5 sufficiency bins
  and 10 steps of each perturbation order, the unchanged input among them:
  31), and ``run``, the distinct copies the batcher ran (identical copies,
  e.g. every method's unchanged input, run once), counted by wrapping
  ``RowBatcher.run``; the wrapper also times that batched re-run.

Printed: ``compare ÷ explain``, ``compare ÷ (explain + run × forward)`` (the
goal: ≤ 1) and ``batched re-run ÷ (run × forward)`` (what batching the copies
saves over one forward pass each). Inputs: a short held-out sentence on the
demo encoder (``sva-encoder``, 14 tokens; easy), the demo encoder at its
maximum length (64 tokens: demo words repeated) and a BERT-sized tiny config
(6 layers, 8 heads, hidden 256, random weights, seed 0) on ``--long`` random
word tokens (hard).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse
import sys
import time
import warnings
from pathlib import Path

import torch

import attnwidget
from attnwidget import demo
from attnwidget.evaluation import _batcher
from attnwidget.metrics import AOPC_BINS, FRACTIONS

sys.path.insert(0, str(Path(__file__).parent))
from explain import synthetic_bert  # bench/ is not a package

#: Copies one method asks for: ERASER's unchanged input and its comprehensiveness and
#: sufficiency bins, and each perturbation order's steps (step 0 is the unchanged input).
COPIES_PER_METHOD = 1 + 2 * len(AOPC_BINS) + 2 * len(FRACTIONS)


class RerunCounter:
    """Wraps ``RowBatcher.run``: the distinct copies of the last run and its time."""

    def __init__(self) -> None:
        self.copies = 0
        self.seconds = 0.0
        self._original = _batcher.RowBatcher.run

    def __enter__(self) -> RerunCounter:
        counter, original = self, self._original

        def run(batcher: _batcher.RowBatcher) -> None:
            counter.copies = len(batcher._pending)
            start = time.perf_counter()
            original(batcher)
            counter.seconds = time.perf_counter() - start

        _batcher.RowBatcher.run = run  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        _batcher.RowBatcher.run = self._original  # type: ignore[method-assign]


def cases(long: int):
    """(name, model, tokenizer, text) for the easy and the hard inputs."""
    encoder, encoder_tokenizer = demo.load("sva-encoder")
    sentences = demo.sentences(40, seed=0)
    short = sentences[0].text
    words: list[str] = []
    for sentence in sentences:
        words += sentence.text.split()
    limit = encoder.config.max_position_embeddings - 2  # [CLS] … [SEP]
    full = " ".join(words[:limit])
    bert, tokenizer, text = synthetic_bert(long)
    return [
        ("sva-encoder, short sentence", encoder, encoder_tokenizer, short),
        ("sva-encoder, max length", encoder, encoder_tokenizer, full),
        ("BERT 6×256, random weights", bert, tokenizer, text),
    ]


def measure(model, tokenizer, text: str, repeats: int) -> dict[str, float]:
    """Best-of-``repeats`` seconds of forward, explain and compare, run alternately."""
    methods = list(attnwidget.DEFAULT_METHODS)
    inputs = dict(tokenizer(text, return_tensors="pt"))

    def forward() -> None:
        with torch.no_grad():
            model(**inputs)

    def explain() -> None:
        attnwidget.explain(model, tokenizer, text, methods=methods)

    counter = RerunCounter()

    def compare() -> None:
        with counter:
            attnwidget.compare(model, tokenizer, text)

    best = {"forward": float("inf"), "explain": float("inf"), "compare": float("inf")}
    rerun = float("inf")
    forward(), explain(), compare()  # warm-up
    for _ in range(repeats):
        for name, fn in (("forward", forward), ("explain", explain), ("compare", compare)):
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
        rerun = min(rerun, counter.seconds)
    return {
        **best,
        "rerun": rerun,
        "copies": counter.copies,
        "requested": COPIES_PER_METHOD * len(methods),
        "tokens": int(inputs["input_ids"].shape[1]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure, best kept")
    parser.add_argument("--long", type=int, default=512, help="tokens of the hard input")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    print(
        f"compare() with the default methods {list(attnwidget.DEFAULT_METHODS)} and every "
        f"faithfulness metric; torch threads {args.threads}; best of {args.repeats}\n"
    )
    print(
        "| input | tokens | forward | explain | compare | copies run / requested | "
        "batched re-run | compare ÷ explain | compare ÷ (explain + copies × forward) | "
        "re-run ÷ (copies × forward) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, model, tokenizer, text in cases(args.long):
        m = measure(model, tokenizer, text, args.repeats)
        bound = m["explain"] + m["copies"] * m["forward"]
        print(
            f"| {name} | {m['tokens']} | {m['forward'] * 1e3:.2f} ms | "
            f"{m['explain'] * 1e3:.0f} ms | {m['compare'] * 1e3:.0f} ms | "
            f"{m['copies']} / {m['requested']} | {m['rerun'] * 1e3:.0f} ms | "
            f"{m['compare'] / m['explain']:.2f}× | {m['compare'] / bound:.2f} (goal ≤ 1) | "
            f"{m['rerun'] / (m['copies'] * m['forward']):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
