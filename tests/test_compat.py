"""attnwidget.head_view / model_view: bertviz's arguments, bertviz's data.

The expected arrays are written here from the input tensors, following what
bertviz documents and renders: ``include_layers`` / ``include_heads`` pick
layers and heads by index (in the order given), and a ``sentence_b_start``
splits the matrix into the A->A, B->B, A->B and B->A blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from attnwidget.results.explanation import Explanation
from attnwidget.views import HeadView, ModelView, head_view, model_view
from attnwidget.views.attention._shared import WIRE_ATOL, WIRE_RTOL
from attnwidget.views.attention.compat import prettify
from attnwidget.views.core.standalone import REPLY_ATTRIBUTE

L, H, N = 4, 6, 7
TOKENS = ["[CLS]", "Ġthe", "Ġcat", "[SEP]", "▁it", "sat</w>", "[SEP]"]


@pytest.fixture(autouse=True)
def no_display(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record what the functions display instead of printing it."""
    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append(a))
    return shown


def hf_attention(layers: int = L, heads: int = H, rows: int = N, cols: int | None = None, seed=0):
    """A Hugging Face style tuple: one (1, H, rows, cols) tensor per layer."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(layers):
        w = torch.rand(1, heads, rows, cols or rows, generator=g)
        out.append(w / w.sum(-1, keepdim=True))
    return tuple(out)


def layer_stack(attention, layers, heads=None) -> np.ndarray:
    """(len(layers), len(heads), n, n): attention[l][0, h] for each picked l, h."""
    heads = heads if heads is not None else range(attention[0].shape[1])
    return np.array([[attention[layer][0, h].numpy() for h in heads] for layer in layers])


def test_head_view_returns_our_widget_with_bertviz_data(no_display: list[Any]) -> None:
    attention = hf_attention()
    view = head_view(attention, TOKENS)
    assert isinstance(view, HeadView)
    assert len(no_display) == 1 and no_display[0][0] is view
    np.testing.assert_array_equal(view.shown_attention(), layer_stack(attention, range(L)))
    np.testing.assert_allclose(
        view.wire_attention(), layer_stack(attention, range(L)), rtol=WIRE_RTOL, atol=WIRE_ATOL
    )
    # prettify_tokens: Ġ and ▁ become a space, </w> goes; as bertviz does.
    assert view.tokens == ["[CLS]", " the", " cat", "[SEP]", " it", "sat", "[SEP]"]
    assert head_view(attention, TOKENS, prettify_tokens=False).tokens == TOKENS


def test_include_layers_layer_and_heads() -> None:
    attention = hf_attention()
    view = head_view(attention, TOKENS, include_layers=[3, 1], layer=1, heads=[4, 0])
    np.testing.assert_array_equal(view.shown_attention(), layer_stack(attention, [3, 1]))
    assert view.matrices[0]["layer_ids"] == [3, 1]
    assert view.layer == 1 and view.heads == [0, 4]
    # The layer trait speaks the model's layer numbers.
    view.layer = 3
    np.testing.assert_array_equal(view.selection is None, True)
    view.selected_token = 2
    np.testing.assert_array_equal(
        view.selection["weights"], np.array([attention[3][0, h, 2].numpy() for h in (0, 4)])
    )
    with pytest.raises(ValueError, match=r"Layer 2 is not in include_layers: \[3, 1\]"):
        head_view(attention, TOKENS, include_layers=[3, 1], layer=2)


@pytest.mark.parametrize("function", [head_view, model_view])
def test_sentence_pair_blocks_match_bertviz(function) -> None:
    attention = hf_attention()
    b = 4
    view = function(attention, TOKENS, sentence_b_start=b)
    full = layer_stack(attention, range(L))
    a_idx, b_idx = np.arange(0, b), np.arange(b, N)
    expected = {
        "all": full,
        "A->A": full[:, :, a_idx][:, :, :, a_idx],
        "B->B": full[:, :, b_idx][:, :, :, b_idx],
        "A->B": full[:, :, a_idx][:, :, :, b_idx],
        "B->A": full[:, :, b_idx][:, :, :, a_idx],
    }
    for name, block in expected.items():
        view.pair_filter = name
        np.testing.assert_array_equal(view.shown_attention(), block)
    view.pair_filter = "B->A"
    assert [view.tokens[i] for i in range(*view.pair_blocks()[0].indices(N))] == [
        " it",
        "sat",
        "[SEP]",
    ]


def test_model_view_include_layers_and_heads() -> None:
    attention = hf_attention()
    view = model_view(attention, TOKENS, include_layers=[2, 0, 3], include_heads=[5, 1])
    assert isinstance(view, ModelView)
    np.testing.assert_array_equal(view.shown_attention(), layer_stack(attention, [2, 0, 3], [5, 1]))
    info = view.matrices[0]
    assert info["layer_ids"] == [2, 0, 3] and info["head_ids"] == [5, 1]
    # Follows the notebook's theme by default, as head_view does (bertviz's
    # default "dark" drew a dark block on light JupyterLab).
    assert view.theme == "auto" and head_view(attention, TOKENS).theme == "auto"
    assert model_view(attention, TOKENS, display_mode="light").theme == "light"
    assert model_view(attention, TOKENS, display_mode="dark").theme == "dark"
    view.select(0, 1)
    np.testing.assert_array_equal(view.selected_attention, attention[0][0, 1].numpy())
    with pytest.raises(ValueError, match="display_mode='blue'"):
        model_view(attention, TOKENS, display_mode="blue")


@pytest.mark.parametrize("function", [head_view, model_view])
def test_encoder_decoder_arguments(function) -> None:
    enc_tokens = ["▁Hello", "▁world", "</s>"]
    dec_tokens = ["<pad>", "▁Hallo", "▁Welt", "</s>"]
    enc = hf_attention(rows=3, seed=1)
    dec = tuple(torch.tril(a) / torch.tril(a).sum(-1, keepdim=True) for a in hf_attention(rows=4))
    cross = hf_attention(rows=4, cols=3, seed=2)
    view = function(
        encoder_attention=enc,
        decoder_attention=dec,
        cross_attention=cross,
        encoder_tokens=enc_tokens,
        decoder_tokens=dec_tokens,
        include_layers=[1, 2],
    )
    assert [m["key"] for m in view.matrices] == ["encoder", "decoder", "cross"]
    assert view.tokens == [" Hello", " world", "</s>"]
    assert view.decoder_tokens == ["<pad>", " Hallo", " Welt", "</s>"]
    for key, source in (("encoder", enc), ("decoder", dec), ("cross", cross)):
        view.matrix = key
        np.testing.assert_array_equal(view.shown_attention(), layer_stack(source, [1, 2]))
    assert view.matrices[1]["causal"] is True
    # Cross attention alone is enough, as in bertviz.
    only = function(cross_attention=cross, encoder_tokens=enc_tokens, decoder_tokens=dec_tokens)
    assert [m["key"] for m in only.matrices] == ["cross"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "You must specify at least one attention argument"),
        ({"attention": "A"}, "'tokens' is required"),
        ({"attention": "A", "tokens": TOKENS, "encoder_tokens": TOKENS}, "may not specify"),
        ({"encoder_attention": "A"}, "'encoder_tokens' required"),
        ({"cross_attention": "A", "encoder_tokens": TOKENS}, "'decoder_tokens' required"),
        ({"attention": "A", "tokens": TOKENS[:5]}, "7 query and 7 key positions but there are 5"),
        ({"attention": (), "tokens": TOKENS}, "attention is empty"),
        ({"attention": "batch2", "tokens": TOKENS}, "the batch size must be 1"),
        ({"attention": "A", "tokens": TOKENS, "include_layers": [4]}, r"expected indices 0..3"),
        ({"attention": "A", "tokens": TOKENS, "include_layers": []}, "include_layers is empty"),
        ({"attention": "A", "tokens": TOKENS, "include_layers": [1, 1]}, "repeats an index"),
        ({"attention": "A", "tokens": TOKENS, "html_action": "save"}, "must be 'view' or 'return"),
        ({"attention": "A", "tokens": TOKENS, "sentence_b_start": 9}, "sentence_b_start=9"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs: dict[str, Any], message: str) -> None:
    attention = hf_attention()
    for name in ("attention", "encoder_attention", "cross_attention"):
        if kwargs.get(name) == "A":
            kwargs[name] = attention
        elif kwargs.get(name) == "batch2":
            kwargs[name] = tuple(torch.cat([a, a]) for a in attention)
    with pytest.raises(ValueError, match=message):
        head_view(**kwargs)


def test_numpy_arrays_and_one_stacked_array_are_accepted() -> None:
    attention = hf_attention()
    stacked = np.stack([a.numpy()[0] for a in attention])
    np.testing.assert_array_equal(head_view(stacked, TOKENS).shown_attention(), stacked)
    per_layer = tuple(a.numpy()[0] for a in attention)  # (H, n, n) each
    np.testing.assert_array_equal(head_view(per_layer, TOKENS).shown_attention(), stacked)


def test_prettify_matches_bertviz() -> None:
    assert prettify(["Ġdog", "▁cat", "eat</w>", "##ing", "[CLS]"]) == [
        " dog",
        " cat",
        "eat",
        "##ing",  # bertviz leaves WordPiece's ## alone
        "[CLS]",
    ]


def test_html_action_return_gives_a_self_contained_page(no_display: list[Any]) -> None:
    from IPython.display import HTML

    attention = hf_attention()
    for function in (head_view, model_view):
        html = function(attention, TOKENS, html_action="return")
        assert isinstance(html, HTML)
        assert "data-attnwidget-state" in html.data and "data-attnwidget-bundle" in html.data
        assert "cdnjs" not in html.data and "require.js" not in html.data

    assert no_display == []  # 'return' displays nothing


def test_html_action_return_records_the_attention_the_page_asks_for(
    no_display: list[Any],
) -> None:
    """Beyond what the widget state preloads (4 MiB: 4 layers x 6 heads x 300
    tokens is more), the layers (HeadView) or heads (ModelView) the page will
    ask for are in the fragment, as in to_html(): it has no kernel to ask."""
    attention = hf_attention(rows=300)
    tokens = [f"w{i}" for i in range(300)]
    exp = Explanation(tokens=tokens, attentions=np.stack([a[0].numpy() for a in attention]))
    marker = f'{REPLY_ATTRIBUTE}="'
    for function, cls in ((head_view, HeadView), (model_view, ModelView)):
        html = function(attention, tokens, html_action="return")
        expected = cls(exp).to_html().count(marker)
        assert expected > 0 and html.data.count(marker) == expected, function.__name__


def test_shown_once_per_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """head_view(...) as a cell's last line must not show a second copy."""
    published: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: published.append(a))

    class Shell:
        execution_count = 5

    shell = Shell()
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    view = head_view(hf_attention(), TOKENS, html_action="view")
    view._ipython_display_()  # the call's own display
    view._ipython_display_()  # the cell's result, same cell: skipped
    assert len(published) == 2  # the patched display() in head_view + one real publish
    shell.execution_count = 6
    view._ipython_display_()  # a later cell shows it again
    assert len(published) == 3
    bundle = published[1][0]
    assert "application/vnd.jupyter.widget-view+json" in bundle
