"""One model run for every perturbed copy the metrics of a chunk ask for.

Each faithfulness metric asks its scorer for a handful of perturbed copies of
one example (11 for ERASER's curves, 10 per perturbation order). Running the
model once per request would cost a forward pass per (example, method,
metric); instead the metrics run twice. First :class:`RowBatcher` only
*collects* the copies (answering zeros, a valid probability), then
:meth:`RowBatcher.run` runs the model on all distinct copies of the chunk,
grouped by length (no padding enters any score) in batches of
``forward_batch`` (on a CPU, of at most :data:`CPU_TOKENS_PER_BATCH` tokens),
and the metrics run again on the real answers. The batches depend only on
the chunk and the device, so the numbers do too, whichever process computes
the chunk.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from attnwidget.capture.run import model_device, query_logits
from attnwidget.capture.sharing import ForeignGuard, model_lock
from attnwidget.errors import InputError

#: On a CPU, one forward pass takes at most this many tokens (copies × length;
#: one copy at least). Past a few thousand tokens a batch of long copies costs
#: more per copy than smaller batches: 89 copies of 512 tokens of a 6-layer
#: BERT ran 1.3× slower in one batch than one at a time, on one thread and on
#: two, in batches of 4 as fast (``bench/compare.py``). Short copies still go
#: hundreds to a batch.
CPU_TOKENS_PER_BATCH = 2048


class RowBatcher:
    """Collect, run, answer: see the module docstring."""

    def __init__(self, model: Any, kind: str, *, forward_batch: int = 512) -> None:
        self.model, self.kind, self.forward_batch = model, kind, int(forward_batch)
        self.collecting = True
        self._pending: dict[tuple[int, bytes], np.ndarray] = {}
        self._answers: dict[tuple[int, bytes], tuple[float, float]] = {}
        self._examples: dict[int, tuple[int, int, np.ndarray | None]] = {}

    def add_example(
        self, key: int, *, target_id: int, row: int, token_type_ids: Sequence[int] | None
    ) -> None:
        """Register an example: its explained class or token, query row and token types."""
        types = None if token_type_ids is None else np.asarray(token_type_ids, dtype=np.int64)
        self._examples[key] = (int(target_id), int(row), types)

    def scorer(self, key: int) -> Any:
        """``ids (B, n) -> (B, 2)`` (prediction kept, target probability) for example ``key``."""

        def score(ids: Any) -> np.ndarray:
            if isinstance(ids, list):
                raise InputError("evaluate replaces removed tokens; it does not delete them.")
            rows = np.asarray(ids, dtype=np.int64)
            keys = [(key, row.tobytes()) for row in rows]
            if self.collecting:
                for k, row in zip(keys, rows, strict=True):
                    self._pending.setdefault(k, row)
                return np.zeros((len(rows), 2))
            return np.array([self._answers[k] for k in keys], dtype=np.float64)

        return score

    def run(self) -> None:
        """Run the model on every collected copy, then answer from the results."""
        by_length: dict[int, list[tuple[tuple[int, bytes], np.ndarray]]] = {}
        for k, row in self._pending.items():
            by_length.setdefault(row.size, []).append((k, row))
        on_cpu = model_device(self.model).type == "cpu"
        with evaluation_mode(self.model), torch.no_grad():
            for length, group in by_length.items():
                size = self.forward_batch
                if on_cpu:
                    size = max(1, min(size, CPU_TOKENS_PER_BATCH // max(length, 1)))
                for start in range(0, len(group), size):
                    part = group[start : start + size]
                    kept, prob = self._forward([k[0] for k, _ in part], [r for _, r in part])
                    for (k, _), a, b in zip(part, kept.tolist(), prob.tolist(), strict=True):
                        self._answers[k] = (a, b)
        self._pending.clear()
        self.collecting = False

    def _forward(self, examples: list[int], rows: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        targets = [self._examples[e][0] for e in examples]
        queries = [self._examples[e][1] for e in examples]
        types = [self._examples[e][2] for e in examples]
        device = model_device(self.model)
        ids = torch.as_tensor(np.stack(rows), device=device)
        kwargs: dict[str, Any] = {"attention_mask": torch.ones_like(ids)}
        given = [t for t in types if t is not None]
        if len(given) == len(types):
            kwargs["token_type_ids"] = torch.as_tensor(np.stack(given), device=device)
        out = self.model(input_ids=ids, return_dict=True, **kwargs)
        query = torch.as_tensor(queries, device=device)
        logits = query_logits(out.logits, self.kind, query).float()
        target = torch.as_tensor(targets, device=device)
        picked = torch.arange(len(rows), device=device)
        probability = logits.softmax(-1)[picked, target]
        kept = logits.argmax(-1) == target
        return (
            kept.cpu().numpy().astype(np.float64),
            probability.cpu().numpy().astype(np.float64),
        )


@contextmanager
def evaluation_mode(model: Any) -> Iterator[None]:
    """The model's lock held and every module in eval mode (dropout off); modes restored.

    A lighter :func:`attnwidget.capture.capture_ready` for forward passes
    without gradients: nothing else of the model is touched.
    """
    with model_lock(model):
        modules = list(model.modules())
        training = [m for m in modules if m.training]
        # Eval mode is a plain attribute every thread sees: another thread's
        # forward pass waits (at its first module) while it is switched, as
        # under capture_ready.
        guard = ForeignGuard(modules, [])
        try:
            with guard.changed():
                for module in training:
                    object.__setattr__(module, "training", False)
                try:
                    yield
                finally:
                    for module in training:
                        object.__setattr__(module, "training", True)
        finally:
            guard.remove()
