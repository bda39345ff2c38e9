"""Image explanations for the ImageView tests: from the tiny random ViTs, and
made by hand (any grid, layers, heads and token names, no model run)."""

from __future__ import annotations

import numpy as np
from tiny_vision import build_vision

from attnwidget.results.explanation import Explanation


def picture(height: int = 40, width: int = 48) -> np.ndarray:
    """A uint8 RGB test picture: gradients, so every pixel tells where it is."""
    yy, xx = np.mgrid[0:height, 0:width]
    red = xx * 255 // max(1, width - 1)
    green = yy * 255 // max(1, height - 1)
    blue = ((xx // 8 + yy // 8) % 2) * 200
    return np.stack([red, green, blue], -1).astype(np.uint8)


def tiny_explanation(family: str = "vit", methods: list[str] | None = None) -> Explanation:
    """``attnwidget.explain`` on a tiny random ``family`` ViT (8×8 patches of 4 px)."""
    import attnwidget

    model, processor = build_vision(family)
    names = methods if methods is not None else ["raw", "rollout", "input_x_gradient"]
    return attnwidget.explain(model, processor, picture(), methods=names)


def made_explanation(
    rows: int = 3,
    cols: int = 4,
    *,
    layers: int = 2,
    heads: int = 2,
    specials: list[str] | None = None,
    labels: list[str] | None = None,
    seed: int = 0,
) -> Explanation:
    """An image explanation by hand: peaked random attention, a signed and an
    unsigned score (0 on the special tokens, as explain() leaves them)."""
    specials = ["[CLS]"] if specials is None else specials
    patches = rows * cols
    labels = [f"({r},{c})" for r in range(rows) for c in range(cols)] if labels is None else labels
    tokens = [*specials, *labels]
    n = len(tokens)
    rng = np.random.default_rng(seed)
    weights = rng.random((layers, heads, n, n)) ** 4
    attentions = (weights / weights.sum(-1, keepdims=True)).astype(np.float32)
    positive = np.zeros(n, np.float32)
    positive[len(specials) :] = rng.random(patches)
    signed = np.zeros(n, np.float32)
    signed[len(specials) :] = np.linspace(-1.5, 0.75, patches)
    return Explanation(
        tokens=tokens,
        attentions=attentions,
        scores={"positive": positive, "signed_demo": signed},
        target="cat",
        kind="image",
        image=picture(rows * 8, cols * 8),
        patch_grid=(rows, cols),
        patch_size=8,
        special_tokens=list(range(len(specials))),
    )
