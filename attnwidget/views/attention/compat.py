"""Drop-in replacements for bertviz's ``head_view`` and ``model_view``.

Same arguments, same meanings (``attention`` is the Hugging Face tuple of
per-layer tensors of shape (1, H, n, n); ``include_layers`` /
``include_heads`` select layers/heads by index, in the order given; a
``sentence_b_start`` adds the A->A, B->B, A->B, B->A filters; encoder–decoder
models pass ``encoder_attention`` / ``decoder_attention`` /
``cross_attention`` with ``encoder_tokens`` / ``decoder_tokens``), but the
result is an attnwidget view: it renders offline, is fast at 512 tokens, and
its state (layer, heads, pinned token) can be read and set from Python.

Differences, on purpose:

- ``html_action='view'`` displays the widget *and returns it* (bertviz
  returns None). It is shown once per cell: ending the cell with the call does
  not show a second copy.
- Empty ``include_layers`` / ``include_heads`` lists, repeated or out-of-range
  indices raise a ValueError (bertviz silently shows all layers for ``[]``).
- Tensors may also be numpy arrays, (H, n, n) per layer, or one
  (L, H, n, n) array.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from attnwidget._arrays import AttentionLike, as_layer_stack, as_token_list, describe_input
from attnwidget.views.attention._shared import AttentionMatrix, AttentionSet, make_matrix
from attnwidget.views.attention.head_view import HeadView
from attnwidget.views.attention.model_view import ModelView

if TYPE_CHECKING:
    from IPython.display import HTML

HTML_ACTIONS = ("view", "return")
HtmlAction = Literal["view", "return"]
ViewT = TypeVar("ViewT", HeadView, ModelView)
DISPLAY_MODES = ("dark", "light", "auto")


def head_view(
    attention: AttentionLike | None = None,
    tokens: Sequence[str] | None = None,
    sentence_b_start: int | None = None,
    prettify_tokens: bool = True,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    encoder_attention: AttentionLike | None = None,
    decoder_attention: AttentionLike | None = None,
    cross_attention: AttentionLike | None = None,
    encoder_tokens: Sequence[str] | None = None,
    decoder_tokens: Sequence[str] | None = None,
    include_layers: Sequence[int] | None = None,
    html_action: HtmlAction = "view",
) -> HeadView | HTML:
    """bertviz's ``head_view``, as an attnwidget :class:`HeadView`.

    Args:
        attention: self-attention, the tuple of per-layer (1, H, n, n) tensors.
        tokens: the n tokens (special tokens included).
        sentence_b_start: index of the first token of sentence B (optional).
        prettify_tokens: show ``Ġ``/``▁`` as a space and drop ``</w>``.
        layer: the initially shown layer (an index of the model's layers; must
            be in ``include_layers``). Default: the first included layer.
        heads: the initially shown heads (default: all).
        encoder_attention, decoder_attention, cross_attention: encoder–decoder
            models, instead of ``attention``; cross attention is
            (1, H, decoder tokens, encoder tokens) per layer.
        encoder_tokens, decoder_tokens: their tokens.
        include_layers: indices of the layers to show (default: all).
        html_action: ``"view"`` displays the view and returns it;
            ``"return"`` returns an ``IPython.display.HTML`` of it.

    Returns:
        The :class:`HeadView` (``"view"``) or an ``HTML`` object (``"return"``).
    """
    _check_action(html_action)
    data, ids = _attention_set(
        attention,
        tokens,
        sentence_b_start,
        prettify_tokens,
        encoder_attention,
        decoder_attention,
        cross_attention,
        encoder_tokens,
        decoder_tokens,
        include_layers,
        None,
    )
    if layer is not None and layer not in ids:
        raise ValueError(f"Layer {layer} is not in include_layers: {list(ids)}")
    heads_ = None if heads is None else _indices(heads, data.matrices[0].shape[1], "heads")
    view = _CompatHeadView(data, layer=layer, heads=heads_)
    return _finish(view, html_action)


def model_view(
    attention: AttentionLike | None = None,
    tokens: Sequence[str] | None = None,
    sentence_b_start: int | None = None,
    prettify_tokens: bool = True,
    display_mode: Literal["auto", "dark", "light"] = "auto",
    encoder_attention: AttentionLike | None = None,
    decoder_attention: AttentionLike | None = None,
    cross_attention: AttentionLike | None = None,
    encoder_tokens: Sequence[str] | None = None,
    decoder_tokens: Sequence[str] | None = None,
    include_layers: Sequence[int] | None = None,
    include_heads: Sequence[int] | None = None,
    html_action: HtmlAction = "view",
) -> ModelView | HTML:
    """bertviz's ``model_view``, as an attnwidget :class:`ModelView`.

    Arguments as for :func:`head_view`, plus:

    Args:
        display_mode: ``"auto"`` (default: follow the notebook's theme, as
            :func:`head_view` does), ``"dark"`` (bertviz's default) or
            ``"light"``.
        include_heads: indices of the heads to show (default: all).
    """
    _check_action(html_action)
    if display_mode not in DISPLAY_MODES:
        raise ValueError(
            f"display_mode={display_mode!r} must be one of {', '.join(map(repr, DISPLAY_MODES))}."
        )
    data, _ = _attention_set(
        attention,
        tokens,
        sentence_b_start,
        prettify_tokens,
        encoder_attention,
        decoder_attention,
        cross_attention,
        encoder_tokens,
        decoder_tokens,
        include_layers,
        include_heads,
    )
    view = _CompatModelView(data, theme=display_mode)
    return _finish(view, html_action)


def prettify(tokens: Sequence[str]) -> list[str]:
    """Tokens as bertviz shows them: ``Ġ``/``▁`` (word start) as a space, ``</w>`` dropped."""
    return [str(t).replace("Ġ", " ").replace("▁", " ").replace("</w>", "") for t in tokens]


# -- building the attention --------------------------------------------------------


def _attention_set(
    attention: Any,
    tokens: Sequence[str] | None,
    sentence_b_start: int | None,
    prettify_tokens: bool,
    encoder_attention: Any,
    decoder_attention: Any,
    cross_attention: Any,
    encoder_tokens: Sequence[str] | None,
    decoder_tokens: Sequence[str] | None,
    include_layers: Sequence[int] | None,
    include_heads: Sequence[int] | None,
) -> tuple[AttentionSet, tuple[int, ...]]:
    """The views' data from bertviz's arguments; returns it and the layer ids shown."""
    pretty = prettify if prettify_tokens else (lambda ts: [str(t) for t in ts])
    enc_dec = (encoder_attention, decoder_attention, cross_attention)
    if attention is not None:
        if tokens is None:
            raise ValueError("'tokens' is required")
        if any(a is not None for a in (*enc_dec, encoder_tokens, decoder_tokens)):
            raise ValueError(
                "If you specify 'attention' you may not specify any encoder-decoder arguments "
                "(encoder_attention, decoder_attention, cross_attention, encoder_tokens, "
                "decoder_tokens); those are for encoder-decoder models."
            )
        shown = pretty(as_token_list(tokens, name="tokens"))
        matrix = _matrix("self", attention, shown, shown, include_layers, include_heads)
        data = AttentionSet(shown, [], [matrix], sentence_b_start)
        return data.checked(), matrix.layer_ids
    if all(a is None for a in enc_dec):
        raise ValueError(
            "You must specify at least one attention argument: 'attention' (with 'tokens') "
            "or encoder_attention / decoder_attention / cross_attention."
        )
    enc = (
        None
        if encoder_tokens is None
        else pretty(as_token_list(encoder_tokens, name="encoder_tokens"))
    )
    dec = (
        None
        if decoder_tokens is None
        else pretty(as_token_list(decoder_tokens, name="decoder_tokens"))
    )
    matrices: list[AttentionMatrix] = []
    for key, weights, needs in (
        ("encoder", encoder_attention, ("encoder_tokens",)),
        ("decoder", decoder_attention, ("decoder_tokens",)),
        ("cross", cross_attention, ("encoder_tokens", "decoder_tokens")),
    ):
        if weights is None:
            continue
        for name in needs:
            if (enc if name == "encoder_tokens" else dec) is None:
                raise ValueError(f"'{name}' required if '{key}_attention' is not None")
        rows = enc if key == "encoder" else dec
        cols = dec if key == "decoder" else enc
        assert rows is not None and cols is not None
        matrices.append(_matrix(key, weights, rows, cols, include_layers, include_heads))
    data = AttentionSet(enc or [], dec or [], matrices, None)
    return data.checked(), matrices[0].layer_ids


def _matrix(
    key: str,
    weights: Any,
    rows: list[str],
    cols: list[str],
    include_layers: Sequence[int] | None,
    include_heads: Sequence[int] | None,
) -> AttentionMatrix:
    name = "attention" if key == "self" else f"{key}_attention"
    array = _layers_array(weights, name)
    layers, heads, n_rows, n_cols = array.shape
    if (n_rows, n_cols) != (len(rows), len(cols)):
        # Which token lists label the rows and the columns (bertviz's argument names).
        row_name, col_name = {
            "self": ("tokens", "tokens"),
            "encoder": ("encoder_tokens", "encoder_tokens"),
            "decoder": ("decoder_tokens", "decoder_tokens"),
            "cross": ("decoder_tokens", "encoder_tokens"),
        }[key]
        same = row_name == col_name
        count = f"{len(rows)}" if same else f"{len(rows)} and {len(cols)}"
        given = row_name if same else f"{row_name} and {col_name}"
        raise ValueError(
            f"{name} has {n_rows} query and {n_cols} key positions but there are {count} "
            f"tokens (in {given}); expected {n_rows} query and {n_cols} key tokens, one per "
            f"position. {name} was given as {describe_input(weights)}; pass the tokens the "
            "attention was computed on."
        )
    layer_ids = _indices(include_layers, layers, "include_layers")
    head_ids = _indices(include_heads, heads, "include_heads")
    # bertviz's selection: layers by index, then heads by index, in the order given.
    selected = array[list(layer_ids)][:, list(head_ids)]
    return make_matrix(key, selected, rows, cols, layer_ids=layer_ids, head_ids=head_ids)


def _layers_array(attention: Any, name: str) -> np.ndarray:
    """(L, H, rows, cols) float32 from a tuple of per-layer tensors or one array."""
    return as_layer_stack(attention, name=name, square=False, dtype=np.float32, finite=False)


def _indices(values: Sequence[int] | None, size: int, name: str) -> tuple[int, ...]:
    if values is None:
        return tuple(range(size))
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < size:
            raise ValueError(f"{name} has {v!r}; expected indices 0..{size - 1}.")
        out.append(int(v))
    if not out:
        raise ValueError(f"{name} is empty; pass at least one index (or None for all).")
    if len(set(out)) != len(out):
        raise ValueError(f"{name}={list(values)} repeats an index.")
    return tuple(out)


def _check_action(html_action: str) -> None:
    if html_action not in HTML_ACTIONS:
        raise ValueError("'html_action' parameter must be 'view' or 'return'")


# -- showing --------------------------------------------------------------------------


class _ShownOncePerCell:
    """Display at most once per executed cell.

    The compat functions display the view and also return it. Without this,
    ``head_view(attention, tokens)`` on a cell's last line would show two
    copies (one from the call, one from the cell's result).
    """

    _shown_in: int | None = None

    def _ipython_display_(self) -> None:
        from IPython import get_ipython
        from IPython.display import display

        shell = get_ipython()
        count = getattr(shell, "execution_count", None)
        if count is not None and count == self._shown_in:
            return
        self._shown_in = count
        bundle = self._repr_mimebundle_()  # type: ignore[attr-defined]
        # anywidget returns (data, metadata); ipywidgets returns data alone.
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        display(data, metadata=metadata, raw=True)


class _CompatHeadView(_ShownOncePerCell, HeadView):
    pass


class _CompatModelView(_ShownOncePerCell, ModelView):
    pass


def _finish(view: ViewT, html_action: str) -> ViewT | HTML:
    if html_action == "return":
        from IPython.display import HTML

        # Self-contained (bundle and attention inline, no CDN), like bertviz's
        # HTML but working offline; a fragment, not a page: it is displayed
        # inside the notebook's page, where a page's CSP <meta> is an error.
        # It records the attention the page asks for, as to_html() does.
        html = HTML(view._embeddable())
        view.close()  # never displayed: free the kernel-side comm
        return html
    from IPython.display import display

    display(view)
    return view
