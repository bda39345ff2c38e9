"""Keep a shipped model's weights at the same memory alignment as the original's.

Why: torch's CPU kernels (MKL, oneDNN) pick their code path by the alignment
of the arrays they are given, and different paths round differently. A model
loaded from safetensors (memory-mapped) has weights at arbitrary offsets,
while the copy a Dask worker unpickles is 64-byte aligned; on an AMD EPYC
machine that alone changed input × gradient scores by up to 5e-9 between the
local run and the workers. :class:`~.executors.ModelBundle` records each
weight's offset modulo 64 and the worker places its copy at that offset, so
both run the same code path and their numbers are identical.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

#: The alignment that matters (a cache line; the widest vector loads).
ALIGN = 64


def _cpu_tensors(model: Any) -> Iterator[tuple[str, Any]]:
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if tensor.device.type == "cpu" and tensor.numel() and tensor.is_contiguous():
            yield name, tensor


def offsets(model: Any) -> dict[str, int]:
    """Each CPU weight's (parameter's or buffer's) address modulo :data:`ALIGN`."""
    return {name: tensor.data_ptr() % ALIGN for name, tensor in _cpu_tensors(model)}


def restore(model: Any, recorded: dict[str, int]) -> None:
    """Move every weight whose offset differs from ``recorded`` to a copy at that offset."""
    import torch

    for name, tensor in _cpu_tensors(model):
        offset = recorded.get(name)
        if offset is None or tensor.data_ptr() % ALIGN == offset:
            continue
        size = tensor.numel() * tensor.element_size()
        buffer = torch.empty(size + ALIGN, dtype=torch.uint8)
        start = (offset - buffer.data_ptr()) % ALIGN
        placed = buffer[start : start + size].view(tensor.dtype).view(tensor.shape)
        placed.copy_(tensor.detach())
        tensor.data = placed
