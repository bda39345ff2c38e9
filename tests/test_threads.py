"""explain() from several threads at once.

A model is shared state: capture switches its attention implementation, LRP
and chefer2021 install hooks and their own attention function for one pass.
explain() holds a re-entrant lock per model (``capture_ready``) for the whole
call, so threads explaining one model get the results of sequential calls,
and threads explaining different models do not wait for each other.
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import numpy as np
import pytest
import torch
from concurrency import JOIN_TIMEOUT, run_together
from tiny_models import build

import attnwidget
from attnwidget.capture import attention_implementation, capture_ready
from attnwidget.capture.state import model_lock
from attnwidget.errors import InputError
from attnwidget.relevance.lrp.attention import register

# LRP and chefer2021 need transformers' AttentionInterface (see test_versions);
# below that version the threads run the other methods only.
HAS_LRP = register(required=False)


def _available(*methods: str) -> list[str]:
    kept = [m for m in methods if HAS_LRP or m not in ("lrp", "chefer2021")]
    return kept or ["raw", "integrated_gradients"]


# (text, methods): different lengths and methods per thread, every re-running
# method among them (integrated gradients, blank-out, LRP, chefer2021).
CALLS = [
    ("the keys to the cabinet are", _available("lrp", "raw")),
    ("a dog runs in the park", _available("chefer2021", "rollout")),
    ("the movie was great", _available("integrated_gradients", "grad_attention")),
    ("she reads books while he writes letters", _available("lrp", "blank_out", "input_x_gradient")),
]


def _state(model: torch.nn.Module) -> dict[str, Any]:
    return {
        "training": [m.training for m in model.modules()],
        "requires_grad": [p.requires_grad for p in model.parameters()],
        "grads": [p.grad is None for p in model.parameters()],
        "attention": attention_implementation(model),
        "hooks": [
            len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks)
            for m in model.modules()
        ],
    }


def _assert_equal(got: attnwidget.Explanation, expected: attnwidget.Explanation) -> None:
    assert got.tokens == expected.tokens
    assert got.target_id == expected.target_id
    np.testing.assert_array_equal(got.attentions, expected.attentions)
    np.testing.assert_array_equal(got.logits, expected.logits)
    assert got.scores.keys() == expected.scores.keys()
    for method, scores in expected.scores.items():
        np.testing.assert_array_equal(got.scores[method], scores, err_msg=method)


@pytest.mark.parametrize("family", ["bert-cls", "gpt2-lm"])
def test_threads_on_one_model_get_the_sequential_results(family: str) -> None:
    model, tokenizer = build(family)
    model.train()  # restored after every call, also while other threads wait
    before = _state(model)
    sequential = [attnwidget.explain(model, tokenizer, t, methods=m) for t, m in CALLS]
    jobs = [(lambda t=t, m=m: attnwidget.explain(model, tokenizer, t, methods=m)) for t, m in CALLS]
    for _ in range(3):
        results = run_together(jobs)
        for got, expected in zip(results, sequential, strict=True):
            if isinstance(got, BaseException):
                raise got
            _assert_equal(got, expected)
        assert _state(model) == before


def test_a_failing_thread_does_not_disturb_the_others() -> None:
    model, tokenizer = build("bert-cls")
    model.train()
    before = _state(model)
    expected = attnwidget.explain(model, tokenizer, CALLS[0][0], methods=CALLS[0][1])
    jobs = [
        lambda: attnwidget.explain(model, tokenizer, "the dog", target="neutral"),
        lambda: attnwidget.explain(model, tokenizer, CALLS[0][0], methods=CALLS[0][1]),
    ]
    for _ in range(3):
        failed, worked = run_together(jobs)
        assert isinstance(failed, InputError) and "unknown label 'neutral'" in str(failed)
        _assert_equal(worked, expected)
        assert _state(model) == before


def test_the_lock_is_per_model() -> None:
    first, tokenizer = build("bert-cls")
    second, _ = build("bert-cls", seed=1)
    assert model_lock(first) is model_lock(first)
    assert model_lock(first) is not model_lock(second)
    held, release = threading.Event(), threading.Event()

    def hold_first() -> None:
        with capture_ready(first):
            held.set()
            release.wait(JOIN_TIMEOUT)

    holder = threading.Thread(target=hold_first)
    holder.start()
    try:
        assert held.wait(JOIN_TIMEOUT)
        # While another thread holds the first model, this thread cannot take
        # its lock, but the second model's is free and it can be explained.
        assert not model_lock(first).acquire(blocking=False)
        assert model_lock(second).acquire(blocking=False)
        model_lock(second).release()
        (result,) = run_together(
            [lambda: attnwidget.explain(second, tokenizer, "the dog", methods=_available("lrp"))]
        )
        assert isinstance(result, attnwidget.Explanation)
        assert holder.is_alive()  # the first model was held the whole time
    finally:
        release.set()
        holder.join(JOIN_TIMEOUT)
    assert model_lock(first).acquire(blocking=False)
    model_lock(first).release()


def test_nested_use_in_one_thread_does_not_deadlock() -> None:
    model, tokenizer = build("gpt2-lm")
    (result,) = run_together(
        [lambda: _explain_inside_capture_ready(model, tokenizer)]  # one thread, re-entered
    )
    assert isinstance(result, attnwidget.Explanation), result


def _explain_inside_capture_ready(model: Any, tokenizer: Any) -> attnwidget.Explanation:
    with capture_ready(model), capture_ready(model):
        return attnwidget.explain(
            model, tokenizer, "the dog", methods=_available("lrp", "chefer2021")
        )


def test_a_model_with_a_lock_is_garbage_collected() -> None:
    model, tokenizer = build("bert-cls")
    attnwidget.explain(
        model, tokenizer, "the dog", methods=_available("lrp", "integrated_gradients")
    )
    lock = model_lock(model)
    alive = weakref.ref(model)
    del model
    gc.collect()
    assert alive() is None  # the lock registry keeps no model alive
    assert not lock._is_owned()
