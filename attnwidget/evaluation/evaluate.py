""":func:`evaluate`: every method × every metric over a data set, resumable, local or on Dask."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from attnwidget._keywords import check_keywords, warn_renamed
from attnwidget._version import __version__
from attnwidget.capture import ENCODER_DECODER, IMAGE, model_kind
from attnwidget.capture.run import blank_token_id
from attnwidget.capture.tokens import max_length
from attnwidget.errors import InputError
from attnwidget.evaluation import dataset, executors
from attnwidget.evaluation._compute import TARGETS, ChunkResult, ChunkTask, Plan
from attnwidget.evaluation.metrics_registry import resolve_metrics
from attnwidget.evaluation.result import EvaluationResult
from attnwidget.evaluation.results_file import ResultsFile
from attnwidget.methods import get_method
from attnwidget.methods.registry import resolve_method_options

if TYPE_CHECKING:  # dask is optional (the evaluate extra)
    from dask.distributed import Client


@check_keywords(renamed={"data": "examples"})
def evaluate(
    model: Any,
    tokenizer: Any,
    examples: Any,
    *,
    methods: Sequence[str],
    metrics: Sequence[str],
    rationales: Any = None,
    annotator: str | None = None,
    rationale_unit: Literal["words", "tokens"] = "words",
    rationale_k: int | None = None,
    store: str | Path | None = None,
    executor: Literal["local", "dask"] | Client = "local",
    n_workers: int | None = None,
    batch_size: int = 16,
    target: Literal["label", "predicted"] | None = None,  # "predicted": deprecated
    method_options: dict[str, dict[str, Any]] | None = None,
    columns: Mapping[str, str] | None = None,
    truncation: bool = False,
    replacement_id: int | None = None,
    torch_threads: int | None = 1,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    progress: bool = True,
    keep_model: bool = True,
) -> EvaluationResult:
    """Explain every example with every method and score the explanations.

    Each example is explained by :func:`attnwidget.explain` (the predicted
    class, ``target=None``, or the example's label with ``target="label"``), and each
    method's token scores are scored by each metric of
    :mod:`attnwidget.evaluation.metrics_registry`: faithfulness (ERASER's
    comprehensiveness / sufficiency AOPC, DeYoung et al. 2020; Chefer, Gur &
    Wolf's 2021 perturbation AUCs), which re-runs the model with tokens
    replaced by ``replacement_id``, and, with ``rationales``, plausibility
    (token F1, IOU-F1, AUPRC against the human tokens). Only words are
    removed or compared: special tokens and the query position never are.

    Args:
        model, tokenizer: a Hugging Face text classifier or (masked / causal)
            language model and its tokenizer.
        examples: a list of texts, a list of dicts (``id``, ``text``, ``label``,
            ``text_pair``), a pandas DataFrame, a ``datasets.Dataset`` or an
            annotation Store; ``columns`` renames the fields, e.g.
            ``{"text": "sentence"}``. Ids (default: the position) must be unique.
            Named ``data`` before (still accepted for one release, with a
            DeprecationWarning).
        methods: method names (:func:`attnwidget.available_methods`).
        metrics: metric names (:func:`~attnwidget.evaluation.available_metrics`);
            an unknown name raises :class:`InputError` listing the valid ones.
        rationales: human rationales for the plausibility metrics: one 0/1
            vector per example (None: none for it), a mapping from example
            id, or an annotation Store with ``annotator=`` (or a ``(store,
            annotator)`` pair). Vectors run over the words of ``text.split()``
            (``rationale_unit="words"``, mapped to the tokens they overlap) or
            over the model's tokens, special ones included (``"tokens"``).
        rationale_k: how many tokens the discrete rationale of a method keeps
            for token F1 / IOU-F1 (its top-k positive tokens); default: the
            mean human rationale length in tokens, as ferret does.
        store: a path to a results file (SQLite, see
            :mod:`attnwidget.evaluation.results_file`): each finished chunk
            is written at once, and a later call with the same file and
            settings loads the finished chunks and computes only the rest.
        executor: ``"local"`` (this process), ``"dask"`` (a LocalCluster of
            ``n_workers`` one-thread worker processes, default one per core,
            closed at the end) or a ``dask.distributed.Client`` of any
            cluster: pass the client of a multi-machine cluster to go past
            one machine (see :mod:`attnwidget.evaluation.executors`). The
            numbers do not depend on the executor.
        batch_size: examples per chunk: explained together, written together,
            one Dask task. Part of the settings (it changes the batches and
            so the last bits of the numbers).
        target: None (default: the predicted class, as in
            :func:`attnwidget.explain`) or ``"label"`` (each example's label).
            ``"predicted"``, the old spelling of None, still works for one
            release, with a DeprecationWarning.
        method_options: per-method options, as in :func:`attnwidget.explain`.
        truncation: cut texts longer than the model's maximum (else refused).
        replacement_id: the token id put in place of a removed token
            (default: the tokenizer's unknown token, else mask, pad, eos).
        torch_threads: torch's intra-op threads while computing, here and on
            every worker (1 by default, as Dask workers run; None: leave it).
        confidence, n_resamples, seed: the summary's bootstrap intervals.
        progress: tqdm progress bars (notebook-aware); False silences them.
        keep_model: keep the model and tokenizer on the result, so that
            :meth:`EvaluationResult.explanation` can re-explain an example.

    Returns:
        An :class:`EvaluationResult` (``per_example``, ``summary``).
    """
    try:
        import pandas  # noqa: F401
        import tqdm  # noqa: F401
    except ImportError:  # pragma: no cover - the evaluate extra is missing
        raise ImportError(
            'evaluate needs pandas and tqdm: pip install "attnwidget[evaluate]"'
        ) from None
    kind = model_kind(model)
    if kind in (IMAGE, ENCODER_DECODER):
        raise InputError(
            f"evaluate scores text classifiers and language models; {type(model).__name__} is "
            f"an {kind} model."
        )
    if isinstance(methods, str) or not methods:
        raise InputError(f"methods must be a non-empty list of method names; got {methods!r}.")
    names = [str(m) for m in methods]
    if len(set(names)) != len(names):
        raise InputError(f"methods lists a name more than once: {names}.")
    resolve_method_options([get_method(n) for n in names], method_options)
    chosen = resolve_metrics(metrics, have_rationales=rationales is not None)
    if isinstance(target, str) and target == "predicted":  # the old spelling of None
        warn_renamed("evaluate", "target='predicted'", "target=None", stacklevel=4)
        target = None
    if target is not None and target not in TARGETS:
        raise InputError(
            f"target={target!r}: use None (the predicted class) or 'label' (each example's label)."
        )
    plan_target = "predicted" if target is None else target  # the results file's spelling
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"batch_size={batch_size!r}: pass a positive int.")
    executors.check_executor(executor, n_workers)
    records = dataset.as_examples(examples, columns)
    if target == "label":
        missing = [e.id for e in records if e.label is None]
        if missing:
            raise InputError(f"target='label' but examples {missing[:5]} have no label.")
    limit = max_length(model, tokenizer) if truncation else None
    human: list[Any] = [None] * len(records)
    if rationales is not None:
        collected = dataset.collect_rationales(rationales, records, annotator)
        human = dataset.token_rationales(
            tokenizer, records, collected, unit=rationale_unit, limit=limit
        )
    if rationale_k is not None and (
        isinstance(rationale_k, bool) or not isinstance(rationale_k, int) or rationale_k < 0
    ):
        raise InputError(f"rationale_k={rationale_k!r}: pass a token count (an int ≥ 0) or None.")
    k = rationale_k if rationale_k is not None else dataset.rationale_k(human)
    blank = blank_token_id(tokenizer) if replacement_id is None else replacement_id
    if isinstance(blank, bool) or not isinstance(blank, int):
        raise InputError("the tokenizer has no unknown/mask/pad token: pass replacement_id=.")
    plan = Plan(
        methods=tuple(names),
        metrics=chosen,
        replacement_id=blank,
        target=plan_target,
        method_options=method_options,
        truncation=bool(truncation),
        torch_threads=torch_threads,
        limit=limit,
        k=int(k),
    )
    tasks = [
        ChunkTask(i, tuple(records[p] for p in run), tuple(human[p] for p in run))
        for i, run in enumerate(dataset.chunks(len(records), batch_size))
    ]
    config = _config(plan, batch_size, model, tokenizer, store is not None)
    digests = {e.position: dataset.digest(e, h) for e, h in zip(records, human, strict=True)}
    results: dict[int, ChunkResult] = {}
    results_file = None if store is None else ResultsFile(store, config)
    try:
        if results_file is not None:
            results_file.check(digests)
            for index in sorted(results_file.finished()):
                results[index] = results_file.load(index)
        loaded = sum(len(c.examples) for c in results.values())
        _run(
            [t for t in tasks if t.index not in results],
            results,
            results_file,
            digests,
            model,
            tokenizer,
            plan,
            executor,
            n_workers,
            len(records),
            loaded,
            progress,
        )
    finally:
        if results_file is not None:
            results_file.close()
    return EvaluationResult(
        chunks=list(results.values()),
        examples=records,
        methods=names,
        metrics=chosen,
        config={
            **config,
            "method_options": method_options,
            "confidence": confidence,
            "n_resamples": n_resamples,
            "seed": seed,
        },
        n_computed=len(records) - loaded,
        n_loaded=loaded,
        store=None if store is None else Path(store),
        model=model if keep_model else None,
        tokenizer=tokenizer if keep_model else None,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        progress=progress,
    )


def _run(
    tasks: list[ChunkTask],
    results: dict[int, ChunkResult],
    results_file: ResultsFile | None,
    digests: dict[int, str],
    model: Any,
    tokenizer: Any,
    plan: Plan,
    executor: Any,
    n_workers: int | None,
    total: int,
    loaded: int,
    progress: bool,
) -> None:
    from tqdm.auto import tqdm

    bar = tqdm(total=total, initial=loaded, desc="evaluate", unit="example", disable=not progress)

    def finished(result: ChunkResult) -> None:
        if results_file is not None:
            results_file.write(result, digests)
        results[result.index] = result
        bar.update(len(result.examples))

    try:
        if executor == "local":
            executors.run_local(model, tokenizer, plan, tasks, finished)
        elif tasks:
            executors.run_dask(
                executor, model, tokenizer, plan, tasks, finished, n_workers=n_workers
            )
    finally:
        bar.close()


def _config(plan: Plan, batch_size: int, model: Any, tokenizer: Any, fingerprint: bool) -> dict:
    """The settings that determine the numbers (a results file must match them)."""
    return {
        "methods": list(plan.methods),
        "method_options": json.loads(json.dumps(plan.method_options, default=repr)),
        "metrics": [m.name for m in plan.metrics],
        "target": plan.target,
        "replacement_id": plan.replacement_id,
        "batch_size": batch_size,
        "truncation": plan.truncation,
        "torch_threads": plan.torch_threads,
        "k": plan.k,
        "forward_batch": plan.forward_batch,
        "model": model_fingerprint(model, tokenizer) if fingerprint else None,
        "attnwidget": __version__,
    }


def model_fingerprint(model: Any, tokenizer: Any) -> str:
    """A digest of the model's class, config and weights, and the tokenizer's vocabulary size."""
    import torch

    hasher = hashlib.blake2b(digest_size=16)
    hasher.update(type(model).__qualname__.encode())
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "to_json_string"):
        hasher.update(config.to_json_string(use_diff=False).encode())
    for name, tensor in model.state_dict().items():
        hasher.update(name.encode())
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        hasher.update(flat.view(torch.uint8).numpy().tobytes())
    hasher.update(f"{type(tokenizer).__qualname__}:{len(tokenizer)}".encode())
    return hasher.hexdigest()
