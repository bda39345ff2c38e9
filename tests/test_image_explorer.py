"""Explorer(model, processor, image): the image explorer and its views, re-explained on change."""

from __future__ import annotations

import io

import numpy as np
import pytest
from tiny_vision import build_swin, build_vision

import attnwidget
from attnwidget.errors import ModelNotSupportedError
from attnwidget.views.explorer.image_explorer import DEFAULT_IMAGE_METHODS, ImageExplorer


def _image(seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).random((32, 32, 3)) * 255).astype(np.uint8)


def test_explorer_given_an_image_model_explains_the_image_in_every_view() -> None:
    model, processor = build_vision("deit-teacher")
    explorer = attnwidget.Explorer(model, processor, _image())
    assert isinstance(explorer, ImageExplorer)
    assert explorer.error == ""
    assert list(explorer.views) == ["image", "saliency", "flow", "head", "model"]
    exp = explorer.explanation
    assert exp.kind == "image" and exp.special_tokens == [0, 1]
    # Every view shows the same explanation: patches named by grid position.
    assert explorer.views["saliency"].tokens[:3] == ["[CLS]", "[DIST]", "(0,0)"]
    assert explorer.views["image"].grid == [8, 8]
    assert "8×8 patches" in explorer.status.value
    assert {value for _, value in explorer.method_picker.options} >= {"rollout", "flow", "raw"}
    assert list(exp.scores) == list(DEFAULT_IMAGE_METHODS)  # one forward and backward pass


def test_methods_picked_equal_computing_them_up_front() -> None:
    model, processor = build_vision("vit")
    image = _image(4)
    explorer = attnwidget.Explorer(model, processor, image)
    explorer.wait()
    assert {"flow", "lrp", "chefer2021"} <= set(explorer.methods)
    explorer.compute("flow", "lrp")
    names = [*DEFAULT_IMAGE_METHODS, "flow", "lrp"]
    reference = attnwidget.explain(model, processor, image, methods=names)
    assert list(explorer.explanation.scores) == names
    for name in names:
        np.testing.assert_array_equal(explorer.explanation.scores[name], reference.scores[name])
    # The image view (rebuilt: it has no set_explanation) shows the new maps.
    assert {"flow", "lrp"} <= set(explorer.views["image"].methods)


def test_a_patch_pinned_in_the_image_is_its_token_everywhere(tmp_path) -> None:
    model, processor = build_vision("deit-teacher")  # two special tokens before the patches
    explorer = attnwidget.Explorer(model, processor, _image())
    image, saliency, head = (explorer.views[k] for k in ("image", "saliency", "head"))
    cols = explorer.views["image"].grid[1]
    image.selected_patch = cols + 2  # row 1, column 2
    token = 2 + cols + 2
    assert saliency.tokens[token] == "(1,2)"
    assert saliency.selected_token == head.selected_token == token
    saliency.selected_token = 0  # [CLS] is no patch: the image unpins
    assert image.selected_patch == -1 and head.selected_token == 0
    text = explorer.to_html(tmp_path / "image.html")
    for title in ("Image", "Saliency", "Flow", "Heads", "Model"):
        assert f">{title}</label>" in text


def test_target_and_image_changes_re_explain_and_bad_images_keep_the_views() -> None:
    model, processor = build_vision("vit")
    explorer = attnwidget.Explorer(model, processor, _image(1))
    first = explorer.explanation
    other = next(label for label in model.config.id2label.values() if label != first.target)
    explorer.target = other
    assert explorer.explanation.target == other
    assert explorer.explanation.target_id == model.config.label2id[other]
    explorer.image = _image(2)
    assert not np.array_equal(explorer.explanation.image, first.image)
    shown = explorer.explanation
    explorer.image = np.full((32, 32, 3), np.nan)
    assert "NaN" in explorer.error and explorer.status.value.startswith("Error:")
    assert explorer.explanation is shown  # the previous explanation stays


def test_an_uploaded_png_is_decoded_and_explained() -> None:
    from PIL import Image

    model, processor = build_vision("vit")
    explorer = attnwidget.Explorer(model, processor)
    assert explorer.explanation is None and "Choose an image" in explorer.status.value
    buffer = io.BytesIO()
    Image.fromarray(_image(3)).save(buffer, format="PNG")
    upload = {"name": "x.png", "type": "image/png", "size": 1, "content": buffer.getvalue()}
    explorer.upload.value = (upload,)
    assert explorer.error == ""
    np.testing.assert_array_equal(explorer.explanation.image, _image(3))
    explorer.upload.value = ({**upload, "content": b"not an image"},)
    assert "not an image" in explorer.error


def test_a_windowed_attention_model_is_refused_naming_why() -> None:
    with pytest.raises(ModelNotSupportedError, match="window"):
        attnwidget.Explorer(build_swin(), None, _image())


def test_misspelt_keywords_are_refused_with_a_hint() -> None:
    model, processor = build_vision("vit")
    with pytest.raises(TypeError, match="did you mean 'method_options'"):
        ImageExplorer(model, processor, _image(), method_option={})
    with pytest.raises(TypeError, match="did you mean 'image'"):
        attnwidget.Explorer(model, processor, imag=_image())


def test_flow_method_is_the_flow_views_start_and_method_still_works() -> None:
    model, processor = build_vision("vit")
    new = attnwidget.Explorer(model, processor, _image(), flow_method="raw")
    assert new.views["flow"].selected_method == "raw" and new.method_picker.value == "raw"
    warned = "ImageExplorer: the keyword method= is deprecated.*use flow_method="
    with pytest.warns(DeprecationWarning, match=warned):
        old = ImageExplorer(model, processor, _image(), method="raw")
    assert old.views["flow"].selected_method == "raw" and old.method_picker.value == "raw"
    with pytest.raises(TypeError, match=r"give flow_method= only \(method= is its deprecated"):
        ImageExplorer(model, processor, _image(), flow_method="raw", method="raw")


def test_the_paths_picker_and_the_flow_view_follow_each_other() -> None:
    model, processor = build_vision("vit")
    explorer = attnwidget.Explorer(model, processor, _image())
    flow = explorer.views["flow"]
    explorer.method_picker.value = "flow"
    assert flow.selected_method == "flow"
    flow.selected_method = "raw"
    assert explorer.method_picker.value == "raw"
    explorer.image = _image(5)  # re-explained: the new FlowView keeps the choice
    assert explorer.views["flow"].selected_method == "raw"
