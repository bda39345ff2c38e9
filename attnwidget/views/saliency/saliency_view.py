"""SaliencyView: the input tokens coloured by each method's scores.

Message schema (traits synced with ``js/src/saliency/saliency_types.ts`` ``SaliencyTraits``;
tests/test_fixtures_js.py and the JS tests check that both name the same
traits). m methods (rows), n tokens (columns):

=================  ===========  ============================================
trait              type         meaning
=================  ===========  ============================================
``_view``          str          ``"saliency"``: the JS view that renders it
``tokens``         list[str]    n token strings (shown as text, never HTML)
``raw_tokens``     list[str]    the tokenizer's own strings of ``tokens`` (shown
                                on hover; [] if unknown)
``methods``        list[str]    m method names, one row each
``summaries``      list[str]    m one-line method descriptions ("" if none)
``signed``         list[bool]   m flags: True -> diverging colours centred at 0
``scores``         bytes        float32 little-endian C order, shape (m, n),
                                sent as a binary buffer (not JSON)
``shape``          list[int]    ``[m, n]``
``query_index``    int          the explained query position, -1 for none
``scale``          str          what sets each row's colour range:
                                ``"words"`` (default: special tokens and the
                                query drawn but left out) or ``"all"``; set
                                by the page's picker and from Python
``selected_token`` int          selected token column, -1 for none; set by
                                clicks in the page and from Python
``pair_tokens``    list[str]    p tokens of the second text of a similarity
                                explanation (empty otherwise)
``pair_scores``    bytes        float32 (m, p): the same methods' scores of
                                the second text, drawn as a second block
``pair_shape``     list[int]    ``[m, p]`` (``[0, 0]`` without a pair)
``target_score``   float|None   the explained scalar (the similarity, or the
                                target logit), shown in the caption
``pooling``        str          "mean"/"cls" for a bare encoder, else ""
=================  ===========  ============================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import traitlets

from attnwidget.errors import UnknownMethodError
from attnwidget.results.explanation import Explanation
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.core.buffers import decode_float32, encode_float32
from attnwidget.views.core.selection import check_token_index
from attnwidget.views.core.tokens import raw_tokens_of

#: The values of :attr:`SaliencyView.scale`.
SCALES = ("words", "all")


class SaliencyView(_AttnWidget):
    """The input tokens coloured by each method's scores, one row per method.

    Signed methods (scores can be negative) use a diverging purple–orange map
    centred at 0 with a symmetric scale; the others a sequential (viridis)
    map. Each row is scaled by its own max |score| over the words: special
    tokens ([CLS], </s>, <|endoftext|>, ...) and the query position, whose
    scores often dwarf every word's, are drawn clamped to the range and
    outlined but do not set it (``scale="all"`` includes them; the legend
    says which). Tokens wrap into lines as wide as the output, every line
    showing the same tokens for each method. Hovering a token shows its
    score (3 significant digits; full precision in :attr:`selection`);
    clicking it sets :attr:`selected_token`, and setting
    :attr:`selected_token` from Python highlights that token's column.
    A similarity explanation (``explain(encoder, tokenizer, text,
    text_pair=..., target="similarity")``) shows the second text below the
    first, each method's row on the same colour range for both texts (the
    same similarity explained from either side); selection is of the first
    text's tokens.

    Args:
        explanation: the :class:`~attnwidget.Explanation` to show.
        methods: the methods to show, in order (default: every method whose
            scores the explanation holds).
        selected_token: the initially selected token index (-1: none).
        scale: ``"words"`` (default) or ``"all"``: which tokens set the
            colour range of each row.

    Example::

        view = SaliencyView(explanation, methods=["rollout", "raw"])
        view                  # displays in Jupyter; click a token, then
        view.selected_token   # the clicked token's index (-1: none)
        view.selection        # {"index", "token", "scores": {method: score}}
    """

    _view = traitlets.Unicode("saliency").tag(sync=True)

    tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    #: The tokenizer's own strings of ``tokens`` (``##ing``), shown on hover; [] if unknown.
    raw_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    methods = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    summaries = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    signed = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    scores = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    shape = traitlets.List(traitlets.Int(), default_value=[0, 0], read_only=True).tag(sync=True)
    query_index = traitlets.Int(-1, read_only=True).tag(sync=True)
    pair_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    pair_scores = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    pair_shape = traitlets.List(traitlets.Int(), default_value=[0, 0], read_only=True).tag(
        sync=True
    )
    target_score = traitlets.Float(None, allow_none=True, read_only=True).tag(sync=True)
    pooling = traitlets.Unicode("", read_only=True).tag(sync=True)

    scale = traitlets.Unicode("words").tag(sync=True)
    """What sets each row's colour range: "words" (special tokens and the query
    left out, still drawn) or "all" (synced with the page's picker)."""

    selected_token = traitlets.Int(-1).tag(sync=True)
    """The selected token index, or -1 for none (synced with the page)."""

    def __init__(
        self,
        explanation: Explanation,
        *,
        methods: str | Sequence[str] | None = None,
        selected_token: int = -1,
        scale: str = "words",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._explanation: Explanation | None = None
        self.scale = scale
        self.set_explanation(explanation, methods=methods)
        self.selected_token = selected_token

    @property
    def explanation(self) -> Explanation | None:
        """The explanation shown."""
        return self._explanation

    def set_explanation(
        self, explanation: Explanation, *, methods: str | Sequence[str] | None = None
    ) -> None:
        """Show another explanation (the selection is kept if still in range)."""
        if not isinstance(explanation, Explanation):
            raise TypeError(
                f"SaliencyView needs an attnwidget.Explanation, got {type(explanation).__name__}; "
                "make one with attnwidget.explain(...) or Explanation.from_attentions(...)."
            )
        names = _choose_methods(explanation, methods)
        n = len(explanation.tokens)
        rows = []
        for name in names:
            row = np.asarray(explanation.scores[name], dtype=np.float32)
            if row.shape != (n,):
                raise ValueError(
                    f"scores of method {name!r} have shape {row.shape}; expected ({n},), one "
                    "score per token."
                )
            rows.append(row)
        data, shape = encode_float32(np.stack(rows) if rows else np.zeros((0, n)))
        pair_data, pair_shape = _pair_scores(explanation, names)
        pair = decode_float32(pair_data, pair_shape)
        # Both texts share each row's colours, so either's negative scores make it signed.
        signed = [
            _is_signed(name, np.concatenate([row, pair[i]]) if pair.size else row)
            for i, (name, row) in enumerate(zip(names, rows, strict=True))
        ]
        # For encoder-decoder models query_index is a decoder position, and a
        # mean-pooled embedding reads every row: no marker.
        one_row = explanation.decoder_tokens is None and explanation.pooling != "mean"
        query = explanation.query_index if one_row else -1
        with self.hold_sync():
            if not -1 <= self.selected_token < n:
                self.selected_token = -1
            self.set_trait("tokens", [str(t) for t in explanation.tokens])
            self.set_trait("raw_tokens", raw_tokens_of(explanation, n))
            self.set_trait("methods", names)
            self.set_trait("summaries", [_summary(name) for name in names])
            self.set_trait("signed", signed)
            self.set_trait("scores", data)
            self.set_trait("shape", shape)
            self.set_trait("query_index", int(query))
            self.set_trait("pair_tokens", [str(t) for t in explanation.pair_tokens or []])
            self.set_trait("pair_scores", pair_data)
            self.set_trait("pair_shape", pair_shape)
            score = explanation.target_score
            self.set_trait("target_score", None if score is None else float(score))
            self.set_trait("pooling", explanation.pooling or "")
        self._explanation = explanation

    def score_matrix(self) -> np.ndarray:
        """The float32 (methods, tokens) scores exactly as sent to the page."""
        return decode_float32(self.scores, self.shape)

    def pair_score_matrix(self) -> np.ndarray:
        """The float32 (methods, pair tokens) scores of the second text, as sent."""
        return decode_float32(self.pair_scores, self.pair_shape)

    @property
    def selection(self) -> dict[str, Any] | None:
        """The selected token as ``{"index", "token", "scores": {method: score}}``, or None."""
        j = self.selected_token
        if j < 0:
            return None
        matrix = self.score_matrix()
        return {
            "index": j,
            "token": self.tokens[j],
            "scores": {name: float(matrix[i, j]) for i, name in enumerate(self.methods)},
        }

    @traitlets.validate("scale")
    def _validate_scale(self, proposal: dict[str, Any]) -> str:
        return check_scale("SaliencyView", proposal["value"])

    @traitlets.validate("selected_token")
    def _validate_selected_token(self, proposal: dict[str, Any]) -> int:
        return check_token_index(proposal["value"], len(self.tokens))

    def __repr__(self) -> str:
        return (
            f"SaliencyView(n={len(self.tokens)}, methods={list(self.methods)}, "
            f"scale={self.scale!r}, selected_token={self.selected_token})"
        )


def check_scale(view: str, value: Any) -> str:
    """A ``scale`` trait's value ("words" or "all"), or a TraitError naming it."""
    if value not in SCALES:
        raise traitlets.TraitError(
            f"{view}.scale={value!r} is not a colour range; use one of "
            + ", ".join(map(repr, SCALES))
            + " (words: special tokens and the query do not set the range)."
        )
    return str(value)


def _choose_methods(explanation: Explanation, methods: str | Sequence[str] | None) -> list[str]:
    available = list(explanation.scores)
    if methods is None:
        names = available
    elif isinstance(methods, str):
        names = [methods]
    else:
        names = [str(m) for m in methods]
    if not names:
        raise ValueError(
            "nothing to show: this explanation holds no method scores. Compute some, e.g. "
            "Explanation.from_attentions(attentions, tokens, methods=['raw', 'rollout']) or "
            "attnwidget.explain(model, tokenizer, text)."
            if not available
            else "methods is empty; pass at least one of " + ", ".join(map(repr, available)) + "."
        )
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"methods lists {', '.join(map(repr, duplicates))} more than once.")
    missing = [n for n in names if n not in explanation.scores]
    if missing:
        from attnwidget.methods.registry import available_methods

        known = set(available_methods())
        hint = (
            "compute them with attnwidget.explain(..., methods=[...]) first"
            if all(n in known for n in missing)
            else "registered methods: " + ", ".join(available_methods())
        )
        raise UnknownMethodError(
            f"no scores for method(s) {', '.join(map(repr, missing))} in this explanation; it "
            f"has: {', '.join(map(repr, available)) or 'none'} ({hint})."
        )
    return names


def _pair_scores(explanation: Explanation, names: list[str]) -> tuple[bytes, list[int]]:
    """The second text's (m, p) scores of a similarity explanation, or empty."""
    tokens = explanation.pair_tokens
    if not tokens:
        return encode_float32(np.zeros((0, 0)))
    rows = []
    for name in names:
        row = np.asarray(explanation.pair_scores.get(name, np.full(len(tokens), np.nan)))
        if row.shape != (len(tokens),):
            raise ValueError(
                f"pair scores of method {name!r} have shape {row.shape}; expected "
                f"({len(tokens)},), one score per token of the second text."
            )
        rows.append(row.astype(np.float32))
    return encode_float32(np.stack(rows))


def _summary(name: str) -> str:
    from attnwidget.methods.registry import get_method

    try:
        return get_method(name).summary
    except UnknownMethodError:  # scores computed outside the registry
        return ""


def _is_signed(name: str, scores: np.ndarray) -> bool:
    """Diverging colours when the method is signed or these scores go negative."""
    from attnwidget.methods.registry import get_method

    try:
        registered = get_method(name).signed
    except UnknownMethodError:
        registered = False
    return bool(registered or np.nanmin(scores, initial=0.0) < 0)
