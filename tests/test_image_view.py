"""ImageView's widget model: traits, binary buffers, query-map chunks and
requests, saved-page replies, validation and refusals (no browser)."""

from __future__ import annotations

import io
import json
import re
import sys
from typing import Any

import numpy as np
import pytest
import traitlets
from image_fixtures import made_explanation, picture, tiny_explanation
from ipywidgets.widgets.widget import _remove_buffers

import attnwidget
from attnwidget._images import patch_positions
from attnwidget.errors import UnknownMethodError
from attnwidget.methods.rollout import rollout
from attnwidget.results.explanation import Explanation
from attnwidget.views import ImageView
from attnwidget.views.core.attention_data import MAX_MESSAGE_BYTES
from attnwidget.views.core.buffers import decode_float16
from attnwidget.views.core.standalone import state_keys
from attnwidget.views.image import image_view as image_module
from attnwidget.views.image._wire import (
    STATE_BYTES,
    QueryMaps,
    chunk_ranges,
    display_image,
    encode_png,
    layer_chunks,
    png_bytes,
)

PIL = pytest.importorskip("PIL.Image")

#: float16's precision on probabilities (see views/attention/_shared.py).
HALF_ATOL, HALF_RTOL = 2.0**-25, 2.0**-11


@pytest.fixture(scope="module")
def vit() -> Explanation:
    return tiny_explanation("vit")


def decode_png(data: bytes) -> np.ndarray:
    return np.asarray(PIL.open(io.BytesIO(data)).convert("RGB"))


def query_rows(exp: Explanation) -> tuple[np.ndarray, np.ndarray]:
    columns = patch_positions(len(exp.tokens), exp.special_tokens)
    return np.concatenate([[exp.query_index], columns]), columns


def preloaded(view: ImageView) -> dict[tuple[str, int], np.ndarray]:
    """The preload trait decoded: (map, layer) -> float32 (heads, rows, P)."""
    out: dict[tuple[str, int], np.ndarray] = {}
    patches = view.grid[0] * view.grid[1]
    for entry in view.preload_index:
        data = view.preload[entry["offset"] : entry["offset"] + entry["nbytes"]]
        (h0, h1), (r0, r1) = entry["heads"], entry["rows"]
        block = decode_float16(data, [h1 - h0, r1 - r0, patches])
        key = (entry["map"], entry["layer"])
        heads = view.num_heads if entry["map"] == "attention" else 1
        full = out.setdefault(key, np.full((heads, 1 + patches, patches), np.nan, np.float32))
        full[h0:h1, r0:r1] = block
    return out


# ---- traits and buffers -----------------------------------------------------------


def test_traits_describe_the_explanation(vit: Explanation) -> None:
    view = ImageView(vit)
    assert view._view == "image"
    assert view.grid == [8, 8] and view.patch_size == 4
    assert view.special_tokens == ["[CLS]"]
    assert view.labels == vit.tokens[1:] and view.labels[:2] == ["(0,0)", "(0,1)"]
    assert view.query_token == "[CLS]" and view.target == vit.target
    assert view.methods == ["raw", "rollout", "input_x_gradient"]
    assert view.shape == [3, 8, 8]
    assert view.signed == [False, False, True]
    assert all(view.summaries)
    assert (view.num_layers, view.num_heads) == (2, 4)
    # Defaults: the first method, the last layer, the mean over heads, nothing selected.
    assert (view.selected_method, view.layer, view.head, view.selected_patch) == ("raw", 1, -1, -1)
    assert view.opacity == 0.5 and view.selection is None
    assert view.explanation is vit
    assert "ImageView(grid=8x8" in repr(view)


def test_every_synced_trait_is_in_the_docstring_table() -> None:
    documented = set(re.findall(r"^``(\w+)``", image_module.__doc__ or "", re.M))
    view = ImageView(made_explanation())
    assert documented == set(state_keys(view))


def test_scores_decode_back_to_the_patch_scores(vit: Explanation) -> None:
    view = ImageView(vit, methods=["input_x_gradient", "raw"])
    matrix = np.frombuffer(view.scores, dtype="<f4").reshape(view.shape)
    np.testing.assert_array_equal(matrix[0], vit.patch_scores("input_x_gradient"))
    np.testing.assert_array_equal(matrix[1], vit.patch_scores("raw"))
    np.testing.assert_array_equal(view.score_matrix(), matrix)


