"""Input checks shared by the metrics: every refusal is an :class:`InputError` that
names what was given and what is expected."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnwidget.errors import InputError


def describe(value: Any) -> str:
    """What was given, in words: "shape (3, 2)", "a str", "None"."""
    if value is None:
        return "None"
    if isinstance(value, (str, bytes, dict, set)):
        return f"a {type(value).__name__}"
    try:
        return f"shape {np.shape(value)}"
    except (TypeError, ValueError):
        return f"a {type(value).__name__}"


def vector(value: Any, name: str, *, finite: bool = True, min_size: int = 0) -> np.ndarray:
    """``value`` as a 1-D float64 array, or an InputError."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a 1-D array of numbers; got {describe(value)}.") from exc
    if array.ndim != 1:
        raise InputError(f"{name} must be 1-D (one value per item); got {describe(value)}.")
    if array.size < min_size:
        raise InputError(f"{name} needs at least {min_size} value(s); got {array.size}.")
    if finite and not np.isfinite(array).all():
        bad = np.flatnonzero(~np.isfinite(array))
        raise InputError(
            f"{name} holds {bad.size} NaN/inf value(s) (the first at index {bad[0]}); "
            "pass finite numbers."
        )
    return array


def mask(value: Any, name: str, size: int | None = None) -> np.ndarray:
    """``value`` as a 1-D bool array (bool, or numbers that are all 0/1), or an InputError."""
    array = np.asarray(value)
    if array.ndim != 1:
        raise InputError(f"{name} must be a 1-D bool mask (one per token); got {describe(value)}.")
    if array.dtype != bool:
        if array.size and (
            not np.issubdtype(array.dtype, np.number) or not np.isin(array, (0, 1)).all()
        ):
            raise InputError(
                f"{name} must be a bool mask (True/False or 0/1 per token); got dtype "
                f"{array.dtype} with values other than 0 and 1."
            )
        array = array.astype(bool)
    if size is not None and array.size != size:
        raise InputError(f"{name} has {array.size} entries for {size} tokens; pass one per token.")
    return array


def same_length(a: np.ndarray, b: np.ndarray, names: tuple[str, str]) -> None:
    if a.shape != b.shape:
        raise InputError(
            f"{names[0]} has {a.size} values and {names[1]} {b.size}; pass one each per item."
        )


def probabilities(value: Any, name: str) -> np.ndarray:
    """``value`` (a number or an array) as float64 in [0, 1], or an InputError."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be probabilities in [0, 1]; got {describe(value)}.") from exc
    finite = np.isfinite(array)
    if not finite.all() or (array.size and (array.min() < 0 or array.max() > 1)):
        shown = array[finite]
        got = f"values from {shown.min():.6g} to {shown.max():.6g}" if shown.size else "no value"
        raise InputError(
            f"{name} must be probabilities in [0, 1]; got {got}"
            f"{' and NaN/inf' if not finite.all() else ''}."
        )
    return array


def fraction(value: Any, name: str, *, low_open: bool = False) -> float:
    """A number in [0, 1] (or (0, 1] with ``low_open``), or an InputError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number in [0, 1]; got {value!r}.")
    number = float(value)
    if not (0 < number <= 1 if low_open else 0 <= number <= 1):
        interval = "(0, 1]" if low_open else "[0, 1]"
        raise InputError(f"{name} must be in {interval}; got {value!r}.")
    return number


def integer(value: Any, name: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an integer ≥ {minimum}; got {value!r}.")
    if value < minimum:
        raise InputError(f"{name} must be ≥ {minimum}; got {value}.")
    return int(value)


def token_ids(value: Any) -> np.ndarray:
    """``input_ids`` as a 1-D integer array (one sequence), or an InputError."""
    array = np.asarray(value)
    if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
        raise InputError(
            f"input_ids must be one sequence, a 1-D array of integer token ids; got "
            f"{describe(value)} of dtype {array.dtype}."
        )
    if array.size == 0:
        raise InputError("input_ids is empty; pass at least one token.")
    return array


def candidate_positions(candidates: Any, size: int) -> np.ndarray:
    """Sorted positions from ``candidates`` (None: all ``size``; a bool mask; or indices)."""
    if candidates is None:
        return np.arange(size)
    array = np.asarray(candidates)
    if array.dtype == bool:
        if array.shape != (size,):
            raise InputError(
                f"candidates as a bool mask needs one entry per token ({size}); got "
                f"{describe(candidates)}."
            )
        return np.flatnonzero(array)
    if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
        raise InputError(
            "candidates must be None (every token), a bool mask or 1-D integer positions; "
            f"got {describe(candidates)} of dtype {array.dtype}."
        )
    if array.size and (array.min() < 0 or array.max() >= size):
        raise InputError(
            f"candidates name positions {array.min()}…{array.max()}, outside 0…{size - 1} "
            f"of the {size} tokens."
        )
    if np.unique(array).size != array.size:
        raise InputError("candidates name a position more than once; pass each position once.")
    return np.sort(array.astype(np.intp))


def replacement(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(
            f"replacement_id must be a token id (an int) or None (delete the tokens); "
            f"got {value!r}."
        )
    return int(value)


def perturbed(
    ids: np.ndarray, removed: Sequence[np.ndarray], replacement_id: int | None
) -> np.ndarray | list[np.ndarray]:
    """One row per bool mask in ``removed``: those tokens replaced (a (B, n) array) or
    deleted (a list of B 1-D arrays of different lengths)."""
    if replacement_id is None:
        return [ids[~gone] for gone in removed]
    rows = np.repeat(ids[None], len(removed), axis=0)
    for row, gone in zip(rows, removed, strict=True):
        row[gone] = replacement_id
    return rows


def call_scorer(fn: Any, rows: np.ndarray | list[np.ndarray], name: str) -> np.ndarray:
    """``fn(rows)`` as float64 with one value (or one row of values) per input row in [0, 1]."""
    if not callable(fn):
        raise InputError(f"{name} must be a callable taking token ids; got {fn!r}.")
    out = np.asarray(fn(rows), dtype=np.float64)
    if out.ndim not in (1, 2) or out.shape[0] != len(rows):
        raise InputError(
            f"{name} returned {describe(out)} for {len(rows)} sequences; it must return one "
            "value per sequence ((B,)), or one row of values per sequence ((B, k))."
        )
    return probabilities(out, f"{name}'s output")
