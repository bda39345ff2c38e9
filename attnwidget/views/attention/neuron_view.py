"""NeuronView: one head's queries and keys, as the neuron view of Vig (2019) shows them.

For a chosen layer and head: the query vector q_i of the selected token,
every key vector k_j, their element-wise products q_i ∘ k_j (whose sum is
q_i · k_j), the scores ``scale · q_i · k_j`` (scale = 1/√d) and the softmax
weights. q and k are read from a stock Hugging Face model with forward hooks
(:mod:`attnwidget.capture.qk`: BERT family, GPT-2, Llama-style with
grouped-query heads); for rotary models (Su et al. 2021) the page shows q and
k before and after rotation, and the products, scores and weights are made
of the rotated ones, as in the model.

Message schema (traits synced with ``js/src/attention/neuron_types.ts``
``NeuronTraits``). H heads, n tokens, head size d. The arrays are ONE layer's
(``data_layer``): Python sends the layer shown and replaces them when
``layer`` changes (a saved page, ``to_html``, holds the layer it was saved
with and says so for the others). Every array is float32 little-endian, C
order:

=================  ===========  ==============================================
trait              type         meaning
=================  ===========  ==============================================
``_view``          str          ``"neuron"``: the JS view that renders it
``tokens``         list[str]    n tokens (text, never HTML), as every view shows
                                them: no tokenizer markup (``##``, ``Ġ``)
``raw_tokens``     list[str]    the tokenizer's own n strings (shown on hover)
``num_layers``     int          L
``num_heads``      int          H
``num_kv_heads``   int          key heads (< H: grouped-query attention; the
                                keys are sent repeated per query head)
``head_dim``       int          d
``causal``         bool         key j is masked for query i < j
``rotary``         bool         True: ``q_rotated``/``k_rotated`` hold the
                                rotated vectors the scores use
``data_layer``     int          the layer the arrays below hold
``scale``          float        the layer's score scale (1/√d, or the model's)
``shape``          list[int]    ``[H, n, d]``
``q``              bytes        (H, n, d) queries before rotation
``k``              bytes        (H, n, d) keys before rotation
``q_rotated``      bytes        (H, n, d) rotated queries (``b""`` if not
                                ``rotary``)
``k_rotated``      bytes        (H, n, d) rotated keys (``b""`` if not
                                ``rotary``)
``scores``         bytes        (H, n, n) ``scale · q_i · k_j``, unmasked
``weights``        bytes        (H, n, n) softmax over the unmasked keys
``layer``          int          0..L-1 (synced; the page's picker)
``head``           int          0..H-1 (synced; the page's picker)
``selected_token`` int          the query token i, 0..n-1 (synced; click a
                                token in the page)
=================  ===========  ==============================================
"""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from attnwidget.capture.qk import QueryKeys, qk_layouts, query_keys
from attnwidget.errors import InputError
from attnwidget.methods.progress import Progress, ProgressArg, check_progress
from attnwidget.views.attention.neuron_size import check_fits, neuron_size
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.core.selection import NONE
from attnwidget.views.core.tokens import readable_tokens


