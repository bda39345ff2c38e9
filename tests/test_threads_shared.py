"""Threads that share a model's parts, and threads that run the model themselves.

A model and its backbone (``model`` and ``model.bert``) are two objects that
share every module of the backbone and the config. explain() on one and on the
other in two threads must wait for each other, give the results of sequential
calls and leave every parameter's ``requires_grad`` and the attention
implementation as they were, in every interleaving.

A user's own forward and backward pass in another thread, while explain() runs
on the same model, must get the numbers it gets alone (hooks and attention
rules act only in the explaining thread; a pass started while the model is
held waits until it is put back; a pass already running when explain() starts
is waited for), never an attnwidget error or a wrong gradient.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from concurrency import JOIN_TIMEOUT, run_together
from tiny_models import build

import attnwidget
from attnwidget.capture import capture_ready
from attnwidget.capture.state import model_lock
from attnwidget.errors import ConcurrentUseError
from attnwidget.relevance.chefer.engine import chefer_rules
from attnwidget.relevance.lrp.attention import register
from attnwidget.relevance.lrp.engine import lrp_rules

pytestmark = pytest.mark.skipif(
    not register(required=False),
    reason="lrp and chefer2021 need transformers>=5.0 (AttentionInterface)",
)

TEXT = "the keys to the cabinet are"
OTHER = "a dog runs in the park"

ROUNDS = 10


def _model() -> tuple[Any, Any]:
    """A tiny BERT classifier in training mode, dropout off (so passes are deterministic),
    its embeddings frozen as in a fine-tuning set-up (flags that must survive)."""
    model, tokenizer = build("bert-cls")
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    model.train()
    for param in model.bert.embeddings.parameters():
        param.requires_grad_(False)
    return model, tokenizer


def _state(model: torch.nn.Module) -> dict[str, Any]:
    configs = {id(m.config): m.config for m in model.modules() if hasattr(m, "config")}
    return {
        "training": [m.training for m in model.modules()],
        "requires_grad": [(n, p.requires_grad) for n, p in model.named_parameters()],
        "grad": [p.grad is None for p in model.parameters()],
        "attention": sorted(str(c._attn_implementation) for c in configs.values()),
        "hooks": [
            len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks)
            for m in model.modules()
        ],
    }


def _same(got: attnwidget.Explanation, expected: attnwidget.Explanation) -> None:
    assert got.tokens == expected.tokens
    np.testing.assert_array_equal(got.attentions, expected.attentions)
    assert got.scores.keys() == expected.scores.keys()
    for method, scores in expected.scores.items():
        np.testing.assert_array_equal(got.scores[method], scores, err_msg=method)


def _user_pass(model: Any, tokenizer: Any, text: str = OTHER) -> dict[str, Any]:
    """A user's own training step: forward with labels, backward, the gradients read."""
    batch = tokenizer(text, return_tensors="pt")
    output = model(**batch, labels=torch.tensor([1]))
    output.loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return {"logits": output.logits.detach().clone(), "grads": grads}


def _same_pass(got: dict[str, Any], expected: dict[str, Any]) -> None:
    # sdpa alone, the same numbers up to float rounding when another implementation ran
    np.testing.assert_allclose(got["logits"], expected["logits"], rtol=1e-5, atol=1e-6)
    assert got["grads"].keys() == expected["grads"].keys(), "parameters without a gradient"
    for name, grad in expected["grads"].items():
        np.testing.assert_allclose(got["grads"][name], grad, rtol=1e-4, atol=1e-6, err_msg=name)


def test_a_model_and_its_backbone_explained_in_two_threads() -> None:
    model, tokenizer = _model()
    before = _state(model)
    assert before["attention"] == ["sdpa"]  # what a wrong restore would turn into eager
    whole = attnwidget.explain(model, tokenizer, TEXT, methods=["lrp", "chefer2021"])
    backbone = attnwidget.explain(model.bert, tokenizer, TEXT, methods=["raw", "rollout"])
    assert _state(model) == before
    jobs = [
        lambda: attnwidget.explain(model, tokenizer, TEXT, methods=["lrp", "chefer2021"]),
        lambda: attnwidget.explain(model.bert, tokenizer, TEXT, methods=["raw", "rollout"]),
    ]
    for _ in range(ROUNDS):
        got_whole, got_backbone = run_together(jobs)
        for got in (got_whole, got_backbone):
            if isinstance(got, BaseException):
                raise got
        _same(got_whole, whole)
        _same(got_backbone, backbone)
        assert _state(model) == before


