"""The one wire encoder (attnwidget/views/core/buffers.py) and the views' constructors.

float16 transport: values outside float16's range are rescaled (a scale in
the meta, multiplied back by the decoders) or refused with InputError, never
silently sent as infinity or 0. Views refuse unknown constructor keywords.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnwidget.errors import InputError
from attnwidget.results.explanation import Explanation
from attnwidget.views import FlowView, HeadView, ModelView, SaliencyView
from attnwidget.views.core.base import constructor_options
from attnwidget.views.core.buffers import (
    FLOAT16_MAX,
    FLOAT16_TINY,
    decode_array,
    encode_array,
    encode_attention,
)

TOKENS = ["[CLS]", "a", "b", "[SEP]"]


def attention(scale: float = 1.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = rng.random((2, 2, 4, 4)) ** 3
    return (weights / weights.sum(-1, keepdims=True) * scale).astype(np.float32)


def round_trip(values: np.ndarray, dtype: str = "float16", **options: str) -> np.ndarray:
    data, meta = encode_array(values, dtype, name="test array", **options)  # type: ignore[arg-type]
    assert meta["dtype"] == dtype and meta["shape"] == list(values.shape)
    return decode_array(data, meta)


# -- float16 range ------------------------------------------------------------------


def test_gradients_beyond_float16_are_rescaled_and_come_back() -> None:
    rng = np.random.default_rng(1)
    gradients = (rng.standard_normal((3, 5, 5)) * 4e6).astype(np.float32)
    assert np.abs(gradients).max() > FLOAT16_MAX  # plain float16 would give inf
    data, meta = encode_array(gradients, "float16", fit="rescale")
    assert meta["scale"] > 1 and np.log2(meta["scale"]).is_integer()  # a power of two: exact
    decoded = decode_array(data, meta)
    assert np.isfinite(decoded).all()
    np.testing.assert_allclose(decoded, gradients, rtol=2.0**-11, atol=0)
    # The bytes themselves hold no infinity: the scale did the work.
    assert np.isfinite(np.frombuffer(data, dtype="<f2")).all()


def test_tiny_relevance_is_rescaled_instead_of_turning_into_zero() -> None:
    relevance = np.array([3e-9, -1e-8, 2.5e-10, 0.0], dtype=np.float32)
    assert (relevance[relevance != 0].astype(np.float16) == 0).any()  # plain float16 loses them
    decoded = round_trip(relevance, fit="rescale")
    assert (decoded[:3] != 0).all() and decoded[3] == 0
    np.testing.assert_allclose(decoded, relevance, rtol=2.0**-11, atol=0)


def test_values_in_range_keep_their_exact_bytes_and_no_scale() -> None:
    values = np.array([0.5, -3.0, 1000.0], dtype=np.float32)
    data, meta = encode_array(values, "float16", fit="rescale")
    assert "scale" not in meta
    assert data == values.astype("<f2").tobytes()


def test_out_of_range_values_are_refused_with_a_clear_error() -> None:
    with pytest.raises(InputError, match=r"test array reaches 70000.*infinity.*fit='rescale'"):
        round_trip(np.array([70000.0, 1.0]))
    with pytest.raises(InputError, match=r"as small as 1e-09 that float16 would send as 0"):
        round_trip(np.array([0.5, 1e-9]))
    # A range wider than float16 holds even after rescaling: float32 is the way.
    with pytest.raises(InputError, match=r"more than float16's ~1e12.*float32"):
        round_trip(np.array([1e8, 1e-8]), fit="rescale")
    with pytest.raises(ValueError, match="fit="):
        round_trip(np.array([1.0]), fit="clip")


def test_attention_probabilities_may_underflow_by_design() -> None:
    weights = np.array([[1 - 2e-8, 2e-8]], dtype=np.float32)
    assert 2e-8 < FLOAT16_TINY
    decoded = decode_array(encode_attention(weights), {"dtype": "float16", "shape": [1, 2]})
    assert decoded[0, 1] == 0 and decoded[0, 0] == 1  # documented: drawn as nothing anyway


def test_head_and_model_views_refuse_attention_beyond_float16() -> None:
    big = Explanation(tokens=TOKENS, attentions=attention(scale=1e5))
    for view in (HeadView, ModelView):
        with pytest.raises(InputError, match=r"attention reaches .*65504.*probabilities"):
            view(big)
    # Ordinary probabilities go through, within the documented precision.
    view = HeadView(Explanation(tokens=TOKENS, attentions=attention()))
    np.testing.assert_allclose(view.wire_attention(), attention(), rtol=2.0**-11, atol=2.0**-25)


def test_float32_and_uint32_round_trip_exactly() -> None:
    scores = np.array([[1e30, -2.5], [3e-40, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(round_trip(scores, "float32"), scores)
    index = np.array([0, 7, 2**32 - 1])
    out = round_trip(index, "uint32")
    assert out.dtype == np.dtype("<u4") and out.tolist() == index.tolist()
    with pytest.raises(ValueError, match="do not fill shape"):
        decode_array(b"\0" * 8, {"dtype": "float32", "shape": [3]})
    with pytest.raises(ValueError, match="scale must be a positive"):
        decode_array(b"\0" * 2, {"dtype": "float16", "shape": [1], "scale": 0})


# -- constructors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("view", "typo", "meant"),
    [
        (FlowView, "methd", "selected_method"),  # a typo of the deprecated name: the new one
        (FlowView, "selected_metod", "selected_method"),
        (HeadView, "layr", "layer"),
        (ModelView, "hed", "head"),
        (SaliencyView, "metods", "methods"),
    ],
)
def test_unknown_constructor_keywords_are_refused(view: type, typo: str, meant: str) -> None:
    exp = Explanation.from_attentions(attention(), TOKENS)
    with pytest.raises(TypeError) as info:
        view(exp, **{typo: "x"})
    message = str(info.value)
    assert f"{view.__name__}() got unexpected keyword argument {typo!r}" in message
    assert f"did you mean {meant!r}?" in message
    for name in constructor_options(view):
        assert name in message.split("it takes: ")[1]
    # The widget's own options still pass.
    assert view(exp, layout={"width": "320px"}).layout.width == "320px"


def test_constructor_options_are_the_signatures() -> None:
    assert constructor_options(FlowView)[:3] == ["explanation", "selected_method", "stack"]
    assert "theme" in constructor_options(ModelView)
    assert constructor_options(SaliencyView)[-3:] == ["layout", "tabbable", "tooltip"]
