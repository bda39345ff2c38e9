"""Jain & Wallace (2019)'s adversarial attention: far from the original, same prediction.

For one layer, :func:`adversarial_attention` looks for attention weights that
differ as much as possible from the model's own, measured by the
Jensen–Shannon divergence, while the predicted distribution stays within
total variation distance ε of the original. Jain & Wallace (2019, "Attention
is not Explanation", NAACL) solve a relaxed version of this constrained
problem by gradient methods; so does this module (the procedure is described
in :func:`adversarial_attention`). It is a *search*: a small JSD found says
that this search found nothing, not that no such attention exists; a large
one is a real, checked example (its TVD is measured by an exact forward pass).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attnwidget.diagnostics._intervene import edited, intervention, replace_rows
from attnwidget.diagnostics._run import (
    check_layers,
    check_model,
    check_positive,
    forward,
    layer_count,
    prepare,
    progress_bar,
    summary_text,
)
from attnwidget.diagnostics._run import js_divergence as jsd
from attnwidget.diagnostics._run import total_variation as tvd
from attnwidget.errors import InputError

_ROWS = ("query", "all")


@dataclass
class AdversarialResult:
    """The best attention each sentence's search found.

    ``jsd`` (sentences,): mean over heads (and edited rows) of the JSD between
    the found and the original attention rows (natural log, at most ln 2 ≈
    0.693); ``tvd``: the output's total variation distance with it (≤ ε by
    construction); ``flipped``: whether the decision changed (possible only
    when ε ≥ the margin); ``attention``: per sentence the found rows
    (H, rows, n) and ``original`` the model's.
    """

    texts: list[str]
    jsd: np.ndarray
    tvd: np.ndarray
    flipped: np.ndarray
    attention: list[np.ndarray]
    original: list[np.ndarray]
    layer: int
    rows: str
    epsilon: float
    steps: int
    seed: int

    def summary(self) -> dict[str, float]:
        """JSD reached (mean, median, max), the largest TVD, flips."""
        return {
            "sentences": len(self.texts),
            "epsilon": self.epsilon,
            "mean JSD": float(self.jsd.mean()),
            "median JSD": float(np.median(self.jsd)),
            "max JSD": float(self.jsd.max()),
            "max TVD": float(self.tvd.max()),
            "flip rate": float(self.flipped.mean()),
        }

    def to_dataframe(self) -> Any:
        """One row per sentence (pandas)."""
        import pandas as pd

        return pd.DataFrame(
            {"text": self.texts, "jsd": self.jsd, "tvd": self.tvd, "flipped": self.flipped}
        )

    def __str__(self) -> str:
        title = (
            f"Adversarial attention, layer {self.layer} ({self.rows} rows), "
            f"TVD ≤ {self.epsilon:g}, {self.steps} steps (seed {self.seed})"
        )
        return summary_text(title, self.summary())


def adversarial_attention(
    model: Any,
    tokenizer: Any,
    examples: Iterable[Any],
    *,
    layer: int = -1,
    epsilon: float = 0.01,
    rows: str = "query",
    steps: int = 100,
    lr: float = 0.1,
    penalty: float = 10.0,
    init_scale: float = 1.0,
    seed: int = 0,
    progress: bool = False,
) -> AdversarialResult:
    """Search attention far from the original (JSD) with the prediction within ε (TVD).

    Procedure, per sentence: the attention of ``layer`` in ``rows`` (``"query"``:
    the prediction row only, [CLS] or a causal classifier's last token, the
    one row of the last layer that reaches the output; ``"all"``: every row)
    of every head is replaced by ``softmax(Z)``, Z free logits over the keys
    the row may see, started at the original attention's log plus Gaussian
    noise of scale ``init_scale`` (seeded; the JSD's gradient is zero at the
    original itself). Adam (learning rate ``lr``) runs ``steps`` steps on::

        maximise  mean JSD(softmax(Z), A) − penalty · max(0, TVD(p(Z), p) − ε)

    where A and p are the original attention and predicted distribution. Every
    step's forward pass measures the TVD exactly; the result is the iterate
    with the largest JSD among those with TVD ≤ ε (the original itself, JSD 0,
    when none is). So the TVD constraint always holds; the JSD is a lower
    bound on what is achievable, not the maximum.

    Raises:
        InputError: unknown layer, ε ≤ 0, steps < 1, unknown rows, no examples.
    """
    check_model(model)
    check_positive("epsilon", epsilon, integer=False)
    check_positive("steps", steps)
    check_positive("lr", lr, integer=False)
    if rows not in _ROWS:
        raise InputError(f"rows must be one of {', '.join(_ROWS)}, not {rows!r}.")
    generator = torch.Generator().manual_seed(int(seed))
    found, originals, jsds, tvds, flips = [], [], [], [], []
    with intervention(model):
        prepared = prepare(model, tokenizer, examples)
        index = check_layers(layer, layer_count(model, prepared[0]))[0]
        for example in progress_bar(prepared, progress, "adversarial attention"):
            best = _search(
                model,
                example,
                index,
                rows,
                float(epsilon),
                steps,
                lr,
                penalty,
                init_scale,
                generator,
            )
            found.append(best[0])
            originals.append(best[1])
            jsds.append(best[2])
            tvds.append(best[3])
            flips.append(best[4])
    return AdversarialResult(
        texts=[e.text for e in prepared],
        jsd=np.array(jsds),
        tvd=np.array(tvds),
        flipped=np.array(flips, dtype=bool),
        attention=found,
        original=originals,
        layer=index,
        rows=rows,
        epsilon=float(epsilon),
        steps=int(steps),
        seed=int(seed),
    )


def _search(
    model: Any,
    example: Any,
    index: int,
    rows: str,
    epsilon: float,
    steps: int,
    lr: float,
    penalty: float,
    init_scale: float,
    generator: torch.Generator,
) -> tuple[np.ndarray, np.ndarray, float, float, bool]:
    seen: dict[str, torch.Tensor] = {}

    def keep(weights: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        seen["allowed"] = allowed
        return weights

    with edited({index: keep}) as state, torch.no_grad():
        logits = model(input_ids=example.ids, **example.kwargs).logits
    p0 = logits.double().softmax(-1)[0]
    n = example.ids.shape[1]
    selected = torch.zeros(n, dtype=torch.bool)
    if rows == "query":
        selected[example.query] = True
    else:
        selected[:] = True
    original = state.weights[index][0][:, selected.to(logits.device)].detach()  # (H, r, n)
    allowed = seen["allowed"][0][:, selected.to(logits.device)]
    noise = torch.randn(original.shape, generator=generator).to(original)
    start = original.clamp_min(1e-12).log() + init_scale * noise
    z = torch.where(allowed, start, torch.zeros_like(start)).requires_grad_(True)
    optimiser = torch.optim.Adam([z], lr=lr)
    target = original.double()
    best = (original.clone(), 0.0, 0.0, False)
    for _ in range(steps):
        weights = torch.softmax(z.masked_fill(~allowed, float("-inf")), dim=-1)
        out = forward(model, example, {index: replace_rows(selected, weights[None])})
        p = out.double().softmax(-1)[0]
        distance = tvd(p, p0)
        divergence = jsd(weights.double(), target).mean()
        measured, reached = float(distance.detach()), float(divergence.detach())
        if measured <= epsilon and reached > best[1]:
            best = (weights.detach().clone(), reached, measured, bool(p.argmax() != p0.argmax()))
        loss = -divergence + penalty * torch.relu(distance - epsilon)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    attention, best_divergence, best_distance, flipped = best
    return (
        attention.float().cpu().numpy(),
        original.float().cpu().numpy(),
        best_divergence,
        best_distance,
        flipped,
    )
