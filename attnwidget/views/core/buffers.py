"""Arrays as binary buffers for the front end: the one encoder (and its decoder).

Arrays never travel as JSON lists of floats: a view puts them in a ``bytes``
trait or a custom message's buffers (ipywidgets/anywidget send ``bytes``/
``memoryview`` values as binary buffers beside the JSON part), described by a
*wire meta* ``{"dtype", "shape"}`` (plus ``"scale"`` for rescaled float16).
Values are little-endian, C order. ``js/src/core/buffers.ts`` ``decodeArray`` is
the one decoder on the page.

dtypes
------
``"float32"``: scores, paths, FlowView's attention (the page's numbers then
match the kernel's to float32 precision). ``"uint32"``: indices.
``"float16"``: HeadView/ModelView attention (half the bytes).

float16 range
-------------
float16 holds finite magnitudes up to :data:`FLOAT16_MAX` (65504) and nonzero
ones down to :data:`FLOAT16_TINY` (2**-24, about 6e-8). A value outside that
range is never silently turned into ``inf`` or 0; per array, the caller picks:

- ``fit="refuse"`` (default): a finite value above 65504 raises
  :class:`~attnwidget.errors.InputError` naming the array and the value.
- ``fit="rescale"``: the values are divided by a power of two (exact in
  binary) that brings the largest magnitude into [2**14, 2**15); the meta's
  ``"scale"`` says by what, and the decoders multiply back. For gradients,
  relevance and other scores of any magnitude.
- ``underflow="refuse"`` (default): a nonzero value that would round to 0
  (after any rescaling: the array spans more than float16's ~1e12 dynamic
  range) raises :class:`~attnwidget.errors.InputError`.
- ``underflow="allow"``: such values become 0. Attention *probabilities* use
  this: a weight below 6e-8 is drawn as nothing either way (a line's 8-bit
  alpha step is 1/255), and refusing would reject ordinary softmax outputs.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from attnwidget.errors import InputError

WireDtype = Literal["float16", "float32", "uint32"]

#: numpy dtype of each wire dtype (all little-endian).
DTYPES: dict[str, np.dtype[Any]] = {
    "float32": np.dtype("<f4"),
    "float16": np.dtype("<f2"),
    "uint32": np.dtype("<u4"),
}
#: The wire dtype of float arrays unless a view says otherwise.
WIRE_DTYPE = DTYPES["float32"]
#: Largest finite float16 magnitude.
FLOAT16_MAX = 65504.0
#: Smallest nonzero float16 magnitude (a subnormal).
FLOAT16_TINY = 2.0**-24
_RESCALE_ADVICE = "Send it rescaled (fit='rescale') or as float32."
#: Where rescaling puts the largest magnitude: [2**14, 2**15), well inside the range.
_RESCALE_EXPONENT = 14


def encode_array(
    array: Any,
    dtype: WireDtype = "float32",
    *,
    name: str = "array",
    fit: Literal["refuse", "rescale"] = "refuse",
    underflow: Literal["refuse", "allow"] = "refuse",
    hint: str = "",
) -> tuple[bytes, dict[str, Any]]:
    """``(bytes, meta)`` of ``array`` on the wire; :func:`decode_array` inverts it.

    ``meta`` is ``{"dtype": dtype, "shape": [...]}``, with ``"scale"`` when a
    float16 array was rescaled. ``fit`` and ``underflow`` apply to float16
    only (see the module docstring); ``name`` names the array in errors, and
    ``hint`` (optional) replaces the advice of an out-of-range error.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r} is not a wire dtype; use one of {sorted(DTYPES)}.")
    values = np.asarray(array)
    meta: dict[str, Any] = {"dtype": dtype, "shape": [int(d) for d in values.shape]}
    if dtype == "float16":
        encoded, scale = _to_float16(values, name, fit, underflow, hint)
        if scale != 1.0:
            meta["scale"] = scale
    else:
        encoded = np.asarray(values, dtype=DTYPES[dtype])
    return np.ascontiguousarray(encoded).tobytes(order="C"), meta


def decode_array(data: bytes | bytearray | memoryview, meta: dict[str, Any]) -> np.ndarray:
    """The values :func:`encode_array` wrote: float32 for float dtypes (times
    ``meta["scale"]``), uint32 for indices."""
    dtype = meta.get("dtype")
    if dtype not in DTYPES:
        raise ValueError(f"unknown wire dtype {dtype!r}")
    shape = tuple(int(d) for d in meta["shape"])
    flat = np.frombuffer(data, dtype=DTYPES[dtype])
    if flat.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"{flat.size} {dtype} values do not fill shape {shape}")
    if dtype == "uint32":
        return flat.reshape(shape)
    out = flat.reshape(shape).astype(np.float32)
    scale = float(meta.get("scale", 1.0))
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"float16 scale must be a positive finite number, got {scale!r}")
    return out * np.float32(scale) if scale != 1.0 else out


