"""Tests of the shapes data set and the shipped demo ViT (attnwidget.demo, "shapes-vit")."""

from __future__ import annotations

import json
import os
import socket
from itertools import combinations

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

import attnwidget
from attnwidget import demo
from attnwidget.demo import shapes, train_vision
from attnwidget.evaluation import patch_location

SIZES = range(8, 14)  # the box sides the generator draws square shapes at


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every attempt to open a network connection fail loudly."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="module")
def records() -> list[shapes.ShapeImage]:
    return demo.images(200, seed=0, split="test")


@pytest.fixture(scope="module")
def shipped():
    return demo.load("shapes-vit")


def _placed(shape: str, box: tuple[int, int, int, int]) -> np.ndarray:
    top, left, h, w = box
    out = np.zeros((shapes.IMAGE_SIZE, shapes.IMAGE_SIZE), dtype=bool)
    out[top : top + h, left : left + w] = shapes.shape_mask(shape, h, w)
    return out


def _grow(mask: np.ndarray) -> np.ndarray:
    """``mask`` and its 8 neighbours of every pixel (one pixel of dilation)."""
    padded = np.pad(mask, 1)
    out = np.zeros_like(mask)
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            out |= padded[dr : dr + mask.shape[0], dc : dc + mask.shape[1]]
    return out


# -- the generator -----------------------------------------------------------------------


def test_same_arguments_give_the_same_images() -> None:
    a = demo.images(40, seed=5, split="train")
    b = shapes.generate(40, seed=5, split="train")
    prefix = demo.images(10, seed=5, split="train")
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.image, y.image)
        np.testing.assert_array_equal(x.mask, y.mask)
        np.testing.assert_array_equal(x.distractor_mask, y.distractor_mask)
        assert (x.label, x.box, x.distractors, x.distractor_boxes) == (
            y.label,
            y.box,
            y.distractors,
            y.distractor_boxes,
        )
    for x, y in zip(prefix, a[:10], strict=True):
        np.testing.assert_array_equal(x.image, y.image)


def test_splits_and_seeds_give_different_images() -> None:
    def digests(records) -> set[bytes]:
        return {r.image.tobytes() for r in records}

    test0 = digests(demo.images(100, seed=0, split="test"))
    train0 = digests(demo.images(100, seed=0, split="train"))
    test1 = digests(demo.images(100, seed=1, split="test"))
    assert len(test0) == len(train0) == len(test1) == 100
    assert not test0 & train0
    assert not test0 & test1


def test_records_have_the_documented_fields(records) -> None:
    size = shapes.IMAGE_SIZE
    for r in records:
        assert r.image.dtype == np.uint8 and r.image.shape == (size, size, 3)
        assert r.mask.dtype == bool and r.mask.shape == (size, size)
        assert r.distractor_mask.dtype == bool and r.distractor_mask.shape == (size, size)
        assert r.label in shapes.LABELS and r.label_id == shapes.LABELS.index(r.label)
        assert not r.image.flags.writeable and not r.mask.flags.writeable
    counts = {label: sum(r.label == label for r in records) for label in shapes.LABELS}
    assert len(shapes.LABELS) >= 4
    assert all(n >= len(records) / len(shapes.LABELS) / 2 for n in counts.values()), counts
    with pytest.raises(AttributeError):
        records[0].label = "square"  # frozen


def test_mask_is_exactly_the_target_object(records) -> None:
    for r in records:
        assert r.mask.any()
        np.testing.assert_array_equal(r.mask, _placed(r.label, r.box))  # re-rendered
        assert (r.image[r.mask] == r.color).all()  # one flat colour ...
        border = _grow(r.mask) & ~r.mask
        assert not (r.image[border] == r.color).all(-1).any()  # ... that stops at the edge


def test_distractor_mask_is_exactly_the_distractors(records) -> None:
    seen = set()
    for r in records:
        assert 1 <= len(r.distractors) == len(r.distractor_boxes) <= 2
        assert r.distractor_mask.any()
        union = np.zeros_like(r.distractor_mask)
        for name, box in zip(r.distractors, r.distractor_boxes, strict=True):
            assert name in shapes.DISTRACTORS and name not in shapes.LABELS
            union |= _placed(name, box)
            seen.add(name)
        np.testing.assert_array_equal(r.distractor_mask, union)
        assert not (r.mask & r.distractor_mask).any()
        assert not (_grow(r.mask) & r.distractor_mask).any()  # objects do not even touch
    assert seen == set(shapes.DISTRACTORS)