def test_the_image_travels_as_png_bytes(vit: Explanation) -> None:
    view = ImageView(vit)
    assert view.image[:8] == b"\x89PNG\r\n\x1a\n"
    np.testing.assert_array_equal(decode_png(view.image), vit.image)
    assert view.image_size == [40, 48]
    state, paths, _ = _remove_buffers(view.get_state())
    assert sorted(map(tuple, paths)) == [("image",), ("preload",), ("scores",)]
    json.dumps(state)  # the rest is plain JSON


@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (17, 5), (40, 48)])
def test_the_zlib_png_encoder_writes_the_exact_pixels(shape: tuple[int, int]) -> None:
    pixels = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, 3), dtype=np.uint8)
    np.testing.assert_array_equal(decode_png(png_bytes(pixels)), pixels)
    np.testing.assert_array_equal(decode_png(png_bytes(picture(*shape))), picture(*shape))
    with pytest.raises(ValueError, match=r"uint8 \(H, W, 3\)"):
        png_bytes(pixels[..., :2])


def test_without_pillow_the_zlib_encoder_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    pixels = picture(9, 13)
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL now fails
    assert encode_png(pixels) == png_bytes(pixels)


def test_large_images_are_sent_downscaled() -> None:
    big = np.zeros((2000, 1200, 3), np.uint8)
    big[:, 600:] = 255
    small = display_image(big)
    assert small.shape == (1024, 614, 3) and small.dtype == np.uint8
    assert small[:, :300].max() == 0 and small[:, 320:].min() == 255
    assert display_image(picture()) is not None and display_image(picture()).shape == (40, 48, 3)


def test_preload_holds_the_patch_attention_and_rollout_rows(vit: Explanation) -> None:
    view = ImageView(vit)
    maps = preloaded(view)
    assert set(maps) == {(m, layer) for m in ("attention", "rollout") for layer in range(2)}
    rows, columns = query_rows(vit)
    rolled = rollout(vit.attentions)
    for layer in range(2):
        want = vit.attentions[layer][:, rows][:, :, columns]
        np.testing.assert_allclose(maps["attention", layer], want, rtol=HALF_RTOL, atol=HALF_ATOL)
        want = rolled[layer][rows][:, columns][None]
        np.testing.assert_allclose(maps["rollout", layer], want, rtol=HALF_RTOL, atol=HALF_ATOL)
    # Row 0 is the query (CLS); the attention over the patches leaves the CLS column out.
    np.testing.assert_allclose(
        maps["attention", 1][2, 0], vit.attentions[1, 2, 0, 1:], rtol=HALF_RTOL, atol=HALF_ATOL
    )


def test_query_map_is_what_the_page_draws(vit: Explanation) -> None:
    view = ImageView(
        vit, selected_method="query_attention", layer=0, head=2, selected_patch=1 * 8 + 3
    )
    token = 1 + 1 * 8 + 3
    np.testing.assert_allclose(view.query_map(), vit.attentions[0, 2, token, 1:].reshape(8, 8))
    view.head = -1
    mean = vit.attentions[0, :, token, 1:].mean(0).reshape(8, 8)
    np.testing.assert_allclose(view.query_map(), mean, rtol=1e-6)
    view.selected_method, view.selected_patch = "query_rollout", -1
    np.testing.assert_allclose(view.query_map(), rollout(vit.attentions)[0, 0, 1:].reshape(8, 8))
    view.selected_method = "rollout"
    np.testing.assert_array_equal(view.query_map(), vit.patch_scores("rollout"))


def test_rollout_maps_use_the_explanations_rollout_options() -> None:
    exp = tiny_explanation("deit", methods=["rollout"])
    exp.method_options["rollout"] = {**exp.method_options["rollout"], "head_fusion": "max"}
    view = ImageView(exp, selected_method="query_rollout", layer=1)
    rows, columns = query_rows(exp)
    want = rollout(exp.attentions, head_fusion="max")[1][rows][:, columns]
    np.testing.assert_allclose(preloaded(view)["rollout", 1][0], want, rtol=HALF_RTOL, atol=1e-7)


@pytest.mark.parametrize(
    ("family", "specials"),
    [
        ("deit", ["[CLS]", "[DIST]"]),
        ("deit-teacher", ["[CLS]", "[DIST]"]),
        ("beit", ["[CLS]"]),
        ("dinov2", ["[CLS]"]),
        ("dinov2-registers", ["[CLS]", "[REG1]", "[REG2]"]),
    ],
)
def test_every_family_shows_its_patches(family: str, specials: list[str]) -> None:
    exp = tiny_explanation(family, methods=["raw"])
    view = ImageView(exp)
    assert view.special_tokens == specials
    assert len(view.labels) == 64 and view.labels[0] == "(0,0)"
    maps = preloaded(view)
    assert maps["attention", 0].shape == (view.num_heads, 65, 64)
    np.testing.assert_array_equal(view.score_matrix()[0], exp.patch_scores("raw"))


