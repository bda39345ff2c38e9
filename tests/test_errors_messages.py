"""Error wording: each message says what was given, what was expected, and where.

The cases of issue 9, item 11: tokens passed as one string (read as one
token per character, "there are 14 and 14 tokens"), an (H, rows, cols) array
reported with a batch axis it never had, and "attention contains NaN"
without the layer, head and position.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from attnwidget import head_view, model_view
from attnwidget._arrays import as_layer_stack, as_token_list, describe_input
from attnwidget.errors import AttentionShapeError, NonFiniteError
from attnwidget.results.explanation import Explanation
from attnwidget.views import HeadView

TOKENS = ["[CLS]", "the", "keys", "to", "the", "cabinet", "[SEP]"]


def attention(layers: int, heads: int, rows: int, cols: int | None = None, seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    a = rng.random((layers, heads, rows, rows if cols is None else cols)).astype(np.float32)
    return a / a.sum(-1, keepdims=True)


def hf_tuple(array: np.ndarray) -> tuple[np.ndarray, ...]:
    """The bertviz/Hugging Face layout: one (1, H, n, n) array per layer."""
    return tuple(layer[None] for layer in array)


@pytest.mark.parametrize("function", [head_view, model_view])
def test_tokens_as_one_string_are_refused_naming_what_to_pass(function: Any) -> None:
    text = "the keys to th"  # 14 characters for 14 positions: it used to be accepted
    weights = hf_tuple(attention(2, 2, len(text)))
    with pytest.raises(TypeError) as info:
        function(weights, text, html_action="return")
    message = str(info.value)
    assert "tokens is one str ('the keys to th')" in message
    assert "pass a list of token strings" in message
    with pytest.raises(TypeError, match=r"encoder_tokens is one str"):
        function(encoder_attention=weights, encoder_tokens=text, html_action="return")


def test_from_attentions_refuses_tokens_as_one_string() -> None:
    text = "the keys to th"
    with pytest.raises(TypeError) as info:
        Explanation.from_attentions(attention(2, 2, len(text)), text)
    assert "tokens is one str ('the keys to th')" in str(info.value)
    assert "one per attention position (14)" in str(info.value)
    words = text.split()
    exp = Explanation.from_attentions(attention(2, 2, len(words)), tuple(words))
    assert exp.tokens == words


def test_direct_construction_refuses_tokens_as_one_string() -> None:
    text = "the keys to th"
    with pytest.raises(TypeError, match=r"tokens is one str .*one per attention position \(14\)"):
        Explanation(tokens=text, attentions=attention(2, 2, len(text)))
    exp = Explanation(tokens=("a", "b"), attentions=attention(1, 1, 2))
    assert exp.tokens == ["a", "b"]


def test_as_token_list_takes_any_sequence_of_tokens_and_names_the_count() -> None:
    assert as_token_list(("a", "b")) == ["a", "b"]
    assert as_token_list(np.array(["x", "y"])) == ["x", "y"]
    with pytest.raises(TypeError, match=r"one per attention position \(5\)"):
        as_token_list("abcde", expected=5)
    with pytest.raises(TypeError, match=r"tokens is a int"):
        as_token_list(7)
    long = "word " * 30
    with pytest.raises(TypeError, match="…'"):  # a long string is clipped in the message
        as_token_list(long)


def test_token_count_mismatch_names_both_counts_and_the_given_shape() -> None:
    weights = hf_tuple(attention(2, 3, 9))
    with pytest.raises(ValueError) as info:
        head_view(weights, TOKENS, html_action="return")
    message = str(info.value)
    assert "9 query and 9 key positions but there are 7 tokens (in tokens)" in message
    assert "expected 9 query and 9 key tokens" in message
    assert "a tuple of 2 layers of shape (1, 3, 9, 9)" in message
    assert not re.search(r"there are \d+ and \d+ tokens", message)


def test_cross_attention_mismatch_names_each_token_list() -> None:
    cross = hf_tuple(attention(2, 2, 3, 5))  # 3 decoder x 5 encoder positions
    with pytest.raises(ValueError) as info:
        head_view(
            cross_attention=cross,
            encoder_tokens=TOKENS,
            decoder_tokens=["<s>", "a", "b"],
            html_action="return",
        )
    message = str(info.value)
    assert "3 query and 5 key positions but there are 3 and 7 tokens" in message
    assert "(in decoder_tokens and encoder_tokens)" in message


def test_explanation_cross_attention_mismatch_names_the_token_lists() -> None:
    from attnwidget.views import ModelView

    exp = Explanation(
        tokens=["▁Hello", "▁world", "</s>"],
        attentions=attention(2, 4, 3),
        decoder_tokens=["<pad>", "▁Hallo", "▁Welt", "</s>"],
        decoder_attentions=attention(2, 4, 4),
        cross_attentions=attention(2, 4, 4, 5),  # 5 keys, but 3 encoder tokens
        kind="encoder-decoder",
    )
    with pytest.raises(AttentionShapeError) as info:
        ModelView(exp)
    message = str(info.value)
    assert "Cross attention has shape (2, 4, 4, 5)" in message
    assert "4 query and 3 key tokens (rows: decoder_tokens, columns: tokens)" in message
    assert "expected (layers, heads, 4, 3)" in message


def test_a_three_dimensional_array_is_reported_as_given() -> None:
    weights = attention(1, 6, 12, 58)[0]  # (6, 12, 58): one layer of 6 heads, not square
    assert weights.shape == (6, 12, 58)
    with pytest.raises(AttentionShapeError) as info:
        Explanation.from_attentions(weights, ["w"] * 12)
    message = str(info.value)
    assert "shape (6, 12, 58)" in message and "(1, 6, 12, 58)" not in message
    assert "read as one layer: 6 heads of 12 × 58" in message
    assert "expected (L, H, n, n) with square per-head maps" in message
    # The bertviz-style functions name the same shape.
    with pytest.raises(ValueError, match=r"given as shape \(6, 12, 58\) \(read as one layer"):
        head_view(weights, ["w"] * 12, html_action="return")


def test_describe_input_names_tuples_of_mixed_shapes() -> None:
    mixed = (np.zeros((1, 2, 4, 4)), np.zeros((1, 2, 5, 5)))
    assert describe_input(mixed) == ("a tuple of 2 layers of shapes (1, 2, 4, 4), (1, 2, 5, 5)")
    with pytest.raises(AttentionShapeError, match=r"attentions is a tuple of 2 layers of shapes"):
        as_layer_stack(mixed)
    with pytest.raises(AttentionShapeError, match=r"attentions is a str"):
        as_layer_stack("attention")


def _with_bad_values(array: np.ndarray, spots: list[tuple[int, int, int, int]]) -> np.ndarray:
    bad = array.copy()
    for k, spot in enumerate(spots):
        bad[spot] = np.nan if k % 2 == 0 else np.inf
    return bad


def test_non_finite_attention_names_count_layer_head_query_and_key() -> None:
    # The first bad value in (layer, head, query, key) order is (1, 0, 3, 5).
    spots = [(2, 1, 0, 0), (1, 0, 3, 5), (1, 1, 4, 2)]
    bad = _with_bad_values(attention(3, 2, 7), spots)
    first = min(spots)
    expected_kind = "NaN" if np.isnan(bad[first]) else "+inf"
    with pytest.raises(NonFiniteError) as info:
        Explanation.from_attentions(bad, TOKENS)
    message = str(info.value)
    assert "3 NaN/inf values of 294" in message
    assert f"the first, {expected_kind}, at layer 1, head 0, query 3, key 5" in message


def test_non_finite_attention_in_the_views_names_the_models_layer_and_head() -> None:
    spots = [(2, 1, 6, 0), (2, 1, 6, 4)]  # only in layer 2, head 1
    bad = _with_bad_values(attention(3, 2, 7), spots)
    with pytest.raises(NonFiniteError) as info:
        # Layers 2 and 0 shown, heads 1 and 0: the message names the model's numbers.
        model_view(
            hf_tuple(bad), TOKENS, include_layers=[2, 0], include_heads=[1, 0], html_action="return"
        )
    message = str(info.value)
    assert message.startswith("Self-attention contains 2 NaN/inf values")
    assert "the first, NaN, at layer 2, head 1, query 6, key 0" in message
    with pytest.raises(NonFiniteError, match=r"at layer 2, head 1, query 6, key 0"):
        HeadView(Explanation(tokens=TOKENS, attentions=bad))


def test_finite_input_still_works() -> None:
    weights = attention(2, 2, len(TOKENS))
    view = head_view(hf_tuple(weights), tuple(TOKENS), html_action="view")
    np.testing.assert_allclose(view.shown_attention(), weights)
    view.close()
