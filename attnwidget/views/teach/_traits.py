"""AttentionCalculator's array trait and default inputs.

:class:`FloatArray` holds a float64 numpy array and serialises itself to the
page as one JSON object with its bytes beside it,
``{"dtype": "float64", "shape": [...], "data": <binary buffer>}``, so bytes and
shape travel together and can never drift apart (ipywidgets splits the
``data`` bytes out as a binary buffer; no float ever goes through JSON). The
page sends edits back in the same form (``js/src/teach/calculator_state.ts``).

The trait accepts any array of numbers, of any shape, NaN included: what a
learner typed is kept as it is, and the checks that explain what is wrong
(mismatched dimensions, NaN) belong to :mod:`attnwidget.teach`, whose
messages the widget shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import traitlets

from attnwidget.errors import InputError

#: The one dtype of the calculator's arrays on the wire (little-endian float64).
WIRE = np.dtype("<f8")


def to_wire(value: np.ndarray | None, _widget: Any = None) -> dict[str, Any] | None:
    """An array as ``{"dtype": "float64", "shape": [...], "data": memoryview}``."""
    if value is None:
        return None
    array = np.ascontiguousarray(value, dtype=WIRE)
    shape = [int(s) for s in array.shape]
    return {"dtype": "float64", "shape": shape, "data": memoryview(array.tobytes())}


def from_wire(value: Any, _widget: Any = None) -> np.ndarray | None:
    """The inverse of :func:`to_wire` (the page's edits); refuses a malformed object."""
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("dtype") != "float64":
        raise traitlets.TraitError(
            f"an array from the page must be {{'dtype': 'float64', 'shape', 'data'}}; got {value!r}"
        )
    shape = value.get("shape")
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise traitlets.TraitError(f"bad shape from the page: {shape!r}")
    data = value.get("data")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise traitlets.TraitError(f"array data from the page must be bytes, got {type(data)}")
    raw = bytes(data)
    if len(raw) != WIRE.itemsize * int(np.prod(shape, dtype=np.int64)):
        raise traitlets.TraitError(f"{len(raw)} bytes do not fill float64 shape {shape}")
    return np.frombuffer(raw, dtype=WIRE).reshape(shape).astype(np.float64)


class FloatArray(traitlets.TraitType):
    """A float64 numpy array (read-only copy), synced as bytes + shape.

    Lists, tuples, numpy arrays and CPU torch tensors are accepted; values
    that are not numbers at all (strings, ragged lists) are refused here with
    a :class:`traitlets.TraitError`.
    """

    info_text = "an array of numbers (any shape)"

    def __init__(self, default: Any = None, **kwargs: Any) -> None:
        kwargs.setdefault("allow_none", default is None)
        super().__init__(default_value=default, **kwargs)
        self.metadata.setdefault("to_json", to_wire)
        self.metadata.setdefault("from_json", from_wire)

    def validate(self, obj: Any, value: Any) -> np.ndarray | None:
        if value is None:
            if self.allow_none:
                return None
            self.error(obj, value)
        detach = getattr(value, "detach", None)  # a torch tensor
        if detach is not None:
            value = detach().cpu().double().numpy()
        try:
            array = np.array(value, dtype=np.float64)
        except (TypeError, ValueError):
            self.error(obj, value)
        array.setflags(write=False)
        return array

    def make_dynamic_default(self) -> np.ndarray | None:
        return None if self.default_value is None else self.validate(None, self.default_value)


def same_array(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Equal shape and values (NaN equal to NaN), or both None."""
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


# -- default inputs: a small self-attention example ----------------------------------

DEFAULT_TOKENS = ["the", "cat", "sat", "down"]
DEFAULT_Q = [[1.0, 0.0, 1.0], [0.0, 2.0, 0.0], [1.0, 1.0, -1.0], [0.5, 0.0, 1.0]]
DEFAULT_K = [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]]
DEFAULT_V = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 2.0]]


def default_w(kind: str, n: int | None, d: int) -> np.ndarray:
    """``W`` for ``general`` (d, d): the identity (then qᵀWk = qᵀk); for
    ``location`` (n, d): ones on the diagonal, so key j's score is q's j-th entry."""
    if kind != "location":
        return np.eye(d)
    if n is None:
        raise InputError(
            "location scores need the keys k as a 2-D array (n keys × d), to size W (n, d); "
            "pass k with one row per key."
        )
    return np.eye(n, d)


def default_params(n: int | None, d: int) -> dict[str, np.ndarray]:
    """Parameters that fit queries of size d and n keys (hidden size h = d).

    additive: W1 = W2 = I, v_a = 1 (then the score is Σ tanh(q + k));
    local-p: W_p = I / 2, v_p = 1 (p_t grows with the sum of tanh(q_t / 2)).
    """
    return {
        "W": default_w("general", n, d),
        "W1": np.eye(d),
        "W2": np.eye(d),
        "v_a": np.ones(d),
        "W_p": np.eye(d) / 2,
        "v_p": np.ones(d),
    }


def rows_of(array: np.ndarray | None) -> int | None:
    """Rows of an array with at least one axis (else None)."""
    return int(array.shape[0]) if array is not None and array.ndim >= 1 else None


def width_of(array: np.ndarray | None) -> int | None:
    """Columns of a 2-D array (else None)."""
    return int(array.shape[1]) if array is not None and array.ndim == 2 else None


def row_names(
    given: Sequence[str] | None, example: list[str] | None, prefix: str, count: Any
) -> list[str]:
    if given is not None:
        return [str(t) for t in given]
    if example is not None:
        return list(example)
    return [f"{prefix}{i}" for i in range(count or 0)]
