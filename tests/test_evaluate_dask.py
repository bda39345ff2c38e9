"""attnwidget.evaluate on a real Dask LocalCluster: the same numbers as the local run,
the model shipped to each worker once, clusters it starts closed again."""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest
from polling import wait_until

from attnwidget import demo
from attnwidget.evaluation import FAITHFULNESS, PLAUSIBILITY, evaluate, executors
from attnwidget.evaluation.results_file import ResultsFile

distributed = pytest.importorskip("dask.distributed")

METHODS = ["raw", "rollout", "input_x_gradient"]
OPTIONS = {"methods": METHODS, "batch_size": 3, "progress": False}


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, dashboard_address=None, processes=True
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(2)
        yield client


@pytest.fixture(scope="module")
def encoder():
    return demo.load("sva-encoder")


@pytest.fixture(scope="module")
def data():
    sentences = demo.sentences(12, seed=5)
    rows = [{"id": f"d{i}", "text": s.text} for i, s in enumerate(sentences)]
    words = []
    for s in sentences:
        vector = np.zeros(len(s.text.split()), dtype=int)
        vector[s.subject_index - 1] = 1
        words.append(vector)
    return rows, words


@pytest.fixture(scope="module")
def local(encoder, data):
    model, tokenizer = encoder
    rows, words = data
    metrics = [*FAITHFULNESS, *PLAUSIBILITY]
    return evaluate(model, tokenizer, rows, metrics=metrics, rationales=words, **OPTIONS)


def test_dask_gives_exactly_the_local_numbers_and_ships_the_model_once(
    client, encoder, data, local
) -> None:
    model, tokenizer = encoder
    rows, words = data
    before = client.run(executors.load_counts)
    result = evaluate(
        model,
        tokenizer,
        rows,
        metrics=[*FAITHFULNESS, *PLAUSIBILITY],
        rationales=words,
        executor=client,
        **OPTIONS,
    )
    pd.testing.assert_frame_equal(result.per_example, local.per_example, check_exact=True)
    pd.testing.assert_frame_equal(result.summary, local.summary, check_exact=True)
    for ident in local.per_example["id"].unique():
        for method in METHODS:
            assert np.array_equal(result.scores(ident)[method], local.scores(ident)[method])

    # 4 chunk tasks on 2 workers; the bundle arrived once on each worker.
    after = client.run(executors.load_counts)
    assert len(after) == 2
    new = {t for counts in after.values() for t in counts} - {
        t for counts in before.values() for t in counts
    }
    assert len(new) == 1, after
    (token,) = new
    assert all(counts.get(token) == 1 for counts in after.values()), after
    wait_until(lambda: not any(client.has_what().values()))  # the model and results released
    assert client.status == "running"  # a client passed in is not closed


def test_dask_resumes_a_local_run_from_its_results_file(
    client, encoder, data, local, tmp_path, monkeypatch
) -> None:
    model, tokenizer = encoder
    rows, words = data
    metrics = [*FAITHFULNESS, *PLAUSIBILITY]
    path = tmp_path / "results.sqlite"
    original = ResultsFile.write

    def write_then_stop(self, result, digests):
        original(self, result, digests)
        raise KeyboardInterrupt

    monkeypatch.setattr(ResultsFile, "write", write_then_stop)
    with pytest.raises(KeyboardInterrupt):
        evaluate(model, tokenizer, rows, metrics=metrics, rationales=words, store=path, **OPTIONS)
    monkeypatch.setattr(ResultsFile, "write", original)
    resumed = evaluate(
        model,
        tokenizer,
        rows,
        metrics=metrics,
        rationales=words,
        store=path,
        executor=client,
        **OPTIONS,
    )
    assert (resumed.n_loaded, resumed.n_computed) == (3, 9)
    pd.testing.assert_frame_equal(resumed.per_example, local.per_example, check_exact=True)


def test_executor_dask_starts_a_cluster_and_closes_it(encoder, data, local, monkeypatch) -> None:
    model, tokenizer = encoder
    rows, words = data
    started = []

    class Recording(distributed.LocalCluster):
        def __init__(self, *args, **kwargs):
            started.append(kwargs)
            started.append(dask.config.get("distributed.worker.profile.enabled"))
            started.append(dict(dask.config.get("distributed.nanny.pre-spawn-environ")))
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(distributed, "LocalCluster", Recording)
    result = evaluate(
        model,
        tokenizer,
        rows,
        metrics=[*FAITHFULNESS, *PLAUSIBILITY],
        rationales=words,
        executor="dask",
        n_workers=1,
        **OPTIONS,
    )
    pd.testing.assert_frame_equal(result.per_example, local.per_example, check_exact=True)
    options, profiler, environment, cluster = started
    assert profiler is False and environment["MALLOC_TRIM_THRESHOLD_"] is None
    assert options == {
        "n_workers": 1,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
    }
    assert cluster.status.name == "closed"


def test_a_shipped_model_keeps_its_weights_alignment_and_numbers(encoder) -> None:
    """The bundle a worker unpickles places each weight at the original's offset modulo
    64 (memory-mapped safetensors weights sit at odd offsets; a plain unpickled copy is
    64-byte aligned), and so gives bit-identical scores: without it input × gradient
    differed by up to 5e-9 between the local run and the workers on an AMD EPYC machine."""
    import copy
    import pickle

    import torch

    from attnwidget import explain
    from attnwidget.evaluation import _alignment
    from attnwidget.evaluation._compute import torch_threads

    model, tokenizer = encoder
    odd = copy.deepcopy(model)
    for parameter in odd.parameters():  # 40 bytes past a cache line, in memory of its own
        weights = parameter.detach().numpy()
        memory = np.empty(weights.nbytes + 128, dtype=np.uint8)
        start = (40 - memory.ctypes.data) % 64
        placed = memory[start : start + weights.nbytes].view(weights.dtype).reshape(weights.shape)
        placed[...] = weights
        parameter.data = torch.from_numpy(placed)
    weights = {name: offset for name, offset in _alignment.offsets(odd).items() if "weight" in name}
    assert set(weights.values()) == {40}
    shipped = pickle.loads(pickle.dumps(executors.ModelBundle(odd, tokenizer)))
    assert _alignment.offsets(shipped.model) == _alignment.offsets(odd)
    plain = pickle.loads(pickle.dumps(odd))  # without the bundle: aligned again
    assert {_alignment.offsets(plain)[name] for name in weights} == {0}
    text = demo.sentences(1, seed=5)[0].text
    with torch_threads(1):
        scores = [
            explain(m, tokenizer, text, methods=["input_x_gradient"]).scores["input_x_gradient"]
            for m in (odd, shipped.model)
        ]
    np.testing.assert_array_equal(scores[0], scores[1])
