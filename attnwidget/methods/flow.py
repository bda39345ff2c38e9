"""Attention flow (Abnar & Zuidema, 2020). Placeholder until the solver lands."""

from __future__ import annotations

import numpy as np


def attention_flow(attentions: object, **kwargs: object) -> np.ndarray:
    raise NotImplementedError("attention flow is being written")
