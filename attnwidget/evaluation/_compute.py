"""The unit of work of :func:`attnwidget.evaluate`: one chunk of examples.

:func:`compute_chunk` explains a chunk's examples in one
:func:`attnwidget.explain` call and computes every metric of every method on
them. The local and the Dask executors call exactly this function on exactly
the same chunks (cut by position in the data), torch runs with the same
number of threads in both, and the workers' model keeps the weights' memory
alignment (:mod:`._alignment`), so their numbers are identical, and so are
those of a resumed run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnwidget.capture import model_kind
from attnwidget.capture.run import forward_accepts
from attnwidget.errors import InputError
from attnwidget.evaluation._batcher import RowBatcher
from attnwidget.evaluation.dataset import Example
from attnwidget.evaluation.metrics_registry import Metric, MetricInput
from attnwidget.pipeline.explain import explain

#: What ``target`` may be: explain the predicted class, or the example's label.
TARGETS = ("predicted", "label")


@dataclass(frozen=True)
class Plan:
    """Everything a chunk needs besides the model and its examples (pickled to workers)."""

    methods: tuple[str, ...]
    metrics: tuple[Metric, ...]
    replacement_id: int
    target: str = "predicted"
    method_options: dict[str, dict[str, Any]] | None = None
    truncation: bool = False
    torch_threads: int | None = 1
    limit: int | None = None
    k: int | None = None
    forward_batch: int = 512


@dataclass(frozen=True)
class ChunkTask:
    """Chunk ``index``: its examples and their human rationales over tokens (or None)."""

    index: int
    examples: tuple[Example, ...]
    human: tuple[np.ndarray | None, ...]


@dataclass
class ExampleResult:
    """One example's explanation summary and metric values, per method."""

    position: int
    id: str
    target: Any
    target_id: int
    probability: float
    tokens: list[str]
    query_index: int
    #: method -> float32 (n,) token scores.
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    #: method -> metric -> value (NaN: undefined for this example).
    values: dict[str, dict[str, float]] = field(default_factory=dict)
    #: The positions the metrics remove or compare (the words: no special
    #: token, not the query); None when read from an older results file.
    compared: list[int] | None = None


@dataclass
class ChunkResult:
    index: int
    examples: list[ExampleResult]


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Run torch with ``count`` intra-op threads (None: as it is), restored afterwards."""
    import torch

    before = torch.get_num_threads()
    change = count is not None and count != before
    if change:
        assert count is not None  # change implies it
        torch.set_num_threads(int(count))
    try:
        yield
    finally:
        if change:
            torch.set_num_threads(before)


def token_types(model: Any, tokenizer: Any, example: Example, plan: Plan, ids: Any) -> Any:
    """The token type ids the capture gave the model, checked against its tokens."""
    cut = {"truncation": True, "max_length": plan.limit} if plan.truncation and plan.limit else {}
    encoding = tokenizer(example.text, example.text_pair, add_special_tokens=True, **cut)
    if list(encoding["input_ids"]) != [int(i) for i in ids]:
        raise InputError(
            f"example {example.id!r}: the text's tokens differ from the explanation's; pass "
            "the text it explained (the re-runs need a deterministic tokenizer)."
        )
    types = encoding.get("token_type_ids")
    return list(types) if types is not None and forward_accepts(model, "token_type_ids") else None


def compute_chunk(model: Any, tokenizer: Any, plan: Plan, task: ChunkTask) -> ChunkResult:
    """Explain the chunk's examples and compute every metric of every method on them."""
    examples = list(task.examples)
    if plan.target == "label":
        targets: list[Any] = [e.label for e in examples]
    else:
        targets = [None] * len(examples)
    pairs = [e.text_pair for e in examples]
    with torch_threads(plan.torch_threads):
        explanations = explain(
            model,
            tokenizer,
            [e.text for e in examples],
            text_pair=pairs if any(p is not None for p in pairs) else None,
            target=targets,
            methods=list(plan.methods),
            method_options=plan.method_options,
            truncation=plan.truncation,
        )
        types = [
            token_types(model, tokenizer, e, plan, np.asarray(x.input_ids))
            for e, x in zip(examples, explanations, strict=True)
        ]
        results = score_explanations(
            model, tokenizer, plan, examples, explanations, list(task.human), types
        )
    return ChunkResult(index=task.index, examples=results)


def word_mask(ids: Any, query_index: int, special_ids: Any) -> np.ndarray:
    """bool (n,): the tokens the metrics remove or compare: not a special token
    and not the query position (the explained row itself)."""
    out = ~np.isin(np.asarray(ids), list(special_ids))
    out[query_index] = False
    return out


def score_explanations(
    model: Any,
    tokenizer: Any,
    plan: Plan,
    examples: list[Example],
    explanations: list[Any],
    human: list[np.ndarray | None],
    token_types: list[list[int] | None],
) -> list[ExampleResult]:
    """Every metric of every method on explanations already made (one model run for
    all the perturbed copies they need; :mod:`._batcher`)."""
    kind = model_kind(model)
    batcher = RowBatcher(model, kind, forward_batch=plan.forward_batch)
    special = set(getattr(tokenizer, "all_special_ids", None) or [])
    results, inputs = [], []
    for key, (example, exp, rationale, types) in enumerate(
        zip(examples, explanations, human, token_types, strict=True)
    ):
        ids = np.asarray(exp.input_ids, dtype=np.int64)
        # A model's explanation has its target and probabilities.
        assert exp.target_id is not None and exp.probabilities is not None
        batcher.add_example(
            key, target_id=int(exp.target_id), row=exp.query_index, token_type_ids=types
        )
        is_word = word_mask(ids, exp.query_index, special)
        if rationale is not None and np.asarray(rationale).size != ids.size:
            raise InputError(
                f"the rationale of example {example.id!r} has {np.asarray(rationale).size} "
                f"entries for its {ids.size} tokens; pass one per token (special tokens "
                "included) or word vectors with rationale_unit='words'."
            )
        results.append(
            ExampleResult(
                position=example.position,
                id=example.id,
                target=exp.target,
                target_id=int(exp.target_id),
                probability=float(exp.probabilities[exp.target_id]),
                tokens=list(exp.tokens),
                query_index=int(exp.query_index),
                scores={m: np.asarray(exp.scores[m], dtype=np.float32) for m in plan.methods},
                compared=np.flatnonzero(is_word).tolist(),
            )
        )
        candidates = np.flatnonzero(is_word)
        inputs.append(
            {
                m: MetricInput(
                    scores=np.asarray(exp.scores[m], dtype=np.float64),
                    input_ids=ids,
                    candidates=candidates,
                    replacement_id=plan.replacement_id,
                    score=batcher.scorer(key),
                    human=None if rationale is None else np.asarray(rationale, dtype=bool),
                    k=plan.k,
                )
                for m in plan.methods
            }
            if candidates.size
            else None
        )
    _metric_values(plan, inputs)  # collect the perturbed copies
    batcher.run()
    for result, values in zip(results, _metric_values(plan, inputs), strict=True):
        result.values = values
    return results


def _metric_values(
    plan: Plan, inputs: list[dict[str, MetricInput] | None]
) -> list[dict[str, dict[str, float]]]:
    out = []
    for per_method in inputs:
        values: dict[str, dict[str, float]] = {}
        for method in plan.methods:
            if per_method is None:  # no word to remove or compare
                values[method] = {m.name: float("nan") for m in plan.metrics}
                continue
            inp = per_method[method]
            inp._cache.clear()
            values[method] = {m.name: float(m.compute(inp)) for m in plan.metrics}
        out.append(values)
    return out
