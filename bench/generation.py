"""explain_generation against one explain() per step, on the shipped causal demo model.

Forces a 14-token continuation on ``sva-causal`` and times
:func:`attnwidget.explain_generation` (attention from one pass over the whole
sequence, gradients in batches of steps) against a loop of
:func:`attnwidget.explain` calls, one per step on the prefix text, with the
default methods and with the attention-only ones (median of ``--repeats``,
one thread).

    .venv/bin/python bench/generation.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

PROMPT = "the keys to the cabinet"
FORCED = " are on the table . the author that the critics praise is famous ."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import torch

    import attnwidget
    from attnwidget import demo

    torch.set_num_threads(1)
    model, tok = demo.load("sva-causal")
    attnwidget.explain_generation(model, tok, PROMPT, max_new_tokens=2)  # warm up

    def per_step(gexp, methods) -> None:
        for t in range(len(gexp)):
            ids = [*gexp.prompt_ids, *gexp.generated_ids[:t]]
            text = tok.decode(ids, skip_special_tokens=True)
            attnwidget.explain(model, tok, text, target=int(gexp.generated_ids[t]), methods=methods)

    for label, methods in (("default methods", None), ("raw + rollout", ["raw", "rollout"])):
        together, apart = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            gexp = attnwidget.explain_generation(
                model, tok, PROMPT, generated=FORCED, methods=methods
            )
            middle = time.perf_counter()
            per_step(gexp, methods)
            together.append(middle - start)
            apart.append(time.perf_counter() - middle)
        print(
            f"{label}: {len(gexp)} steps, explain_generation {statistics.median(together):.3f} s, "
            f"one explain per step {statistics.median(apart):.3f} s"
        )


if __name__ == "__main__":
    main()
