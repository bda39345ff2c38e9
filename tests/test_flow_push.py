"""The compiled push–relabel flow solver (one preflow carried from sink to sink),
against a networkx Edmonds–Karp oracle written here, on hard attention (values
below their trivial bound), on more tokens than one 64-bit word holds, with
capacities below the solver's integer scale, without numba, and from threads."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.flow import edmonds_karp
from test_flow_hard import bottleneck, near_identity, softmax

from attnwidget.methods.flow import _push as _flow_push
from attnwidget.methods.flow import _push_kernel as _flow_push_kernel
from attnwidget.methods.flow import flow as flow_module
from attnwidget.methods.flow.flow import attention_flow_result

pytestmark = pytest.mark.skipif(not _flow_push.available(), reason="numba is not installed")


def adjusted_layers(attentions: np.ndarray) -> np.ndarray:
    """Â_l = rows of 0.5·mean-over-heads + 0.5·I, re-normalised (the paper's graph)."""
    fused = attentions.mean(axis=1)
    n = fused.shape[-1]
    adjusted = 0.5 * fused + 0.5 * np.eye(n)
    return adjusted / adjusted.sum(axis=-1, keepdims=True)


def oracle(adjusted: np.ndarray, source: int, sinks: list[int]) -> np.ndarray:
    """Max flows from node (L, source) to the input tokens ``sinks``: networkx Edmonds–Karp."""
    layers, n = adjusted.shape[0], adjusted.shape[-1]
    graph = nx.DiGraph()
    for layer in range(1, layers + 1):
        for i in range(n):
            if layer == layers and i != source:
                continue
            for j in range(n):
                if adjusted[layer - 1, i, j] > 0:
                    graph.add_edge(
                        (layer, i), (layer - 1, j), capacity=float(adjusted[layer - 1, i, j])
                    )
    return np.array(
        [
            nx.maximum_flow_value(graph, (layers, source), (0, j), flow_func=edmonds_karp)
            for j in sinks
        ]
    )


def blocks(layers: int, n: int, seed: int, width: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    apart = (np.arange(n) // width)[:, None] != (np.arange(n) // width)[None, :]
    return softmax(rng.normal(size=(layers, 2, n, n)) * 2.0 - 7.0 * apart)


def solve(adjusted: np.ndarray, source: int, sinks, **options) -> _flow_push.RowFlows:
    graph = _flow_push.prepare([adjusted[layer] for layer in range(adjusted.shape[0] - 1)])
    return _flow_push.solve_row(graph, adjusted[-1][source], np.asarray(sinks), **options)


@pytest.mark.parametrize(
    ("attentions", "source"),
    [
        pytest.param(blocks(6, 12, 0, 4), 5, id="blocks"),
        pytest.param(near_identity(6, 11, 1), 0, id="near-identity"),
        pytest.param(bottleneck(7, 10, 2), 9, id="bottleneck"),
    ],
)
def test_every_sink_matches_networkx_warm_and_cold(attentions: np.ndarray, source: int) -> None:
    adjusted = adjusted_layers(attentions)
    n = adjusted.shape[-1]
    expected = oracle(adjusted, source, list(range(n)))
    bound = np.minimum(adjusted[-1][source].sum(), adjusted[0].sum(axis=0))
    assert (expected < bound - 1e-6).mean() >= 0.3  # hard: many values below their bound
    warm = solve(adjusted, source, np.arange(n))
    cold = solve(adjusted, source, np.arange(n), warm=False)
    backwards = solve(adjusted, source, np.arange(n)[::-1])  # another carried preflow
    for flows in (warm, cold):
        assert flows.error.max() <= 1e-12
        np.testing.assert_allclose(flows.value, expected, atol=1e-12, rtol=0)
    np.testing.assert_allclose(backwards.value[::-1], expected, atol=1e-12, rtol=0)


def test_more_tokens_than_one_word_and_a_sink_subset() -> None:
    """n = 70: bit sets of two words, the second part-filled; sinks in any order, repeated.
    Banded attention with exact zeros outside the band, and a hub token every other layer."""
    rng = np.random.default_rng(3)
    n = 70
    far = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]) > 3
    logits = np.where(far, -np.inf, rng.normal(size=(5, 2, n, n)) * 2.0)
    logits[1::2, :, :, 64] = 4.0  # the hub, in the second word
    adjusted = adjusted_layers(softmax(logits))
    sinks = [69, 0, 63, 64, 17, 64]
    flows = solve(adjusted, 66, sinks)
    np.testing.assert_allclose(flows.value, oracle(adjusted, 66, sinks), atol=1e-12, rtol=0)


def test_capacities_below_the_integer_scale_stay_certified() -> None:
    """The only route to token 2 is an edge of 1e-18, below the solver's 2**-56 steps:
    the integer flow is 0, the reported value is the cut, within the stated error."""
    adjusted = np.zeros((3, 3, 3))
    adjusted[:] = np.eye(3)
    adjusted[1, 0] = [1 - 1e-18, 0.0, 1e-18]  # layer 2: node 0 leaks 1e-18 to node 2
    flows = solve(adjusted, 0, [0, 1, 2])
    np.testing.assert_allclose(flows.value, [1 - 1e-18, 0.0, 1e-18], atol=1e-30, rtol=0)
    assert flows.error[2] >= 1e-18 - 2.0**-56  # the integer flow misses the leak …
    assert flows.error.max() <= 1e-15  # … and says so, within a tiny bound


def test_flow_uses_it_and_agrees_with_the_scipy_solvers(monkeypatch: pytest.MonkeyPatch) -> None:
    attentions = near_identity(9, 20, 4)
    calls: list[int] = []
    solve_row = _flow_push.solve_row

    def spy(graph, source_caps, sinks, **options):
        calls.append(len(sinks))
        return solve_row(graph, source_caps, sinks, **options)

    monkeypatch.setattr(_flow_push, "solve_row", spy)
    pushed = attention_flow_result(attentions, rows=[0, 7], normalize=False)
    assert len(calls) == 2 and sum(calls) >= (~pushed.at_bound).sum()  # one call per row
    monkeypatch.setattr(flow_module, "PUSH", False)
    scipy_based = attention_flow_result(attentions, rows=[0, 7], normalize=False)
    assert len(calls) == 2  # not called again
    assert pushed.max_error <= 1e-10 and scipy_based.max_error <= 1e-10
    np.testing.assert_allclose(pushed.raw_values, scipy_based.raw_values, atol=2e-10, rtol=0)


def test_threads_get_the_sequential_values() -> None:
    cases = [adjusted_layers(blocks(8, 40, seed, 5)) for seed in range(4)]
    sequential = [solve(adjusted, 3, np.arange(40)).value for adjusted in cases]
    results: dict[int, np.ndarray] = {}

    def run(index: int) -> None:
        results[index] = solve(cases[index], 3, np.arange(40)).value

    threads = [threading.Thread(target=run, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, expected in enumerate(sequential):
        np.testing.assert_array_equal(results[index], expected)


def test_without_numba_the_kernel_imports_and_flow_uses_scipy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In a fresh interpreter where ``import numba`` fails, the kernel module still
    imports and says it is unavailable; flow then takes the scipy-based solvers
    and still gives networkx's values."""
    script = textwrap.dedent(
        f"""
        import importlib.util, sys
        class NoNumba:
            def find_spec(self, name, path=None, target=None):
                if name == "numba" or name.startswith("numba."):
                    raise ImportError("numba blocked for this test")
        sys.meta_path.insert(0, NoNumba())
        spec = importlib.util.spec_from_file_location("kernel", {_flow_push_kernel.__file__!r})
        kernel = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(kernel)
        print(kernel.available(), "numba" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
    monkeypatch.setattr(_flow_push, "available", lambda: False)
    monkeypatch.setattr(_flow_push, "solve_row", None)  # would raise if flow still called it
    attentions = near_identity(5, 6, 0)
    values = attention_flow_result(attentions, rows=[0], normalize=False).raw_values[0]
    expected = oracle(adjusted_layers(attentions), 0, list(range(6)))
    np.testing.assert_allclose(values, expected, atol=1e-9, rtol=0)


def test_capacities_outside_the_unit_range_and_a_missing_numba_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The integer scale assumes re-normalised rows: other capacities are an error, not
    an overflow; without numba the solver says what it needs."""
    for bad in (np.array([[1.5, 0.0], [0.0, 1.0]]), np.array([[np.nan, 1.0], [0.0, 1.0]])):
        with pytest.raises(ValueError, match=r"within \[0, 1\]"):
            _flow_push.prepare([bad, np.eye(2)])
    monkeypatch.setattr(_flow_push, "available", lambda: False)
    with pytest.raises(RuntimeError, match="numba"):
        _flow_push.prepare([np.eye(2)])
