"""The registered gradient baselines: ``input_x_gradient`` and ``integrated_gradients``.

Text models integrate along token embeddings (:mod:`attnwidget.methods.gradients`);
images along pixels (:mod:`attnwidget.methods.pixels`), summed per patch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnwidget.errors import InputError
from attnwidget.methods.gradients import (
    DEFAULT_MAX_STEPS,
    DEFAULT_TOLERANCE,
    input_x_gradient,
    integrated_gradients,
)
from attnwidget.methods.options import AT_LEAST_ONE, Option
from attnwidget.methods.pixels import patch_sums, pixel_baseline, pixel_integrated_gradients
from attnwidget.methods.registry import ScoreContext, register


@register(
    "input_x_gradient",
    needs={"embedding_grads"},
    summary="Embedding × gradient of the target, summed over the embedding.",
    reference="Shrikumar et al. (2017); Denil et al. (2014).",
    signed=True,
)
def _score_input_x_gradient(context: ScoreContext) -> np.ndarray:
    # compute_scores checked the method's needs
    assert context.embeddings is not None and context.embedding_grads is not None
    return input_x_gradient(context.embeddings, context.embedding_grads)


@register(
    "integrated_gradients",
    needs={"target_score"},
    summary="Gradients integrated along a path from a baseline embedding.",
    reference="Sundararajan, Taly & Yan (2017), Axiomatic Attribution for Deep Networks.",
    signed=True,
    options=(
        Option(
            "steps",
            (int, type(None)),
            None,
            "a fixed number of path intervals; None chooses it adaptively",
            **AT_LEAST_ONE,
        ),
        Option(
            "max_steps",
            int,
            DEFAULT_MAX_STEPS,
            "cap of the adaptive search (steps double from 16)",
            **AT_LEAST_ONE,
        ),
        Option(
            "tolerance",
            float,
            DEFAULT_TOLERANCE,
            "stop when |completeness gap| ≤ tolerance × max(|logit|, |logit − baseline logit|)",
            check=lambda v: v > 0,
            requirement="> 0",
        ),
        Option("batch_size", int, 16, "path points per model call", **AT_LEAST_ONE),
        Option(
            "baseline",
            (np.ndarray, str, type(None)),
            None,
            "text: (n, d) baseline token embeddings, None = zeros (position and segment "
            "embeddings are not part of the path and stay as they are); images: 'black' "
            "(None), 'blurred', 'mean' or a (3, H, W) pixel array",
            check=lambda v: not isinstance(v, str) or v in ("black", "blurred", "mean"),
            requirement="a string must be 'black', 'blurred' or 'mean'",
        ),
    ),
)
def _score_integrated_gradients(context: ScoreContext) -> tuple[np.ndarray, dict[str, Any]]:
    options = context.options_for("integrated_gradients")
    assert context.target_score is not None  # compute_scores checked the method's needs
    if context.pixels is not None:
        assert context.patch_size is not None  # images carry their patch size
        kind = options.pop("baseline")
        kind = "black" if kind is None else kind
        baseline = pixel_baseline(context.pixels, kind, black=context.black_pixels)
        pixel_scores, info = pixel_integrated_gradients(
            context.target_score, context.pixels, baseline, **options
        )
        info["baseline"] = kind if isinstance(kind, str) else "array"
        patches = patch_sums(pixel_scores, int(context.patch_size))
        return context.patch_token_scores(patches), info
    if isinstance(options["baseline"], str):
        raise InputError(
            f"integrated_gradients baseline={options['baseline']!r} is an image baseline; for "
            "text pass an (n, d) array of baseline token embeddings, or None for zeros."
        )
    assert context.embeddings is not None  # text contexts carry their embeddings
    return integrated_gradients(context.target_score, context.embeddings, **options)
