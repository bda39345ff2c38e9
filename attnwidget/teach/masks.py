"""Attention masks: which keys each query may attend to (True = may attend).

Masks are boolean arrays of shape (m, n), m queries by n keys, the
convention of ``torch.nn.functional.scaled_dot_product_attention``'s boolean
``attn_mask``. Combine them with ``&`` (a causal sliding window is
``attention_mask(n, kind="causal") & attention_mask(n, kind="local", window=D)``).

Kinds (:data:`MASK_KINDS`):

- ``none``: every query sees every key (Luong et al.'s 2015 *global* attention).
- ``causal``: no position attends to a later one. When m ≠ n the queries are
  the **last** m of the n positions (as when a decoder with a key/value cache
  reads new tokens), so query i sits at position i + (n − m) and sees keys
  j ≤ i + n − m. m > n is refused. (torch's ``is_causal=True`` aligns the
  queries to the *first* positions instead; the two agree when m = n.)
- ``padding``: no query attends to a padding key. Give either ``lengths``
  (an int L: keys 0..L−1 are real, the rest padding) or ``key_mask`` (bool
  (n,), True = real token). Padded *queries* still get a row: drop it yourself.
- ``local``: the keys within [p − D, p + D] of an aligned position p, with
  ``window`` = D. ``positions`` (m,) gives p for each query; by default
  p_i = i + (n − m), the causal convention above (p_i = i when m = n).
- ``local-m``: Luong et al.'s (2015) monotonic alignment p_t = t, t = 0..m−1
  (target step t looks at source position t, whatever m and n are).
- ``local-p``: Luong et al.'s (2015) predictive alignment, see
  :func:`local_p_alignment` (parameters ``q``, ``W_p``, ``v_p``, ``window``).

A window wider than the sequence (2D + 1 > n) is refused with a message
that says so (attention over every key is ``none``); windows near the ends
of the sequence are cut at the first and last key.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from attnwidget.errors import InputError
from attnwidget.teach._checks import (
    as_bool_mask,
    as_count,
    as_float_array,
    as_matrix,
    check_kind,
    refuse_unknown,
)

MASK_KINDS: tuple[str, ...] = ("none", "causal", "padding", "local", "local-m", "local-p")

_MASK_PARAMS: dict[str, tuple[str, ...]] = {
    "none": (),
    "causal": (),
    "padding": ("lengths", "key_mask"),
    "local": ("window", "positions"),
    "local-m": ("window",),
    "local-p": ("window", "q", "W_p", "v_p", "scale"),
}


class LocalPAlignment(NamedTuple):
    """Luong et al.'s (2015) predictive alignment for m queries over n keys.

    ``positions`` (m,): the aligned positions p_t; ``gaussian`` (m, n): the
    factor exp(−(s − p_t)² / (2σ²)) for every key s (inside the window or not);
    ``mask`` (m, n): the window |s − p_t| ≤ D; ``sigma``: σ = D / 2.
    """

    positions: np.ndarray
    gaussian: np.ndarray
    mask: np.ndarray
    sigma: float


def check_window(window: Any, n: int, minimum: int = 0) -> int:
    """The half-width D of a local window: a whole number with 2D + 1 ≤ n."""
    if window is None:
        raise InputError("local attention needs window=D, the half-width of [p − D, p + D].")
    d = as_count("window", window, minimum)
    if 2 * d + 1 > n:
        largest = (n - 1) // 2
        hint = (
            f"use a window of at most {largest}"
            if largest >= minimum
            else f"local-p needs window ≥ {minimum}, hence at least {2 * minimum + 1} keys"
        )
        raise InputError(
            f"window={d} covers 2·{d} + 1 = {2 * d + 1} positions, more than the {n} keys "
            f"(a window wider than the sequence); for attention over every key use "
            f"kind='none', or {hint}."
        )
    return d


def _window_mask(positions: np.ndarray, n: int, window: int) -> np.ndarray:
    """|s − p| ≤ D for each key s; refuses a window that holds no key at all."""
    distance = np.abs(np.arange(n)[None, :] - positions[:, None])
    mask = distance <= window
    empty = np.flatnonzero(~mask.any(axis=1))
    if empty.size:
        i = int(empty[0])
        p = float(positions[i])
        raise InputError(
            f"query {i}: its window [p − D, p + D] = [{p - window:g}, {p + window:g}] holds "
            f"no key position (keys are 0..{n - 1}); move p or widen the window."
        )
    return mask


def local_p_alignment(
    q: Any, n: int, window: int, W_p: Any, v_p: Any, *, scale: float | None = None
) -> LocalPAlignment:
    """Luong et al.'s (2015) local-p: p_t = S · sigmoid(v_pᵀ tanh(W_p q_t)).

    ``q`` (m, d): the queries (the decoder states h_t); ``W_p`` (h, d) and
    ``v_p`` (h,): the alignment parameters; ``window`` = D ≥ 1 (σ = D / 2 must
    be positive). Luong writes S for the source length; here positions count
    from 0 to n − 1, so the default ``scale`` S is n − 1, which keeps p_t
    inside the sequence (pass ``scale=n`` for the paper's S literally).

    Returns positions (m,), the Gaussian (m, n) and the window mask (m, n);
    :func:`attnwidget.teach.attention` takes the result as ``alignment=`` and
    multiplies the softmax weights by the Gaussian without renormalising.
    """
    n = as_count("n", n, 1)
    d_win = check_window(window, n, minimum=1)
    queries = as_float_array("q", q)
    if queries.ndim != 2 or queries.size == 0:
        raise InputError(f"q has shape {queries.shape}, expected (m, d): one row per query.")
    d = queries.shape[1]
    w_p = as_matrix("W_p", W_p, (("h", None), ("d", d)), "local-p: W_p q_t")
    v = as_matrix("v_p", v_p, (("h", w_p.shape[0]),), "local-p: v_pᵀ tanh(…), h from W_p")
    s = float(n - 1) if scale is None else float(scale)
    if not np.isfinite(s) or s < 0:
        raise InputError(f"scale must be a finite number ≥ 0; got {scale!r}.")
    logits = np.tanh(queries @ w_p.T) @ v
    positions = s / (1.0 + np.exp(-logits))
    sigma = d_win / 2.0
    gaussian = np.exp(-((np.arange(n)[None, :] - positions[:, None]) ** 2) / (2 * sigma**2))
    return LocalPAlignment(positions, gaussian, _window_mask(positions, n, d_win), sigma)


def _padding(n: int, m: int, params: dict[str, Any]) -> np.ndarray:
    lengths, key_mask = params.get("lengths"), params.get("key_mask")
    if (lengths is None) == (key_mask is None):
        raise InputError(
            "kind='padding' needs exactly one of lengths (an int L: keys 0..L−1 are real) "
            f"or key_mask (bool of shape (n,) = ({n},), True = real token)."
        )
    if lengths is not None:
        length = as_count("lengths", lengths, 1)
        if length > n:
            raise InputError(f"lengths={length} is more than the n={n} keys.")
        keys = np.arange(n) < length
    else:
        keys = as_bool_mask("key_mask", key_mask, (n,))
        if not keys.any():
            raise InputError("key_mask masks every key: at least one must be True (a real token).")
    return np.broadcast_to(keys, (m, n)).copy()


def attention_mask(n: int, m: int | None = None, kind: str = "none", **params: Any) -> np.ndarray:
    """A boolean (m, n) mask, True where query i may attend to key j.

    ``n``: the number of keys; ``m``: the number of queries (default n; for
    ``local-p`` it is read from ``q``). See the module docstring for the kinds
    and their parameters.
    """
    check_kind("mask kind", kind, MASK_KINDS)
    refuse_unknown(f"mask kind={kind!r}", params, _MASK_PARAMS[kind])
    n = as_count("n", n, 1)
    if kind == "local-p":
        missing = [name for name in ("q", "W_p", "v_p", "window") if params.get(name) is None]
        if missing:
            raise InputError(
                f"mask kind='local-p' needs {', '.join(missing)}: q (m, d), W_p (h, d), "
                "v_p (h,) and window=D ≥ 1."
            )
        alignment = local_p_alignment(
            params["q"],
            n,
            params["window"],
            params["W_p"],
            params["v_p"],
            scale=params.get("scale"),
        )
        if m is not None and as_count("m", m, 1) != alignment.mask.shape[0]:
            raise InputError(f"m={m} but q has {alignment.mask.shape[0]} rows (queries).")
        return alignment.mask
    m = n if m is None else as_count("m", m, 1)
    if kind == "none":
        return np.ones((m, n), dtype=bool)
    if kind == "causal":
        if m > n:
            raise InputError(
                f"a causal mask with m={m} queries and n={n} keys: the queries are the last m "
                f"of the n positions, so m must be ≤ n."
            )
        return np.arange(n)[None, :] <= np.arange(m)[:, None] + (n - m)
    if kind == "padding":
        return _padding(n, m, params)
    window = check_window(params.get("window"), n)
    if kind == "local-m":
        positions = np.arange(m, dtype=np.float64)
    elif params.get("positions") is None:
        positions = np.arange(m, dtype=np.float64) + (n - m)
    else:
        positions = as_matrix("positions", params["positions"], (("m", m),), "one p per query")
    return _window_mask(positions, n, window)