def _index(value: Any, size: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{what} must be an int, not {value!r}.")
    if not -size <= value < size:
        raise InputError(
            f"{what}={value} is out of range: there are {size} ({what} 0..{size - 1})."
        )
    return int(value) % size


def _bytes(values: np.ndarray) -> bytes:
    return np.ascontiguousarray(values, dtype="<f4").tobytes()


class NeuronView(_AttnWidget):
    """One head's q, k, q ∘ k, scores and weights for a selected query token.

    Args:
        model: a Hugging Face model (BERT family, GPT-2, Llama-style; see
            :mod:`attnwidget.capture.qk`); it is run once, with hooks that
            are removed afterwards, and left as it was.
        tokenizer: its tokenizer.
        text: the input text.
        layer, head: the head shown first (negative counts from the end).
        selected_token: the query token shown first (negative from the end).
        progress: None (default): when the work is estimated from the sizes
            at 5 s or more, say so on stderr first and show its three steps
            (forward pass, scores, weights); True: always; False: never; a
            callable ``progress(done, total)`` gets the counts. A text whose
            page state would pass the message cap is refused before the model
            runs. Ctrl-C stops it and leaves the model as it was.

    Click a token in the page to make it the query (:attr:`selected_token`);
    the layer and head pickers set :attr:`layer` and :attr:`head`; setting
    any of them from Python redraws the page. :attr:`selection` holds the
    drawn numbers at full precision.

    Example::

        view = NeuronView(model, tokenizer, "the keys to the cabinet", layer=1)
        view.head = 2; view.selected_token = 3
        view.selection["weights"]       # float32 (n,): that query's weights
    """

    _view = traitlets.Unicode("neuron").tag(sync=True)

    tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    #: The tokenizer's own strings of ``tokens`` (``##ing``), shown on hover.
    raw_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    num_layers = traitlets.Int(0, read_only=True).tag(sync=True)
    num_heads = traitlets.Int(0, read_only=True).tag(sync=True)
    num_kv_heads = traitlets.Int(0, read_only=True).tag(sync=True)
    head_dim = traitlets.Int(0, read_only=True).tag(sync=True)
    causal = traitlets.Bool(False, read_only=True).tag(sync=True)
    rotary = traitlets.Bool(False, read_only=True).tag(sync=True)
    data_layer = traitlets.Int(0, read_only=True).tag(sync=True)
    scale = traitlets.Float(1.0, read_only=True).tag(sync=True)
    shape = traitlets.List(traitlets.Int(), read_only=True).tag(sync=True)
    q = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    k = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    q_rotated = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    k_rotated = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    scores = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    weights = traitlets.Bytes(b"", read_only=True).tag(sync=True)

    #: The layer shown, 0..L-1.
    layer = traitlets.Int(0).tag(sync=True)
    #: The head shown, 0..H-1.
    head = traitlets.Int(0).tag(sync=True)
    #: The query token, 0..n-1.
    selected_token = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        text: str,
        *,
        layer: int = 0,
        head: int = 0,
        selected_token: int = 0,
        progress: ProgressArg = None,
        **kwargs: Any,
    ) -> None:
        progress = check_progress(progress)
        if not isinstance(text, str) or not text:
            raise InputError(f"text must be a non-empty string, not {text!r}.")
        # Sizes first: a text too long for the page is refused before the model runs.
        size = neuron_size(model, qk_layouts(model), len(tokenizer(text)["input_ids"]))
        check_fits(size)
        what = f"NeuronView ({size.tokens:,} tokens, {size.layers} layers × {size.heads} heads)"
        with Progress(3, "NeuronView", "steps", progress, size.seconds, announcement=what) as bar:
            captured = query_keys(model, tokenizer, text)
            bar.update()
            self._init(captured, tokenizer, layer, head, selected_token, bar, **kwargs)

    def _init(
        self,
        captured: QueryKeys,
        tokenizer: Any,
        layer: int,
        head: int,
        selected_token: int,
        bar: Progress,
        **kwargs: Any,
    ) -> None:
        self._captured: QueryKeys = captured
        layer = _index(layer, captured.num_layers, "layer")
        head = _index(head, captured.num_heads, "head")
        selected_token = _index(selected_token, len(captured.tokens), "selected_token")
        super().__init__(layer=layer, head=head, selected_token=selected_token, **kwargs)
        # Shown as every view shows them (no ``##``); the raw strings on hover.
        self.set_trait("tokens", readable_tokens(captured.tokens, tokenizer))
        self.set_trait("raw_tokens", list(captured.tokens))
        self.set_trait("num_layers", captured.num_layers)
        self.set_trait("num_heads", captured.num_heads)
        self.set_trait("num_kv_heads", captured.kv_heads)
        self.set_trait("head_dim", int(captured.q.shape[-1]))
        self.set_trait("causal", captured.causal)
        self.set_trait("rotary", captured.rotary)
        self.set_trait("shape", [int(s) for s in captured.q.shape[1:]])
        self._send_layer(layer, bar)

    @property
    def captured(self) -> QueryKeys:
        """Every layer's q and k (:class:`~attnwidget.capture.qk.QueryKeys`)."""
        return self._captured

    def _send_layer(self, layer: int, bar: Progress | None = None) -> None:
        c = self._captured
        with self.hold_sync():
            self.set_trait("q", _bytes(c.q[layer]))
            self.set_trait("k", _bytes(c.k[layer]))
            self.set_trait("q_rotated", _bytes(c.q_rotated[layer]) if c.rotary else b"")
            self.set_trait("k_rotated", _bytes(c.k_rotated[layer]) if c.rotary else b"")
            self.set_trait("scores", _bytes(c.scores(layer)))
            if bar is not None:
                bar.update()
            self.set_trait("weights", _bytes(c.weights(layer)))
            if bar is not None:
                bar.update()
            self.set_trait("scale", float(c.scale[layer]))
            self.set_trait("data_layer", layer)

    def _check(self, proposal: Any, size: int, what: str) -> int:
        value = proposal["value"]
        if value == NONE and what != "layer":
            raise traitlets.TraitError(
                f"{what}=-1: NeuronView always shows one head and one query token, so "
                f"nothing-selected (-1) is not possible here; pick {what} 0..{size - 1}."
            )
        if not 0 <= value < size:
            raise traitlets.TraitError(
                f"{what}={value} is out of range: there are {size} ({what} 0..{size - 1})."
            )
        return value

    @traitlets.validate("layer")
    def _valid_layer(self, proposal: Any) -> int:
        return self._check(proposal, self._captured.num_layers, "layer")

    @traitlets.validate("head")
    def _valid_head(self, proposal: Any) -> int:
        return self._check(proposal, self._captured.num_heads, "head")

    @traitlets.validate("selected_token")
    def _valid_token(self, proposal: Any) -> int:
        return self._check(proposal, len(self._captured.tokens), "selected_token")

    @traitlets.observe("layer")
    def _layer_changed(self, change: Any) -> None:
        if change["new"] != self.data_layer:
            self._send_layer(change["new"])

    @property
    def selection(self) -> dict[str, Any]:
        """What the page draws, full precision: the query's and keys' vectors and numbers.

        Keys: ``layer``, ``head``, ``token`` (index), ``text``; float32
        ``q`` (d,), ``k`` (n, d), the same ``q_rotated``/``k_rotated`` (equal
        to ``q``/``k`` without rotary embeddings), ``products`` (n, d)
        ``q_rotated ∘ k_rotated``, ``scores`` (n,), ``weights`` (n,) and the
        bool ``mask`` (n,) of the keys the query may attend to.
        """
        c, layer, head, i = self._captured, self.layer, self.head, self.selected_token
        q_rot, k_rot = c.q_rotated[layer, head, i], c.k_rotated[layer, head]
        return {
            "layer": layer,
            "head": head,
            "token": i,
            "text": self.tokens[i],
            "q": c.q[layer, head, i].copy(),
            "k": c.k[layer, head].copy(),
            "q_rotated": q_rot.copy(),
            "k_rotated": k_rot.copy(),
            "products": (q_rot[None, :] * k_rot).astype(np.float32),
            "scores": c.scores(layer)[head, i],
            "weights": c.weights(layer)[head, i],
            "mask": c.mask()[i],
        }
