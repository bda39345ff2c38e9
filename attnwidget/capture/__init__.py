"""Capture: run a model once and record what the explanation methods need."""

from .kinds import CAUSAL_LM, ENCODER, ENCODER_DECODER, IMAGE, KINDS, MASKED_LM, model_kind
from .record import AttentionRecord
from .run import Item, capture
from .state import attention_implementation, capture_ready

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