def test_the_lock_covers_every_model_that_shares_a_part() -> None:
    model, _ = _model()
    other, _ = build("bert-cls", seed=1)
    same_config = type(other)(other.config)  # shares only the config object
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with model_lock(model.bert.encoder):
            held.set()
            release.wait(JOIN_TIMEOUT)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(JOIN_TIMEOUT)
        for shares in (model, model.bert, model.bert.encoder.layer[0]):
            assert not model_lock(shares).acquire(blocking=False), type(shares).__name__
        assert model_lock(other).acquire(blocking=False)  # nothing shared: free
        with model_lock(same_config):  # re-entrant in this thread, and it shares the config
            assert run_together([lambda: model_lock(other).acquire(blocking=False)]) == [False]
        model_lock(other).release()
    finally:
        release.set()
        holder.join(JOIN_TIMEOUT)
    assert model_lock(model).acquire(blocking=False)
    model_lock(model).release()


@pytest.mark.parametrize("rules", [lrp_rules, chefer_rules], ids=["lrp", "chefer2021"])
def test_rules_installed_in_one_thread_leave_another_threads_pass_alone(rules: Any) -> None:
    """The hooks and the attention function act only in the thread that installed them."""
    model, tokenizer = _model()
    alone = _user_pass(model, tokenizer)
    installed, done = threading.Event(), threading.Event()

    def install() -> None:  # the rules alone, without capture_ready's lock and guard
        with rules(model):
            installed.set()
            done.wait(JOIN_TIMEOUT)

    installer = threading.Thread(target=install)
    installer.start()
    try:
        assert installed.wait(JOIN_TIMEOUT)
        assert "attnwidget" in str(model.config._attn_implementation)
        (got,) = run_together([lambda: _user_pass(model, tokenizer)])
    finally:
        done.set()
        installer.join(JOIN_TIMEOUT)
    if isinstance(got, BaseException):
        raise got
    _same_pass(got, alone)


def test_a_pass_started_while_the_model_is_held_waits_until_it_is_put_back() -> None:
    model, tokenizer = _model()
    before = _state(model)
    alone = _user_pass(model, tokenizer)
    held, release = threading.Event(), threading.Event()
    results: list[Any] = []

    def hold() -> None:
        with capture_ready(model):
            held.set()
            release.wait(JOIN_TIMEOUT)

    def user() -> None:
        try:
            results.append(_user_pass(model, tokenizer))
        except BaseException as error:
            results.append(error)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(JOIN_TIMEOUT)
    passer = threading.Thread(target=user)
    passer.start()
    passer.join(0.5)
    try:
        assert passer.is_alive() and not results, "the pass ran on the prepared model"
    finally:
        release.set()
        holder.join(JOIN_TIMEOUT)
        passer.join(JOIN_TIMEOUT)
    (got,) = results
    if isinstance(got, BaseException):
        raise got
    _same_pass(got, alone)
    assert _state(model) == before


def test_explain_waits_for_a_pass_already_running() -> None:
    model, tokenizer = _model()
    before = _state(model)
    alone = _user_pass(model, tokenizer)
    inside, go = threading.Event(), threading.Event()

    def pause(_module: Any, _args: Any) -> None:  # the user's own hook, mid-forward
        if threading.current_thread().name == "user":
            inside.set()
            go.wait(JOIN_TIMEOUT)

    handle = model.bert.encoder.layer[1].register_forward_pre_hook(pause)
    results: dict[str, Any] = {}

    def run(name: str, job: Callable[[], Any]) -> None:
        try:
            results[name] = job()
        except BaseException as error:
            results[name] = error

    user = threading.Thread(target=run, args=("user", lambda: _user_pass(model, tokenizer)))
    user.name = "user"
    explaining = threading.Thread(
        target=run,
        args=("explain", lambda: attnwidget.explain(model, tokenizer, TEXT, methods=["lrp"])),
    )
    user.start()
    try:
        assert inside.wait(JOIN_TIMEOUT)
        explaining.start()
        explaining.join(0.5)  # explain() has the lock; it must not change the model under the pass
        assert explaining.is_alive(), "explain() ran while the user's pass was running"
        assert model.training and _state(model)["requires_grad"] == before["requires_grad"]
        assert _state(model)["attention"] == before["attention"]
    finally:
        go.set()
        user.join(JOIN_TIMEOUT)
        explaining.join(JOIN_TIMEOUT)
    handle.remove()
    for value in results.values():
        # explain() may refuse when the user's backward pass overlaps it (a clear error)
        if isinstance(value, BaseException) and not isinstance(value, ConcurrentUseError):
            raise value
    _same_pass(results["user"], alone)
    if not isinstance(results["explain"], ConcurrentUseError):
        _same(results["explain"], attnwidget.explain(model, tokenizer, TEXT, methods=["lrp"]))
    assert _state(model) == before


