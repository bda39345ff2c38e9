""":func:`compare`: every method on one input, with agreement, faithfulness and plausibility.

Which explanation of this prediction can I believe? The "attention is not
explanation" debate (Jain & Wallace 2019; Wiegreffe & Pinter 2019; Serrano &
Smith 2019) and the disagreement problem (Krishna et al. 2022) ask it of data
sets; :func:`compare` answers it for one input. The faithfulness figures are
computed by exactly the functions :func:`attnwidget.evaluate` uses
(:func:`._compute.score_explanations`), so they equal ``evaluate`` on a
one-example data set; images use Chefer, Gur & Wolf's (2021) patch
perturbation (:mod:`._compare_image`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from attnwidget.capture import ENCODER_DECODER, model_kind
from attnwidget.errors import InputError
from attnwidget.evaluation import _compare_image, _compare_text
from attnwidget.evaluation._compute import word_mask
from attnwidget.evaluation.comparison import AGREEMENT_METRICS, DIRECTIONS, Comparison
from attnwidget.evaluation.metrics_registry import (
    FAITHFULNESS,
    PLAUSIBILITY,
    resolve_metrics,
)
from attnwidget.metrics import pair_agreement, rank_spread
from attnwidget.pipeline.explain import DEFAULT_METHODS, explain
from attnwidget.results.explanation import Explanation

if TYPE_CHECKING:
    import pandas as pd


def compare(
    subject: Any,
    tokenizer: Any = None,
    text: Any = None,
    *,
    model: Any = None,
    methods: Sequence[str] | None = None,
    rationale: Any = None,
    metrics: Sequence[str] | None = None,
    method_options: dict[str, dict[str, Any]] | None = None,
    text_pair: str | None = None,
    target: Any = None,
    rationale_unit: str = "words",
    rationale_k: int | None = None,
    include_special: bool = False,
    replacement_id: int | None = None,
    truncation: bool = False,
    ignore_keys: Any = None,
) -> Comparison:
    """Explain one input with several methods and compare them.

    ``compare(model, tokenizer, text)`` explains ``text`` once with every
    method (one :func:`attnwidget.explain` call) and then re-runs the model
    only on the perturbed copies the faithfulness metrics need, all of them
    in one batched pass. ``compare(exp, tokenizer=..., model=...)`` compares
    an existing :class:`~attnwidget.Explanation`'s methods; without
    ``model`` there is no faithfulness (nothing can be re-run), and a text
    explanation needs ``tokenizer`` to know its special tokens (images know
    theirs).

    Args:
        subject: a model (with ``tokenizer`` and ``text``) or an Explanation.
        tokenizer: the model's tokenizer (an image processor for images).
        text: one text (or one image, as :func:`attnwidget.explain` takes it).
        model: with an Explanation as ``subject``, the model that made it, for
            the faithfulness re-runs.
        methods: the methods to compare (default: ``attnwidget.DEFAULT_METHODS``,
            or every method of the given Explanation).
        rationale: a human rationale, for plausibility: a 0/1 vector over the
            words of ``text.split()`` (``rationale_unit="words"``) or over the
            tokens (``"tokens"``), a list of ``(start, end)`` word spans (end
            exclusive), or ``(store, item_id, annotator)`` from an annotation
            Store (the item's text is used when ``text`` is not given).
        metrics: faithfulness and plausibility metrics by name
            (:func:`attnwidget.evaluation.available_metrics`); default: every
            faithfulness metric, and every plausibility metric with a rationale.
        method_options, text_pair, target, truncation, ignore_keys: as in
            :func:`attnwidget.explain` (``ignore_keys`` leaves attention sinks out
            of the attention-derived methods' rows; an explanation passed in
            keeps its own, ``exp.ignored_keys``).
        rationale_k: tokens kept by a method's discrete rationale for token F1
            and IOU-F1 (default: the rationale's own length, as ferret does).
        include_special: compare special tokens too (CLS, SEP, BOS…; the
            patches' CLS and registers for images). Default: left out, and so
            is the query position of a causal or masked language model.
        replacement_id: the id a removed token is replaced by (default: the
            tokenizer's unknown token, else mask, pad, eos), as in ``evaluate``.

    Returns:
        A :class:`~attnwidget.evaluation.comparison.Comparison`.
    """
    if isinstance(subject, Explanation):
        exp = subject
        if text is not None and exp.kind == "image":
            raise InputError("compare(exp) takes no image: the explanation holds it.")
        names = _check_methods(methods, exp)
        if ignore_keys is not None:
            raise InputError(
                "ignore_keys is read when compare explains; this explanation already left "
                f"out keys {exp.ignored_keys} (explain again with ignore_keys=... to change them)."
            )
    else:
        if model is not None:
            raise InputError(
                "model= is for compare(exp, model=...); with a model first, call "
                "compare(model, tokenizer, text)."
            )
        model = subject
        if tokenizer is None or text is None:
            raise InputError(
                "compare(model, tokenizer, text) needs the tokenizer and one text (or "
                "image); for an existing explanation call compare(exp, tokenizer=..., model=...)."
            )
        if isinstance(text, (list, tuple)) and not _is_pixels(text):
            raise InputError(
                "compare explains one input; pass one text (for a data set, use "
                "attnwidget.evaluate(..., methods=...), whose result has the same agreement "
                "summary in result.agreement)."
            )
        if model_kind(model) == ENCODER_DECODER:
            raise InputError(
                "compare scores text classifiers, language models and image classifiers; "
                f"{type(model).__name__} is an encoder-decoder model."
            )
        names = _check_method_list(methods)
        exp = explain(
            model,
            tokenizer,
            text,
            text_pair=text_pair,
            target=target,
            methods=names,
            method_options=method_options,
            truncation=truncation,
            ignore_keys=ignore_keys,
        )
        assert isinstance(exp, Explanation)
    compared = _compared(exp, tokenizer, include_special)
    table = np.stack([np.asarray(exp.scores[m], dtype=np.float64) for m in names])
    for method, row in zip(names, table, strict=True):
        if not np.isfinite(row[compared]).all():
            raise InputError(
                f"{method}'s scores hold NaN/inf at compared tokens; compare methods that "
                "score every token (or leave special tokens out: include_special=False)."
            )
    faith_names, plaus_names = _split_metrics(metrics, rationale is not None)
    if exp.kind == "image":
        if metrics is None:
            faith_names = list(_compare_image.IMAGE_METRICS)
        if plaus_names:
            raise InputError(
                "plausibility against a rationale is for text; for images use "
                "attnwidget.metrics.segmentation_scores with the object's mask."
            )
        faithfulness = None
        if model is not None and faith_names:
            faithfulness = _compare_image.faithfulness(
                model, tokenizer, exp, names, faith_names, image=None if text is None else text
            )
        elif faith_names and metrics is not None:
            raise InputError("faithfulness re-runs the model: pass model= with the explanation.")
        plausibility, human = None, None
        settings: dict[str, Any] = {"metrics": faith_names if faithfulness is not None else []}
    else:
        faithfulness, plausibility, human, settings = _compare_text.text_metrics(
            exp, model, tokenizer, text, names, faith_names, plaus_names, metrics is not None,
            rationale=rationale, rationale_unit=rationale_unit, rationale_k=rationale_k,
            replacement_id=replacement_id, text_pair=text_pair, truncation=truncation,
        )  # fmt: skip
    spread = np.full(len(exp.tokens), np.nan)
    if compared.any():
        spread[compared] = rank_spread(table[:, compared])
    return Comparison(
        explanation=exp,
        methods=names,
        tokens=list(exp.tokens),
        compared=compared,
        agreement=_agreement(names, table[:, compared]),
        faithfulness=faithfulness,
        plausibility=plausibility,
        rationale=human,
        disagreement=spread,
        directions=dict(DIRECTIONS),
        settings={"include_special": bool(include_special), **settings},
    )


def _is_pixels(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and not isinstance(value[0], str)


def _check_method_list(methods: Sequence[str] | None) -> list[str]:
    names = list(DEFAULT_METHODS) if methods is None else methods
    if isinstance(names, str) or len(names) < 2:
        raise InputError(
            f"methods={methods!r}: compare needs at least two method names, e.g. "
            f"{list(DEFAULT_METHODS)}."
        )
    out = [str(m) for m in names]
    if len(set(out)) != len(out):
        raise InputError(f"methods lists a name more than once: {out}.")
    return out


def _check_methods(methods: Sequence[str] | None, exp: Explanation) -> list[str]:
    names = _check_method_list(exp.methods if methods is None else methods)
    missing = [m for m in names if m not in exp.scores]
    if missing:
        raise InputError(
            f"the explanation has no scores for {missing} (it has {exp.methods}); "
            "explain with those methods, or call compare(model, tokenizer, text, methods=...)."
        )
    return names


def _split_metrics(metrics: Sequence[str] | None, have_rationale: bool) -> tuple[list, list]:
    if metrics is None:
        return list(FAITHFULNESS), list(PLAUSIBILITY) if have_rationale else []
    chosen = resolve_metrics(metrics, have_rationales=have_rationale)
    faith = [m.name for m in chosen if not m.needs_rationale]
    return faith, [m.name for m in chosen if m.needs_rationale]


def _compared(exp: Explanation, tokenizer: Any, include_special: bool) -> np.ndarray:
    """bool (n,): the tokens the rank comparisons run over."""
    n = len(exp.tokens)
    out = np.ones(n, dtype=bool)
    if include_special:
        return out
    if exp.kind == "image":
        out[list(exp.special_tokens)] = False
        return out
    special = getattr(tokenizer, "all_special_ids", None)
    if special is None or exp.input_ids is None:
        raise InputError(
            "compare needs the tokenizer to leave special tokens out: pass tokenizer=... "
            "(or include_special=True to compare every token)."
        )
    # the words the faithfulness metrics remove (for a classifier the query is
    # [CLS], a special token anyway)
    out = word_mask(exp.input_ids, exp.query_index, special)
    if out.sum() < 2:
        raise InputError(
            f"only {int(out.sum())} token(s) to compare once special tokens are left out; "
            "pass a longer input or include_special=True."
        )
    return out


def _agreement(names: list[str], table: np.ndarray) -> dict[str, pd.DataFrame]:
    """metric -> methods × methods DataFrame (symmetric, unit diagonal)."""
    import pandas as pd

    m = len(names)
    out: dict[str, np.ndarray] = {name: np.eye(m) for name in AGREEMENT_METRICS}
    for i in range(m):
        for j in range(i + 1, m):
            for name, value in pair_agreement(table[i], table[j]).items():
                out[name][i, j] = out[name][j, i] = value
    return {name: pd.DataFrame(out[name], index=names, columns=names) for name in AGREEMENT_METRICS}
