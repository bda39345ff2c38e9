"""AttentionMatrixView's colour scale, fitted to the drawn matrix (issue 20).

On a long input a fixed 0 … max linear scale leaves almost every cell dark:
a causal model's first query attends only to itself (weight 1) while the
other weights are about 1/n. Checked on a real tiny Llama at 2,000 tokens;
the scale's properties (its floor, its clip, the cells it counts above) are
checked against the matrix itself.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import traitlets
from tiny_models import SMALL, bytelevel_tokenizer

from attnwidget import explain
from attnwidget.results.explanation import Explanation
from attnwidget.views import AttentionMatrixView
from attnwidget.views.matrix._colors import color_position

N = 2000


@functools.cache
def long_causal_explanation() -> Explanation:
    """A real tiny Llama (random weights, 4,096 positions) on about 2,000 tokens."""
    import transformers as tf

    torch.manual_seed(0)
    tok = bytelevel_tokenizer(bos=True)
    tok.model_max_length = 10_000
    config = tf.LlamaConfig(
        **SMALL,
        vocab_size=len(tok),
        max_position_embeddings=4096,
        num_key_value_heads=2,
        pad_token_id=tok.pad_token_id,
    )
    model = tf.LlamaForCausalLM(config)
    words = "the cat sat on the mat because it was warm and".split()
    ids = tok(" ".join(words[k % len(words)] for k in range(N)))["input_ids"]
    text = tok.decode(ids[1 : N - 1], skip_special_tokens=True)  # about N tokens with [BOS]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return explain(model, tok, text, methods=["raw"], keep="all")
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def long_causal() -> Explanation:
    return long_causal_explanation()


def dark_share(view: AttentionMatrixView, matrix: np.ndarray) -> float:
    """The share of the attended cells (weight > 0) in the darkest tenth of the scale."""
    positions = color_position(view.color_map, matrix)
    return float((positions[matrix > 0] < 0.1).mean())


def test_a_long_causal_input_opens_on_a_scale_where_its_cells_are_not_dark(
    long_causal: Explanation,
) -> None:
    view = AttentionMatrixView(long_causal)
    m = view.current_matrix()
    n = m.shape[0]
    assert n >= 1900
    # What made the square dark: the first query's weight 1 tops a linear 0 … max.
    assert m.max() == pytest.approx(1.0) and float(np.median(m[m > 0])) < 2 / n * 4
    on_old_scale = (m[m > 0] < 0.1 * m.max()).mean()
    assert on_old_scale > 0.9
    cmap = view.color_map
    assert (view.color_scale, cmap["asked"], cmap["scale"]) == ("auto", "auto", "log")
    assert dark_share(view, m) < 0.05
    # Log from below the smallest weights (at most 1% under the floor) to the largest.
    assert cmap["hi"] == pytest.approx(float(m.max()))
    assert 0 < cmap["lo"] < cmap["hi"] and (m[m > 0] <= cmap["lo"]).mean() <= 0.01
    assert cmap["label"].startswith("auto: log scale, ")
    assert view.value_range == [0.0, pytest.approx(float(m.max()))]  # the weights' own range


def test_linear_clips_the_few_cells_far_above_the_rest_and_counts_them(
    long_causal: Explanation,
) -> None:
    view = AttentionMatrixView(long_causal, color_scale="linear")
    m = view.current_matrix()
    cmap = view.color_map
    assert (cmap["scale"], cmap["lo"], cmap["clipped"]) == ("linear", 0.0, True)
    above = int((m > cmap["hi"]).sum())
    # About 0.1% of the attended cells (the quantile comes from a sample of them).
    assert cmap["above"] == above and 0 < above <= 0.0015 * (m > 0).sum()
    assert cmap["hi"] < 0.25 * float(m.max())
    assert f"{above:,} cells above" in cmap["label"] and "99.9th percentile" in cmap["label"]
    # Switching the scale refits it without redrawing the matrix (same tiles).
    version = view.version
    view.color_scale = "log"
    assert view.color_map["scale"] == "log" and view.version == version
    view.color_scale = "auto"
    assert view.color_map["scale"] == "log"


def test_even_weights_keep_the_linear_range_from_0_to_the_largest() -> None:
    rng = np.random.default_rng(2)
    n = 600
    weights = rng.random((1, 1, n, n)).astype(np.float32) + 1  # no cell far above the rest
    weights /= weights.sum(-1, keepdims=True)
    view = AttentionMatrixView(
        Explanation.from_attentions(weights, [f"t{i}" for i in range(n)], methods=None)
    )
    m = weights[0, 0]
    cmap = view.color_map
    assert (cmap["scale"], cmap["clipped"], cmap["above"]) == ("linear", False, 0)
    assert [cmap["lo"], cmap["hi"]] == [0.0, pytest.approx(float(m.max()))]
    assert dark_share(view, m) == 0.0


def test_color_scale_is_validated_with_the_choices_named() -> None:
    exp = Explanation.from_attentions(
        np.full((1, 1, 4, 4), 0.25, dtype=np.float32), list("abcd"), methods=None
    )
    with pytest.raises(
        traitlets.TraitError, match=r"'sqrt' is not one of \('auto', 'linear', 'log'\)"
    ):
        AttentionMatrixView(exp, color_scale="sqrt")
    view = AttentionMatrixView(exp)
    with pytest.raises(traitlets.TraitError):
        view.color_scale = None  # type: ignore[assignment]
    assert view.color_scale == "auto" and view.color_map["label"] == "auto: linear 0 … 0.25"


def test_a_sink_column_is_clipped_on_a_wide_matrix_sampled_for_its_quantiles() -> None:
    """4,096 columns: the quantiles come from a sample; a stride dividing the
    width would take column 0 (the sink) in every row, sixteen times its share,
    and put the 99.9th percentile on it, so the sink would set the top again."""
    rng = np.random.default_rng(5)
    n = 4096
    weights = rng.random((1, 1, n, n), dtype=np.float32) + 1
    weights[..., 0] = 0
    weights *= 0.5 / weights.sum(-1, keepdims=True)
    weights[..., 0] = 0.5  # every query gives half its attention to the first token
    view = AttentionMatrixView(
        Explanation.from_attentions(weights, [f"t{i}" for i in range(n)], methods=None)
    )
    m = weights[0, 0]
    cmap = view.color_map
    assert (cmap["scale"], cmap["clipped"]) == ("linear", True)
    assert cmap["hi"] < 0.01 and cmap["above"] == int((m > cmap["hi"]).sum()) >= n
    assert dark_share(view, m[:, 1:]) == 0.0  # the rest spans the scale, none of it dark
