"""The push–relabel flow solver (one preflow carried from sink to sink), compiled by
numba, against the networkx Edmonds–Karp reference of ``flow_oracle``: on hard
attention (values below their trivial bound), on more tokens than one 64-bit word
holds, with capacities below the solver's integer scale, and from threads; and,
with numba blocked, the same kernel uncompiled, to the bit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from flow_oracle import (
    adjusted_attention,
    blocks,
    bottleneck,
    near_identity,
    reference_flows,
    require_compiled_solver,
    softmax,
)

from attnwidget.methods.flow import _push
from attnwidget.methods.flow.flow import attention_flow_result


@pytest.fixture
def compiled() -> None:
    """These tests are about the compiled kernel: skip (locally) or fail (CI) without it."""
    require_compiled_solver()


def oracle(adjusted: np.ndarray, source: int, sinks: list[int]) -> np.ndarray:
    return reference_flows(adjusted, [source], sinks)[0]


def solve(adjusted: np.ndarray, source: int, sinks, **options) -> _push.RowFlows:
    graph = _push.prepare([adjusted[layer] for layer in range(adjusted.shape[0] - 1)])
    return _push.solve_row(graph, adjusted[-1][source], np.asarray(sinks), **options)


@pytest.mark.parametrize(
    ("attentions", "source"),
    [
        pytest.param(blocks(6, 12, 0, apart_by=7.0), 5, id="blocks"),
        pytest.param(near_identity(6, 11, 1), 0, id="near-identity"),
        pytest.param(bottleneck(7, 10, 2), 9, id="bottleneck"),
    ],
)
def test_every_sink_matches_networkx_warm_and_cold(
    attentions: np.ndarray, source: int, compiled: None
) -> None:
    adjusted = adjusted_attention(attentions)
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


def test_more_tokens_than_one_word_and_a_sink_subset(compiled: None) -> None:
    """n = 70: bit sets of two words, the second part-filled; sinks in any order, repeated.
    Banded attention with exact zeros outside the band, and a hub token every other layer."""
    rng = np.random.default_rng(3)
    n = 70
    far = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]) > 3
    logits = np.where(far, -np.inf, rng.normal(size=(5, 2, n, n)) * 2.0)
    logits[1::2, :, :, 64] = 4.0  # the hub, in the second word
    adjusted = adjusted_attention(softmax(logits))
    sinks = [69, 0, 63, 64, 17, 64]
    flows = solve(adjusted, 66, sinks)
    np.testing.assert_allclose(flows.value, oracle(adjusted, 66, sinks), atol=1e-12, rtol=0)


def test_capacities_below_the_integer_scale_stay_certified(compiled: None) -> None:
    """The only route to token 2 is an edge of 1e-18, below the solver's 2**-56 steps:
    the integer flow is 0, the reported value is the cut, within the stated error."""
    adjusted = np.zeros((3, 3, 3))
    adjusted[:] = np.eye(3)
    adjusted[1, 0] = [1 - 1e-18, 0.0, 1e-18]  # layer 2: node 0 leaks 1e-18 to node 2
    flows = solve(adjusted, 0, [0, 1, 2])
    np.testing.assert_allclose(flows.value, [1 - 1e-18, 0.0, 1e-18], atol=1e-30, rtol=0)
    assert flows.error[2] >= 1e-18 - 2.0**-56  # the integer flow misses the leak …
    assert flows.error.max() <= 1e-15  # … and says so, within a tiny bound


def test_flow_calls_it_once_per_row_and_matches_networkx(
    monkeypatch: pytest.MonkeyPatch, compiled: None
) -> None:
    attentions = near_identity(9, 20, 4)
    calls: list[int] = []
    solve_row = _push.solve_row

    def spy(graph, source_caps, sinks, **options):
        calls.append(len(sinks))
        return solve_row(graph, source_caps, sinks, **options)

    monkeypatch.setattr(_push, "solve_row", spy)
    result = attention_flow_result(attentions, rows=[0, 7], normalize=False)
    assert len(calls) == 2 and sum(calls) >= (~result.at_bound).sum()  # one call per row
    assert result.max_error <= 1e-12
    adjusted = adjusted_attention(attentions)
    expected = reference_flows(adjusted, [0, 7], [0, 3, 19])
    np.testing.assert_allclose(result.raw_values[:, [0, 3, 19]], expected, atol=1e-12, rtol=0)


def test_threads_get_the_sequential_values(compiled: None) -> None:
    cases = [adjusted_attention(blocks(8, 40, seed, width=5, apart_by=7.0)) for seed in range(4)]
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


def test_without_numba_the_same_kernel_runs_uncompiled() -> None:
    """In a fresh interpreter where ``import numba`` fails, flow still imports and
    computes, warning once with the fix; its values are the compiled kernel's to the
    bit (the same int64 and float64 steps) and networkx's to 1e-12."""
    script = textwrap.dedent(
        """
        import sys, warnings
        class NoNumba:
            def find_spec(self, name, path=None, target=None):
                if name == "numba" or name.startswith("numba."):
                    raise ImportError("numba blocked for this test")
        sys.meta_path.insert(0, NoNumba())
        sys.path.insert(0, sys.argv[1])
        from flow_oracle import near_identity
        from attnwidget.methods.flow.flow import attention_flow_result
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = attention_flow_result(near_identity(5, 6, 0), rows=[0], normalize=False)
            again = attention_flow_result(near_identity(5, 6, 1), rows=[2], normalize=False)
        assert "numba" not in sys.modules
        print(" ".join(value.hex() for value in first.raw_values[0]))
        print(" ".join(value.hex() for value in again.raw_values[0]))
        print(" | ".join(str(w.message) for w in caught))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first, again, warned = done.stdout.strip().split("\n")
    assert "numba does not import" in warned and "pip install --upgrade numba" in warned
    assert " | " not in warned  # once per process, not once per call
    for line, (seed, row) in ((first, (0, 0)), (again, (1, 2))):
        values = np.array([float.fromhex(value) for value in line.split()])
        attentions = near_identity(5, 6, seed)
        here = attention_flow_result(attentions, rows=[row], normalize=False).raw_values[0]
        if _push.warm_up() is None:  # this process has the compiled kernel
            np.testing.assert_array_equal(values, here)
        expected = oracle(adjusted_attention(attentions), row, list(range(6)))
        np.testing.assert_allclose(values, expected, atol=1e-12, rtol=0)


def test_capacities_outside_the_unit_range_are_refused() -> None:
    """The integer scale assumes re-normalised rows: other capacities are an error, not
    an overflow."""
    for bad in (np.array([[1.5, 0.0], [0.0, 1.0]]), np.array([[np.nan, 1.0], [0.0, 1.0]])):
        with pytest.raises(ValueError, match=r"within \[0, 1\]"):
            _push.prepare([bad, np.eye(2)])
