""":func:`attnwidget.explain` for Vision Transformers: images in, patch scores out.

:func:`attnwidget.explain` sends image classifiers here. The methods are the
text methods, run on the image's tokens (special ones first, then one per
patch); the special tokens (CLS, distillation, registers) are not explained,
so their scores are set to 0 and views and heat maps leave them out
(:meth:`attnwidget.Explanation.patch_scores`, :meth:`~attnwidget.Explanation.heatmap`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnwidget.capture import AttentionRecord, capture_ready
from attnwidget.capture.image import capture_images, check_image_model
from attnwidget.capture.image_inputs import as_image_list, prepare_image
from attnwidget.errors import InputError
from attnwidget.methods import ScoreContext, compute_scores, sinks
from attnwidget.pipeline.inputs import present
from attnwidget.relevance.rerun_image import ImageTargetScore
from attnwidget.results.explanation import Explanation


def explain_images(
    model: Any,
    processor: Any,
    images: Any,
    *,
    names: list[str],
    options: dict[str, dict[str, Any]],
    target: Any = None,
    query_index: int | None = None,
    ignore: sinks.CheckedKeys = None,
) -> Explanation | list[Explanation]:
    """Explain ``images`` (one or a list) with ``names``; see :func:`attnwidget.explain`
    (``ignore``: its checked ``ignore_keys``; "special" = the non-patch tokens)."""
    check_image_model(model)
    items, single = as_image_list(images)
    targets = target if isinstance(target, list) else [target] * len(items)
    if len(targets) != len(items):
        raise InputError(f"{len(targets)} targets for {len(items)} images; pass one per image.")
    prepared = [prepare_image(item, processor, index=i) for i, item in enumerate(items)]
    explanations = []
    with capture_ready(model):
        for item, item_target in zip(prepared, targets, strict=True):
            (record,) = capture_images(model, [item], target=item_target, query_index=query_index)
            n = len(record.tokens)  # positions out of range fail before any method runs
            ignored = sinks.resolve_ignore_keys(ignore, n, list(record.special_tokens or []))
            explanations.append(_explanation(record, names, options, ignored))
    return explanations[0] if single else explanations


def _explanation(
    record: AttentionRecord,
    names: list[str],
    options: dict[str, dict[str, Any]],
    ignored: list[int],
) -> Explanation:
    target = None if record.call is None else ImageTargetScore(record.call)
    attentions = present(record.attentions, "attentions").astype(np.float64)
    context = ScoreContext(
        attentions=sinks.renormalise_keys(attentions, ignored),  # the gradient stays dy/dA
        query_index=record.query_index,
        attention_grads=present(record.attention_grads, "attention_grads").astype(np.float64),
        embeddings=record.embeddings.astype(np.float64),
        embedding_grads=present(record.embedding_grads, "embedding_grads").astype(np.float64),
        keep_mask=~record.special_mask,
        target_score=target,
        target_probability=None if target is None else target.probability,
        options=options,
        pixels=None if target is None else target.pixel_values.astype(np.float64),
        black_pixels=record.black_pixels,
        patch_size=record.patch_size,
    )
    scores, details = compute_scores(names, context)
    for values in scores.values():  # special tokens are not explained
        values[record.special_mask] = 0.0
    logits = record.logits.astype(np.float64)
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    return Explanation(
        tokens=record.tokens,
        attentions=record.attentions,
        query_index=record.query_index,
        scores=scores,
        target=record.target_label,
        target_id=record.target_id,
        target_score=float(record.logits[record.target_id]),
        logits=record.logits,
        probabilities=probabilities.astype(np.float32),
        raw_tokens=record.raw_tokens,
        kind="image",
        attention_grads=record.attention_grads,
        details=details,
        method_options={name: dict(values) for name, values in options.items()},
        image=record.image,
        patch_grid=record.patch_grid,
        patch_size=record.patch_size,
        special_tokens=list(record.special_tokens or []),
        ignored_keys=ignored,
    )
