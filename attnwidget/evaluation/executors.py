"""Where the chunks of :func:`attnwidget.evaluate` run: here, or on a Dask cluster.

``executor="local"`` computes the chunks one after another in this process.

``executor="dask"`` starts a ``LocalCluster`` of ``n_workers`` worker
processes with one thread each and no dashboard (:func:`local_cluster`;
closed again at the end),
and ``executor=client`` (a ``dask.distributed.Client``) uses any running
cluster, which is how an evaluation goes past one machine: start a
scheduler and workers on the machines (``dask scheduler`` / ``dask worker
tcp://host:8786``, dask-jobqueue on a batch system, dask-kubernetes, …),
connect with ``Client("tcp://host:8786")`` and pass that client. The
workers need attnwidget (and the model's libraries) installed; a client
passed in is never closed.

**The model goes to each worker once.** The model and tokenizer are wrapped
in a :class:`ModelBundle` and scattered with ``client.scatter(bundle,
broadcast=True)``: every worker receives and unpickles it once and keeps
it in memory, and every chunk task takes that one future as an argument,
so a task is handed the worker's copy, not a new one. The bundle counts its
unpickling in a worker-side counter (:func:`load_counts`, readable with
``client.run(load_counts)``), which the tests check is 1 on each worker
whatever the number of tasks. The worker's copy keeps each weight's memory
alignment (:mod:`._alignment`), so torch picks the same kernels as here. On
a real cluster the model travels once per worker over the network; a very
large model may rather be loaded by the workers themselves from shared
storage (not provided here).

Each chunk is a task; results come back to this process as tasks finish,
are written to the results file (when ``store=`` is given) and fill the
progress bar.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from attnwidget.capture.state import register_recorded_outputs
from attnwidget.errors import InputError
from attnwidget.evaluation import _alignment
from attnwidget.evaluation._compute import ChunkResult, ChunkTask, Plan, compute_chunk

EXECUTORS = ("local", "dask")

#: Unpicklings of each bundle (by token) in this process: on a worker, how
#: many times the model arrived there.
_LOADS: Counter[str] = Counter()


class ModelBundle:
    """A model and its tokenizer, shipped to each Dask worker once (see the module docstring)."""

    def __init__(self, model: Any, tokenizer: Any, token: str | None = None) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.token = token or uuid.uuid4().hex

    def __getstate__(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "tokenizer": self.tokenizer,
            "token": self.token,
            "offsets": _alignment.offsets(self.model),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        offsets = state.pop("offsets", {})
        self.__dict__.update(state)
        # The same weight alignment as the original: the same kernels, the same numbers.
        _alignment.restore(self.model, offsets)
        register_recorded_outputs(list(self.model.modules()))  # before any other use
        _LOADS[self.token] += 1


def load_counts() -> dict[str, int]:
    """How many times each bundle was unpickled in this process (run it on workers)."""
    return dict(_LOADS)


def run_chunk(bundle: ModelBundle, plan: Plan, task: ChunkTask) -> ChunkResult:
    """A Dask task: one chunk with the worker's copy of the model."""
    return compute_chunk(bundle.model, bundle.tokenizer, plan, task)


def is_client(value: Any) -> bool:
    return all(callable(getattr(value, name, None)) for name in ("scatter", "submit", "gather"))


def check_executor(executor: Any, n_workers: int | None) -> None:
    if not (executor in EXECUTORS or is_client(executor)):
        raise InputError(
            f"executor={executor!r}: use 'local', 'dask' (a LocalCluster on this machine) or a "
            "dask.distributed.Client of any cluster."
        )
    if n_workers is not None and (
        isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1
    ):
        raise InputError(f"n_workers={n_workers!r}: pass a positive int (or None: one per core).")
    if n_workers is not None and executor != "dask":
        raise InputError("n_workers= sizes the cluster executor='dask' starts; here it is unused.")


def run_local(
    model: Any,
    tokenizer: Any,
    plan: Plan,
    tasks: Sequence[ChunkTask],
    on_result: Callable[[ChunkResult], None],
) -> None:
    for task in tasks:
        on_result(compute_chunk(model, tokenizer, plan, task))


def run_dask(
    executor: Any,
    model: Any,
    tokenizer: Any,
    plan: Plan,
    tasks: Sequence[ChunkTask],
    on_result: Callable[[ChunkResult], None],
    *,
    n_workers: int | None = None,
) -> None:
    """Run the chunks on Dask (``executor``: ``"dask"`` or a Client); see the module docstring."""
    try:
        from dask.distributed import Client, as_completed
    except ImportError:  # pragma: no cover - the evaluate extra is missing
        raise ImportError(
            'executor="dask" needs dask.distributed: pip install "attnwidget[evaluate]"'
        ) from None
    owned: list[Any] = []
    try:
        if is_client(executor):
            client = executor
        else:
            cluster = local_cluster(n_workers or os.cpu_count() or 1)
            owned.append(cluster)
            client = Client(cluster)
            owned.insert(0, client)
        _submit_all(client, as_completed, model, tokenizer, plan, tasks, on_result)
    finally:
        for thing in owned:  # the client first, then its cluster
            thing.close()


#: Dask settings of the clusters :func:`local_cluster` starts. No dashboard, so
#: nobody reads the workers' statistical profiler, which samples the computing
#: thread every 10 ms: off. Dask sets ``MALLOC_TRIM_THRESHOLD_=65536`` in its
#: workers (to hand memory back to the OS); any value also fixes glibc's
#: mmap threshold at 128 KiB, so every large tensor is mapped and faulted in
#: afresh, which cost the workers 15-20 % more CPU than this process for the
#: same chunks here: left unset, as in this process.
CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
}


def local_cluster(n_workers: int) -> Any:
    """A ``LocalCluster`` of ``n_workers`` one-thread worker processes, no dashboard
    (:data:`CLUSTER_CONFIG`); the caller closes it."""
    import dask
    from dask.distributed import LocalCluster

    with dask.config.set(CLUSTER_CONFIG):
        return LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None
        )


def _submit_all(
    client: Any,
    as_completed: Any,
    model: Any,
    tokenizer: Any,
    plan: Plan,
    tasks: Sequence[ChunkTask],
    on_result: Callable[[ChunkResult], None],
) -> None:
    if not tasks:
        return
    bundle = ModelBundle(model, tokenizer)
    shipped = client.scatter(bundle, broadcast=True, hash=False)
    futures = [
        client.submit(run_chunk, shipped, plan, task, key=f"attnwidget-evaluate-{bundle.token}-{i}")
        for i, task in enumerate(tasks)
    ]
    try:
        for future in as_completed(futures):
            on_result(future.result())
    finally:
        client.cancel([*futures, shipped])
