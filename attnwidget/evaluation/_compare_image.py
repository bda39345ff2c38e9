"""The faithfulness half of :func:`attnwidget.compare` for one image.

Chefer, Gur & Wolf's (2021, CVPR) perturbation test, as
:func:`attnwidget.evaluation.perturbation_curve` runs it over a data set, on
one image: the patches a method ranks first (positive) or last (negative)
are zeroed in the model's normalised pixel space in steps of 10 % (0 … 90 %),
and the model re-runs on every perturbed copy of every method in one batched
pass. On one image the accuracy curve is 0/1 (is the explained class still
predicted?), so the explained class's probability is recorded too; the
areas use :func:`attnwidget.metrics.area_under_curve` (×100), as for text.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnwidget.capture.image_inputs import prepare_image
from attnwidget.errors import InputError
from attnwidget.evaluation._batcher import evaluation_mode
from attnwidget.evaluation.vision import perturb_patches
from attnwidget.metrics.perturbation import FRACTIONS, area_under_curve, removal_order
from attnwidget.results.explanation import Explanation

#: What this module computes, by the names the text metrics use.
IMAGE_METRICS = (
    "perturbation_auc_pos",
    "perturbation_auc_neg",
    "perturbation_prob_auc_pos",
    "perturbation_prob_auc_neg",
)
#: Images are re-run this many at a time.
BATCH = 64


def faithfulness(
    model: Any,
    processor: Any,
    exp: Explanation,
    methods: list[str],
    metrics: list[str],
    image: Any = None,
) -> Any:
    """A DataFrame indexed by method, one column per metric of :data:`IMAGE_METRICS`.

    ``image``: the input as it was explained (default: ``exp.image``, the
    RGB picture, which the processor turns into the same pixels).
    """
    import pandas as pd

    unknown = [m for m in metrics if m not in IMAGE_METRICS]
    if unknown:
        raise InputError(
            f"{unknown} score tokens of a text; for an image compare computes "
            f"{list(IMAGE_METRICS)}."
        )
    assert exp.image is not None and exp.patch_grid is not None and exp.patch_size is not None
    assert exp.target_id is not None
    pixels = prepare_image(exp.image if image is None else image, processor).pixel_values[0].numpy()
    rows, cols = exp.patch_grid
    if pixels.shape[-2:] != (rows * exp.patch_size, cols * exp.patch_size):
        raise InputError(
            f"the processor gives {tuple(pixels.shape[-2:])} pixels, but the explanation's "
            f"{rows}×{cols} patches of {exp.patch_size} px need "
            f"{(rows * exp.patch_size, cols * exp.patch_size)}; pass the processor it was "
            "explained with."
        )
    copies: list[np.ndarray] = []
    for method in methods:
        scores = exp.patch_scores(method)
        for positive in (True, False):
            order = removal_order(scores, positive=positive)
            for fraction in FRACTIONS:
                count = round(fraction * rows * cols)
                copies.append(perturb_patches(pixels, order, count, exp.patch_size, cols))
    kept, probability = _run(model, np.stack(copies), int(exp.target_id))
    steps = len(FRACTIONS)
    out: dict[str, dict[str, float]] = {}
    for index, method in enumerate(methods):
        values: dict[str, float] = {}
        for side, positive in enumerate((True, False)):
            start = (2 * index + side) * steps
            suffix = "pos" if positive else "neg"
            values[f"perturbation_auc_{suffix}"] = area_under_curve(kept[start : start + steps])
            values[f"perturbation_prob_auc_{suffix}"] = area_under_curve(
                probability[start : start + steps]
            )
        out[method] = {m: values[m] for m in metrics}
    return pd.DataFrame.from_dict(out, orient="index").loc[methods]


def _run(model: Any, batch: np.ndarray, target: int) -> tuple[np.ndarray, np.ndarray]:
    """(kept, probability) of the explained class for every perturbed copy."""
    parameter = next(model.parameters())
    kept, probability = [], []
    with evaluation_mode(model), torch.no_grad():
        for start in range(0, len(batch), BATCH):
            tensor = torch.as_tensor(
                batch[start : start + BATCH], dtype=parameter.dtype, device=parameter.device
            )
            logits = model(pixel_values=tensor).logits.float()
            kept.append((logits.argmax(-1) == target).cpu().numpy())
            probability.append(logits.softmax(-1)[:, target].cpu().numpy())
    return (
        np.concatenate(kept).astype(np.float64),
        np.concatenate(probability).astype(np.float64),
    )