def test_explain_waits_for_a_backward_pass_already_running() -> None:
    # A backward pass runs in no module's frame. One paused in its first step
    # (before it reaches any parameter) when explain() starts must be waited
    # for: frozen under it, a parameter whose hooks it had already passed
    # would silently get no gradient (seen once in CI: pooler.dense.bias).
    model, tokenizer = _model()
    before = _state(model)
    alone = _user_pass(model, tokenizer)
    inside, go = threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    def user() -> None:
        try:
            batch = tokenizer(OTHER, return_tensors="pt")
            output = model(**batch, labels=torch.tensor([1]))

            def pause(grad: torch.Tensor) -> None:  # mid-backward, no parameter reached yet
                inside.set()
                go.wait(JOIN_TIMEOUT)

            output.logits.register_hook(pause)
            output.loss.backward()
            grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
            model.zero_grad(set_to_none=True)
            results["user"] = {"logits": output.logits.detach().clone(), "grads": grads}
        except BaseException as error:
            results["user"] = error

    def explain() -> None:
        try:
            results["explain"] = attnwidget.explain(model, tokenizer, TEXT, methods=["lrp"])
        except BaseException as error:
            results["explain"] = error

    passer = threading.Thread(target=user)
    explaining = threading.Thread(target=explain)
    passer.start()
    try:
        assert inside.wait(JOIN_TIMEOUT)
        explaining.start()
        explaining.join(0.5)
        assert explaining.is_alive(), "explain() ran while the user's backward pass was running"
        assert _state(model)["requires_grad"] == before["requires_grad"]
    finally:
        go.set()
        passer.join(JOIN_TIMEOUT)
        explaining.join(JOIN_TIMEOUT)
    for value in results.values():
        if isinstance(value, BaseException):
            raise value  # no ConcurrentUseError either: the passes did not overlap
    _same_pass(results["user"], alone)
    _same(results["explain"], attnwidget.explain(model, tokenizer, TEXT, methods=["lrp"]))
    assert _state(model) == before


def test_a_backward_pass_reaching_the_frozen_parameters_gets_its_gradients() -> None:
    """The forward ran before the model was prepared, the backward while it is held."""
    model, tokenizer = _model()
    before = _state(model)
    alone = _user_pass(model, tokenizer)
    output = model(**tokenizer(OTHER, return_tensors="pt"), labels=torch.tensor([1]))
    held, backward_done = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        try:
            with capture_ready(model):
                held.set()
                backward_done.wait(JOIN_TIMEOUT)
        except BaseException as error:
            errors.append(error)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(JOIN_TIMEOUT)
        output.loss.backward()  # this thread's own pass, while the other holds the model
    finally:
        backward_done.set()
        holder.join(JOIN_TIMEOUT)
    (failed,) = errors  # the holder is told: its results could depend on the change
    assert isinstance(failed, ConcurrentUseError), failed
    assert "another thread" in str(failed) and "one after the other" in str(failed)
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    _same_pass({"logits": output.logits.detach(), "grads": grads}, alone)
    assert _state(model) == before


def test_a_users_training_steps_while_chefer2021_explains() -> None:
    model, tokenizer = _model()
    before = _state(model)
    alone = _user_pass(model, tokenizer)
    reference = attnwidget.explain(model, tokenizer, TEXT, methods=["chefer2021"])

    trained = threading.Event()

    def explaining() -> list[Any]:
        # At least ROUNDS calls, the first ones overlapping the training steps; then on
        # until one call has returned an explanation, which is certain once they end.
        out: list[Any] = []
        while len(out) < ROUNDS or not (trained.is_set() and _explained(out[-1])):
            try:
                out.append(attnwidget.explain(model, tokenizer, TEXT, methods=["chefer2021"]))
            except ConcurrentUseError as error:  # a clear refusal, never a wrong number
                out.append(error)
        return out

    def training() -> list[Any]:
        try:
            return [_user_pass(model, tokenizer) for _ in range(ROUNDS + 5)]
        finally:
            trained.set()

    for _ in range(2):
        trained.clear()
        explained, passes = run_together([explaining, training])
        for value in (explained, passes):
            if isinstance(value, BaseException):
                raise value
        for got in passes:
            _same_pass(got, alone)
        done = [e for e in explained if isinstance(e, attnwidget.Explanation)]
        assert done, explained
        for got in done:
            _same(got, reference)
        assert _state(model) == before


def _explained(value: Any) -> bool:
    return isinstance(value, attnwidget.Explanation)
