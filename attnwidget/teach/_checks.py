"""Input checks shared by the attention calculator's functions.

Every check raises :class:`attnwidget.errors.InputError` with a message that
names the array, the shape (or value) given and the one expected, because the
calculator widget shows these messages to learners as they are.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from attnwidget.errors import InputError

#: An expected axis: its letter in the formulas and its size (``None``: any size).
Axis = tuple[str, "int | None"]


def _to_numpy(value: Any) -> Any:
    detach = getattr(value, "detach", None)  # a torch tensor, kept in float64
    if detach is not None:
        return detach().cpu().double().numpy()
    return value


def as_float_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array; refuses non-numbers, NaN and infinity."""
    if value is None:
        raise InputError(f"{name} is None; pass an array of numbers.")
    value = _to_numpy(value)
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InputError(
            f"{name} must be an array of real numbers; got {type(value).__name__} ({error})."
        ) from None
    bad = ~np.isfinite(array)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(
            f"{name} contains NaN or infinity ({int(bad.sum())} value(s); the first at index "
            f"{where} is {array[where]}); every entry must be a finite number."
        )
    return array


def refuse_overflow(step: str, array: np.ndarray, allowed: np.ndarray | None, fix: str) -> None:
    """Raise :class:`InputError` when ``array`` (the result of ``step``) holds an
    infinity or NaN that finite inputs produced: float64 overflowed there.

    ``allowed``: entries that may be non-finite (−∞ where masked), or None.
    ``fix`` says which inputs to shrink. Without this the page showed NaN
    weights with no error (``q = 1e308``).
    """
    bad = ~np.isfinite(array)
    if allowed is not None:
        bad &= ~allowed
    if not bad.any():
        return
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    place = f"query {where[0]} × key {where[1]}" if len(where) == 2 else f"index {where}"
    if step == "output":
        place = f"query {where[0]}, value column {where[1]}"
    raise InputError(
        f"step '{step}' overflowed: {int(bad.sum())} value(s) are beyond float64's range "
        f"(about ±1.8e308), the first at {place} is {array[where]}; {fix}"
    )


def _shape_text(axes: Sequence[Axis]) -> str:
    letters = ", ".join(letter for letter, _ in axes)
    sizes = ", ".join("any" if size is None else str(size) for _, size in axes)
    if len(axes) == 1:
        return f"({letters},) = ({sizes},)"
    return f"({letters}) = ({sizes})"


def check_shape(name: str, array: np.ndarray, axes: Sequence[Axis], why: str = "") -> None:
    """Refuse ``array`` unless it has ``len(axes)`` axes of the sizes given."""
    ok = array.ndim == len(axes) and all(
        size is None or array.shape[i] == size for i, (_, size) in enumerate(axes)
    )
    if not ok:
        suffix = f" ({why})" if why else ""
        raise InputError(f"{name} has shape {array.shape}, expected {_shape_text(axes)}{suffix}.")
    if array.size == 0:
        raise InputError(f"{name} has shape {array.shape}: it is empty; every axis needs size ≥ 1.")


def as_matrix(name: str, value: Any, axes: Sequence[Axis], why: str = "") -> np.ndarray:
    """A finite float64 array of the expected shape."""
    array = as_float_array(name, value)
    check_shape(name, array, axes, why)
    return array


def as_scalar(name: str, value: Any) -> float:
    """A finite real number (not a bool, not an array)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        if not (isinstance(value, np.ndarray) and value.ndim == 0):
            raise InputError(f"{name} must be a real number; got {value!r}.")
    number = float(value)
    if not np.isfinite(number):
        raise InputError(f"{name} must be a finite number; got {number}.")
    return number


def as_count(name: str, value: Any, minimum: int = 0) -> int:
    """A whole number ≥ ``minimum`` (numpy integers accepted, bools and 2.5 refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name} must be a whole number ≥ {minimum}; got {value!r}.")
    if value < minimum:
        raise InputError(f"{name} must be a whole number ≥ {minimum}; got {value}.")
    return int(value)


def as_bool_mask(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A boolean array of ``shape`` (True = may attend); 0/1 or float masks are refused."""
    detach = getattr(value, "detach", None)  # a torch tensor: keep its dtype
    if detach is not None:
        value = detach().cpu().numpy()
    array = np.asarray(value)
    if array.dtype != np.bool_:
        raise InputError(
            f"{name} must be a boolean array (True = may attend, False = masked); got dtype "
            f"{array.dtype}. Convert a 0/1 mask with `mask.astype(bool)`; a float mask "
            "(0 / −inf, added to the scores in torch's convention) is not accepted."
        )
    if array.shape != shape:
        letters = "(m, n)" if len(shape) == 2 else "(n,)"
        raise InputError(f"{name} has shape {array.shape}, expected {letters} = {shape}.")
    return array


def refuse_unknown(what: str, given: dict[str, Any], allowed: Sequence[str]) -> None:
    """Unknown keyword parameters are refused, not silently dropped."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        accepted = ", ".join(allowed) if allowed else "none"
        raise InputError(
            f"{what} does not take the parameter(s) {', '.join(unknown)}; it accepts: {accepted}."
        )


def check_kind(what: str, kind: Any, valid: Sequence[str]) -> str:
    if not isinstance(kind, str) or kind not in valid:
        raise InputError(f"unknown {what} {kind!r}; valid kinds: {', '.join(valid)}.")
    return kind
