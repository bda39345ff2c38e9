"""Attention score functions: how well each query matches each key.

Every function takes queries ``q`` of shape (m, d) and keys ``k`` of shape
(n, d) and returns scores of shape (m, n): row i holds query i's score for
every key. The kinds, with their sources:

- ``dot``: qᵀk (Luong et al. 2015).
- ``scaled_dot``: qᵀk / √d (Vaswani et al. 2017).
- ``general``: qᵀ W k with ``W`` of shape (d, d) (Luong et al. 2015).
- ``additive`` (alias ``concat``): v_aᵀ tanh(W₁q + W₂k) with ``W1`` (h, d),
  ``W2`` (h, d) and ``v_a`` (h,) (Bahdanau et al. 2015; Luong et al. 2015 call
  it "concat" and write W_a[q; k], which is the same with W_a = [W₁ W₂]).
- ``cosine``: β · cos(q, k) with a sharpening factor ``beta`` (default 1), as in
  the content-based addressing of Graves et al. (2014).
- ``location``: W q with ``W`` of shape (n, d) (Luong et al. 2015): the scores
  come from the query alone, one per source position, so the key of
  position j gets (W q)_j. The keys are ignored except for their number n
  (their size d is not even checked).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from attnwidget._keywords import warn_renamed
from attnwidget.errors import InputError
from attnwidget.teach._checks import (
    as_float_array,
    as_matrix,
    as_scalar,
    check_kind,
    check_shape,
    refuse_overflow,
)

SCORE_KINDS: tuple[str, ...] = (
    "dot",
    "scaled_dot",
    "general",
    "additive",
    "concat",
    "cosine",
    "location",
)

#: The parameters each kind accepts; required ones are all but ``beta``.
SCORE_PARAMS: dict[str, tuple[str, ...]] = {
    "dot": (),
    "scaled_dot": (),
    "general": ("W",),
    "additive": ("W1", "W2", "v_a"),
    "concat": ("W1", "W2", "v_a"),
    "cosine": ("beta",),
    "location": ("W",),
}

_SHAPES: dict[str, str] = {
    "general": "W of shape (d, d) = ({d}, {d})",
    "additive": "W1 of shape (h, d) = (h, {d}), W2 of shape (h, d) = (h, {d}) and v_a of "
    "shape (h,), h the hidden size of your choice",
    "location": "W of shape (n, d) = ({n}, {d})",
}


def check_queries_keys(q: Any, k: Any, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``q`` (m, d) and ``k`` (n, d) as float64 arrays (``location``: any d for k)."""
    queries = as_float_array("q", q)
    if queries.ndim != 2:
        raise InputError(
            f"q has shape {queries.shape}, expected (m, d): one row per query "
            "(a single query vector of size d is q[None, :], shape (1, d))."
        )
    check_shape("q", queries, (("m", None), ("d", None)))
    d = queries.shape[1]
    keys = as_float_array("k", k)
    if kind == "location":
        check_shape("k", keys, (("n", None), ("d_k", None)), "location only uses n")
    else:
        check_shape("k", keys, (("n", None), ("d", d)), "d must match q's last axis")
    return queries, keys


def _missing(kind: str, params: dict[str, Any], d: int, n: int) -> None:
    needed = [name for name in SCORE_PARAMS[kind] if name != "beta"]
    absent = [name for name in needed if params.get(name) is None]
    if absent:
        raise InputError(
            f"kind={kind!r} needs the parameter(s) {', '.join(absent)}: pass "
            f"{_SHAPES['additive' if kind == 'concat' else kind].format(d=d, n=n)}."
        )


