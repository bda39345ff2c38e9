"""AttentionCalculator: one attention step on a few editable vectors, every step shown.

A teaching widget: a few tokens with small query, key and value vectors
(type numbers, drag a slider, or load one head of a real model with
:meth:`AttentionCalculator.from_model`), a score function (dot, scaled dot,
general, additive/concat, cosine, location), a mask (none, causal, padding,
local windows, Luong's local-m and local-p) and a temperature; the page
shows the scores, masked scores, weights (and local-p's Gaussian) and output,
each as a labelled matrix with its formula in MathML, and hovering a cell
writes out its arithmetic. Score functions after Luong et al. (2015),
Vaswani et al. (2017), Bahdanau et al. (2015) and Graves et al. (2014);
global and local attention after Luong et al. (2015).

Every number is computed here, in Python, by :func:`attnwidget.teach.attention`
(the page only draws what Python sent, so the two can never disagree). An
input the maths refuses (mismatched dimensions, NaN, a window wider than the
sequence, T ≤ 0 ...) sets :attr:`~AttentionCalculator.error` to the
:class:`~attnwidget.errors.InputError`'s message, which the page shows, and
leaves the last good steps as they were.

Message schema (traits synced with ``js/src/teach/calculator_types.ts``
``CalculatorTraits``). Arrays are :class:`FloatArray` traits: on the wire one
object ``{"dtype": "float64", "shape": [...], "data": <binary buffer>}``
(see :mod:`attnwidget.views.teach._traits`); m queries, n keys, d the
query/key size, d_v the value size, h a hidden size:

=================  ============  ===============================================
trait              type          meaning
=================  ============  ===============================================
``_view``          str           ``"calculator"``: the JS view that renders it
``caption``        str           a line above the inputs (text, never HTML)
``query_tokens``   list[str]     m query names (text, never HTML) (synced)
``key_tokens``     list[str]     n key names (synced)
``q``              FloatArray    (m, d) queries (synced; the page edits them)
``k``              FloatArray    (n, d) keys (synced, editable)
``v``              FloatArray    (n, d_v) values (synced, editable)
``score_kind``     str           one of ``attnwidget.teach.SCORE_KINDS``
``W``              FloatArray    general (d, d) / location (n, d) matrix
``W1``, ``W2``     FloatArray    additive (h, d) matrices
``v_a``            FloatArray    additive (h,) vector
``beta``           float         cosine's sharpening factor β
``mask_kind``      str           one of ``attnwidget.teach.MASK_KINDS``
``window``         int           D, the half-width of local windows [p − D, p + D]
``lengths``        int or None   padding: keys 0..L−1 are real (None: all n)
``W_p``, ``v_p``   FloatArray    local-p's (h, d) and (h,) alignment parameters
``temperature``    float         T > 0: weights = softmax(masked scores / T)
``scores``         FloatArray    (m, n) step 1, last good (read-only)
``masked_scores``  FloatArray    (m, n) step 2: −∞ where masked (read-only)
``weights``        FloatArray    (m, n) step 3: softmax rows (read-only)
``gaussian``       FloatArray    (m, n) local-p's Gaussian, else None
``local_weights``  FloatArray    (m, n) weights × Gaussian (local-p), else None
``positions``      FloatArray    (m,) local-p's aligned positions p_t, else None
``output``         FloatArray    (m, d_v) step 4: final weights @ v (read-only)
``steps_info``     dict          what the last good steps were computed with:
                                 ``version``, ``score_kind``, ``mask_kind``,
                                 ``temperature``, ``window``, ``lengths``,
                                 ``sigma`` (local-p), ``d``
``error``          str           the refusal of the current inputs, "" if none
``revision``       int           +1 at every computation (good or refused)
=================  ============  ===============================================
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import traitlets

from attnwidget.errors import InputError
from attnwidget.teach import MASK_KINDS, SCORE_KINDS, AttentionSteps, attention, attention_mask
from attnwidget.teach import local_p_alignment as _local_p
from attnwidget.teach.scores import SCORE_PARAMS, attention_scores
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.teach._model import head_inputs
from attnwidget.views.teach._traits import (
    DEFAULT_K,
    DEFAULT_Q,
    DEFAULT_TOKENS,
    DEFAULT_V,
    FloatArray,
    default_params,
    default_w,
    row_names,
    rows_of,
    width_of,
)

if TYPE_CHECKING:  # arrays, nested lists or CPU torch tensors
    from numpy.typing import ArrayLike

#: The inputs; a change to any of them recomputes the steps.
INPUTS = (
    "q",
    "k",
    "v",
    "score_kind",
    "W",
    "W1",
    "W2",
    "v_a",
    "beta",
    "mask_kind",
    "window",
    "lengths",
    "W_p",
    "v_p",
    "temperature",
)
#: The computed steps (AttentionSteps fields of the same names).
STEPS = ("scores", "masked_scores", "weights", "gaussian", "local_weights", "positions", "output")
_PARAMS = ("W", "W1", "W2", "v_a", "W_p", "v_p")


class AttentionCalculator(_AttnWidget):
    """Attention of a few queries over a few keys, every intermediate drawn.

    Args:
        q: (m, d) queries (default: a 4-token example with d = 3).
        k: (n, d) keys (default: ``q``'s example keys; with ``q`` given, ``q``
            itself: self-attention).
        v: (n, d_v) values (default: the example's, or ``k``).
        query_tokens, key_tokens: names of the rows (default: the example's
            words, or ``q0, q1 …`` / ``k0, k1 …``; keys default to the query
            names when m = n).
        score_kind: the score function (see :data:`attnwidget.teach.SCORE_KINDS`).
        mask_kind: the mask (see :data:`attnwidget.teach.MASK_KINDS`).
        window: D for ``local``, ``local-m`` and ``local-p``.
        lengths: L for ``padding`` (None: every key is real).
        temperature: T > 0.
        beta: cosine's β.
        W, W1, W2, v_a, W_p, v_p: the score and local-p parameters (default:
            ones that fit the shapes; see ``_calculator_traits.default_params``).

    A parameter matrix ``W`` that does not fit a newly chosen score kind
    (``general`` needs (d, d), ``location`` (n, d)) is replaced by that kind's
    default, so picking a kind in the page always gives it a usable ``W``.
    Inputs that are refused at construction raise
    :class:`~attnwidget.errors.InputError`; later, they set :attr:`error`.

    Example::

        calc = AttentionCalculator()              # displays in Jupyter
        calc.score_kind = "additive"; calc.mask_kind = "causal"
        calc.weights                              # (m, n) float64, what the page draws
        calc.q = [[1, 2, 3]]                      # d = 3, m = 1: recomputed
        calc.q = [[1, 2]]                         # d ≠ k's: calc.error says so; steps kept
    """

    _view = traitlets.Unicode("calculator").tag(sync=True)

    caption = traitlets.Unicode("").tag(sync=True)
    """A line above the inputs (text, never HTML), e.g. which model and head."""

    query_tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    key_tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    q = FloatArray().tag(sync=True)
    k = FloatArray().tag(sync=True)
    v = FloatArray().tag(sync=True)
    score_kind = traitlets.Enum(SCORE_KINDS, default_value="scaled_dot").tag(sync=True)
    W = FloatArray().tag(sync=True)
    W1 = FloatArray().tag(sync=True)
    W2 = FloatArray().tag(sync=True)
    v_a = FloatArray().tag(sync=True)
    beta = traitlets.Float(1.0).tag(sync=True)
    mask_kind = traitlets.Enum(MASK_KINDS, default_value="none").tag(sync=True)
    window = traitlets.Int(1).tag(sync=True)
    lengths = traitlets.Int(None, allow_none=True).tag(sync=True)
    W_p = FloatArray().tag(sync=True)
    v_p = FloatArray().tag(sync=True)
    temperature = traitlets.Float(1.0).tag(sync=True)

    scores = FloatArray(read_only=True).tag(sync=True)
    masked_scores = FloatArray(read_only=True).tag(sync=True)
    weights = FloatArray(read_only=True).tag(sync=True)
    gaussian = FloatArray(read_only=True).tag(sync=True)
    local_weights = FloatArray(read_only=True).tag(sync=True)
    positions = FloatArray(read_only=True).tag(sync=True)
    output = FloatArray(read_only=True).tag(sync=True)
    steps_info = traitlets.Dict(read_only=True).tag(sync=True)
    error = traitlets.Unicode("", read_only=True).tag(sync=True)
    revision = traitlets.Int(0, read_only=True).tag(sync=True)

    def __init__(
        self,
        q: ArrayLike | None = None,
        k: ArrayLike | None = None,
        v: ArrayLike | None = None,
        *,
        query_tokens: Sequence[str] | None = None,
        key_tokens: Sequence[str] | None = None,
        score_kind: str = "scaled_dot",
        mask_kind: str = "none",
        window: int = 1,
        lengths: int | None = None,
        temperature: float = 1.0,
        beta: float = 1.0,
        W: ArrayLike | None = None,
        W1: ArrayLike | None = None,
        W2: ArrayLike | None = None,
        v_a: ArrayLike | None = None,
        W_p: ArrayLike | None = None,
        v_p: ArrayLike | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        example = q is None and k is None and v is None
        if example:
            q, k, v = DEFAULT_Q, DEFAULT_K, DEFAULT_V
        elif q is None:
            raise InputError("AttentionCalculator needs q (m, d) when k or v is given.")
        k = q if k is None else k
        v = k if v is None else v
        self._steps: AttentionSteps | None = None
        self._batching = 0
        self._dirty = False
        with self._batch():
            self.q, self.k, self.v = q, k, v
            m, n, d = rows_of(self.q), rows_of(self.k), width_of(self.q)
            names = DEFAULT_TOKENS if example else None
            self.query_tokens = row_names(query_tokens, names, "q", m)
            same = key_tokens is None and m == n and not example
            keys = self.query_tokens if same else key_tokens
            self.key_tokens = row_names(keys, names, "k", n)
            self.score_kind, self.mask_kind = score_kind, mask_kind
            self.window, self.lengths = window, lengths
            self.temperature, self.beta = temperature, beta
            given = {"W": W, "W1": W1, "W2": W2, "v_a": v_a, "W_p": W_p, "v_p": v_p}
            if d is None:
                raise InputError(
                    "q must be a 2-D array (m queries × d), e.g. [[1.0, 0.0, 1.0]] for one "
                    "query; the default parameters are sized from d."
                )
            defaults = default_params(n, d)
            defaults["W"] = default_w(score_kind, n, d)
            for name, value in given.items():
                setattr(self, name, defaults[name] if value is None else value)
            self._dirty = False
        self._steps = self.compute()  # refused inputs raise here, not later
        self._publish(self._steps)

    # -- computing -------------------------------------------------------------

    def compute(self) -> AttentionSteps:
        """The steps of the current inputs (raises :class:`~attnwidget.errors.InputError`)."""
        kind = self.score_kind
        params = {name: getattr(self, name) for name in SCORE_PARAMS[kind] if name != "beta"}
        if kind == "cosine":
            params["beta"] = self.beta
        m, n = attention_scores(self.q, self.k, kind, **params).shape  # shape errors first
        mask, alignment = None, None
        if self.mask_kind == "local-p":
            alignment = _local_p(self.q, n, self.window, self.W_p, self.v_p)
        elif self.mask_kind == "padding":
            length = n if self.lengths is None else self.lengths
            mask = attention_mask(n, m, "padding", lengths=length)
        elif self.mask_kind in ("local", "local-m"):
            mask = attention_mask(n, m, self.mask_kind, window=self.window)
        elif self.mask_kind == "causal":
            mask = attention_mask(n, m, "causal")
        return attention(
            self.q, self.k, self.v, kind, mask, self.temperature, alignment=alignment, **params
        )

    @property
    def steps(self) -> AttentionSteps:
        """The last good steps: what the page draws."""
        assert self._steps is not None
        return self._steps

    def _publish(self, steps: AttentionSteps) -> None:
        version = int(self.steps_info.get("version", 0)) + 1
        sigma = None if self.mask_kind != "local-p" else self.window / 2.0
        with self.hold_sync():
            for name in STEPS:
                self.set_trait(name, getattr(steps, name))
            self.set_trait(
                "steps_info",
                {
                    "version": version,
                    "score_kind": steps.kind,
                    "mask_kind": self.mask_kind,
                    "temperature": steps.temperature,
                    "window": int(self.window),
                    "lengths": self.lengths,
                    "sigma": sigma,
                    "d": width_of(self.q),
                },
            )
            self.set_trait("error", "")
            self.set_trait("revision", self.revision + 1)

    def _recompute(self) -> None:
        try:
            steps = self.compute()
        except InputError as error:
            with self.hold_sync():
                self.set_trait("error", str(error))
                self.set_trait("revision", self.revision + 1)
            return
        self._steps = steps
        self._publish(steps)

    @contextmanager
    def _batch(self) -> Iterator[None]:
        """Changes inside compute once, at the end."""
        with self.hold_sync():  # inputs and steps in one message
            self._batching += 1
            try:
                yield
            finally:
                self._batching -= 1
                if not self._batching and self._dirty and self._steps is not None:
                    self._dirty = False
                    self._recompute()

    @traitlets.observe(*INPUTS)
    def _on_input(self, change: dict[str, Any]) -> None:
        if change["name"] == "score_kind":
            with self._batch():
                self._fit_w()
                self._dirty = True
            return
        if self._batching or self._steps is None:
            self._dirty = True
            return
        self._recompute()

    def _fit_w(self) -> None:
        kind = self.score_kind
        d = width_of(self.q)
        if kind not in ("general", "location") or d is None:
            return
        n = rows_of(self.k)
        want = (n, d) if kind == "location" else (d, d)
        if self.W is None or self.W.shape != want:
            self.W = default_w(kind, n, d)

    def set_state(self, sync_data: dict[str, Any]) -> None:
        """The page's edits: every trait of one message first, then one computation.

        ``revision`` moves on every message, even one whose change was refused
        (the base class logs it and sends Python's values back), so the page
        always hears that the kernel answered."""
        before = self.revision
        with self._batch():
            super().set_state(sync_data)
        if self.revision == before:
            self.set_trait("revision", before + 1)

    # -- driving it from Python ---------------------------------------------------

    def set_inputs(self, **values: Any) -> None:
        """Set several inputs at once and compute once (e.g. ``q`` and ``k`` with a new d)."""
        unknown = sorted(set(values) - set(INPUTS) - {"query_tokens", "key_tokens"})
        if unknown:
            raise TypeError(f"set_inputs() got unknown input(s) {unknown}; inputs: {INPUTS}")
        with self._batch():
            for name, value in values.items():
                setattr(self, name, value)

    def reset_params(self) -> None:
        """Replace W, W1, W2, v_a, W_p and v_p by defaults that fit the current q and k."""
        n, d = rows_of(self.k), width_of(self.q)
        if n is None or d is None:
            raise InputError("q must be (m, d) and k (n, d) to choose parameters that fit them.")
        defaults = default_params(n, d)
        defaults["W"] = default_w(self.score_kind, n, d)
        with self._batch():
            for name in _PARAMS:
                setattr(self, name, defaults[name])

    @classmethod
    def from_model(
        cls, model: Any, tokenizer: Any, text: str, *, layer: int = 0, head: int = 0, **kwargs: Any
    ) -> AttentionCalculator:
        """One head of a BERT-style model on ``text``: its q, k, v, scaled dot, no mask.

        ``layer`` and ``head`` count from 0 (negative: from the end). The
        tokens are the tokenizer's; a decoder (``config.is_decoder``) gets the
        causal mask. The weights then equal the head's attention probabilities
        (see :mod:`attnwidget.views.teach._model`; the model is left as it
        was). Other keywords go to the constructor (e.g. ``score_kind="dot"``).
        """
        read = head_inputs(model, tokenizer, text, layer=layer, head=head)
        options: dict[str, Any] = {
            "query_tokens": read.tokens,
            "key_tokens": read.tokens,
            "score_kind": "scaled_dot",
            "mask_kind": "causal" if read.causal else "none",
        }
        options.update(kwargs)
        options.setdefault(
            "caption",
            f"{type(model).__name__}, layer {read.layer}, head {read.head} of {read.heads}: {text}",
        )
        return cls(read.q, read.k, read.v, **options)

    def __repr__(self) -> str:
        shape = "×".join(str(s) for s in np.shape(self.q))
        error = f", error={self.error!r}" if self.error else ""
        return (
            f"AttentionCalculator(q {shape}, score_kind={self.score_kind!r}, "
            f"mask_kind={self.mask_kind!r}, temperature={self.temperature:g}{error})"
        )