def check_float16(
    array: Any, name: str, *, underflow: Literal["refuse", "allow"], hint: str = ""
) -> None:
    """Raise :class:`InputError` when ``array`` cannot travel as float16 unscaled."""
    _to_float16(np.asarray(array), name, "refuse", underflow, hint)


def _to_float16(
    values: np.ndarray, name: str, fit: str, underflow: str, hint: str = ""
) -> tuple[np.ndarray, float]:
    if fit not in ("refuse", "rescale"):
        raise ValueError(f"fit={fit!r} must be 'refuse' or 'rescale'.")
    if underflow not in ("refuse", "allow"):
        raise ValueError(f"underflow={underflow!r} must be 'refuse' or 'allow'.")
    values = np.asarray(values, dtype=np.float64) if values.dtype != np.float32 else values
    finite = np.isfinite(values)
    magnitude = np.abs(np.where(finite, values, 0))
    largest = float(magnitude.max(initial=0.0))
    scale = 1.0
    if fit == "rescale" and largest > 0:
        nonzero = magnitude[magnitude > 0]
        # Rescale only when needed, so arrays already in range keep their exact bytes.
        if largest > FLOAT16_MAX or float(nonzero.min()) < 2.0**-14:
            scale = float(2.0 ** (np.floor(np.log2(largest)) - _RESCALE_EXPONENT))
    scaled = values / scale if scale != 1.0 else values
    if largest / scale > FLOAT16_MAX:
        raise InputError(
            f"{name} reaches {largest:.6g}, beyond float16's largest value {FLOAT16_MAX:g}: it "
            f"would be sent as infinity. {hint or _RESCALE_ADVICE}"
        )
    encoded = np.asarray(scaled, dtype=DTYPES["float16"])
    if underflow == "refuse":
        lost = finite & (values != 0) & (encoded == 0)
        if lost.any():
            smallest = float(magnitude[lost].min())
            why = (
                f"its values span {largest:.3g} to {smallest:.3g}, more than float16's ~1e12 "
                "from largest to smallest; send it as float32"
                if scale != 1.0
                else f"below float16's smallest nonzero value {FLOAT16_TINY:.3g}; send it "
                "rescaled (fit='rescale') or as float32"
            )
            raise InputError(
                f"{name} holds {int(lost.sum())} nonzero value(s) as small as {smallest:.3g} that "
                f"float16 would send as 0: {why}."
            )
    return encoded, scale


# -- shorthands -----------------------------------------------------------------


def encode_float32(array: Any) -> tuple[bytes, list[int]]:
    """``(bytes, shape)`` of an array as float32 (:func:`encode_array`)."""
    data, meta = encode_array(array, "float32")
    return data, meta["shape"]


def decode_float32(
    data: bytes | bytearray | memoryview, shape: list[int] | tuple[int, ...]
) -> np.ndarray:
    """The inverse of :func:`encode_float32` (a read-only view of ``data``)."""
    flat = np.frombuffer(data, dtype=WIRE_DTYPE)
    if flat.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"{flat.size} float32 values do not fill shape {tuple(shape)}")
    return flat.reshape(tuple(shape))


#: What an out-of-range attention error advises.
ATTENTION_HINT = (
    "HeadView and ModelView draw attention probabilities (in [0, 1]) as line opacity; "
    "normalise the weights first (e.g. a softmax over each row)."
)


def encode_attention(array: Any, name: str = "attention") -> bytes:
    """Attention probabilities as float16: values above 65504 refused, weights
    below 6e-8 sent as 0 (see the module docstring)."""
    return encode_array(array, "float16", name=name, underflow="allow", hint=ATTENTION_HINT)[0]


def decode_float16(
    data: bytes | bytearray | memoryview, shape: list[int] | tuple[int, ...], scale: float = 1.0
) -> np.ndarray:
    """float16 bytes (as :func:`encode_attention` writes them) as float32."""
    meta: dict[str, Any] = {"dtype": "float16", "shape": list(shape)}
    if scale != 1.0:
        meta["scale"] = scale
    return decode_array(data, meta)
