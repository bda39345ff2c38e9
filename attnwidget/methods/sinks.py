"""Attention sinks: leave chosen key positions out of every attention row.

Most attention rows of a causal LM put much of their weight on the first
token (Xiao et al. 2024, "Efficient Streaming Language Models with Attention
Sinks"); BERT-style models park it on [CLS] and [SEP] (Clark et al. 2019,
"What Does BERT Look At?"). That weight swamps raw attention, rollout and
flow. ``explain(..., ignore_keys=...)`` takes it out: every row loses those
key columns and is divided by what is left, so it is again a distribution,
over the other keys (:func:`renormalise_keys`).

:func:`renormalise_keys` is the one place this arithmetic lives: the pipeline
hands its result to the methods, and :class:`~attnwidget.Explanation`
(``renormalised_attentions``) to the views. The other functions read and check
the option: :func:`check_ignore_keys` its form (before a model runs),
:func:`resolve_ignore_keys` the positions it names in one input.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np

from attnwidget.errors import InputError

#: The named choices: key position 0, or the tokenizer's special tokens.
FIRST, SPECIAL = "first", "special"
CHOICES: tuple[str, ...] = (FIRST, SPECIAL)
#: What ``ignore_keys`` takes: None, "first", "special" or a list of key positions.
IgnoreKeys: TypeAlias = "str | Sequence[int] | None"
#: ``ignore_keys`` once checked: None, "first", "special" or a tuple of ints.
CheckedKeys: TypeAlias = "str | tuple[int, ...] | None"

_FORMS = (
    "use 'first' (key position 0, the usual sink of a causal LM), 'special' (the tokenizer's "
    "special tokens such as [CLS], [SEP], <s>; an image model's non-patch tokens), a list of "
    "key positions such as [0, 5] (negative ones count from the end), or None (the default: "
    "every key stays)"
)


def check_ignore_keys(value: Any) -> CheckedKeys:
    """``ignore_keys`` checked for its form (not yet against an input's length).

    Returns None, "first", "special" or a tuple of ints (possibly empty).
    Raises :class:`InputError` for an unknown string, a single number (pass a
    list), or a position that is not an int.
    """
    if value is None:
        return None
    if isinstance(value, str):
        if value in CHOICES:
            return value
        raise InputError(f"ignore_keys={value!r} is not a choice; {_FORMS}.")
    if isinstance(value, (bool, np.bool_, int, np.integer, float, np.floating)):
        raise InputError(
            f"ignore_keys={value!r} is a single {type(value).__name__}; pass a list of key "
            f"positions (e.g. ignore_keys=[0]) or one of 'first', 'special'."
        )
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise InputError(
                f"ignore_keys is an array of shape {value.shape}; pass a flat list of key "
                "positions, e.g. [0, 5]."
            )
        value = value.tolist()
    if not isinstance(value, (list, tuple, range)):
        raise InputError(f"ignore_keys is a {type(value).__name__}; {_FORMS}.")
    positions = []
    for item in value:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, np.integer)):
            raise InputError(
                f"ignore_keys holds {item!r} ({type(item).__name__}); every key position must "
                "be an int (0 is the first token, -1 the last)."
            )
        positions.append(int(item))
    return tuple(positions)


def resolve_ignore_keys(
    value: Any, n: int, special: Sequence[int] | np.ndarray | None = ()
) -> list[int]:
    """The key positions ``value`` names in an input of ``n`` tokens: sorted, each once,
    in 0 … n−1.

    ``"first"``: [0]. ``"special"``: ``special`` (the input's special tokens;
    None when they are unknown, which refuses "special"). A list: its
    positions, negative ones counted from the end (-1 is the last token).
    Raises :class:`InputError` for a position out of range, naming the valid ones.
    """
    checked = check_ignore_keys(value)
    if checked is None or n <= 0:
        return []
    if checked == FIRST:
        return [0]
    if checked == SPECIAL:
        if special is None:
            raise InputError(
                "ignore_keys='special' needs the tokenizer's special tokens, which are not "
                "known here (Explanation.from_attentions has no tokenizer); pass their "
                "positions instead, e.g. ignore_keys=[0, 6] for [CLS] and [SEP]."
            )
        return sorted({int(i) % n for i in special if -n <= int(i) < n})
    assert isinstance(checked, tuple)
    bad = [p for p in checked if not -n <= p < n]
    if bad:
        raise InputError(
            f"ignore_keys={list(checked)} holds {'positions' if len(bad) > 1 else 'position'} "
            f"{', '.join(map(str, bad))}, out of range for {n} tokens (special tokens "
            f"included); key positions are 0 … {n - 1}, or -{n} … -1 counted from the end. "
            "Read the positions off exp.tokens, or use 'first' / 'special'."
        )
    return sorted({p % n for p in checked})


def renormalise_keys(attentions: np.ndarray, keys: Sequence[int]) -> np.ndarray:
    """Attention rows without the key positions ``keys``, each renormalised.

    ``out[..., i, j] = 0`` for j in ``keys``, else
    ``A[..., i, j] / Σ_{k ∉ keys} A[..., i, k]``. Any (..., rows, n) array;
    the dtype is kept. A row whose remaining keys carry no weight (every key
    it can see is left out, e.g. row 0 of a causal model with keys [0]) is
    returned unchanged, never as NaN. With no ``keys`` the array itself is
    returned (the identity: every number unchanged).

    Args:
        attentions: post-softmax attention, rows along the second-to-last axis
            and keys along the last, e.g. (L, H, n, n).
        keys: key positions 0 … n−1 (see :func:`resolve_ignore_keys`).

    Returns:
        A new array of the same shape and dtype (or ``attentions`` when
        ``keys`` is empty).
    """
    if len(keys) == 0:
        return attentions
    array = np.asarray(attentions)
    out = array.copy()
    out[..., list(keys)] = 0
    sums = out.sum(axis=-1, keepdims=True)
    np.divide(out, sums, out=out, where=sums > 0)
    empty = sums[..., 0] <= 0
    if empty.any():  # nothing left to renormalise over: the row as it was
        out[empty] = array[empty]
    return out


#: renormalised(): id(attentions) -> (keys, result); an entry goes when its array does.
_MADE: dict[int, tuple[tuple[int, ...], np.ndarray]] = {}


def renormalised(attentions: np.ndarray, keys: Sequence[int]) -> np.ndarray:
    """:func:`renormalise_keys`, made once per attention array and keys and then
    reused while that array lives (views ask for it again on every path they draw)."""
    if len(keys) == 0:
        return attentions
    made = _MADE.get(id(attentions))
    if made is not None and made[0] == tuple(keys):
        return made[1]
    result = renormalise_keys(attentions, keys)
    if made is None:  # the entry must not outlive the array (its id could be reused)
        try:
            weakref.finalize(attentions, _MADE.pop, id(attentions), None)
        except TypeError:  # not weakly referable: not kept
            return result
    _MADE[id(attentions)] = (tuple(keys), result)
    return result


def stored_keys(value: Any, n: int, kept: bool) -> list[int]:
    """:attr:`Explanation.ignored_keys` checked: positions (negative ones from the end)
    within n tokens, sorted, each once; ``kept``: the explanation keeps every head's
    attention, which renormalising needs."""
    if isinstance(value, str):  # the stored positions, not the option's names
        raise InputError(
            f"ignored_keys={value!r} must be a list of key positions; the names 'first' and "
            "'special' are for explain(..., ignore_keys=...)."
        )
    keys = resolve_ignore_keys(value, n)
    if keys and not kept:
        raise InputError(
            "ignored_keys needs every head's attention (keep='all'); this explanation keeps "
            "none to renormalise."
        )
    return keys


def ignored_keys_note(keys: Sequence[int], tokens: Sequence[str], shown: int = 6) -> str:
    """The views' line for left-out keys, e.g. "keys #0 '[CLS]', #6 '[SEP]' left out,
    rows renormalised"; "" when none is left out."""
    if not keys:
        return ""
    named = [f"#{k} {str(tokens[k])!r}" if 0 <= k < len(tokens) else f"#{k}" for k in keys]
    more = f" and {len(named) - shown} more" if len(named) > shown else ""
    word = "key" if len(named) == 1 else "keys"
    return f"{word} {', '.join(named[:shown])}{more} left out, rows renormalised"


def keep_for_ignored(keep: Any, checked: CheckedKeys) -> Any:
    """explain()'s ``keep`` once keys are left out: "all" (renormalising a row needs
    every head's whole row); an explicit "fused" or "rows" is refused."""
    if not checked:
        return keep
    if keep not in (None, "all"):
        raise InputError(
            f"ignore_keys={_shown(checked)} renormalises every head's attention rows, but "
            f"keep={keep!r} keeps only reductions of them (made during the backward pass); "
            "leave keep unset (None) or pass keep='all'."
        )
    return "all"


def refuse_ignored(checked: CheckedKeys, what: str) -> None:
    """InputError when keys are left out for ``what``, which does not support it."""
    if checked:
        raise InputError(
            f"ignore_keys={_shown(checked)} is not supported for {what}; leave it out "
            "(it applies to classifiers, masked and causal LMs, and image models)."
        )


def warn_if_none_left_out(checked: CheckedKeys, ignored: Sequence[Sequence[int]]) -> None:
    """Warn when ``ignore_keys="special"`` found no special token in some input."""
    if checked == SPECIAL and any(len(keys) == 0 for keys in ignored):
        warnings.warn(
            "ignore_keys='special' left no key out: the input has no special tokens (GPT-2's "
            "tokenizer adds none), so its attention is unchanged; pass ignore_keys='first' to "
            "leave out the first token, a causal LM's usual attention sink.",
            UserWarning,
            stacklevel=4,  # past explain() and its keyword check: the caller's line
        )


def _shown(checked: CheckedKeys) -> str:
    return repr(list(checked)) if isinstance(checked, tuple) else repr(checked)
