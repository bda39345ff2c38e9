"""Image capture: attention, gradients and patch scores of every ViT family, checked
against the stock model run independently (eager attention, retain_grad)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import build
from tiny_vision import VISION_FAMILIES, build_swin, build_vision

import attnwidget
from attnwidget.errors import InputError, ModelNotSupportedError


def picture(height: int = 32, width: int = 32, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).random((height, width, 3)) * 255).astype(np.uint8)


def reference(model, pixels: torch.Tensor, target: int, **kwargs):
    """The stock model, eager, run by hand: attention, its gradients, patch input × grad."""
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None and hasattr(config, "_attn_implementation_internal"):
            config._attn_implementation_internal = "eager"
    kept = {}

    def keep(_module, _inputs, output):
        output.retain_grad()
        kept["patches"] = output

    handle = model.get_input_embeddings().register_forward_hook(keep)
    out = model(pixel_values=pixels, output_attentions=True, **kwargs)
    handle.remove()
    for a in out.attentions:
        a.retain_grad()
    out.logits[0, target].backward()
    patches = kept["patches"]
    return (
        np.stack([a[0].detach().numpy() for a in out.attentions]),
        np.stack([a.grad[0].numpy() for a in out.attentions]),
        (patches * patches.grad)[0].sum(-1).detach().numpy(),
    )


@pytest.mark.parametrize("family", list(VISION_FAMILIES))
def test_every_family_matches_its_stock_model(family: str) -> None:
    model, processor = build_vision(family)
    image = picture()
    exp = attnwidget.explain(
        model, processor, image, methods=["raw", "rollout", "grad_attention", "input_x_gradient"]
    )
    assert exp.kind == "image" and exp.patch_grid == (8, 8) and exp.patch_size == 4
    specials = len(exp.tokens) - 64
    assert exp.special_tokens == list(range(specials)) and exp.tokens[0] == "[CLS]"
    assert exp.tokens[specials] == "(0,0)" and exp.tokens[-1] == "(7,7)"
    assert np.array_equal(exp.image, image)
    reference_model, _ = build_vision(family)
    pixels = processor(images=image, return_tensors="pt")["pixel_values"]
    attn, grads, ixg = reference(reference_model, pixels, exp.target_id)
    assert np.allclose(exp.attentions, attn, atol=1e-6)
    assert np.allclose(exp.attention_grads, grads, atol=1e-6, rtol=1e-4)
    assert np.allclose(exp.scores["input_x_gradient"][specials:], ixg, atol=1e-6, rtol=1e-4)
    for method in exp.scores:  # special tokens are never scored
        assert np.all(exp.scores[method][:specials] == 0)
        assert exp.patch_scores(method).shape == (8, 8)


def test_special_tokens_are_named_by_what_they_are() -> None:
    tokens = {
        f: attnwidget.explain(*build_vision(f), picture(), methods=["raw"]).tokens
        for f in (
            "deit-teacher",
            "dinov2-registers",
        )
    }
    assert tokens["deit-teacher"][:3] == ["[CLS]", "[DIST]", "(0,0)"]
    assert tokens["dinov2-registers"][:4] == ["[CLS]", "[REG1]", "[REG2]", "(0,0)"]


def test_non_default_sizes_read_the_grid_from_the_input() -> None:
    model, _ = build_vision("vit")
    pixels = torch.randn(3, 48, 40)
    exp = attnwidget.explain(model, None, pixels, methods=["rollout"])
    assert exp.patch_grid == (12, 10) and exp.attentions.shape[-1] == 121
    reference_model, _ = build_vision("vit")
    attn, _, _ = reference(
        reference_model, pixels[None], exp.target_id, interpolate_pos_encoding=True
    )
    assert np.allclose(exp.attentions, attn, atol=1e-6)
    assert exp.heatmap("rollout", "input").shape == (48, 40)


def explicit_bilinear(grid: np.ndarray, scale: int) -> np.ndarray:
    """Bilinear upsampling with half-pixel centres (align_corners=False), by hand."""
    rows, cols = grid.shape
    out = np.zeros((rows * scale, cols * scale))
    for y in range(rows * scale):
        for x in range(cols * scale):
            sy = min(max((y + 0.5) / scale - 0.5, 0.0), rows - 1)
            sx = min(max((x + 0.5) / scale - 0.5, 0.0), cols - 1)
            y0, x0 = int(np.floor(sy)), int(np.floor(sx))
            y1, x1 = min(y0 + 1, rows - 1), min(x0 + 1, cols - 1)
            dy, dx = sy - y0, sx - x0
            out[y, x] = (
                grid[y0, x0] * (1 - dy) * (1 - dx)
                + grid[y0, x1] * (1 - dy) * dx
                + grid[y1, x0] * dy * (1 - dx)
                + grid[y1, x1] * dy * dx
            )
    return out


def test_heatmap_is_the_authors_bilinear_upsampling() -> None:
    model, processor = build_vision("vit")
    exp = attnwidget.explain(model, processor, picture(), methods=["rollout"])
    patches = exp.patch_scores("rollout")
    assert np.allclose(exp.heatmap("rollout", "input"), explicit_bilinear(patches, 4), atol=1e-6)
    normalised = exp.heatmap("rollout", "input", normalize=True)
    assert normalised.min() == 0.0 and np.isclose(normalised.max(), 1.0)
    assert exp.heatmap("rollout", (10, 12)).shape == (10, 12)


def test_bad_image_input_is_refused_clearly() -> None:
    model, processor = build_vision("vit")
    cases = [
        ("a sentence", r"image model, but a string"),
        (np.zeros((8, 8, 4), np.uint8), r"shape \(8, 8, 4\).*RGBA"),
        ([], r"empty"),
        (np.full((8, 8), np.nan), r"NaN/inf"),
        (np.full((8, 8, 3), 300.0), r"values from 300"),
    ]
    for value, pattern in cases:
        with pytest.raises(InputError, match=pattern):
            attnwidget.explain(model, processor, value)
    with pytest.raises(InputError, match=r"processor=None needs image 0 as a ready pixel tensor"):
        attnwidget.explain(model, None, picture())
    with pytest.raises(InputError, match=r"not a multiple of the patch size 4"):
        attnwidget.explain(model, None, torch.randn(3, 30, 32))
    with pytest.raises(InputError, match=r"text_pair is for text models"):
        attnwidget.explain(model, processor, picture(), text_pair="x")
    text_model, tokenizer = build("bert-cls")
    with pytest.raises(InputError, match=r"is an image, but this is a text model"):
        attnwidget.explain(text_model, tokenizer, picture())


def test_windowed_attention_models_are_refused_saying_why() -> None:
    with pytest.raises(ModelNotSupportedError, match=r"windowed attention.*rollout, flow"):
        attnwidget.explain(build_swin(), None, torch.randn(3, 32, 32))