# ---- chunks, requests and message sizes ------------------------------------------------


@pytest.mark.parametrize("max_bytes", [10**9, 5000, 700, 100])
def test_chunks_cover_a_layer_within_the_message_limit(max_bytes: int) -> None:
    heads, rows, cols = 3, 13, 12
    seen = np.zeros((heads, rows), int)
    for (h0, h1), (r0, r1) in chunk_ranges(heads, rows, cols, max_bytes):
        assert (h1 - h0) * (r1 - r0) * cols * 2 <= max(max_bytes, cols * 2)
        seen[h0:h1, r0:r1] += 1
    assert (seen == 1).all()

    exp = made_explanation(3, 4, layers=2, heads=3)
    maps = QueryMaps(exp)
    parts = list(layer_chunks(maps, "attention", 1, max_bytes))
    assert len(parts) > 1 or max_bytes > 1000
    whole = np.zeros((3, 13, 12), np.float32)
    for content, data in parts:
        (h0, h1), (r0, r1) = content["heads"], content["rows"]
        assert content["shape"] == [h1 - h0, r1 - r0, 12] and content["dtype"] == "float16"
        whole[h0:h1, r0:r1] = decode_float16(data, content["shape"])
    np.testing.assert_allclose(whole, maps.layer("attention", 1), rtol=HALF_RTOL, atol=HALF_ATOL)


def sent(view: ImageView, monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict, list]]:
    messages: list[tuple[dict, list]] = []
    monkeypatch.setattr(
        view, "send", lambda content, buffers=None: messages.append((content, buffers or []))
    )
    return messages


def test_the_kernel_serves_layers_the_page_asks_for(monkeypatch: pytest.MonkeyPatch) -> None:
    exp = made_explanation(3, 4, layers=3, heads=2)
    view = ImageView(exp)
    messages = sent(view, monkeypatch)
    view._on_message(view, {"type": "request", "map": "rollout", "layer": 2}, [])
    ((content, buffers),) = messages
    assert content == {
        "type": "chunk", "map": "rollout", "layer": 2, "heads": [0, 1], "rows": [0, 13],
        "dtype": "float16", "shape": [1, 13, 12],
    }  # fmt: skip
    rows, columns = query_rows(exp)
    want = rollout(exp.attentions)[2][rows][:, columns]
    got = decode_float16(bytes(buffers[0]), content["shape"])[0]
    np.testing.assert_allclose(got, want, rtol=HALF_RTOL, atol=HALF_ATOL)

    messages.clear()
    for bad in ({"type": "request", "map": "flow", "layer": 0}, {"type": "request", "layer": 9}):
        view._on_message(view, bad, [])
    assert [m[0]["type"] for m in messages] == ["error", "error"]
    assert "maps are attention, rollout" in messages[0][0]["message"]
    assert "layers 0..2" in messages[1][0]["message"]
    messages.clear()
    view._on_message(view, {"type": "something else"}, [])
    assert messages == []


def vit_base_explanation() -> Explanation:
    """ViT-B/16's shapes (12 layers, 12 heads, 196 patches + CLS) with random attention."""
    return made_explanation(14, 14, layers=12, heads=12, seed=1)


def test_vit_base_sizes_stay_within_the_message_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    exp = vit_base_explanation()
    # Opening on the clicked patch's attention: the shown layer's maps come first.
    query_view = ImageView(exp, selected_method="query_attention")
    held = {(e["map"], e["layer"]) for e in query_view.preload_index}
    assert ("attention", 11) in held and ("rollout", 11) in held
    assert len(held) < 24  # 12 MB of maps: the rest comes on request
    # Opening on a score map (the default): no patch map is drawn before a
    # click, so the state holds only what fits the smaller budget, and the
    # 0.9 MB attention layer comes with the first click.
    view = ImageView(exp)
    assert view.selected_method in exp.scores
    held = {(e["map"], e["layer"]) for e in view.preload_index}
    assert held == {("rollout", 11)}
    assert len(bytes(view.preload)) <= image_module.SCORE_VIEW_PRELOAD_BYTES < 12 * 197 * 196 * 2
    for v in (query_view, view):
        _, _, buffers = _remove_buffers(v.get_state())
        assert sum(len(b) for b in buffers) <= STATE_BYTES
    messages = sent(view, monkeypatch)
    for name in ("attention", "rollout"):
        view._on_message(view, {"type": "request", "map": name, "layer": 0}, [])
    assert all(len(bytes(b[0])) <= MAX_MESSAGE_BYTES for _, b in messages)
    sizes = {c["map"]: len(bytes(b[0])) for c, b in messages}
    assert sizes == {"attention": 12 * 197 * 196 * 2, "rollout": 197 * 196 * 2}


