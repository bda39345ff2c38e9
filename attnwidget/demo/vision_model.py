"""The demo Vision Transformer ("shapes-vit"): its architecture, processor and inputs.

A small ViT (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words", ICLR)
for the 32×32 images of :mod:`attnwidget.demo.shapes`, with 2-D sine–cosine
position embeddings (as MAE, He et al. 2022); trained by
:mod:`attnwidget.demo.train_vision`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

from attnwidget.demo import shapes


def build_model() -> ViTForImageClassification:
    """A freshly initialised ``shapes-vit`` (weights from torch's RNG), eager attention."""
    config = ViTConfig(
        image_size=shapes.IMAGE_SIZE,
        patch_size=4,
        num_channels=3,
        hidden_size=64,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=128,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        id2label=dict(enumerate(shapes.LABELS)),
        label2id={label: i for i, label in enumerate(shapes.LABELS)},
        problem_type="single_label_classification",
    )
    config._attn_implementation = "eager"  # what attnwidget runs; the fastest here too
    model = ViTForImageClassification(config)
    # transformers draws every weight from N(0, 0.02), small for hidden size 64, and
    # training sat near chance for hundreds of steps. Xavier-uniform linear layers and
    # patch projection, as MAE initialises its ViTs (He et al. 2022), got off the mark
    # sooner (fitting 256 images for 60 steps: 61 % against 37 % training accuracy).
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            torch.nn.init.xavier_uniform_(module.weight)
        elif isinstance(module, torch.nn.Conv2d):
            weight = module.weight.data
            torch.nn.init.xavier_uniform_(weight.view(weight.shape[0], -1))
    return model


def sincos_position_embeddings(grid: int, dim: int) -> torch.Tensor:
    """(1, 1 + grid², dim) fixed 2-D sine–cosine position embeddings, zeros for CLS.

    Half the channels encode the patch's row, half its column, each as sines
    and cosines of geometrically spaced frequencies (Vaswani et al. 2017),
    as MAE does for ViTs (He et al. 2022); the model starts from them.
    """
    quarter = dim // 4
    omega = 1.0 / 10_000 ** (torch.arange(quarter, dtype=torch.float64) / quarter)
    rows, cols = torch.meshgrid(
        torch.arange(grid, dtype=torch.float64),
        torch.arange(grid, dtype=torch.float64),
        indexing="ij",
    )
    parts = []
    for axis in (rows.flatten(), cols.flatten()):
        angle = axis[:, None] * omega[None, :]
        parts += [angle.sin(), angle.cos()]
    table = torch.cat(parts, dim=1).float()
    return torch.cat([torch.zeros(1, dim), table])[None]


def build_processor() -> ViTImageProcessor:
    """The image processor shipped with the model: resize to 32×32, scale to [-1, 1]."""
    return ViTImageProcessor(
        do_resize=True,
        size={"height": shapes.IMAGE_SIZE, "width": shapes.IMAGE_SIZE},
        do_rescale=True,
        rescale_factor=1 / 255,
        do_normalize=True,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )


def pixel_values(images: np.ndarray | Sequence[np.ndarray]) -> torch.Tensor:
    """uint8 (B, H, W, 3) images → float (B, 3, H, W) as the shipped processor makes them.

    (For 32×32 images the processor's resize changes nothing, so this is its
    rescale and normalisation: ``(x / 255 - 0.5) / 0.5``.)
    """
    array = np.ascontiguousarray(
        np.stack(list(images)) if not isinstance(images, np.ndarray) else images
    )
    x = torch.from_numpy(array.copy()).permute(0, 3, 1, 2).float()
    return (x * (1 / 255) - 0.5) / 0.5
