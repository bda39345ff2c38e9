"""The text half of :func:`attnwidget.compare`: faithfulness and plausibility.

Faithfulness runs :func:`._compute.score_explanations`, the scoring of
:func:`attnwidget.evaluate` (ERASER's comprehensiveness and sufficiency AOPC,
DeYoung et al. 2020; Chefer, Gur & Wolf's 2021 perturbation AUCs), so the
figures equal ``evaluate`` on a one-example data set. Plausibility needs no
model run and works on an explanation alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnwidget.capture.run import blank_token_id, forward_accepts
from attnwidget.capture.tokens import max_length
from attnwidget.errors import InputError
from attnwidget.evaluation import dataset
from attnwidget.evaluation._compute import Plan, score_explanations, token_types, word_mask
from attnwidget.evaluation.dataset import Example
from attnwidget.evaluation.metrics_registry import MetricInput, resolve_metrics
from attnwidget.results.explanation import Explanation


def text_metrics(
    exp: Explanation,
    model: Any,
    tokenizer: Any,
    text: Any,
    names: list[str],
    faith_names: list[str],
    plaus_names: list[str],
    asked: bool,
    *,
    rationale: Any,
    rationale_unit: str,
    rationale_k: int | None,
    replacement_id: int | None,
    text_pair: str | None,
    truncation: bool,
) -> tuple[Any, Any, np.ndarray | None, dict[str, Any]]:
    import pandas as pd

    text, human = _rationale(
        exp, tokenizer, text, rationale, rationale_unit, text_pair, model, truncation
    )
    if model is None and faith_names:
        if asked:
            raise InputError("faithfulness re-runs the model: pass model= with the explanation.")
        faith_names = []
    if not faith_names and not plaus_names:
        return None, None, human, {}
    if rationale_k is not None and (
        isinstance(rationale_k, bool) or not isinstance(rationale_k, int) or rationale_k < 0
    ):
        raise InputError(f"rationale_k={rationale_k!r}: pass a token count (an int ≥ 0) or None.")
    k = rationale_k if rationale_k is not None else dataset.rationale_k([human])
    blank = replacement_id
    if blank is None:  # only a re-run replaces tokens; plausibility alone needs no id
        blank = blank_token_id(tokenizer) if faith_names else 0
    if isinstance(blank, bool) or not isinstance(blank, int):
        raise InputError("the tokenizer has no unknown/mask/pad token: pass replacement_id=.")
    plan = Plan(
        methods=tuple(names),
        metrics=resolve_metrics([*faith_names, *plaus_names], have_rationales=human is not None),
        replacement_id=blank,
        truncation=bool(truncation),
        limit=max_length(model, tokenizer) if truncation and model is not None else None,
        k=int(k),
    )
    example = Example(
        position=0, id="0", text=text if isinstance(text, str) else "", text_pair=text_pair
    )
    if faith_names:
        types = _token_types(model, tokenizer, exp, example, plan)
        (result,) = score_explanations(model, tokenizer, plan, [example], [exp], [human], [types])
        values = result.values
    else:
        values = _plausibility_only(plan, exp, tokenizer, human)
    frame = pd.DataFrame.from_dict(values, orient="index").loc[names]
    faith = frame[faith_names] if faith_names else None
    plaus = frame[plaus_names] if plaus_names else None
    settings = {
        "replacement_id": blank if faith_names else None,
        "rationale_k": int(k),
        "metrics": [*faith_names, *plaus_names],
    }
    return faith, plaus, human, settings


def _token_types(model: Any, tokenizer: Any, exp: Explanation, example: Example, plan: Plan) -> Any:
    """The token type ids the explanation's model run had: the tokenizer's own, as
    ``evaluate`` re-tokenises (:func:`._compute.token_types`; GPT-2's embeddings
    would add a type 0 it never had). Without the text (``compare(exp,
    model=...)``) they follow ``sentence_b_start`` when the tokenizer's
    ``model_input_names`` promise them.
    """
    if example.text:
        return token_types(model, tokenizer, example, plan, exp.input_ids)
    if not forward_accepts(model, "token_type_ids"):
        return None
    if "token_type_ids" not in getattr(tokenizer, "model_input_names", ()):
        return None
    n = len(exp.tokens)
    start = n if exp.sentence_b_start is None else int(exp.sentence_b_start)
    return [0] * start + [1] * (n - start)


def _plausibility_only(
    plan: Plan, exp: Explanation, tokenizer: Any, human: np.ndarray | None
) -> dict[str, dict[str, float]]:
    ids = np.asarray(exp.input_ids, dtype=np.int64)
    special = getattr(tokenizer, "all_special_ids", None) or []
    candidates = np.flatnonzero(word_mask(ids, exp.query_index, special))

    def no_rerun(_ids: Any) -> np.ndarray:  # plausibility never re-runs the model
        raise AssertionError("a plausibility metric asked for a model run")

    out: dict[str, dict[str, float]] = {}
    for method in plan.methods:
        inp = MetricInput(
            scores=np.asarray(exp.scores[method], dtype=np.float64),
            input_ids=ids,
            candidates=candidates,
            replacement_id=plan.replacement_id,
            score=no_rerun,
            human=human,
            k=plan.k,
        )
        out[method] = {m.name: float(m.compute(inp)) for m in plan.metrics}
    return out


def _rationale(
    exp: Explanation,
    tokenizer: Any,
    text: Any,
    rationale: Any,
    unit: str,
    text_pair: str | None,
    model: Any,
    truncation: bool,
) -> tuple[str | None, np.ndarray | None]:
    """The text (from the Store item when not given) and the rationale over the tokens."""
    if unit not in ("words", "tokens"):
        raise InputError(f"rationale_unit={unit!r}: use 'words' or 'tokens'.")
    if rationale is None:
        return text, None
    if isinstance(rationale, tuple) and len(rationale) == 3 and hasattr(rationale[0], "rationale"):
        store, item_id, annotator = rationale
        found = store.rationale(item_id, annotator=annotator)
        if found is None:
            raise InputError(f"{annotator!r} left no rationale on item {item_id!r} of the store.")
        text = text if text is not None else store.item(item_id).text
        rationale = found
    n_words = len(text.split()) if isinstance(text, str) else None
    if _is_spans(rationale):
        if unit == "tokens":
            raise InputError("spans are over words: use rationale_unit='words' with spans.")
        if n_words is None:
            raise InputError("word spans need the text: pass text=... with the explanation.")
        vector = np.zeros(n_words, dtype=np.int64)
        for start, end in rationale:
            if not 0 <= start < end <= n_words:
                raise InputError(
                    f"span ({start}, {end}) is outside the text's {n_words} words; spans are "
                    "(start, end) word indices of text.split(), end exclusive."
                )
            vector[start:end] = 1
        rationale = vector
    if unit == "tokens":
        human = np.asarray(rationale)
        if human.ndim != 1 or human.size != len(exp.tokens):
            raise InputError(
                f"a token rationale needs one 0/1 value per token ({len(exp.tokens)}, special "
                f"tokens included); got shape {human.shape}."
            )
        return text, human.astype(bool)
    if not isinstance(text, str):
        raise InputError(
            "a word rationale needs the text: pass text=... (or rationale_unit='tokens')."
        )
    example = Example(position=0, id="0", text=text, text_pair=text_pair)
    words = dataset.collect_rationales([rationale], [example], None)
    limit = max_length(model, tokenizer) if truncation and model is not None else None
    (tokens,) = dataset.token_rationales(tokenizer, [example], words, unit="words", limit=limit)
    if tokens is not None and np.asarray(tokens).size != len(exp.tokens):
        raise InputError(
            "the text's tokens differ from the explanation's; pass the text it explained."
        )
    return text, None if tokens is None else np.asarray(tokens, dtype=bool)


def _is_spans(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(v, (list, tuple)) and len(v) == 2 for v in value)
    )
