"""A synthetic shapes data set for the demo Vision Transformer ("shapes-vit").

Each image (:data:`IMAGE_SIZE` × :data:`IMAGE_SIZE` RGB, uint8) holds one
*target* object, whose shape is the label (:data:`LABELS`: square, circle,
triangle, cross), and one or two *distractor* objects, whose shapes
(:data:`DISTRACTORS`: ring, bar, frame) are never labels, on a textured
background (noise or stripes of random colours). Positions, sizes and colours
are random; objects never overlap or touch, and each is one flat colour far
from the background's. A classifier must therefore find the target among the
objects, which makes the images a small, checkable version of the setting in
which Chefer, Gur & Wolf (2021, "Transformer Interpretability Beyond Attention
Visualization", CVPR) score ViT explanations against segmentation masks: each
record carries the target's exact pixel mask and the distractors' mask.

Every image is drawn from its own random stream, seeded by the split, the
seed and the image's index, so the same arguments always give the same images
(and ``generate(5, ...)`` is the start of ``generate(10, ...)``), and the
train and test splits come from disjoint streams. Nothing here needs torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = [
    "DISTRACTORS",
    "IMAGE_SIZE",
    "LABELS",
    "SPLITS",
    "ShapeImage",
    "generate",
    "shape_mask",
]

IMAGE_SIZE = 32
#: The target shapes, in label-id order.
LABELS: tuple[str, ...] = ("square", "circle", "triangle", "cross")
#: Shapes drawn as distractors; none of them is a label.
DISTRACTORS: tuple[str, ...] = ("ring", "bar", "frame")
SPLITS: tuple[str, ...] = ("train", "test")

# Each split draws from its own family of seed streams (SeedSequence entropy
# (split key, seed, index)), so no test image shares a stream with a training one.
_SPLIT_KEY = {"train": 0x5EED_0001, "test": 0x5EED_0002}
_TARGET_SIZES = (8, 13)  # inclusive range of the target's box side, pixels
_DISTRACTOR_SIZES = (8, 13)
_THICKNESS = 2  # of rings, bars and frames
_MIN_COLOR_DISTANCE = 110.0  # Euclidean RGB distance of objects from the background


@dataclass(frozen=True, eq=False)
class ShapeImage:
    """One image of the shapes data set (arrays are read-only).

    Attributes:
        image: uint8 (H, W, 3) RGB pixels.
        label: the target's shape, one of :data:`LABELS`.
        label_id: ``LABELS.index(label)`` (the demo model's class id).
        mask: bool (H, W), exactly the target object's pixels.
        distractor_mask: bool (H, W), exactly the distractors' pixels.
        box: the target's box ``(top, left, height, width)``; the target is
            ``shape_mask(label, height, width)`` placed there.
        color: the target's RGB colour (every pixel of ``mask`` has it).
        distractors: the distractors' shapes, each one of :data:`DISTRACTORS`.
        distractor_boxes: their boxes, as ``box``.
    """

    image: np.ndarray
    label: str
    label_id: int
    mask: np.ndarray
    distractor_mask: np.ndarray
    box: tuple[int, int, int, int]
    color: tuple[int, int, int]
    distractors: tuple[str, ...]
    distractor_boxes: tuple[tuple[int, int, int, int], ...]


def shape_mask(shape: str, height: int, width: int) -> np.ndarray:
    """bool (height, width): the pixels of ``shape`` drawn to fill that box.

    Label shapes fill a square box (``height == width``): a filled square, a
    filled circle, an upward triangle and a plus-shaped cross whose arms are a
    third of the side thick. Distractors: a ring and a frame (hollow square)
    with 2-pixel walls, and a bar (a 2-pixel-thick box, either way round).
    """
    if shape not in LABELS + DISTRACTORS:
        raise ValueError(f"unknown shape {shape!r}; use one of {', '.join(LABELS + DISTRACTORS)}")
    h, w = int(height), int(width)
    if h < 1 or w < 1:
        raise ValueError(f"a shape needs a box of at least 1×1 pixels, not {h}×{w}")
    return _shape_mask(shape, h, w).copy()


@lru_cache(maxsize=512)
def _shape_mask(shape: str, h: int, w: int) -> np.ndarray:
    rows = np.arange(h)[:, None] + 0.5  # pixel centres
    cols = np.arange(w)[None, :] + 0.5
    full = np.ones((h, w), dtype=bool)
    if shape in ("square", "bar"):
        return full
    radius = min(h, w) / 2
    dist = np.hypot(rows - h / 2, cols - w / 2)
    if shape == "circle":
        return dist <= radius
    if shape == "ring":
        return (dist <= radius) & (dist > radius - _THICKNESS)
    if shape == "triangle":  # apex at the top centre, base along the bottom row
        return np.abs(cols - w / 2) <= rows / h * (w / 2)
    if shape == "frame":
        inner = np.zeros((h, w), dtype=bool)
        inner[_THICKNESS : h - _THICKNESS, _THICKNESS : w - _THICKNESS] = True
        return full & ~inner
    # cross
    thick_r, thick_c = max(2, round(h / 3)), max(2, round(w / 3))
    top, left = (h - thick_r) // 2, (w - thick_c) // 2
    mask = np.zeros((h, w), dtype=bool)
    mask[top : top + thick_r, :] = True
    mask[:, left : left + thick_c] = True
    return mask


def _background(rng: np.random.Generator, size: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """A textured background and the colours it is made of."""
    base = rng.uniform(30, 225, size=3)
    kind = rng.integers(3)
    if kind == 0:  # noise around one colour
        colours = [base]
        image = base + rng.normal(0, rng.uniform(4, 16), size=(size, size, 3))
    else:  # stripes of two nearby colours: horizontal, vertical or diagonal
        other = np.clip(base + rng.uniform(-45, 45, size=3), 0, 255)
        colours = [base, other]
        width = int(rng.integers(1, 4))
        r, c = np.mgrid[0:size, 0:size]
        along = (r, c, r + c, r - c)[int(rng.integers(4))]
        stripe = (along // width) % 2 == 1
        image = np.where(stripe[..., None], other, base)
        image = image + rng.normal(0, rng.uniform(0, 6), size=(size, size, 3))
    return np.clip(np.rint(image), 0, 255), colours


def _object_colour(rng: np.random.Generator, background: list[np.ndarray]) -> np.ndarray:
    while True:
        colour = rng.integers(0, 256, size=3).astype(np.float64)
        if all(np.linalg.norm(colour - b) >= _MIN_COLOR_DISTANCE for b in background):
            return colour


def _place(
    rng: np.random.Generator, taken: np.ndarray, height: int, width: int
) -> tuple[int, int] | None:
    """A free (top, left) for a box at least one pixel away from every taken box."""
    size = taken.shape[0]
    for _ in range(200):
        top = int(rng.integers(0, size - height + 1))
        left = int(rng.integers(0, size - width + 1))
        window = taken[max(0, top - 1) : top + height + 1, max(0, left - 1) : left + width + 1]
        if not window.any():
            return top, left
    return None


def _distractor_box(rng: np.random.Generator, shape: str) -> tuple[int, int]:
    side = int(rng.integers(_DISTRACTOR_SIZES[0], _DISTRACTOR_SIZES[1] + 1))
    if shape == "bar":
        length = int(rng.integers(9, 16))
        return (_THICKNESS, length) if rng.integers(2) else (length, _THICKNESS)
    return side, side


def _draw(rng: np.random.Generator, size: int) -> ShapeImage:
    while True:  # a layout that does not fit is drawn again from the same stream
        image, colours = _background(rng, size)
        taken = np.zeros((size, size), dtype=bool)
        label_id = int(rng.integers(len(LABELS)))
        side = int(rng.integers(_TARGET_SIZES[0], _TARGET_SIZES[1] + 1))
        spot = _place(rng, taken, side, side)
        if spot is None:
            continue
        box = (*spot, side, side)
        taken[box[0] : box[0] + side, box[1] : box[1] + side] = True
        names = tuple(
            DISTRACTORS[int(i)] for i in rng.integers(len(DISTRACTORS), size=rng.integers(1, 3))
        )
        boxes = []
        for name in names:
            h, w = _distractor_box(rng, name)
            spot = _place(rng, taken, h, w)
            if spot is None:
                break
            boxes.append((*spot, h, w))
            taken[spot[0] : spot[0] + h, spot[1] : spot[1] + w] = True
        if len(boxes) < len(names):
            continue
        target_colour = _object_colour(rng, colours)
        mask = _paste(image, LABELS[label_id], box, target_colour)
        distractor_mask = np.zeros((size, size), dtype=bool)
        for name, where in zip(names, boxes, strict=True):
            distractor_mask |= _paste(image, name, where, _object_colour(rng, colours))
        arrays = [image.astype(np.uint8), mask, distractor_mask]
        for array in arrays:
            array.setflags(write=False)
        return ShapeImage(
            image=arrays[0],
            label=LABELS[label_id],
            label_id=label_id,
            mask=arrays[1],
            distractor_mask=arrays[2],
            box=box,
            color=(int(target_colour[0]), int(target_colour[1]), int(target_colour[2])),
            distractors=names,
            distractor_boxes=tuple(boxes),
        )


def _paste(
    image: np.ndarray, shape: str, box: tuple[int, int, int, int], colour: np.ndarray
) -> np.ndarray:
    """Draw ``shape`` into ``image`` in place; its full-image bool mask."""
    top, left, h, w = box
    mask = np.zeros(image.shape[:2], dtype=bool)
    mask[top : top + h, left : left + w] = _shape_mask(shape, h, w)
    image[mask] = colour
    return mask


def generate(n: int, *, seed: int = 0, split: str = "test") -> list[ShapeImage]:
    """``n`` images of the shapes data set, the same ones for the same arguments.

    Args:
        n: how many images (>= 1).
        seed: a non-negative integer; image ``i`` comes from the random stream
            ``(split, seed, i)``.
        split: ``"test"`` (held out: the demo model never trained on it) or
            ``"train"``; the two draw from disjoint seed streams.

    Raises:
        ValueError: for a bad ``n``, ``seed`` or ``split``.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer (1 or more), not {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
    if split not in SPLITS:
        raise ValueError(
            f"split must be one of {', '.join(repr(s) for s in SPLITS)}, not {split!r}"
        )
    key = _SPLIT_KEY[split]
    return [_draw(np.random.default_rng([key, int(seed), i]), IMAGE_SIZE) for i in range(int(n))]