def test_distractor_shapes_are_never_label_shapes(records) -> None:
    assert not set(shapes.DISTRACTORS) & set(shapes.LABELS)
    square = [s for s in shapes.LABELS + shapes.DISTRACTORS if s != "bar"]
    for size in SIZES:
        drawn = {s: shapes.shape_mask(s, size, size) for s in square}
        for a, b in combinations(drawn, 2):
            assert not np.array_equal(drawn[a], drawn[b]), (a, b, size)
    for r in records:  # as drawn: no distractor could pass for a label shape of its box
        assert min(r.box[2:]) >= min(SIZES)
        for name, (_, _, h, w) in zip(r.distractors, r.distractor_boxes, strict=True):
            if name == "bar":
                assert min(h, w) == 2 and max(h, w) >= min(SIZES)  # thinner than any label
            else:
                assert h == w and h in SIZES


@pytest.mark.parametrize("size", SIZES)
def test_label_shapes_look_like_their_names(size: int) -> None:
    square, circle, triangle, cross, ring, frame = (
        shapes.shape_mask(s, size, size)
        for s in ("square", "circle", "triangle", "cross", "ring", "frame")
    )
    corners = (0, 0, -1, -1), (0, -1, 0, -1)
    mid = size // 2
    assert square.all()
    assert not circle[corners].any() and circle[mid, :].all() and circle[:, mid].all()
    rows = triangle.sum(1)
    assert (np.diff(rows) >= 0).all() and rows[0] < rows[-1] == size  # widens to a full base
    assert triangle[-1].all() and not triangle[0, 0] and triangle[:, mid].sum() >= size - 1
    assert not cross[corners].any() and cross[mid].all() and cross[:, mid].all()
    assert 0.3 < cross.mean() < 0.7
    assert not ring[mid, mid] and ring[mid, 0] and not ring[corners].any()
    assert not frame[mid, mid] and frame[0].all() and frame[:, 0].all()
    bar = shapes.shape_mask("bar", 2, size)
    assert bar.shape == (2, size) and bar.all()


@pytest.mark.parametrize("n", [0, -3, 2.5, True, "10", None])
def test_bad_n_is_refused(n: object) -> None:
    with pytest.raises(ValueError, match="n must be a positive integer"):
        demo.images(n)


def test_bad_split_and_seed_are_refused() -> None:
    with pytest.raises(ValueError, match=r"split must be one of 'train', 'test', not 'val'"):
        demo.images(3, split="val")
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        demo.images(3, seed=-1)
    with pytest.raises(ValueError, match="unknown shape 'hexagon'"):
        shapes.shape_mask("hexagon", 8, 8)


# -- the shipped model -------------------------------------------------------------------


def test_shapes_vit_is_listed() -> None:
    assert "shapes-vit" in demo.DEMO_MODELS
    assert "ViT" in demo.available()["shapes-vit"]
    with pytest.raises(ValueError, match="text demo model"):
        demo.sentences(3, seed=0, model="shapes-vit")


def test_load_offline(no_network: None) -> None:
    from transformers import ViTForImageClassification, ViTImageProcessor

    model, processor = demo.load("shapes-vit")
    assert type(model) is ViTForImageClassification and not model.training
    assert isinstance(processor, ViTImageProcessor)
    assert processor.size == {"height": 32, "width": 32} and processor.do_resize
    assert model.config.id2label == dict(enumerate(shapes.LABELS))
    assert model.config.image_size == 32 and model.config.patch_size == 4
    assert model.config.num_hidden_layers == 4 and model.config.num_attention_heads == 4


def test_shipped_files_are_small_and_pin_no_attention_implementation() -> None:
    path = demo.model_path("shapes-vit")
    names = {p.name for p in path.iterdir()}
    assert {"config.json", "model.safetensors", "preprocessor_config.json", "README.md"} <= names
    assert (path / "model.safetensors").stat().st_size < 3_000_000
    config = json.loads((path / "config.json").read_text())
    assert config.get("attn_implementation") is None
    assert config.get("_attn_implementation") is None
    assert "held-out accuracy" in (path / "README.md").read_text()


