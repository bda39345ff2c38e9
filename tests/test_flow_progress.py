"""Attention flow says when it will take long, shows its progress, and stops on Ctrl-C.

Real solver runs on real (small) attention; the announcement is forced with
``progress=True`` (the automatic threshold is 5 s, far more than these
inputs take), and the estimate is checked against the sizes it comes from.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest

from attnwidget.errors import InputError
from attnwidget.methods.flow import attention_flow_result, flow_seconds
from attnwidget.methods.progress import LONG_WORK_SECONDS


def attention(layers: int = 5, heads: int = 2, n: int = 24, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(layers, heads, n, n)) * 3
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_estimate_grows_with_the_sizes_and_flags_the_reported_case() -> None:
    # The reported case: every row of 1,024 tokens (the CLS row alone took 24 s).
    assert flow_seconds(12, 1024, 1) > LONG_WORK_SECONDS
    assert flow_seconds(12, 1024, 1024) > 1000 * LONG_WORK_SECONDS
    assert flow_seconds(12, 32, 1) < 0.1  # short inputs stay quiet
    assert flow_seconds(12, 1024, 1, layer=1) == 0.0  # two layers: a closed form
    assert flow_seconds(6, 512, 2) == pytest.approx(2 * flow_seconds(6, 512, 1))


def test_short_work_is_quiet_and_forced_progress_is_announced_first(capsys) -> None:
    a = attention()
    quiet = attention_flow_result(a, rows=[0, 5])
    assert capsys.readouterr().err == ""
    shown = attention_flow_result(a, rows=[0, 5], progress=True)
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("attention flow (2 source rows × 24 tokens, 5 layers)"), err
    assert "estimated" in first and "Ctrl-C" in first
    # Chunked sinks solve afresh per chunk: equal within the certified error.
    tol = max(quiet.max_error, shown.max_error) + 1e-15
    assert np.allclose(shown.raw_values, quiet.raw_values, atol=tol, rtol=0)
    assert np.array_equal(shown.at_bound, quiet.at_bound)


def test_without_tqdm_a_plain_line_reports_the_end(capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as where the evaluate extra is missing
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    attention_flow_result(attention(), rows=[0, 3], progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert "estimated" in lines[0]
    assert lines[-1].startswith("attention flow: ") and lines[-1].endswith("(100%)"), lines


def test_a_callable_gets_the_counts_in_order() -> None:
    seen: list[tuple[int, int]] = []
    attention_flow_result(attention(), rows=None, progress=lambda d, t: seen.append((d, t)))
    assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1] > 0
    assert all(b[0] >= a[0] and a[1] == b[1] for a, b in itertools.pairwise(seen))
    assert len(seen) > 2  # it moved in between


def test_ctrl_c_stops_the_work_and_leaves_the_input_unchanged() -> None:
    a = attention(n=20)
    before = a.copy()
    calls = []

    def interrupt(done: int, total: int) -> None:
        calls.append(done)
        if done > 0:
            raise KeyboardInterrupt  # as Ctrl-C arrives between two kernel calls

    with pytest.raises(KeyboardInterrupt):
        attention_flow_result(a, rows=None, progress=interrupt)
    assert np.array_equal(a, before) and len(calls) == 2
    again = attention_flow_result(a, rows=[0])  # and a later run still works
    assert np.isfinite(again.values).all()


def test_a_bad_progress_is_refused_with_the_choices() -> None:
    with pytest.raises(InputError, match=r"None .*True, False, or a callable"):
        attention_flow_result(attention(), rows=[0], progress="yes")