def _dot(q: np.ndarray, k: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    return q @ k.T


def _scaled_dot(q: np.ndarray, k: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    return q @ k.T / np.sqrt(q.shape[1])


def _general(q: np.ndarray, k: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    d = q.shape[1]
    w = as_matrix("W", p["W"], (("d", d), ("d", d)), "general: qᵀ W k")
    return q @ w @ k.T


def _additive(q: np.ndarray, k: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    d = q.shape[1]
    w1 = as_matrix("W1", p["W1"], (("h", None), ("d", d)), "additive: W1 q")
    h = w1.shape[0]
    w2 = as_matrix("W2", p["W2"], (("h", h), ("d", d)), "additive: W2 k, h from W1")
    v_a = as_matrix("v_a", p["v_a"], (("h", h),), "additive: v_aᵀ tanh(…), h from W1")
    hidden = np.tanh((q @ w1.T)[:, None, :] + (k @ w2.T)[None, :, :])  # (m, n, h)
    return hidden @ v_a


def _cosine(q: np.ndarray, k: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    beta = as_scalar("beta", 1.0 if p.get("beta") is None else p["beta"])
    q_norm = np.linalg.norm(q, axis=1)
    k_norm = np.linalg.norm(k, axis=1)
    for name, norms in (("q", q_norm), ("k", k_norm)):
        zero = np.flatnonzero(norms == 0)
        if zero.size:
            raise InputError(
                f"cosine: row {int(zero[0])} of {name} is the zero vector, whose cosine "
                "with anything is undefined; give every query and key a non-zero entry."
            )
    return beta * (q @ k.T) / (q_norm[:, None] * k_norm[None, :])


def _location(q: np.ndarray, k: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    n, d = k.shape[0], q.shape[1]
    w = as_matrix("W", p["W"], (("n", n), ("d", d)), "location: one row per key position")
    return q @ w.T


_SCORES: dict[str, Callable[[np.ndarray, np.ndarray, dict[str, Any]], np.ndarray]] = {
    "dot": _dot,
    "scaled_dot": _scaled_dot,
    "general": _general,
    "additive": _additive,
    "concat": _additive,
    "cosine": _cosine,
    "location": _location,
}


def attention_scores(q: Any, k: Any, kind: str = "scaled_dot", **params: Any) -> np.ndarray:
    """The (m, n) score matrix of queries ``q`` (m, d) against keys ``k`` (n, d).

    ``kind`` is one of :data:`SCORE_KINDS` (see the module docstring for the
    formulas); its parameters are keyword arguments: ``W`` for ``general``
    (d, d) and ``location`` (n, d); ``W1`` (h, d), ``W2`` (h, d) and ``v_a``
    (h,) for ``additive``/``concat``; ``beta`` (default 1) for ``cosine``.
    ``v`` as a name for ``v_a`` is deprecated (one name everywhere: in
    :func:`attnwidget.teach.attention` ``v`` is the values); it still works
    for one release, with a DeprecationWarning. Unknown, missing or
    wrongly shaped parameters raise :class:`~attnwidget.errors.InputError`.
    The result is float64.
    """
    check_kind("score kind", kind, SCORE_KINDS)
    if kind in ("additive", "concat") and "v" in params:
        params_v = params["v"]
        if params.get("v_a") is not None:
            raise InputError("pass the additive vector once: as v_a or as v, not both.")
        warn_renamed("attention_scores", "v=", "v_a=")
        params = {name: value for name, value in params.items() if name != "v"}
        params["v_a"] = params_v
    unknown = sorted(set(params) - set(SCORE_PARAMS[kind]))
    if unknown:
        accepted = ", ".join(SCORE_PARAMS[kind]) or "no parameters"
        raise InputError(
            f"kind={kind!r} does not take the parameter(s) {', '.join(unknown)}; "
            f"it accepts: {accepted}."
        )
    queries, keys = check_queries_keys(q, k, kind)
    _missing(kind, params, queries.shape[1], keys.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):  # refused below, with the step named
        scores = _SCORES[kind](queries, keys, params)
    refuse_overflow(
        "scores", scores, None, "scale q and k down (e.g. divide them by 1e150) and try again."
    )
    return scores
