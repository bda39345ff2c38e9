"""Capture: run a model once and record what the explanation methods need."""

from attnwidget.capture.kinds import (
    CAUSAL_LM,
    ENCODER,
    ENCODER_DECODER,
    IMAGE,
    KINDS,
    MASKED_LM,
    model_kind,
)
from attnwidget.capture.record import AttentionRecord
from attnwidget.capture.run import Item, capture
from attnwidget.capture.state import attention_implementation, capture_ready

__all__ = [
    "CAUSAL_LM",
    "ENCODER",
    "ENCODER_DECODER",
    "IMAGE",
    "KINDS",
    "MASKED_LM",
    "AttentionRecord",
    "Item",
    "attention_implementation",
    "capture",
    "capture_ready",
    "model_kind",
]
