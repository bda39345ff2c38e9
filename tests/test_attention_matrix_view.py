"""AttentionMatrixView in Python: tiles, the pooled pyramid, message sizes, the
switch of HeadView/ModelView/FlowView for long inputs, and the JS fixture.

References are written here independently: tiles are compared with slices of
the matrix, pooled levels with an explicit loop over token blocks.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import traitlets
from ipywidgets.widgets.widget import _remove_buffers
from tiny_models import build

from attnwidget import explain
from attnwidget.errors import InputError
from attnwidget.results.explanation import Explanation
from attnwidget.views import AttentionMatrixView, FlowView, HeadView, ModelView
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.core.buffers import decode_array
from attnwidget.views.matrix._colors import color_index, color_position, fit, weight_stats
from attnwidget.views.matrix._tiles import pyramid

FIXTURE = Path(__file__).resolve().parent.parent / "js" / "test" / "fixtures" / "matrix.json"
#: The Jupyter server drops websocket messages over 10 MiB.
JUPYTER_LIMIT = 10 * 2**20


def softmax_attention(layers: int, heads: int, n: int, seed: int = 0) -> np.ndarray:
    """Random post-softmax attention rows, peaked (temperature 1/3)."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((layers, heads, n, n), dtype=np.float32) * 3
    logits -= logits.max(-1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(-1, keepdims=True)
    return logits


def explanation(layers: int, heads: int, n: int, seed: int = 0) -> Explanation:
    tokens = [f"t{i}" for i in range(n)]
    return Explanation.from_attentions(
        softmax_attention(layers, heads, n, seed), tokens, methods=None
    )


def fused_only(exp: Explanation) -> Explanation:
    """What explain(..., keep="fused") keeps: each layer's head mean and the query rows."""
    full = exp.attentions
    return Explanation(
        tokens=exp.tokens,
        attentions=None,  # type: ignore[arg-type]
        keep="fused",
        fused_attentions=full.mean(axis=1),
        attention_rows=np.ascontiguousarray(full[:, :, exp.query_index]),
    )


def decoded_tiles(view: AttentionMatrixView, level: int, tiles: list[tuple[int, int]]) -> dict:
    out = {}
    for content, buffers in view.tiles(level, tiles):
        assert content["type"] == "tiles" and content["level"] == level
        for info, data in zip(content["tiles"], buffers, strict=True):
            out[(info["i"], info["j"])] = decode_array(data, info)
    return out


def explicit_pool(matrix: np.ndarray, factor: int, how: str) -> np.ndarray:
    """Pool token blocks of factor × factor by hand (edge blocks hold fewer tokens)."""
    n_rows, n_cols = matrix.shape
    rows = -(-n_rows // factor)
    cols = -(-n_cols // factor)
    out = np.zeros((rows, cols))
    for a in range(rows):
        for b in range(cols):
            block = matrix[a * factor : (a + 1) * factor, b * factor : (b + 1) * factor]
            out[a, b] = block.max() if how == "max" else block.astype(np.float64).mean()
    return out


def close_float16(got: np.ndarray, want: np.ndarray) -> None:
    # float16 keeps 11 significant bits; values under 2**-24 (after rescaling) may be 0.
    np.testing.assert_allclose(got, want, rtol=2.0**-10, atol=2.0**-24)


# -- tiles and levels ---------------------------------------------------------------


def test_tiles_equal_the_matrix_region() -> None:
    exp = explanation(2, 3, 300)
    view = AttentionMatrixView(exp, layer=1, head=2)
    assert view.levels == [[300, 300], [150, 150], [75, 75], [38, 38]]
    tiles = decoded_tiles(view, 0, [(0, 0), (1, 2), (2, 2)])
    m = exp.attentions[1, 2]
    close_float16(tiles[(0, 0)], m[:128, :128])
    close_float16(tiles[(1, 2)], m[128:256, 256:])  # an edge tile: 128 × 44
    assert tiles[(2, 2)].shape == (44, 44)
    close_float16(tiles[(2, 2)], m[256:, 256:])
    # The mean over heads of one layer.
    view.head = -1
    close_float16(
        decoded_tiles(view, 0, [(1, 1)])[(1, 1)], exp.attentions[1].mean(0)[128:256, 128:256]
    )


@pytest.mark.parametrize("how", ["max", "mean"])
def test_pooled_levels_equal_an_explicit_pooling(how: str) -> None:
    exp = explanation(1, 2, 300, seed=3)
    view = AttentionMatrixView(exp, layer=0, head=1, pool=how)
    m = exp.attentions[0, 1]
    # Level 1: 2 × 2 blocks; level 2: 4 × 4 (75 cells: odd, so level 3's edge
    # blocks hold 4 of 8 tokens); the overview (level 3) travels in the state.
    for level in (1, 2):
        want = explicit_pool(m, 2**level, how)
        grid = -(-want.shape[0] // 128)
        tiles = decoded_tiles(view, level, [(i, j) for i in range(grid) for j in range(grid)])
        got = np.block([[tiles[(i, j)] for j in range(grid)] for i in range(grid)])
        close_float16(got, want)
    overview = decode_array(view.overview, view.overview_meta)
    assert overview.shape == (38, 38)
    close_float16(overview, explicit_pool(m, 8, how))
    assert view.value_range == [0.0, pytest.approx(float(m.max()))]
    # Odd sides at several levels, so partial blocks are pooled with full ones
    # (a mean must weigh them by the tokens they hold), rows ≠ columns.
    odd = np.random.default_rng(4).random((37, 23)).astype(np.float32)
    levels = pyramid(odd, how, overview=2)  # type: ignore[arg-type]
    assert [lv.shape for lv in levels] == [(37, 23), (19, 12), (10, 6), (5, 3), (3, 2), (2, 1)]
    for k, level in enumerate(levels):
        np.testing.assert_allclose(level, explicit_pool(odd, 2**k, how), rtol=1e-6)


def test_fused_attentions_are_drawn_when_only_they_are_kept() -> None:
    exp = fused_only(explanation(2, 2, 200, seed=1))
    view = AttentionMatrixView(exp)
    assert (view.kept, view.shape, view.layer, view.head) == (
        "fused_attentions",
        [2, 0, 200],
        1,
        -1,
    )
    fused = exp.fused_attentions  # type: ignore[attr-defined]
    close_float16(decoded_tiles(view, 0, [(0, 1)])[(0, 1)], fused[1][:128, 128:])
    with pytest.raises(traitlets.TraitError, match=r"only head=-1 \(the mean\).*keep='all'"):
        view.head = 0
    rows = Explanation(
        tokens=exp.tokens, attentions=None, keep="rows", attention_rows=exp.attention_rows
    )  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"keep='rows'.*keep='fused'"):
        AttentionMatrixView(rows)


def test_a_real_model_explained_with_keep_fused_opens_as_the_matrix_view() -> None:
    model, tokenizer = build("gpt2-lm")
    text = "the cat sat on the mat because it was warm"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: one thread is faster
    try:
        fused = explain(model, tokenizer, text, methods=["rollout"], keep="fused")
        full = explain(model, tokenizer, text, methods=["rollout"], keep="all")
    finally:
        torch.set_num_threads(threads)
    view = HeadView(fused)
    assert isinstance(view, AttentionMatrixView) and "keep='fused'" in view.notice
    last = full.attentions.shape[0] - 1
    assert (view.layer, view.head, view.levels) == (last, -1, [[len(full.tokens)] * 2])
    # A short input's overview is the matrix itself: the last layer's mean over heads.
    overview = decode_array(view.overview, view.overview_meta)
    close_float16(overview, full.attentions[last].astype(np.float64).mean(axis=0))


def test_a_4096_token_matrix_travels_in_small_messages() -> None:
    exp = explanation(1, 1, 4096)
    view = HeadView(exp)
    assert isinstance(view, AttentionMatrixView)
    assert "at most 512 tokens" in view.notice and "4,096" in view.notice
    state, _, buffers = _remove_buffers(view.get_state())
    state.pop("_esm")  # the bundle, as in every view
    first = len(json.dumps(state)) + sum(len(b) for b in buffers)
    assert first < 100_000  # tokens (JSON) + an 8 KB overview
    assert len(view.overview) == 64 * 64 * 2
    sent: list[tuple[dict, list]] = []
    view.send = lambda content, buffers=None: sent.append((content, buffers or []))  # type: ignore[method-assign]
    request = {
        "type": "tiles",
        "version": view.version,
        "level": 0,
        "tiles": [[i, j] for i in range(16) for j in range(32)],
    }
    view._on_message(view, request, [])
    assert sum(len(c["tiles"]) for c, _ in sent) == 512 and len(sent) == 2
    for content, buffers in sent:
        size = len(json.dumps(content)) + sum(len(b) for b in buffers)
        assert size < JUPYTER_LIMIT
    # A stale request (another version) is ignored; a bad one answered with an error.
    sent.clear()
    view._on_message(view, {**request, "version": view.version - 1}, [])
    view._on_message(view, {**request, "tiles": [[99, 0]]}, [])
    view._on_message(view, {**request, "tiles": [["0", 0]]}, [])
    assert [c["type"] for c, _ in sent] == ["error", "error"]
    assert "outside level 0's 32×32 tiles" in sent[0][0]["message"]


def test_views_switch_above_their_size_and_without_per_head_attention() -> None:
    exp = explanation(2, 2, 600)
    assert isinstance(HeadView(exp, layer=1, heads=[1], selected_token=5), AttentionMatrixView)
    switched = HeadView(exp, layer=1, heads=[1], selected_token=5)
    assert (switched.layer, switched.head, switched.selected_token) == (1, 1, 5)
    assert isinstance(ModelView(exp), ModelView)  # ModelView draws up to 1,024 tokens
    assert isinstance(FlowView(explanation(2, 2, 40)), FlowView)
    with pytest.raises(TypeError, match="did you mean 'layer'"):
        HeadView(exp, layr=1)
    with pytest.raises(InputError, match="matrix='cross'"):
        HeadView(exp, matrix="cross")
    small = fused_only(explanation(2, 2, 30))
    for cls in (HeadView, ModelView, FlowView):
        view = cls(small)
        assert isinstance(view, AttentionMatrixView) and view.head == -1
        assert "keep='fused'" in view.notice
    big = explanation(1, 1, 1025)
    flow = FlowView(big, selected_token=3)
    assert isinstance(flow, AttentionMatrixView) and flow.selected_token == 3
    assert isinstance(ModelView(big, layer=0, head=0), AttentionMatrixView)


def test_selection_and_validation() -> None:
    exp = explanation(2, 2, 100)
    view = AttentionMatrixView(exp, layer=0, head=1)
    assert view.selection is None
    view.selected_token = 7
    np.testing.assert_array_equal(view.selection["weights"], exp.attentions[0, 1, 7])
    version = view.version
    view.layer = 1
    assert view.version == version + 1 and "layer 1, head 1" in view.caption
    for name, value, match in [
        ("layer", 2, "out of range 0..1"),
        ("head", 5, "-1 \\(the mean over heads\\) or a head 0..1"),
        ("selected_token", 100, "-1 \\(none\\) or a query row 0..99"),
        ("pool", "sum", "not one of"),
        ("color_scale", "sqrt", "not one of"),
    ]:
        with pytest.raises(traitlets.TraitError, match=match):
            setattr(view, name, value)
    with pytest.raises(InputError, match=r"needs an attnwidget\.Explanation"):
        AttentionMatrixView(object())
    # Another explanation: layer and head kept where they exist, the pin reset.
    view.head, view.selected_token = 1, 4
    other = explanation(1, 3, 50, seed=2)
    version = view.version
    view.set_explanation(other)
    assert (view.layer, view.head, view.selected_token, view.shape) == (0, 1, -1, [1, 3, 50])
    assert view.version > version and view.levels == [[50, 50]]
    close_float16(decode_array(view.overview, view.overview_meta), other.attentions[0, 1])
    with pytest.raises(InputError):
        view.set_explanation(object())
    assert view.shape == [1, 3, 50]


def test_a_saved_page_holds_the_overview_and_says_what_it_lacks() -> None:
    view = AttentionMatrixView(explanation(1, 1, 300), head=0)
    page = view.to_html()
    assert "attnwidget-state" in page and "holds the overview only" in page


# -- the golden fixture of the JS tests ----------------------------------------------


def _fixture() -> dict[str, Any]:
    rng = np.random.default_rng(7)
    n = 150  # levels 150, 75, 38 (tile 128: level 0 has 2 × 2 tiles)
    weights = rng.random((1, 1, n, n)).astype(np.float32) ** 4
    weights /= weights.sum(-1, keepdims=True)
    exp = Explanation.from_attentions(weights, [f"w{i}" for i in range(n)], methods=None)
    view = AttentionMatrixView(exp, head=0)
    ((content, buffers),) = view.tiles(0, [(1, 0), (0, 1)])
    m = weights[0, 0]
    return {
        "traits": sorted(
            {"_view"}
            | set(AttentionMatrixView.class_trait_names(sync=True))
            - set(_AttnWidget.class_trait_names(sync=True))
        ),
        "n": n,
        "tile": view.tile_size,
        "levels": view.levels,
        "reply": {"content": content, "buffers": [base64.b64encode(b).decode() for b in buffers]},
        "expected": {
            "tile_1_0_first_row": [float(v) for v in m[128, :128]],
            "tile_0_1_shape": [128, n - 128],
            "cell_140_3": float(m[140, 3]),
        },
        "overview": {**view.overview_meta, "base64": base64.b64encode(view.overview).decode()},
        "overview_cell_0_0": float(m[:4, :4].max()),
        "colors": _color_cases(),
    }


def _color_cases() -> list[dict[str, Any]]:
    """Colour scales Python fits to three kinds of matrix, with weights and
    their positions and lookup indices (Python's mapping) for the JS tests."""
    rng = np.random.default_rng(11)
    n = 300
    causal = np.tril(np.ones((n, n), dtype=np.float32))
    causal /= causal.sum(-1, keepdims=True)  # a causal model near uniform: row 0 is [1, 0, …]
    flat = rng.random((n, n)).astype(np.float32) + 4
    flat /= flat.sum(-1, keepdims=True)
    sinks = flat.copy()
    sinks[[5, 90, 200], 0] = 0.9  # three cells far above the rest
    cases = []
    for matrix, asked in ((causal, "auto"), (sinks, "auto"), (flat, "linear"), (causal, "linear")):
        cmap = fit(weight_stats(matrix), asked).to_json()
        lo, hi = cmap["lo"], cmap["hi"]
        picks = matrix.ravel()[rng.integers(0, matrix.size, 12)]
        values = [0.0, lo, hi, 2 * hi, (lo + hi) / 2, float(np.sqrt(max(lo, 1e-12) * hi))]
        values = [float(np.float32(v)) for v in [*values, *picks]]
        cases.append(
            {
                "map": cmap,
                "values": values,
                "positions": [float(p) for p in color_position(cmap, values)],
                "indices": [int(k) for k in color_index(cmap, values)],
            }
        )
    return cases


def test_js_fixture_is_current() -> None:
    fixture = _fixture()
    if os.environ.get("ATTNWIDGET_UPDATE_FIXTURES"):
        FIXTURE.write_text(json.dumps(fixture, indent=1) + "\n", encoding="utf-8")
    committed = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert committed["traits"] == fixture["traits"]
    assert committed["reply"] == fixture["reply"] and committed["overview"] == fixture["overview"]
    for key in ("tile_1_0_first_row", "cell_140_3"):
        np.testing.assert_allclose(committed["expected"][key], fixture["expected"][key], rtol=1e-6)
    assert [c["map"]["scale"] for c in fixture["colors"]] == ["log", "linear", "linear", "linear"]
    assert [c["map"]["label"] for c in committed["colors"]] == [
        c["map"]["label"] for c in fixture["colors"]
    ]
    for got, want in zip(committed["colors"], fixture["colors"], strict=True):
        np.testing.assert_allclose(got["positions"], want["positions"], rtol=1e-9)


def test_renamed_selected_row_and_head_mean_warn_and_still_work() -> None:
    """selected_row (now selected_token) and head="mean" (now -1) work for one
    release, each with a DeprecationWarning naming the new spelling."""
    exp = explanation(2, 2, 100)
    with pytest.warns(DeprecationWarning, match="use selected_token="):
        view = AttentionMatrixView(exp, selected_row=5)
    assert view.selected_token == 5
    with pytest.warns(DeprecationWarning, match=r"use \.selected_token"):
        view.selected_row = 6
    assert view.selected_token == 6
    with pytest.warns(DeprecationWarning, match=r"use \.selected_token"):
        assert view.selected_row == 6
    with pytest.warns(DeprecationWarning, match=r"head=-1"):
        view.head = "mean"
    assert view.head == -1 and "mean over heads" in view.caption
    with pytest.raises(TypeError, match="give selected_token= only"):
        AttentionMatrixView(exp, selected_token=1, selected_row=2)
