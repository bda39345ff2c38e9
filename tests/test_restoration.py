"""The model comes back exactly as it was, for every method that re-runs it, on every family.

In the style of captum's hook tests: after a successful explanation, after a
bad target, and when a module raises in the middle of a method's own pass, no
hook remains on any module (forward, forward-pre, backward, backward-pre),
the attention and experts implementations, ``requires_grad`` flags, training
modes and weights are the ones the model had, no parameter has a ``.grad``,
and no torch-function mode or LRP pass is left active in the thread.
"""

from __future__ import annotations

import pytest
import torch
from test_lrp import LRP_FAMILIES, text_for
from tiny_models import build

import attnwidget
from attnwidget.errors import InputError
from attnwidget.methods.registry import available_methods, get_method
from attnwidget.relevance.lrp.attention import active_pass

#: Methods that run the model again (their needs include a re-run of the example).
MODEL_METHODS = [
    name
    for name in available_methods()
    if get_method(name).needs & {"target_score", "target_probability"}
]
OPTIONS = {"chefer2021": {"relevance": "attnlrp"}, "integrated_gradients": {"steps": 8}}
HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


def options_for(methods: list[str]) -> dict:
    return {m: OPTIONS[m] for m in methods if m in OPTIONS}


def snapshot(model: torch.nn.Module) -> dict:
    configs = [m.config for m in model.modules() if hasattr(m, "config")]
    return {
        "implementations": [
            (
                c.__dict__.get("_attn_implementation_internal"),
                c.__dict__.get("_experts_implementation_internal"),
            )
            for c in configs
        ],
        "flags": {n: p.requires_grad for n, p in model.named_parameters()},
        "modes": {n: m.training for n, m in model.named_modules()},
        "state": {k: v.clone() for k, v in model.state_dict().items()},
        "hooks": {n: tuple(len(getattr(m, h)) for h in HOOKS) for n, m in model.named_modules()},
    }


def assert_restored(model: torch.nn.Module, before: dict) -> None:
    after = snapshot(model)
    assert after["implementations"] == before["implementations"]
    assert after["flags"] == before["flags"]
    assert after["modes"] == before["modes"]
    assert after["hooks"] == before["hooks"]
    assert all(torch.equal(before["state"][k], v) for k, v in after["state"].items())
    assert all(p.grad is None for p in model.parameters())
    assert torch._C._len_torch_function_stack() == 0  # no LRP inline mode left on
    assert active_pass().get() is None


def prepared(family: str):
    """A model in a state explain() changes and must give back: training mode (one
    submodule in eval), one frozen parameter, a user hook of each kind."""
    model, tokenizer = build(family)
    model.train()
    next(model.parameters()).requires_grad_(False)
    list(model.children())[-1].eval()
    model.register_forward_hook(lambda *_: None)
    model.register_forward_pre_hook(lambda *_: None)
    return model, tokenizer


def test_the_model_driving_methods_are_the_expected_ones() -> None:
    assert set(MODEL_METHODS) >= {"lrp", "chefer2021", "integrated_gradients", "blank_out"}


@pytest.mark.parametrize("family", LRP_FAMILIES)
def test_restored_after_success(family: str) -> None:
    model, tokenizer = prepared(family)
    before = snapshot(model)
    exp = attnwidget.explain(
        model,
        tokenizer,
        text_for(family, tokenizer),
        methods=MODEL_METHODS,
        method_options=options_for(MODEL_METHODS),
    )
    assert set(exp.scores) == set(MODEL_METHODS)
    assert_restored(model, before)


@pytest.mark.parametrize("family", LRP_FAMILIES)
def test_restored_after_a_bad_target(family: str) -> None:
    model, tokenizer = prepared(family)
    before = snapshot(model)
    with pytest.raises(InputError, match="target"):
        attnwidget.explain(
            model,
            tokenizer,
            text_for(family, tokenizer),
            target=10**6,
            methods=MODEL_METHODS,
            method_options=options_for(MODEL_METHODS),
        )
    assert_restored(model, before)


def blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The layer stack: the longest ModuleList (shared ALBERT layers: its one layer)."""
    lists = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList)]
    return max(lists, key=len)


@pytest.mark.parametrize("method", MODEL_METHODS)
@pytest.mark.parametrize("family", LRP_FAMILIES)
def test_restored_when_a_module_raises_inside_the_method(family: str, method: str) -> None:
    model, tokenizer = prepared(family)
    text = text_for(family, tokenizer)
    stack = blocks(model)
    calls = {"n": 0, "fail_at": None}

    def count(*_args) -> None:
        calls["n"] += 1
        if calls["fail_at"] is not None and calls["n"] >= calls["fail_at"]:
            raise RuntimeError(f"boom in layer 1 during {method}")

    handle = stack[min(1, len(stack) - 1)].register_forward_hook(count)
    attnwidget.explain(model, tokenizer, text, methods=["raw"])  # the calls of capture alone
    calls["fail_at"], calls["n"] = calls["n"] + 1, 0  # the first call of the method's own pass
    before = snapshot(model)
    with pytest.raises(RuntimeError, match=f"during {method}"):
        attnwidget.explain(
            model, tokenizer, text, methods=[method], method_options=options_for([method])
        )
    assert_restored(model, before)
    handle.remove()
