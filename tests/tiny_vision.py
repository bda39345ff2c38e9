"""Tiny Vision Transformers (random weights, seeded) of every supported family."""

from __future__ import annotations

import torch

SMALL = dict(
    image_size=32,
    patch_size=4,
    num_channels=3,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    num_labels=3,
)

#: family → (config class, model class, extra config), by transformers' names.
VISION_FAMILIES = {
    "vit": ("ViTConfig", "ViTForImageClassification", {}),
    "deit": ("DeiTConfig", "DeiTForImageClassification", {}),
    "deit-teacher": ("DeiTConfig", "DeiTForImageClassificationWithTeacher", {}),
    "beit": ("BeitConfig", "BeitForImageClassification", {"use_relative_position_bias": True}),
    "dinov2": ("Dinov2Config", "Dinov2ForImageClassification", {}),
    "dinov2-registers": (
        "Dinov2WithRegistersConfig",
        "Dinov2WithRegistersForImageClassification",
        {"num_register_tokens": 2},
    ),
}


def build_vision(family: str, seed: int = 0):
    """``(model, processor)`` of a tiny ``family`` model on 32×32 images, patch 4."""
    import transformers as tf

    config_name, model_name, extra = VISION_FAMILIES[family]
    torch.manual_seed(seed)
    config = getattr(tf, config_name)(**SMALL, **extra)
    config.id2label = {0: "square", 1: "circle", 2: "cross"}
    config.label2id = {v: k for k, v in config.id2label.items()}
    model = getattr(tf, model_name)(config).eval()
    processor = tf.ViTImageProcessor(size={"height": 32, "width": 32})
    return model, processor


def build_swin():
    import transformers as tf

    config = tf.SwinConfig(
        image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4
    )
    return tf.SwinForImageClassification(config).eval()
