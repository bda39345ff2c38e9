"""IOU-F1's matching against a brute force written here: every subset of pairs.

:func:`attnwidget.metrics.iou_f1` matches spans one to one per connected
component of the overlap graph; the maximum matching is checked here by
trying every set of eligible pairs on small random span sets, and ERASER's
convention by its definition (a predicted span is a hit when its best IOU
with any human span reaches the threshold).
"""

from __future__ import annotations

import itertools
import random

import pytest

from attnwidget.metrics import iou_f1


def _iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    overlap = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    return overlap / ((a[1] - a[0]) + (b[1] - b[0]) - overlap)


def _largest_matching(pairs: list[tuple[int, int]]) -> int:
    for size in range(len(pairs), 0, -1):
        for chosen in itertools.combinations(pairs, size):
            if len({p for p, _ in chosen}) == size == len({h for _, h in chosen}):
                return size
    return 0


def _spans(rng: random.Random) -> list[tuple[int, int]]:
    out = set()
    for _ in range(rng.randrange(1, 5)):
        start = rng.randrange(0, 12)
        out.add((start, start + 1 + rng.randrange(4)))
    return sorted(out)


@pytest.mark.parametrize("seed", range(4))
def test_the_matching_is_a_maximum_one_to_one_matching(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        predicted, human = _spans(rng), _spans(rng)
        threshold = rng.choice([0.25, 0.5, 0.75])
        pairs = [
            (i, j)
            for i, p in enumerate(predicted)
            for j, h in enumerate(human)
            if _iou(p, h) >= threshold
        ]
        matches = _largest_matching(pairs)
        got = iou_f1(predicted, human, threshold=threshold)
        assert got.precision == pytest.approx(matches / len(predicted)), (predicted, human)
        assert got.recall == pytest.approx(matches / len(human)), (predicted, human)
        hits = sum(max(_iou(p, h) for h in human) >= threshold for p in predicted)
        eraser = iou_f1(predicted, human, threshold=threshold, convention="eraser")
        assert eraser.precision == pytest.approx(hits / len(predicted))
        assert eraser.recall == pytest.approx(hits / len(human))


def test_pooled_spans_of_many_items_match_item_by_item() -> None:
    # Thousands of spans put end to end (as agreement pools items): each item's
    # spans lie apart from the others', so the pooled matching is the sum.
    rng = random.Random(7)
    pooled_p, pooled_h, matched = [], [], 0
    for item in range(2_000):
        base = item * 100
        predicted, human = _spans(rng), _spans(rng)
        pairs = [
            (i, j)
            for i, p in enumerate(predicted)
            for j, h in enumerate(human)
            if _iou(p, h) >= 0.5
        ]
        matched += _largest_matching(pairs)
        pooled_p += [(a + base, b + base) for a, b in predicted]
        pooled_h += [(a + base, b + base) for a, b in human]
    got = iou_f1(pooled_p, pooled_h)
    assert got.precision == pytest.approx(matched / len(pooled_p))
    assert got.recall == pytest.approx(matched / len(pooled_h))
