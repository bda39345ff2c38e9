""":func:`explain`: one call from a model, a tokenizer and a text to an Explanation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from attnwidget._keywords import check_keywords
from attnwidget.capture import (
    ENCODER,
    IMAGE,
    AttentionRecord,
    capture,
    capture_ready,
    model_kind,
)
from attnwidget.capture.image_inputs import ImageLike
from attnwidget.capture.kinds import is_bare_encoder
from attnwidget.capture.run import default_query
from attnwidget.capture.targets import Target, resolve_query_index
from attnwidget.capture.tokens import max_length
from attnwidget.errors import InputError
from attnwidget.methods import ScoreContext, compute_scores, get_method, sinks
from attnwidget.methods.keep import keep_plan
from attnwidget.methods.registry import resolve_method_options
from attnwidget.methods.sinks import IgnoreKeys
from attnwidget.pipeline.image import explain_images
from attnwidget.pipeline.inputs import (
    as_text_list,
    broadcast,
    check_layer_options,
    check_model,
    check_pooled_row,
    check_tokenizer,
    plan_ignored,
    text_item,
)
from attnwidget.pipeline.similarity import explain_embeddings
from attnwidget.relevance.rerun import TargetScore, target_probability
from attnwidget.results.explanation import Explanation

if TYPE_CHECKING:  # neither is imported for a type
    import torch
    from PIL import Image

#: Methods computed when ``methods=None``: everything one forward+backward gives.
DEFAULT_METHODS: tuple[str, ...] = ("raw", "rollout", "grad_attention", "input_x_gradient")


# model and tokenizer stay Any throughout the package: any Hugging Face model (or a
# module with a compatible forward and config), from transformers 4.41 to 5, custom
# and pickled classes included, with its tokenizer or image processor, is taken
# duck-typed; a Protocol would restate much of transformers' call surface.

#: What of the attention :func:`explain` keeps (see ``keep`` there).
Keep = Literal["all", "fused", "rows"]
#: How a bare encoder's hidden states become one sentence embedding.
Pooling = Literal["mean", "cls"]


@overload
def explain(
    model: Any,
    tokenizer: Any,
    text: str | np.ndarray | Image.Image,
    *,
    text_pair: str | Sequence[str | None] | None = ...,
    target: Target | Sequence[Target] = ...,
    methods: Sequence[str] | None = ...,
    query_index: int | None = ...,
    decoder_text: str | None = ...,
    pooling: Pooling | None = ...,
    truncation: bool = ...,
    readable_tokens: bool = ...,
    method_options: dict[str, dict[str, Any]] | None = ...,
    keep: Keep | None = ...,
    ignore_keys: IgnoreKeys = ...,
) -> Explanation: ...
@overload
def explain(
    model: Any,
    tokenizer: Any,
    text: list[str] | Sequence[ImageLike],
    *,
    text_pair: str | Sequence[str | None] | None = ...,
    target: Target | Sequence[Target] = ...,
    methods: Sequence[str] | None = ...,
    query_index: int | None = ...,
    decoder_text: str | None = ...,
    pooling: Pooling | None = ...,
    truncation: bool = ...,
    readable_tokens: bool = ...,
    method_options: dict[str, dict[str, Any]] | None = ...,
    keep: Keep | None = ...,
    ignore_keys: IgnoreKeys = ...,
) -> list[Explanation]: ...
@overload
def explain(  # a (B, 3, H, W) batch gives a list, a single image one Explanation
    model: Any,
    tokenizer: Any,
    text: torch.Tensor,
    *,
    text_pair: str | Sequence[str | None] | None = ...,
    target: Target | Sequence[Target] = ...,
    methods: Sequence[str] | None = ...,
    query_index: int | None = ...,
    decoder_text: str | None = ...,
    pooling: Pooling | None = ...,
    truncation: bool = ...,
    readable_tokens: bool = ...,
    method_options: dict[str, dict[str, Any]] | None = ...,
    keep: Keep | None = ...,
    ignore_keys: IgnoreKeys = ...,
) -> Explanation | list[Explanation]: ...


@check_keywords()
def explain(
    model: Any,
    tokenizer: Any,
    text: str | Sequence[str] | ImageLike | Sequence[ImageLike],
    *,
    text_pair: str | Sequence[str | None] | None = None,
    target: Target | Sequence[Target] = None,
    methods: Sequence[str] | None = None,
    query_index: int | None = None,
    decoder_text: str | None = None,
    pooling: str | None = None,  # the overloads say which strings; checked at run time
    truncation: bool = False,
    readable_tokens: bool = True,
    method_options: dict[str, dict[str, Any]] | None = None,
    keep: str | None = None,
    ignore_keys: IgnoreKeys = None,
) -> Explanation | list[Explanation]:
    """Run ``model`` once on ``text`` and explain its prediction.

    One forward and one backward pass capture the post-softmax attention of
    every layer and head (eval mode, eager attention), its gradient with
    respect to the target score, and the input embeddings and their
    gradient. The model is left exactly as it was (mode, attention
    implementation, ``requires_grad`` flags; no hooks, no parameter gradients).

    Args:
        model: a Hugging Face model with a head: sequence classifier, masked
            LM, causal LM or encoder–decoder LM; or a bare encoder
            (``AutoModel``) for sentence embeddings (see ``target`` and
            ``pooling``). Any device and dtype; methods compute in float32 and
            return numpy.
        tokenizer: its tokenizer.
        text: one text, or a list of texts (returns a list of explanations;
            inputs are batched by length, so no padding enters any score).
        text_pair: the second sentence of a pair (or a list of them).
        target: what to explain. Classifiers: class index or label name
            (default: the predicted class). Causal LMs: next token as a string
            or id (default: the predicted next token). Masked LMs: the token at
            the mask position (default: the predicted one). Encoder–decoder:
            the next decoder token. A list gives one target per text.
            Bare encoders (``AutoModel``, sentence embeddings):
            ``"similarity"`` with ``text_pair`` explains the cosine similarity
            of the two texts' pooled embeddings, each text run on its own
            (``exp.pair_tokens``/``exp.pair_scores`` hold the second text's;
            :mod:`attnwidget.pipeline.similarity`); unset, only the attention
            methods apply.
        methods: names of registered methods (default: raw, rollout,
            grad_attention, input_x_gradient); see
            :func:`attnwidget.available_methods`.
        query_index: the row to explain; default CLS (encoder classifiers),
            the last position (causal LMs), the mask position (masked LMs), the
            last decoder position (encoder–decoder). A sequence classifier's
            logit comes from one pooled position (CLS, or the last token of a
            GPT-2-style classifier) whatever this says, so another row is
            refused when a method that explains the logit is requested
            (gradient and re-run methods); attention-only methods (raw,
            rollout, flow) may read any row.
        decoder_text: encoder–decoder only: the decoder's prefix (default:
            just the decoder start token).
        pooling: bare encoders only: how the last hidden states become the
            sentence embedding, ``"mean"`` (over all tokens, as
            sentence-transformers; the default with ``target="similarity"``) or
            ``"cls"`` (the first token). Without a target it chooses the query
            of the attention methods (mean: the average of all rows).
        truncation: cut text longer than the model's maximum length (with a
            warning) instead of raising.
        readable_tokens: strip tokenizer markers (``Ġ``, ``##``, ``▁``).
        method_options: per-method keyword options, e.g.
            ``{"rollout": {"head_fusion": "max"}, "integrated_gradients": {"steps": 64}}``;
            :func:`attnwidget.method_info` lists each method's options. They
            are checked before the model runs: options for a method that is
            unknown or not in ``methods``, unknown option names and invalid
            values raise :class:`InputError`. The options used, defaults
            included, are in ``Explanation.method_options``.
        keep: what of the attention is kept (:mod:`attnwidget.capture.keep`):
            ``"all"`` the (L, H, n, n) attention and its gradient; ``"fused"``
            each layer's head mean (L, n, n) and the query rows; ``"rows"``
            only rows (L·H·n floats). Reduced inside the backward pass, so the
            full tensor never exists as numpy. Default (None): ``"all"`` while
            layers·heads·n² ≤ 2²⁶ floats (256 MiB in float32; e.g. BERT-base
            up to 512 tokens) or when a method needs it; else ``"fused"``
            while layers·n² ≤ 2²⁶; else the smallest keep the requested
            methods work from (raw, grad_attention, rollout and the gradient
            methods: "rows"; flow: "fused"; head-level methods such as
            chefer2021, effective_attention, attention_norm: "all"). A method
            that needs more than an explicit ``keep`` gives an InputError
            naming it. Llama-style causal LMs run with sdpa under "fused" and
            "rows" (attention recomputed in blocks: :mod:`attnwidget.capture.recompute`).
        ignore_keys: attention sinks: keys left out of every attention row, rows
            renormalised over the rest, for the methods and views: ``"first"`` (0),
            ``"special"`` (special tokens; images: non-patch tokens) or a list of
            positions (negative from the end); see :mod:`attnwidget.methods.sinks`.
            Needs keep "all"; not for encoder–decoders or bare encoders. None: no change.

    Returns:
        An :class:`Explanation` (or a list of them for a list of texts).

    Raises:
        UnknownMethodError: a name in ``methods`` is not registered.
        InputError: bad text, target, query_index or method_options; a model's
            name, None or a model without weights (meta device); a missing
            tokenizer or one whose ids pass the model's embedding; the model is
            left as it was.
    """
    check_model(model)  # a name, None, or no weights: refused before anything runs
    ignore = sinks.check_ignore_keys(ignore_keys)
    if is_bare_encoder(model):  # sentence embeddings: attnwidget.explain_similarity
        sinks.refuse_ignored(ignore, "bare encoders (sentence embeddings)")
        check_tokenizer(tokenizer, model, "explain")
        return explain_embeddings(model, tokenizer, text, locals())
    if pooling is not None or (isinstance(target, str) and target == "similarity"):
        raise InputError(
            f"{'pooling' if pooling is not None else 'target=' + repr(target)} is for bare "
            f"encoders (sentence embeddings), but {type(model).__name__} has a head; load "
            "the encoder with transformers.AutoModel to explain the similarity of two "
            "texts' pooled embeddings, or leave it out to explain this model's prediction."
        )
    kind = model_kind(model)
    if kind == IMAGE:
        return _explain_image(model, tokenizer, text, locals())
    check_tokenizer(tokenizer, model, "explain")
    texts, single = as_text_list(text, "text")
    pairs = broadcast(text_pair, len(texts), "text_pair")
    targets = target if isinstance(target, list) else [target] * len(texts)
    if len(targets) != len(texts):
        raise InputError(f"{len(targets)} targets for {len(texts)} texts; pass one per text.")
    if isinstance(methods, str):
        raise InputError(f"methods={methods!r} is a string; pass a list, e.g. [{methods!r}].")
    names = list(DEFAULT_METHODS if methods is None else methods)
    # Unknown names and invalid options fail here, before the model runs.
    options = resolve_method_options([get_method(name) for name in names], method_options)
    check_layer_options(model, options)
    keep, smallest = keep_plan(keep, [get_method(name) for name in names], options)
    limit = max_length(model, tokenizer)
    items = [
        text_item(
            model,
            tokenizer,
            t,
            p,
            kind=kind,
            limit=limit,
            truncation=truncation,
            decoder_text=decoder_text,
        )
        for t, p in zip(texts, pairs, strict=True)
    ]
    keep = plan_ignored(ignore, kind, keep, [len(item.input_ids) for item in items])
    if kind == ENCODER and query_index is not None:
        for item in items:  # rows that cannot be a pooled position fail before the run
            n = len(item.input_ids)
            row = resolve_query_index(query_index, 0, n)
            check_pooled_row(row, (0, n - 1), names, query_index)
    explanations: list[Explanation] = []
    # Each head's values are hooked only for the methods that read them.
    values = any("head_values" in get_method(name).needs for name in names)
    with capture_ready(model):
        # Group consecutive texts sharing a target so each group is one batch.
        for start, end in _runs(targets):
            records = capture(
                model,
                tokenizer,
                items[start:end],
                kind=kind,
                target=targets[start],
                query_index=query_index,
                readable=readable_tokens,
                values=values,
                keep=keep,
                smallest_keep=smallest,
            )
            for record in records:
                if kind == ENCODER:  # the pooled row is known once the model has run
                    pooled = record.default_query_index
                    if pooled is None:
                        attentions = record.attentions
                        first_layer = None if attentions is None else attentions[0]
                        ids = list(record.input_ids)
                        pooled = default_query(ENCODER, ids, first_layer, tokenizer, 0)
                    check_pooled_row(record.query_index, (pooled,), names, query_index)
            explanations.extend(_explanation(r, names, options, ignore) for r in records)
    sinks.warn_if_none_left_out(ignore, [e.ignored_keys for e in explanations])
    return explanations[0] if single else explanations


def _explain_image(
    model: Any, processor: Any, images: Any, arguments: dict[str, Any]
) -> Explanation | list[Explanation]:
    """The image branch of :func:`explain`: text-only arguments refused, options checked."""
    text_only = {
        "text_pair": None,
        "decoder_text": None,
        "truncation": False,
        "readable_tokens": True,
    }
    given = [name for name, default in text_only.items() if arguments[name] != default]
    if given:
        raise InputError(
            f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for text models; "
            f"{type(model).__name__} explains images: explain(model, processor, image)."
        )
    if arguments.get("keep") not in (None, "all"):
        raise InputError(
            f"keep={arguments['keep']!r} is for text models; image explanations keep "
            "all attention (leave keep unset or pass keep='all')."
        )
    methods = arguments["methods"]
    if isinstance(methods, str):
        raise InputError(f"methods={methods!r} is a string; pass a list, e.g. [{methods!r}].")
    names = list(DEFAULT_METHODS if methods is None else methods)
    options = resolve_method_options([get_method(n) for n in names], arguments["method_options"])
    check_layer_options(model, options)
    return explain_images(
        model,
        processor,
        images,
        names=names,
        options=options,
        target=arguments["target"],
        query_index=arguments["query_index"],
        ignore=arguments["ignore"],
    )


def _runs(targets: list[Any]) -> list[tuple[int, int]]:
    runs, start = [], 0
    for index in range(1, len(targets) + 1):
        if index == len(targets) or targets[index] != targets[start]:
            runs.append((start, index))
            start = index
    return runs


def _explanation(
    record: AttentionRecord,
    names: list[str],
    options: dict[str, dict[str, Any]],
    ignore: IgnoreKeys = None,
) -> Explanation:
    attentions, grads = record.attentions, record.attention_grads
    full = attentions is not None  # keep="all"; else no float64 copies are made
    special = record.special_mask.nonzero()[0]
    ignored = sinks.resolve_ignore_keys(ignore, len(record.tokens), special)
    maps = None if attentions is None else attentions.astype(np.float64)
    embedding_grads = record.embedding_grads
    assert embedding_grads is not None  # only an attention-only similarity record lacks them
    context = ScoreContext(
        # The methods read the rows without the ignored keys; the gradient stays dy/dA.
        attentions=None if maps is None else sinks.renormalise_keys(maps, ignored),
        query_index=record.query_index if record.query_weights is None else 0,
        attention_grads=grads.astype(np.float64) if full and grads is not None else None,
        embeddings=record.embeddings.astype(np.float64),
        embedding_grads=embedding_grads.astype(np.float64),
        input_ids=record.input_ids,
        blank_token_id=record.blank_token_id,
        keep_mask=~record.special_mask,
        target_score=None if record.call is None else TargetScore(record.call),
        target_probability=None if record.call is None else target_probability(record.call),
        options=options,
        query_weights=record.query_weights,
        head_values=None if record.head_values is None else record.head_values.astype(np.float64),
        head_output_weights=record.head_output_weights,
        keep=record.keep,
        fused_attentions=record.fused_attentions,
        attention_rows=record.attention_rows,
        rollout_rows=record.rollout_rows,
        grad_attention_rows=record.grad_attention_rows,
    )
    scores, details = compute_scores(names, context)
    logits = record.logits
    exponentials = np.exp(logits.astype(np.float64) - logits.max())
    probabilities = exponentials / exponentials.sum()
    return Explanation(
        tokens=record.tokens,
        attentions=record.attentions,
        query_index=record.query_index,
        scores=scores,
        target=record.target_label,
        target_id=record.target_id,
        logits=logits,
        probabilities=probabilities.astype(np.float32),
        raw_tokens=record.raw_tokens,
        input_ids=record.input_ids,
        sentence_b_start=record.sentence_b_start,
        kind=record.kind,
        attention_grads=record.attention_grads,
        decoder_tokens=record.decoder_tokens,
        decoder_attentions=record.decoder_attentions,
        cross_attentions=record.cross_attentions,
        details=details,
        method_options={name: dict(values) for name, values in options.items()},
        target_score=float(record.logits[record.target_id]),
        keep=record.keep,
        fused_attentions=record.fused_attentions,
        attention_rows=record.attention_rows,
        ignored_keys=ignored,
    )
