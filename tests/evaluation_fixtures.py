"""A synthetic EvaluationResult for the view tests: any method, metric and example
names (HTML included), seeded values, no model run."""

from __future__ import annotations

import numpy as np

from attnwidget.evaluation import EvaluationResult, Metric
from attnwidget.evaluation._compute import ChunkResult, ExampleResult
from attnwidget.evaluation.dataset import Example


def synthetic_result(
    methods: list[str],
    metrics: list[tuple[str, bool]],
    ids: list[str],
    *,
    seed: int = 0,
    nan_at: tuple[int, int, int] | None = None,
) -> EvaluationResult:
    """``metrics``: (name, higher_is_better) pairs; ``nan_at``: (example, method, metric)."""
    rng = np.random.default_rng(seed)
    chosen = [
        Metric(name, f"what {name} measures", higher, "a test", lambda inp: 0.0)
        for name, higher in metrics
    ]
    examples, results = [], []
    for position, ident in enumerate(ids):
        tokens = ["[CLS]", *f"text of {ident}".split(), "[SEP]"]
        examples.append(Example(position=position, id=ident, text=" ".join(tokens[1:-1])))
        result = ExampleResult(
            position=position,
            id=ident,
            target="singular",
            target_id=0,
            probability=0.9,
            tokens=tokens,
            query_index=0,
        )
        for j, method in enumerate(methods):
            result.scores[method] = rng.random(len(tokens)).astype(np.float32)
            values = {m.name: float(rng.random()) for m in chosen}
            if nan_at is not None and nan_at[:2] == (position, j):
                values[chosen[nan_at[2]].name] = float("nan")
            result.values[method] = values
        results.append(result)
    return EvaluationResult(
        chunks=[ChunkResult(0, results)],
        examples=examples,
        methods=methods,
        metrics=chosen,
        config={"confidence": 0.95},
        n_computed=len(ids),
        n_loaded=0,
    )