def test_huge_layers_come_in_chunks_under_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    exp = made_explanation(6, 6, layers=1, heads=4)
    monkeypatch.setattr("attnwidget.views.image._wire.MAX_MESSAGE_BYTES", 1000)
    monkeypatch.setattr(image_module, "PRELOAD_BYTES", 0)
    view = ImageView(exp)
    assert view.preload_index == [] and view.preload == b""
    messages = sent(view, monkeypatch)
    view._on_message(view, {"type": "request", "map": "attention", "layer": 0}, [])
    assert len(messages) > 4
    assert all(len(bytes(b[0])) <= 1000 for _, b in messages)


# ---- saved pages --------------------------------------------------------------------


def reply_blocks(page: str) -> list[dict[str, Any]]:
    return [
        json.loads(m.replace("&quot;", '"'))
        for m in re.findall(r'data-attnwidget-reply="[^"]+" data-match="([^"]+)"', page)
    ]


def test_saved_pages_record_the_layers_the_state_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    exp = made_explanation(4, 4, layers=3, heads=2)
    monkeypatch.setattr(image_module, "PRELOAD_BYTES", 2 * 17 * 16 * 2 + 17 * 16 * 2)  # one layer
    view = ImageView(exp, layer=1)
    assert {(e["map"], e["layer"]) for e in view.preload_index} == {
        ("rollout", 1),
        ("attention", 1),
    }
    matches = reply_blocks(view.to_html())
    assert [(m["map"], m["layer"]) for m in matches] == [
        ("rollout", 0), ("rollout", 2), ("attention", 0), ("attention", 2),
    ]  # fmt: skip
    assert not view._export_budget  # reset after the export
    # A budget for the rollout only: the attention of other layers says it was left out.
    page = view.to_html(embed_bytes=2 * 17 * 16 * 2)
    assert [m["map"] for m in reply_blocks(page)] == ["rollout", "rollout"]
    assert "this layer was left out" in page and "embed_bytes" in page


# ---- validation and refusals --------------------------------------------------------


def test_a_text_explanation_is_refused_with_the_fix() -> None:
    n = 5
    weights = np.full((1, 1, n, n), 1 / n, np.float32)
    text = Explanation.from_attentions(weights, ["[CLS]", "a", "b", "c", "[SEP]"])
    with pytest.raises(ValueError, match=r"image explanations; this one is 'arrays'") as info:
        ImageView(text)
    assert "attnwidget.explain(model, processor, image)" in str(info.value)
    assert "SaliencyView" in str(info.value)
    with pytest.raises(TypeError, match=r"needs an attnwidget\.Explanation, got ndarray"):
        ImageView(np.zeros((4, 4, 3)))


def test_unknown_methods_are_refused(vit: Explanation) -> None:
    with pytest.raises(UnknownMethodError, match=r"selected_method='lrp' is not shown in this"):
        ImageView(vit, selected_method="lrp")
    with pytest.raises(UnknownMethodError, match="no scores for method"):
        ImageView(vit, methods=["raw", "flow"])
    view = ImageView(vit, methods=["raw"])
    with pytest.raises(traitlets.TraitError, match=r"'rollout' is not shown.*'query_attention'"):
        view.selected_method = "rollout"
    view.selected_method = "query_rollout"
    assert view.selected_method == "query_rollout"


def test_a_score_named_like_a_query_map_is_refused() -> None:
    exp = made_explanation()
    exp.scores["query_attention"] = exp.scores["positive"]
    with pytest.raises(ValueError, match="ImageView uses for the clicked patch's map"):
        ImageView(exp)


def test_patches_out_of_the_grid_are_refused() -> None:
    view = ImageView(made_explanation(3, 4))
    view.selected_patch = 11  # the last patch, row 2 col 3
    assert view.selection is not None and view.selection["patch"] == [2, 3]
    for bad in (12, -2):
        with pytest.raises(
            traitlets.TraitError, match=r"-1 for none or the index .* 0..11 \(a 3×4 patch grid\)"
        ):
            view.selected_patch = bad
    with pytest.raises(traitlets.TraitError, match="not a patch"):
        ImageView(made_explanation(3, 4), selected_patch=12)
    view.selected_patch = -1
    assert view.selection is None


