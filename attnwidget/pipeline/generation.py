""":func:`explain_generation`: explain a generated text token by token.

Step t explains the t-th generated token given the prompt and the tokens
generated before it, as Inseq does (Sarti et al. 2023, "Inseq: An
Interpretability Toolkit for Sequence Generation Models", ACL demo): each step
is an ordinary :class:`~attnwidget.Explanation`, equal to
``explain(model, tokenizer, prompt + generated[:t], target=generated[t])``.
Attention of every step comes from one forward pass over the whole sequence
(decoder attention is causal, so each step's prefix is the top-left block of
the full pass); gradients need one backward per step, batched
(:mod:`attnwidget.capture.generation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnwidget._keywords import check_keywords
from attnwidget.capture import CAUSAL_LM, ENCODER_DECODER, capture_ready, model_kind
from attnwidget.capture.generation import StepCapture, capture_steps, check_ids, decode
from attnwidget.capture.run import Item
from attnwidget.capture.tokens import (
    LengthLimit,
    check_vocabulary,
    describe_value,
    encode,
    max_length,
    token_label,
)
from attnwidget.errors import InputError, ModelNotSupportedError
from attnwidget.methods import ScoreContext, compute_scores, get_method, sinks
from attnwidget.methods.registry import resolve_method_options
from attnwidget.pipeline.explain import DEFAULT_METHODS, _explanation
from attnwidget.pipeline.inputs import (
    check_model,
    check_tokenizer,
    decoder_start_id,
    plan_ignored,
    present,
)
from attnwidget.results.explanation import Explanation
from attnwidget.results.generation import GenerationExplanation

#: What a method may read for the decoder-prefix scores of an encoder–decoder.
_PREFIX_NEEDS = frozenset({"attentions", "attention_grads", "embedding_grads"})


@check_keywords(renamed={"prompt": "text"})
def explain_generation(
    model: Any,
    tokenizer: Any,
    text: str,
    *,
    max_new_tokens: int = 20,
    generated: str | Sequence[int] | None = None,
    methods: Sequence[str] | None = None,
    method_options: dict[str, dict[str, Any]] | None = None,
    do_sample: bool = False,
    seed: int | None = None,
    readable_tokens: bool = True,
    ignore_keys: sinks.IgnoreKeys = None,
) -> GenerationExplanation:
    """Generate a continuation of ``text`` (the prompt) and explain every generated token.

    Args:
        model: a causal LM (GPT-2, Llama-style, ``attnwidget.demo.load("sva-causal")``)
            or an encoder–decoder LM (T5, BART).
        tokenizer: its tokenizer.
        text: the prompt, the text to continue (encoder–decoders: the source
            text). Named ``prompt`` before; that name still works for one
            release, with a DeprecationWarning.
        max_new_tokens: at most this many tokens are generated (greedy or
            sampled); generation stops early after an end-of-sequence token.
        generated: force this continuation instead of generating: a text
            (tokenised on its own, without special tokens) or a list of token
            ids; ``max_new_tokens`` is then not used.
        methods: registered method names (default: :data:`attnwidget.DEFAULT_METHODS`).
        method_options: per-method options, checked as in :func:`attnwidget.explain`.
        do_sample: sample each token from the model's softmax (temperature 1,
            no top-k or top-p) instead of taking the argmax.
        seed: seeds the sampler's own ``torch.Generator`` (same seed, same
            text); None uses torch's global generator.
        readable_tokens: strip tokenizer markers (``Ġ``, ``##``, ``▁``).
        ignore_keys: key positions left out of every attention row of every
            step, rows renormalised, as in :func:`attnwidget.explain` (causal
            LMs only): ``"first"``, ``"special"`` (each step's special tokens) or
            a list of positions within the prompt (negative ones count from the
            end of each step's prefix). ``gexp.step(t).ignored_keys`` records them.

    Every step keeps its own attention and attention gradients, as
    :func:`attnwidget.explain` with ``keep="all"`` does: T steps of an
    L-layer, H-head model over prefixes of up to N tokens hold about
    2·T·L·H·N² float32 values, and each gradient batch runs
    :data:`attnwidget.capture.generation.STEP_BATCH` copies of the sequence
    at once. For long prompts or large models explain fewer steps (force a
    shorter ``generated``) or call ``explain`` on the steps of interest.

    Returns:
        A :class:`GenerationExplanation`.

    Raises:
        InputError: empty prompt, ``max_new_tokens`` < 1, a forced
            continuation that is empty or holds invalid ids, a sequence longer
            than the model accepts, bad options, a seed that is not an int; a
            model's name or None, a missing tokenizer or one of another model.
        UnknownMethodError: a name in ``methods`` is not registered.
        ModelNotSupportedError: the model does not generate text (a classifier,
            a masked LM or a bare encoder).
    """
    check_model(model)
    kind = model_kind(model)
    if kind not in (CAUSAL_LM, ENCODER_DECODER):
        raise ModelNotSupportedError(
            f"{type(model).__name__} does not generate text, so there are no generation steps "
            "to explain; use a causal LM (AutoModelForCausalLM: GPT-2, Llama) or an "
            "encoder–decoder LM (AutoModelForSeq2SeqLM: T5, BART), or explain one prediction "
            "with attnwidget.explain(model, tokenizer, text)."
        )
    check_tokenizer(tokenizer, model, "explain_generation")
    ignore = sinks.check_ignore_keys(ignore_keys)
    if not isinstance(text, str):
        raise InputError(f"text: the prompt must be a string, got {type(text).__name__}.")
    if not text.strip():
        raise InputError("text: the prompt is empty; pass the text to continue.")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)):
        raise InputError(f"max_new_tokens must be an int, got {type(max_new_tokens).__name__}.")
    if max_new_tokens < 1:
        raise InputError(f"max_new_tokens={max_new_tokens}; generate at least 1 token.")
    if seed is not None and (
        isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer))
    ):  # checked with or without do_sample: a bad seed is a mistake either way
        raise InputError(
            f"seed={seed!r} is {describe_value(seed)}; pass an int (e.g. seed=0) to make "
            "sampling repeatable, or None for torch's global generator."
        )
    if isinstance(methods, str):
        raise InputError(f"methods={methods!r} is a string; pass a list, e.g. [{methods!r}].")
    names = list(DEFAULT_METHODS if methods is None else methods)
    options = resolve_method_options([get_method(name) for name in names], method_options)
    limit = max_length(model, tokenizer)
    encoding = encode(tokenizer, text, text_pair=None, limit=limit, truncation=False)
    check_vocabulary(model, tokenizer, list(encoding["input_ids"]))
    item = _prompt_item(model, encoding, kind)
    plan_ignored(ignore, kind, "all", [len(item.input_ids)])  # the shortest step: the prompt
    forced = _forced_ids(tokenizer, generated, _vocab_size(model, tokenizer))
    budget = len(forced) if forced is not None else int(max_new_tokens)
    used = len(item.input_ids) if kind == CAUSAL_LM else 1
    if limit is not None and used + budget - 1 > limit:
        where = limit.fix() if isinstance(limit, LengthLimit) else f"the model accepts {limit}"
        raise InputError(
            f"the prompt ({used} tokens) and {budget} new tokens need {used + budget - 1} "
            f"positions but {where.replace('shorten the text', 'shorten the prompt')} or "
            "lower max_new_tokens."
        )
    gradients = any(get_method(name).explains_target for name in names)
    values = any("head_values" in get_method(name).needs for name in names)
    with capture_ready(model):
        if forced is None:
            forced = decode(
                model,
                item,
                kind=kind,
                max_new_tokens=int(max_new_tokens),
                stop_ids=_stop_ids(model, tokenizer),
                do_sample=bool(do_sample),
                seed=seed,
            )
        captured = capture_steps(
            model,
            tokenizer,
            item,
            forced,
            kind=kind,
            gradients=gradients,
            values=values,
            readable=readable_tokens,
        )
        steps = [_explanation(c.record, names, options, ignore) for c in captured]
    sinks.warn_if_none_left_out(ignore, [step.ignored_keys for step in steps])
    for explanation in steps:
        if not gradients:  # none was taken: do not show zeros as gradients
            explanation.attention_grads = None
    return _assemble(tokenizer, kind, item, forced, steps, captured, names, options, gradients)


def _prompt_item(model: Any, encoding: Any, kind: str) -> Item:
    types = encoding.get("token_type_ids")
    item = Item(list(encoding["input_ids"]), None if types is None else list(types), None)
    if kind == ENCODER_DECODER:
        item.decoder_ids = [decoder_start_id(model)]
    return item


def _vocab_size(model: Any, tokenizer: Any) -> int:
    embeddings = model.get_input_embeddings()
    return int(getattr(embeddings, "num_embeddings", len(tokenizer)))


def _forced_ids(tokenizer: Any, generated: Any, vocab: int) -> list[int] | None:
    if generated is None:
        return None
    if isinstance(generated, str):
        if not generated:
            raise InputError("generated is empty; pass the continuation to explain or None.")
        ids = list(tokenizer(generated, add_special_tokens=False)["input_ids"])
        if not ids:
            raise InputError(f"generated={generated!r} encodes to no token.")
        return ids
    ids = check_ids(list(generated), vocab, "generated")
    if not ids:
        raise InputError("generated is an empty list; pass at least one token id or None.")
    return ids


def _stop_ids(model: Any, tokenizer: Any) -> list[int]:
    value = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if value is None:
        value = getattr(tokenizer, "eos_token_id", None)
    if value is None:
        return []
    return [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


def _prefix_scores(
    capture: StepCapture, names: list[str], options: dict[str, dict[str, Any]]
) -> dict[str, np.ndarray]:
    """Encoder–decoders: each method on the decoder's self-attention and its own inputs."""
    record = capture.record
    grads = capture.decoder_attention_grads
    context = ScoreContext(
        attentions=present(record.decoder_attentions, "decoder_attentions").astype(np.float64),
        query_index=record.query_index,
        attention_grads=None if grads is None else grads.astype(np.float64),
        embeddings=present(capture.decoder_embeddings, "decoder_embeddings").astype(np.float64),
        embedding_grads=(
            None
            if capture.decoder_embedding_grads is None
            else capture.decoder_embedding_grads.astype(np.float64)
        ),
        input_ids=np.asarray(capture.decoder_ids),
        options={name: options[name] for name in names},
    )
    return compute_scores(names, context)[0]


def _assemble(
    tokenizer: Any,
    kind: str,
    item: Item,
    generated: list[int],
    steps: list[Explanation],
    captured: list[StepCapture],
    names: list[str],
    options: dict[str, dict[str, Any]],
    gradients: bool,
) -> GenerationExplanation:
    count = len(generated)
    generated_tokens = [token_label(i, tokenizer) for i in generated]
    probabilities = np.array(
        [float(present(s.probabilities, "probabilities")[s.target_id]) for s in steps],
        dtype=np.float32,
    )
    n_prompt = len(item.input_ids)
    column = steps[-1] if kind == CAUSAL_LM else steps[0]  # its tokens are the columns
    if kind == CAUSAL_LM:
        tokens = list(steps[-1].tokens)
        lengths = [n_prompt + t for t in range(count)]
        scores = {name: _ragged([s.scores[name] for s in steps], len(tokens)) for name in names}
        source = {name: matrix[:, :n_prompt].copy() for name, matrix in scores.items()}
        prefix = {name: matrix[:, n_prompt:].copy() for name, matrix in scores.items()}
        prefix_tokens = tokens[n_prompt:]
        prefix_lengths = lengths
    else:
        tokens = list(steps[0].tokens)
        lengths = [n_prompt] * count
        scores = {name: np.stack([s.scores[name] for s in steps]) for name in names}
        source = {name: matrix.copy() for name, matrix in scores.items()}
        readers = [
            name
            for name in names
            if get_method(name).needs <= _PREFIX_NEEDS
            and (gradients or not get_method(name).explains_target)
        ]
        rows = [_prefix_scores(c, readers, options) for c in captured]
        prefix = {name: _ragged([r[name] for r in rows], count) for name in readers}
        prefix_tokens = list(steps[-1].decoder_tokens or [])
        prefix_lengths = [t + 1 for t in range(count)]
    return GenerationExplanation(
        prompt_tokens=list(steps[0].tokens[:n_prompt]),
        prompt_ids=np.asarray(item.input_ids, dtype=np.int64),
        generated_tokens=generated_tokens,
        generated_ids=np.asarray(generated, dtype=np.int64),
        tokens=tokens,
        scores=scores,
        source_scores=source,
        prefix_tokens=prefix_tokens,
        prefix_scores=prefix,
        prefix_lengths=prefix_lengths if kind == ENCODER_DECODER else lengths,
        probabilities=probabilities,
        kind=kind,
        methods=names,
        text=tokenizer.decode(generated, skip_special_tokens=False),
        raw_tokens=list(column.raw_tokens or tokens),
        special_mask=np.array(
            tokenizer.get_special_tokens_mask(
                list(present(column.input_ids, "input_ids")), already_has_special_tokens=True
            ),
            dtype=bool,
        ),
        steps=steps,
    )


def _ragged(rows: list[np.ndarray], width: int) -> np.ndarray:
    """Rows of growing length as one float32 (len(rows), width) array, NaN beyond each."""
    out = np.full((len(rows), width), np.nan, dtype=np.float32)
    for t, row in enumerate(rows):
        out[t, : len(row)] = row
    return out
