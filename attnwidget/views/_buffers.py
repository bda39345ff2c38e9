"""Arrays as binary buffers for the front end.

Arrays never travel as JSON lists of floats: a view puts them in a ``bytes``
trait (ipywidgets/anywidget send ``bytes``/``memoryview`` trait values as
binary buffers beside the JSON state) plus a ``shape`` trait. The layout is
always float32, little-endian, C order; ``js/src/buffers.ts`` decodes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The wire dtype of every float array: float32, little-endian.
WIRE_DTYPE = np.dtype("<f4")


def encode_float32(array: Any) -> tuple[bytes, list[int]]:
    """``(bytes, shape)`` of an array as float32, little-endian, C order."""
    data = np.ascontiguousarray(np.asarray(array, dtype=WIRE_DTYPE))
    return data.tobytes(order="C"), [int(d) for d in data.shape]


def decode_float32(
    data: bytes | bytearray | memoryview, shape: list[int] | tuple[int, ...]
) -> np.ndarray:
    """The inverse of :func:`encode_float32` (a read-only view of ``data``)."""
    flat = np.frombuffer(data, dtype=WIRE_DTYPE)
    if flat.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"{flat.size} float32 values do not fill shape {tuple(shape)}")
    return flat.reshape(tuple(shape))
