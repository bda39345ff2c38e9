"""Integrated gradients and occlusion on images: pixel baselines, checked by explicit loops."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import build
from tiny_vision import build_vision

import attnwidget
from attnwidget.errors import InputError
from attnwidget.methods.pixels import patch_sums, pixel_baseline


def _image(seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).random((32, 32, 3)) * 255).astype(np.uint8)


def _pixels(processor, image: np.ndarray) -> torch.Tensor:
    return processor(images=image, return_tensors="pt")["pixel_values"].float()


def _logit(model, pixels: torch.Tensor, target: int) -> torch.Tensor:
    return model(pixel_values=pixels).logits[:, target]


@pytest.mark.parametrize("family", ["vit", "deit-teacher"])
def test_pixel_integrated_gradients_equal_an_explicit_riemann_loop(family: str) -> None:
    model, processor = build_vision(family)
    image = _image(1)
    steps = 6
    exp = attnwidget.explain(
        model,
        processor,
        image,
        methods=["integrated_gradients"],
        method_options={"integrated_gradients": {"steps": steps, "baseline": "black"}},
    )
    target = exp.target_id
    x = _pixels(processor, image)[0]
    x0 = _pixels(processor, np.zeros_like(image))[0]
    # The trapezoid rule on `steps` equal intervals, one point at a time.
    total = torch.zeros_like(x)
    for k in range(steps + 1):
        alpha = k / steps
        point = (x0 + alpha * (x - x0)).clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(_logit(model, point[None], target).sum(), [point])
        total += (0.5 if k in (0, steps) else 1.0) * grad
    per_pixel = ((x - x0) * total / steps).sum(0).detach().numpy()
    grid = exp.patch_grid
    expected = np.zeros(grid)
    for r in range(grid[0]):
        for c in range(grid[1]):
            expected[r, c] = per_pixel[r * 4 : r * 4 + 4, c * 4 : c * 4 + 4].sum()
    np.testing.assert_allclose(exp.patch_scores("integrated_gradients"), expected, atol=1e-5)
    specials = exp.special_tokens
    assert np.all(exp.scores["integrated_gradients"][specials] == 0)
    assert exp.details["integrated_gradients"]["baseline"] == "black"


@pytest.mark.parametrize("baseline", ["black", "blurred", "mean"])
def test_adaptive_pixel_integrated_gradients_are_complete(baseline: str) -> None:
    model, processor = build_vision("vit")
    exp = attnwidget.explain(
        model,
        processor,
        _image(2),
        methods=["integrated_gradients"],
        method_options={"integrated_gradients": {"baseline": baseline}},
    )
    info = exp.details["integrated_gradients"]
    x = _pixels(processor, _image(2))
    with torch.no_grad():
        y = float(_logit(model, x, exp.target_id))
    assert info["target_value"] == pytest.approx(y, abs=1e-5)
    total = float(exp.scores["integrated_gradients"].sum())
    # float32 scores: their sum carries float32 rounding
    assert total - info["target_delta"] == pytest.approx(info["completeness_gap"], abs=1e-6)
    assert info["converged"]
    assert abs(info["completeness_gap"]) <= 0.01 * max(abs(y), abs(info["target_delta"])) + 1e-12


@pytest.mark.parametrize("baseline", ["mean", "black"])
def test_occlusion_equals_replacing_each_patch_by_hand(baseline: str) -> None:
    model, processor = build_vision("dinov2-registers")
    image = _image(3)
    exp = attnwidget.explain(
        model,
        processor,
        image,
        methods=["blank_out"],
        method_options={"blank_out": {"baseline": baseline}},
    )
    x = _pixels(processor, image)[0]
    if baseline == "mean":
        fill = x.mean(dim=(1, 2), keepdim=True).expand_as(x)
    else:
        fill = _pixels(processor, np.zeros_like(image))[0]
    with torch.no_grad():
        base = float(model(pixel_values=x[None]).logits.softmax(-1)[0, exp.target_id])
        rows, cols = exp.patch_grid
        expected = np.zeros((rows, cols))
        for r in range(rows):
            for c in range(cols):
                variant = x.clone()
                window = (slice(None), slice(4 * r, 4 * r + 4), slice(4 * c, 4 * c + 4))
                variant[window] = fill[window]
                p = float(model(pixel_values=variant[None]).logits.softmax(-1)[0, exp.target_id])
                expected[r, c] = base - p
    np.testing.assert_allclose(exp.patch_scores("blank_out"), expected, atol=1e-6)
    assert np.all(exp.scores["blank_out"][exp.special_tokens] == 0)
    assert len(exp.special_tokens) == 3  # CLS and two registers, never occluded


def test_pixel_baselines_and_patch_sums_on_hand_cases() -> None:
    pixels = np.zeros((3, 4, 4))
    pixels[:, :, 2:] = 1.0  # left half 0, right half 1
    np.testing.assert_allclose(pixel_baseline(pixels, "mean"), np.full((3, 4, 4), 0.5))
    black = np.array([-1.0, -2.0, -3.0])[:, None, None]
    np.testing.assert_allclose(pixel_baseline(pixels, "black", black=black)[:, 3, 3], [-1, -2, -3])
    blurred = pixel_baseline(pixels, "blurred", sigma=1.0)
    assert blurred.mean() == pytest.approx(0.5, abs=1e-9)  # reflecting edges keep the mean
    assert 0 < blurred[0, 0, 1] < blurred[0, 0, 2] < 1  # the edge is smoothed, in order
    values = np.arange(16.0).reshape(4, 4)
    np.testing.assert_allclose(
        patch_sums(values, 2), [0 + 1 + 4 + 5, 2 + 3 + 6 + 7, 8 + 9 + 12 + 13, 10 + 11 + 14 + 15]
    )


def test_bad_pixel_baselines_are_refused_before_the_run() -> None:
    model, processor = build_vision("vit")
    with pytest.raises(InputError, match="'black', 'blurred' or 'mean'"):
        attnwidget.explain(
            model,
            processor,
            _image(),
            methods=["integrated_gradients"],
            method_options={"integrated_gradients": {"baseline": "grey"}},
        )
    with pytest.raises(InputError, match=r"\(3, 32, 32\)"):
        attnwidget.explain(
            model,
            processor,
            _image(),
            methods=["integrated_gradients"],
            method_options={"integrated_gradients": {"baseline": np.zeros((3, 8, 8))}},
        )
    assert not any(p.grad is not None for p in model.parameters())


def test_text_models_refuse_image_baselines_naming_what_text_takes() -> None:
    model, tokenizer = build("bert-cls")
    with pytest.raises(InputError, match="image baseline"):
        attnwidget.explain(
            model,
            tokenizer,
            "the cat sat",
            methods=["integrated_gradients"],
            method_options={"integrated_gradients": {"baseline": "black"}},
        )
    with pytest.raises(InputError, match="UNK"):
        attnwidget.explain(
            model,
            tokenizer,
            "the cat sat",
            methods=["blank_out"],
            method_options={"blank_out": {"baseline": "mean"}},
        )
