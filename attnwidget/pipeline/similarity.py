""":func:`attnwidget.explain` for bare encoders: sentence embeddings and their similarity.

:func:`attnwidget.explain` sends a model without a head (``AutoModel``:
BertModel, XLMRobertaModel, MPNetModel, ...) here. Two uses:

* ``target="similarity"`` with ``text_pair``: the cosine similarity of the two
  texts' pooled embeddings, as sentence-transformers models compare texts
  (Reimers & Gurevych, 2019). Each text runs as its own input, and each is
  explained with the other's embedding held fixed: ``exp.scores`` for the
  first text, ``exp.pair_scores`` for the second, ``exp.target_score`` the
  similarity. Every method applies. The attention methods read the pooled
  query: the first row for ``pooling="cls"``, and for ``pooling="mean"``
  the average of all rows (uniform ``query_weights``; the pooled vector is
  the mean of every position's output). The gradient and re-run methods
  explain the cosine itself (:mod:`attnwidget.relevance.similarity` says
  how LRP and chefer2021 start their relevance from it).
* no target: the attention-only methods (raw, rollout, flow, and those that
  also read each head's values), from the CLS row, a chosen
  ``query_index`` row, or the average of all rows (``pooling="mean"``).
  Methods that explain a target refuse with what they need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnwidget.capture import capture_ready
from attnwidget.capture.kinds import ENCODER
from attnwidget.capture.record import AttentionRecord, SimilarityTarget
from attnwidget.capture.run import Item, default_query
from attnwidget.capture.similarity import (
    SIMILARITY,
    capture_bare,
    check_pooling,
    embed,
    pool_weights,
)
from attnwidget.capture.targets import resolve_query_index
from attnwidget.capture.tokens import check_vocabulary, encode, max_length
from attnwidget.errors import InputError
from attnwidget.methods import ScoreContext, compute_scores, get_method
from attnwidget.methods.registry import resolve_method_options
from attnwidget.pipeline.inputs import as_text_list, broadcast, check_layer_options, present
from attnwidget.relevance.similarity import SimilarityScore
from attnwidget.results.explanation import Explanation

#: Methods computed for a similarity when ``methods=None`` (as for models with a head).
SIMILARITY_METHODS: tuple[str, ...] = ("raw", "rollout", "grad_attention", "input_x_gradient")
#: Methods computed for a bare encoder without a target when ``methods=None``.
ATTENTION_METHODS: tuple[str, ...] = ("raw", "rollout")


def explain_embeddings(
    model: Any, tokenizer: Any, text: Any, arguments: dict[str, Any]
) -> Explanation | list[Explanation]:
    """The bare-encoder branch of :func:`attnwidget.explain` (``arguments``: its locals)."""

    name = type(model).__name__
    if arguments.get("keep") not in (None, "all"):
        raise InputError(
            f"keep={arguments['keep']!r}: a bare encoder's explanations keep all attention "
            "(leave keep unset or pass keep='all')."
        )
    if arguments.get("decoder_text") is not None:
        raise InputError("decoder_text is only for encoder–decoder models (T5, BART).")
    target, pooling, query_index = (
        arguments.get("target"),
        arguments.get("pooling"),
        arguments.get("query_index"),
    )
    texts, single = as_text_list(text, "text")
    pairs = broadcast(arguments.get("text_pair"), len(texts), "text_pair")
    methods = arguments.get("methods")
    if isinstance(methods, str):
        raise InputError(f"methods={methods!r} is a string; pass a list, e.g. [{methods!r}].")
    similarity = _check_target(name, target, pairs, pooling, query_index)
    if pooling is not None:
        pooling = check_pooling(pooling)
    elif similarity:
        pooling = "mean"
    defaults = SIMILARITY_METHODS if similarity else ATTENTION_METHODS
    names = list(defaults if methods is None else methods)
    specs = [get_method(n) for n in names]  # unknown names fail here
    options = resolve_method_options(specs, arguments.get("method_options"))
    check_layer_options(model, options)
    if not similarity:
        _check_attention_only(name, [s.name for s in specs if s.explains_target])
    if pooling == "mean" and options.get("attention_norm", {}).get("heads_combined"):
        raise InputError(
            "attention_norm with heads_combined=True reads one query row, but mean pooling "
            "reads every row; use pooling='cls', a query_index, or heads_combined=False."
        )
    limit, truncation = max_length(model, tokenizer), bool(arguments.get("truncation"))
    readable = bool(arguments.get("readable_tokens", True))
    values = any("head_values" in spec.needs for spec in specs)

    def item(value: str) -> Item:
        encoding = encode(tokenizer, value, text_pair=None, limit=limit, truncation=truncation)
        check_vocabulary(model, tokenizer, list(encoding["input_ids"]))
        types = encoding.get("token_type_ids")
        return Item(list(encoding["input_ids"]), None if types is None else list(types), None)

    explanations = []
    with capture_ready(model):
        for first, second in zip(texts, pairs, strict=True):
            a = item(first)
            if not similarity:
                record = capture_bare(
                    model, tokenizer, a, similarity=None, readable=readable, values=values
                )
                row = _attention_row(record, tokenizer, query_index, pooling)
                scores, details = compute_scores(names, _context(record, row, pooling, options))
                explanations.append(_explanation(record, row, scores, details, options, pooling))
                continue
            # similarity (the only way here): a second text and a pooling, checked above
            assert second is not None and pooling is not None
            b = item(second)
            other_of_a, other_of_b = embed(model, b, pooling), embed(model, a, pooling)
            records = [
                capture_bare(
                    model,
                    tokenizer,
                    example,
                    similarity=SimilarityTarget(other, pooling),
                    readable=readable,
                    values=values,
                )
                for example, other in ((a, other_of_a), (b, other_of_b))
            ]
            results = [
                compute_scores(names, _context(record, 0, pooling, options)) for record in records
            ]
            exp = _explanation(records[0], 0, *results[0], options, pooling)
            exp.pair_tokens = records[1].tokens
            exp.pair_attentions = records[1].attentions
            exp.pair_scores, exp.pair_details = results[1]
            explanations.append(exp)
    return explanations[0] if single else explanations


def _check_target(
    name: str, target: Any, pairs: Sequence[str | None], pooling: Any, query_index: Any
) -> bool:
    """True for a similarity target; refuses what a bare encoder cannot explain."""
    if isinstance(target, list):
        if any(t != target[0] for t in target):
            raise InputError(
                "a bare encoder takes one target for all texts: target='similarity' "
                "(with text_pair) or None (attention only)."
            )
        target = target[0] if target else None
    if target not in (None, SIMILARITY):
        raise InputError(
            f"target={target!r}: {name} is a bare encoder without a head, so there is no class "
            "or token to explain. Pass target='similarity' with text_pair=... to explain the "
            "cosine similarity of two texts' pooled embeddings, leave target unset for the "
            "attention-only methods, or load the model with a head (e.g. "
            "AutoModelForSequenceClassification, AutoModelForMaskedLM)."
        )
    given_pairs = [p for p in pairs if p is not None]
    if target == SIMILARITY:
        if len(given_pairs) != len(pairs):
            raise InputError(
                "target='similarity' compares two texts' embeddings; pass the second one as "
                "text_pair=... (one per text for a list of texts)."
            )
        if query_index is not None:
            raise InputError(
                f"query_index={query_index} cannot be combined with target='similarity': the "
                "pooling decides which rows the embedding reads (pooling='cls': the first "
                "token; 'mean': every token)."
            )
        return True
    if given_pairs:
        raise InputError(
            f"text_pair was given, but {name} is a bare encoder: pass target='similarity' to "
            "explain the cosine similarity of the two texts' pooled embeddings (each text "
            "runs on its own), or load the model with a head for a sentence-pair classifier."
        )
    if pooling is not None and query_index is not None:
        raise InputError(
            f"pooling={pooling!r} and query_index={query_index} both choose the query; pass one."
        )
    return False


def _check_attention_only(name: str, explaining: list[str]) -> None:
    if not explaining:
        return
    raise InputError(
        f"{', '.join(explaining)} explain{'s' if len(explaining) == 1 else ''} a target "
        f"(they need gradients or re-runs of a score), but {name} is a bare encoder without "
        "a head, so there is no score to explain. Either pass target='similarity' with "
        "text_pair=... (and pooling='mean' or 'cls') to explain the cosine similarity of two "
        "texts' pooled embeddings, or load the model with a head (e.g. "
        "AutoModelForSequenceClassification, AutoModelForMaskedLM). Without a target, the "
        "attention-only methods apply: raw, rollout, flow, effective_attention, attention_norm."
    )


def _attention_row(
    record: AttentionRecord, tokenizer: Any, query_index: Any, pooling: str | None
) -> int:
    n = len(record.input_ids)
    if pooling is not None or query_index is not None:
        return resolve_query_index(query_index, 0, n)
    # CLS for a bidirectional encoder, the last token for a causal one.
    first_layer = None if record.attentions is None else record.attentions[0]
    return default_query(ENCODER, list(record.input_ids), first_layer, tokenizer, 0)


def _context(
    record: AttentionRecord, row: int, pooling: str | None, options: dict[str, dict[str, Any]]
) -> ScoreContext:
    n = len(record.input_ids)
    score = None if record.call is None else SimilarityScore(record.call)

    def as64(array: np.ndarray | None) -> np.ndarray | None:
        return None if array is None else array.astype(np.float64)

    return ScoreContext(
        attentions=present(record.attentions, "attentions").astype(np.float64),
        query_index=row,
        attention_grads=as64(record.attention_grads),
        embeddings=record.embeddings.astype(np.float64),
        embedding_grads=as64(record.embedding_grads),
        input_ids=record.input_ids,
        blank_token_id=record.blank_token_id,
        keep_mask=~record.special_mask,
        target_score=score,
        target_probability=None if score is None else score.probability,
        options=options,
        query_weights=pool_weights(n, "mean") if pooling == "mean" else None,
        head_values=as64(record.head_values),
        head_output_weights=record.head_output_weights,
    )


def _explanation(
    record: AttentionRecord,
    row: int,
    scores: dict[str, np.ndarray],
    details: dict[str, dict[str, Any]],
    options: dict[str, dict[str, Any]],
    pooling: str | None,
) -> Explanation:
    similarity = record.call is not None
    return Explanation(
        tokens=record.tokens,
        attentions=record.attentions,
        query_index=row,
        scores=scores,
        target=SIMILARITY if similarity else None,
        raw_tokens=record.raw_tokens,
        input_ids=record.input_ids,
        kind="embedding",
        attention_grads=record.attention_grads,
        details=details,
        method_options={name: dict(values) for name, values in options.items()},
        target_score=float(record.logits[0]) if similarity else None,
        pooling=pooling,
    )
