"""Serrano & Smith (2019), "Is Attention Interpretable?" (ACL): erase one attended item.

If attention weights told us what a decision rests on, removing the
highest-weighted item should change the decision more than removing a
random one. :func:`erasure_test` zeroes one token's weight in a layer's
attention (and renormalises the rest), once for the token with the highest
attention and once for a random other word, and measures how often the
decision flips and how far the output distribution moves (JS divergence).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attnwidget.diagnostics._intervene import edited, intervention, remove_key
from attnwidget.diagnostics._run import (
    check_layers,
    check_model,
    js_divergence,
    layer_count,
    prepare,
    probabilities,
    progress_bar,
    summary_text,
)
from attnwidget.errors import InputError

_ROWS = ("query", "all")


@dataclass
class ErasureResult:
    """Per sentence: the erased tokens, the output's JSD and whether the decision flipped.

    ``top``/``random`` are token positions (``random`` is −1 where the
    sentence has no second word); ``jsd_*`` natural-log JS divergences between
    the original and the erased predicted distributions; ``flip_*`` booleans.
    """

    texts: list[str]
    top: np.ndarray
    random: np.ndarray
    jsd_top: np.ndarray
    jsd_random: np.ndarray
    flip_top: np.ndarray
    flip_random: np.ndarray
    layer: int
    rows: str
    seed: int

    def summary(self) -> dict[str, float]:
        """Flip rates and mean JSD for each erasure; how often the top one moves the output more."""
        has = self.random >= 0
        return {
            "sentences": len(self.texts),
            "flip rate (top attention)": float(self.flip_top.mean()),
            "flip rate (random word)": float(self.flip_random[has].mean()) if has.any() else 0.0,
            "mean JSD (top attention)": float(self.jsd_top.mean()),
            "mean JSD (random word)": float(self.jsd_random[has].mean()) if has.any() else 0.0,
            "share JSD top > random": float(np.mean(self.jsd_top[has] > self.jsd_random[has]))
            if has.any()
            else 0.0,
        }

    def to_dataframe(self) -> Any:
        """One row per sentence (pandas)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "text": self.texts,
                "top": self.top,
                "random": self.random,
                "jsd_top": self.jsd_top,
                "jsd_random": self.jsd_random,
                "flip_top": self.flip_top,
                "flip_random": self.flip_random,
            }
        )

    def __str__(self) -> str:
        title = (
            f"Erasing one token's attention, layer {self.layer} "
            f"({self.rows} rows, seed {self.seed})"
        )
        return summary_text(title, self.summary())


def erasure_test(
    model: Any,
    tokenizer: Any,
    examples: Iterable[Any],
    *,
    layer: int = -1,
    rows: str = "query",
    words_only: bool = True,
    seed: int = 0,
    progress: bool = False,
) -> ErasureResult:
    """Erase the highest-attention token vs a random one in ``layer`` (Serrano & Smith 2019).

    The token ranked is the one with the largest head-mean attention in the
    layer's prediction row ([CLS], or a causal classifier's last token);
    among the words only (special tokens never erased) with ``words_only``.
    The random token is drawn uniformly from the other candidates with a
    ``numpy`` generator seeded with ``seed``. Erasing key j sets its weight to
    0 in the prediction row (``rows="query"``, the one row of the last layer
    that reaches the output) or in every row (``"all"``) of every head, and
    renormalises those rows over the remaining keys; the rest of the pass runs
    as usual.

    Raises:
        InputError: unknown layer or rows, no examples, not a classifier.
    """
    check_model(model)
    if rows not in _ROWS:
        raise InputError(f"rows must be one of {', '.join(_ROWS)}, not {rows!r}.")
    rng = np.random.default_rng(int(seed))
    out: dict[str, list[Any]] = {k: [] for k in ("top", "rnd", "jt", "jr", "ft", "fr")}
    with intervention(model):
        prepared = prepare(model, tokenizer, examples)
        index = check_layers(layer, layer_count(model, prepared[0]))[0]
        for example in progress_bar(prepared, progress, "erasure"):
            n = example.ids.shape[1]
            with edited() as state, torch.no_grad():
                p = model(input_ids=example.ids, **example.kwargs).logits.double().softmax(-1)[0]
            row = state.weights[index][0, :, example.query].float().mean(0).cpu().numpy()
            candidates = example.words if words_only else np.arange(n)
            candidates = candidates[row[candidates] > 0]  # keys the row can see
            if len(candidates) == 0:
                raise InputError(
                    f"{example.text!r} has no word to erase; pass sentences with words or "
                    "words_only=False."
                )
            top = int(candidates[np.argmax(row[candidates])])
            others = candidates[candidates != top]
            random = int(rng.choice(others)) if len(others) else -1
            selected = None
            if rows == "query":
                selected = torch.zeros(n, dtype=torch.bool)
                selected[example.query] = True
            results = []
            for key in (top, random):
                if key < 0:
                    results.append((0.0, False))
                    continue
                q = probabilities(model, example, {index: remove_key(key, selected)})[0]
                results.append((float(js_divergence(p, q)), bool(q.argmax() != p.argmax())))
            out["top"].append(top)
            out["rnd"].append(random)
            out["jt"].append(results[0][0])
            out["jr"].append(results[1][0])
            out["ft"].append(results[0][1])
            out["fr"].append(results[1][1])
    return ErasureResult(
        texts=[e.text for e in prepared],
        top=np.array(out["top"]),
        random=np.array(out["rnd"]),
        jsd_top=np.array(out["jt"]),
        jsd_random=np.array(out["jr"]),
        flip_top=np.array(out["ft"], dtype=bool),
        flip_random=np.array(out["fr"], dtype=bool),
        layer=index,
        rows=rows,
        seed=int(seed),
    )