def test_the_old_row_col_form_of_selected_patch_warns_and_still_works() -> None:
    """[row, col] / [] was selected_patch's form until this release."""
    view = ImageView(made_explanation(3, 4))
    with pytest.warns(DeprecationWarning, match=r"use the patch index row \* cols \+ col"):
        view.selected_patch = (2, 3)
    assert view.selected_patch == 11
    with pytest.warns(DeprecationWarning):
        view.selected_patch = []
    assert view.selected_patch == -1
    for bad in ([3, 0], [0, 4], [-1, 0], [1], [1, 2, 3]):
        with (
            pytest.warns(DeprecationWarning),
            pytest.raises(traitlets.TraitError, match=r"not a patch of the 3×4 grid"),
        ):
            view.selected_patch = bad
    with pytest.warns(DeprecationWarning):
        assert ImageView(made_explanation(3, 4), selected_patch=(1, 2)).selected_patch == 6


def test_selected_method_is_the_name_and_method_still_works_with_a_warning() -> None:
    """The map drawn is ``selected_method`` (beside ``methods``, like ``selected_patch``);
    ``method=`` and ``view.method`` warn, at the caller, and do the same."""
    exp = made_explanation(3, 4, layers=2, heads=2)
    new = ImageView(exp, selected_method="query_rollout", layer=0)
    with pytest.warns(DeprecationWarning, match="method= is deprecated.*use selected_method=") as w:
        old = ImageView(exp, method="query_rollout", layer=0)
    assert [r.filename for r in w if r.category is DeprecationWarning] == [__file__]
    assert old.selected_method == new.selected_method == "query_rollout"
    assert np.array_equal(old.query_map(), new.query_map())
    assert old.get_state(["selected_method"]) == {"selected_method": "query_rollout"}
    with pytest.warns(DeprecationWarning, match=r"\.method is deprecated.*use \.selected_method"):
        assert old.method == "query_rollout"
    with pytest.warns(DeprecationWarning, match=r"\.method is deprecated"):
        old.method = "signed_demo"
    assert old.selected_method == "signed_demo"
    assert np.array_equal(old.query_map(), exp.patch_scores("signed_demo"))
    with pytest.raises(TypeError, match=r"give selected_method= only"):
        ImageView(exp, selected_method="raw", method="raw")
    assert "method" not in ImageView.class_trait_names(sync=True)


def test_bad_opacity_layer_and_head_are_refused() -> None:
    view = ImageView(made_explanation(layers=3, heads=2))
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(traitlets.TraitError, match=r"opacity=.* is out of range: use 0"):
            view.opacity = bad
    view.opacity = 1
    assert view.opacity == 1.0
    with pytest.raises(traitlets.TraitError, match=r"layer=3 is out of range: use 0..2"):
        view.layer = 3
    view.layer = -3  # counts from the end
    assert view.layer == 0
    with pytest.raises(traitlets.TraitError, match=r"head=2 is out of range: use -1 .* 0..1"):
        view.head = 2
    with pytest.raises(traitlets.TraitError, match="opacity"):
        ImageView(made_explanation(), opacity=2)
    with pytest.raises(
        TypeError, match=r"unexpected keyword argument 'opacty' \(did you mean 'opacity'\?\)"
    ):
        ImageView(made_explanation(), opacty=0.3)


def test_a_refused_change_from_the_page_is_logged_and_sent_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    view = ImageView(made_explanation())
    view.set_state({"selected_patch": 6})  # what a click sends
    assert view.selected_patch == 6
    with caplog.at_level("WARNING"):
        view.set_state({"selected_patch": 99})  # nothing escapes into the comm
    assert view.selected_patch == 6
    assert "refused" in caplog.text and "not a patch" in caplog.text


def test_selection_holds_the_patch_and_its_scores() -> None:
    exp = made_explanation(3, 4)
    view = ImageView(exp, selected_patch=1 * 4 + 2)
    selection = view.selection
    assert selection == {
        "patch": [1, 2],
        "index": 1 + 1 * 4 + 2,
        "label": "(1,2)",
        "scores": {
            "positive": pytest.approx(float(exp.patch_scores("positive")[1, 2])),
            "signed_demo": pytest.approx(float(exp.patch_scores("signed_demo")[1, 2])),
        },
    }
    assert view.signed == [False, True]


def test_an_explanation_without_scores_shows_the_query_maps() -> None:
    exp = made_explanation()
    exp.scores = {}
    view = ImageView(exp)
    assert view.methods == [] and view.shape == [0, 3, 4]
    assert view.selected_method == "query_attention"


def test_views_are_exported_lazily() -> None:
    assert attnwidget.ImageView is ImageView
    assert "ImageView" in attnwidget.__all__