def test_eager_attention_gives_the_same_logits(shipped, records, no_network: None) -> None:
    model, processor = shipped
    eager, _ = demo.load("shapes-vit", attn_implementation="eager")
    x = processor(images=[r.image for r in records[:32]], return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        torch.testing.assert_close(eager(pixel_values=x).logits, model(pixel_values=x).logits)


def test_training_pixels_are_the_processors(shipped, records) -> None:
    _, processor = shipped
    images = [r.image for r in records[:16]]
    expected = processor(images=images, return_tensors="pt")["pixel_values"]
    torch.testing.assert_close(train_vision.pixel_values(images), expected)


def test_held_out_accuracy(shipped) -> None:
    model, processor = shipped
    test = demo.images(500, seed=0, split="test")
    x = processor(images=[r.image for r in test], return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        predicted = model(pixel_values=x).logits.argmax(-1).numpy()
    truth = np.array([r.label_id for r in test])
    accuracy = float((predicted == truth).mean())
    # Shipped: 99.6 % on 1,000 test images (demo-models page). On these 500 that is 2 ± 1.4
    # errors (binomial sd); 0.95 allows 25, and chance is one in len(shapes.LABELS).
    assert accuracy >= 0.95, f"held-out accuracy {accuracy:.3f}"
    # Per class, measured on these 500: square 130/131, circle 158/160, triangle 117/117,
    # cross 92/92. The smallest class (92) at a true 99 % misses 0.9 ± 0.95; 0.9 allows 9.
    for label_id, label in enumerate(shapes.LABELS):
        mine = truth == label_id
        assert (predicted[mine] == label_id).mean() >= 0.9, label


def test_explain_runs_and_looks_at_the_target(shipped) -> None:
    model, processor = shipped
    test = demo.images(25, seed=7, split="test")
    places = {m: [] for m in ("rollout", "grad_attention")}
    for r in test:
        exp = attnwidget.explain(model, processor, r.image, methods=list(places))
        assert exp.heatmap("rollout").shape == (32, 32)
        assert exp.heatmap("grad_attention").shape == (32, 32)
        assert exp.patch_scores("rollout").shape == (8, 8)
        for method, found in places.items():
            found.append(patch_location(exp.patch_scores(method), r.mask, r.distractor_mask, 4))
    # The target covers a small part of the image; the maps' top patch should
    # still fall on it far more often than on the distractors or background.
    covered = np.mean([r.mask.mean() for r in test])
    for method, found in places.items():
        on_target = found.count("target") / len(found)
        assert on_target > max(0.5, 3 * covered), (method, on_target, covered)
        assert found.count("target") > found.count("distractor"), method


def test_explanation_targets_the_predicted_label(shipped, records) -> None:
    model, processor = shipped
    r = records[0]
    exp = attnwidget.explain(model, processor, r.image, methods=["rollout"])
    with torch.no_grad():
        x = processor(images=r.image, return_tensors="pt")["pixel_values"]
        predicted = model.config.id2label[int(model(pixel_values=x).logits.argmax())]
    assert exp.target == predicted


# -- training ----------------------------------------------------------------------------


def test_patch_targets_name_what_each_patch_shows(records) -> None:
    """The auxiliary training targets agree with the evaluation's patch_location."""
    targets = train_vision.patch_targets(records[:20])
    code = {"background": 0, "distractor": 1}
    for r, grid in zip(records[:20], targets, strict=True):
        for index in range(64):
            one_hot = np.zeros(64)
            one_hot[index] = 1.0
            place = patch_location(one_hot.reshape(8, 8), r.mask, r.distractor_mask, 4)
            expected = 2 + r.label_id if place == "target" else code[place]
            assert int(grid.flatten()[index]) == expected


def test_training_is_deterministic_and_restores_torch_state() -> None:
    settings = train_vision.VisionTrainSettings(steps=3, n_train=48, batch_size=16, warmup=2)
    threads = torch.get_num_threads()
    rng = torch.get_rng_state()
    a = train_vision.train_model(settings)
    b = train_vision.train_model(settings)
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(p, q), name
    assert not a.training
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.get_rng_state(), rng)
    fresh = train_vision.build_model().state_dict()
    assert any(not torch.equal(fresh[k], v) for k, v in a.state_dict().items())


def test_train_command_evaluates_the_shipped_model(capsys, no_network: None) -> None:
    from attnwidget.demo import train

    train.main(["shapes-vit", "--evaluate"])
    out = capsys.readouterr().out
    assert "held-out accuracy" in out and "1000 test images" in out
    accuracy = float(out.split("held-out accuracy: ")[1].split()[0])
    # Measured: 0.996 on the 1,000 (demo-models page): 4 ± 2 errors (binomial sd), 50 allowed.
    assert accuracy >= 0.95
    with pytest.raises(SystemExit):
        train.main(["--help"])
    assert "--models" in capsys.readouterr().out  # the text models' options are unchanged
