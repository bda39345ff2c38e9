"""The perturbation test and top-patch location, against explicit loops on a real ViT."""

from __future__ import annotations

import numpy as np
import torch
from tiny_vision import build_vision

from attnwidget.evaluation import patch_location, perturbation_curve
from attnwidget.metrics import FRACTIONS


def explicit_accuracy(model, pixels, scores, labels, fraction, positive) -> float:
    """One image at a time: zero the top (or bottom) patches by hand, classify."""
    correct = 0
    for image, score, label in zip(pixels, scores, labels, strict=True):
        flat = score.ravel()
        ranked = sorted(range(flat.size), key=lambda i: (-flat[i] if positive else flat[i], i))
        image = image.copy()
        for index in ranked[: round(fraction * flat.size)]:
            r, c = divmod(index, score.shape[1])
            image[:, r * 4 : r * 4 + 4, c * 4 : c * 4 + 4] = 0.0
        with torch.no_grad():
            logits = model(pixel_values=torch.as_tensor(image[None])).logits
        correct += int(logits.argmax(-1).item() == label)
    return correct / len(labels)


def test_perturbation_curve_equals_an_explicit_loop() -> None:
    model, _ = build_vision("vit")
    model.train()  # the curve runs in eval mode and gives the mode back
    rng = np.random.default_rng(0)
    pixels = rng.normal(size=(6, 3, 32, 32)).astype(np.float32)
    scores = rng.random((6, 8, 8))
    with torch.no_grad():
        labels = model.eval()(pixel_values=torch.as_tensor(pixels)).logits.argmax(-1).numpy()
    model.train()
    for positive in (True, False):
        curve = perturbation_curve(
            model, pixels, scores, labels, patch_size=4, positive=positive, batch_size=5
        )
        assert model.training
        model.eval()
        expected = [
            explicit_accuracy(model, pixels, scores, labels, f, positive) for f in FRACTIONS
        ]
        model.train()
        assert curve.tolist() == expected
        assert curve[0] == 1.0  # nothing removed: the model's own predictions


def test_top_patch_location() -> None:
    mask = np.zeros((8, 8), bool)
    distractor = np.zeros((8, 8), bool)
    mask[0:4, 0:4] = True  # patch (0, 0) with patch size 4
    distractor[4:8, 4:6] = True  # half of patch (1, 1)
    scores = np.zeros((2, 2))
    scores[0, 0] = 1
    assert patch_location(scores, mask, distractor, 4) == "target"
    scores[1, 1] = 2
    assert patch_location(scores, mask, distractor, 4) == "distractor"
    scores[0, 1] = 3
    assert patch_location(scores, mask, distractor, 4) == "background"
