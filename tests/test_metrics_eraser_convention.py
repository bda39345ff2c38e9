"""``convention="eraser"``: our plausibility metrics as ERASER's code computes them.

ERASER (DeYoung et al., 2020, ACL; jayded/eraserbenchmark,
``rationale_benchmark/metrics.py``) counts IOU hits and averages AUPRC in
its own way. Each case here is checked against a slow, explicit
implementation written below from the definition (token sets, a loop over
thresholds), never by calling our code twice, and against the standard
convention where the two must differ.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from attnwidget.errors import InputError
from attnwidget.metrics import auprc, iou_f1, mean_auprc


def eraser_iou(predicted, human, threshold=0.5):
    """ERASER's partial match for one document, from the definition: each
    predicted span's best IOU (token sets) over the human spans; every one at
    or above the threshold is a true positive, for recall and precision alike."""
    predicted, human = set(predicted), set(human)
    hits = 0
    for p in predicted:
        tokens = set(range(*p))
        best = max(
            (len(tokens & set(range(*h))) / len(tokens | set(range(*h))) for h in human),
            default=0.0,
        )
        hits += best >= threshold
    recall = hits / len(human) if human else 0.0
    precision = hits / len(predicted) if predicted else 0.0
    f1 = 0.0 if precision == 0 or recall == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def explicit_ap(scores, labels):
    """Average precision from the definition: one threshold per distinct score, top down."""
    total, ap, previous = sum(labels), 0.0, 0.0
    for t in sorted(set(scores), reverse=True):
        chosen = [lab for s, lab in zip(scores, labels, strict=True) if s >= t]
        recall = sum(chosen) / total
        ap += (recall - previous) * sum(chosen) / len(chosen)
        previous = recall
    return ap


def eraser_mean_ap(documents):
    """ERASER's data-set average precision: single-class documents skipped."""
    kept = [explicit_ap(s, h) for s, h in documents if 0 < sum(h) < len(h)]
    return sum(kept) / len(kept)


def test_overlapping_predicted_spans_count_twice_in_eraser() -> None:
    predicted, human = [(0, 3), (1, 4)], [(0, 4)]
    ours = iou_f1(predicted, human)
    theirs = iou_f1(predicted, human, convention="eraser")
    assert tuple(theirs) == pytest.approx(eraser_iou(predicted, human))
    assert theirs.recall > 1  # both predictions pass IOU ¾ with the one human span
    assert ours.recall <= 1 and tuple(ours) != pytest.approx(tuple(theirs))


def test_eraser_iou_on_random_spans_and_empty_sets() -> None:
    rng = random.Random(0)
    differ = 0
    for _ in range(300):

        def spans(k):
            out = []
            for _ in range(k):
                start = rng.randrange(0, 12)
                out.append((start, start + rng.randrange(1, 6)))
            return out

        predicted, human = spans(rng.randrange(0, 4)), spans(rng.randrange(0, 4))
        threshold = rng.choice([0.3, 0.5, 0.8])
        got = iou_f1(predicted, human, threshold=threshold, convention="eraser")
        assert tuple(got) == pytest.approx(eraser_iou(predicted, human, threshold)), (
            predicted,
            human,
            threshold,
        )
        differ += tuple(got) != pytest.approx(tuple(iou_f1(predicted, human, threshold=threshold)))
    assert differ > 0  # the conventions do differ somewhere in this sample
    assert tuple(iou_f1([], [], convention="eraser")) == (0.0, 0.0, 0.0)  # ours: 1, 1, 1
    assert tuple(iou_f1([], [])) == (1.0, 1.0, 1.0)


def test_eraser_mean_auprc_skips_all_rationale_documents() -> None:
    rng = np.random.default_rng(0)
    documents = []
    for size in (5, 7, 9, 6):
        human = rng.random(size) < 0.5
        human[0], human[1] = True, False
        documents.append((rng.random(size).round(1).tolist(), human.tolist()))
    documents.append((rng.random(4).tolist(), [True] * 4))  # every token in the rationale
    documents.append((rng.random(4).tolist(), [False] * 4))  # none: skipped by both
    scores, humans = zip(*documents, strict=True)
    theirs = mean_auprc(scores, humans, convention="eraser")
    assert theirs == pytest.approx(eraser_mean_ap(documents), abs=1e-12)
    ours = mean_auprc(scores, humans)
    scored = [explicit_ap(s, h) for s, h in documents if any(h)]  # the all-human one: 1
    assert ours == pytest.approx(sum(scored) / len(scored), abs=1e-12)
    assert ours != pytest.approx(theirs)
    assert math.isnan(auprc([0.3, 0.2], [True, True], convention="eraser"))
    assert auprc([0.3, 0.2], [True, True]) == 1.0


def test_an_unknown_convention_names_the_choices() -> None:
    with pytest.raises(InputError, match=r"'standard'.*'eraser'"):
        iou_f1([(0, 1)], [(0, 1)], convention="ERASER")
    with pytest.raises(InputError, match=r"'standard'.*'eraser'"):
        auprc([0.1, 0.2], [True, False], convention="paper")
    with pytest.raises(InputError, match="one of each per document"):
        mean_auprc([[0.1, 0.2]], [], convention="eraser")
