"""explain() inside torch.no_grad() and torch.inference_mode().

Every method needs gradients (the capture itself takes one backward pass;
integrated gradients, LRP and chefer2021 re-run the model), so explain()
switches autograd on where it needs it, whatever the caller's grad mode, and
leaves that grad mode as it was. A model whose parameters are inference
tensors (created inside inference_mode) cannot be differentiated at all; that
is refused with a clear error and the model is left as it was.

The reference for the capture (logits, attention, input × gradient) is
computed here directly with torch on a second copy of the model (same seed or
same shipped weights), in plain grad mode.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from tiny_models import build

import attnwidget
from attnwidget import demo
from attnwidget.capture import attention_implementation, capture_ready
from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.lrp.attention import register

CORE_METHODS = [
    "raw",
    "rollout",
    "grad_attention",
    "input_x_gradient",
    "integrated_gradients",
    "blank_out",
]
# LRP and chefer2021 need transformers' AttentionInterface (see test_versions).
LRP_METHODS = ["lrp", "chefer2021"]
HAS_LRP = register(required=False)
METHODS = CORE_METHODS + LRP_METHODS if HAS_LRP else CORE_METHODS
NO_LRP = "LRP and chefer2021 need transformers.AttentionInterface (transformers>=5.0)"
TEXT = "the keys to the cabinet are"
MODES: dict[str, Callable[[], Any]] = {
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
    "set_grad_enabled(False)": lambda: torch.set_grad_enabled(False),
}


def _load(name: str) -> tuple[Any, Any]:
    if name.startswith("sva-"):
        return demo.load(name)
    return build(name)


def _reference(name: str, text: str) -> dict[str, np.ndarray]:
    """Logits, attention and input × gradient of the predicted target, by hand."""
    model, tokenizer = _load(name)
    model.eval()
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
    # (older transformers pick the attention class when the model is built;
    # their SDPA classes compute eager attention when asked for the weights)
    encoding = tokenizer(text, return_tensors="pt")
    kwargs = {"attention_mask": encoding["attention_mask"]}
    if "token_type_ids" in encoding:
        kwargs["token_type_ids"] = encoding["token_type_ids"]
    embeds = model.get_input_embeddings()(encoding["input_ids"]).detach().requires_grad_(True)
    out = model(inputs_embeds=embeds, output_attentions=True, **kwargs)
    # Classifiers read the whole-sequence logits; causal LMs the last position.
    logits = out.logits[0] if out.logits.dim() == 2 else out.logits[0, -1]
    target = int(logits.argmax())
    logits[target].backward()
    return {
        "logits": logits.detach().numpy(),
        "attentions": torch.stack([a[0] for a in out.attentions]).detach().numpy(),
        "input_x_gradient": (embeds * embeds.grad).sum(-1)[0].detach().numpy(),
        "target_id": np.array(target),
    }


def _state(model: torch.nn.Module) -> dict[str, Any]:
    """Everything explain() might change on a model."""
    return {
        "training": {name: m.training for name, m in model.named_modules()},
        "requires_grad": {name: p.requires_grad for name, p in model.named_parameters()},
        "grads": [p.grad for p in model.parameters()],
        "attention": attention_implementation(model),
        "hooks": [
            len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks)
            for m in model.modules()
        ],
        "weights": {k: v.clone() for k, v in model.state_dict().items()},
    }


def _assert_same_state(before: dict[str, Any], model: torch.nn.Module) -> None:
    after = _state(model)
    for key in ("training", "requires_grad", "attention", "hooks"):
        assert after[key] == before[key], key
    assert all(g is None for g in after["grads"])
    assert before["weights"].keys() == after["weights"].keys()
    for key, value in before["weights"].items():
        assert torch.equal(value, after["weights"][key]), key


@pytest.mark.parametrize(
    "methods",
    [
        pytest.param(CORE_METHODS, id="core"),
        pytest.param(LRP_METHODS, id="lrp", marks=pytest.mark.skipif(not HAS_LRP, reason=NO_LRP)),
    ],
)
@pytest.mark.parametrize("name", ["bert-cls", "gpt2-lm", "sva-encoder", "sva-causal"])
def test_every_method_works_inside_no_grad_and_inference_mode(
    name: str, methods: list[str]
) -> None:
    model, tokenizer = _load(name)
    model.train()  # the caller's mode, restored afterwards
    before = _state(model)
    reference = _reference(name, TEXT)
    methods = list(dict.fromkeys([*methods, "input_x_gradient"]))  # the reference checks it
    normal = attnwidget.explain(model, tokenizer, TEXT, methods=methods)
    for mode in ("no_grad", "inference_mode"):
        context, inference = MODES[mode], mode == "inference_mode"
        with context():
            explanation = attnwidget.explain(model, tokenizer, TEXT, methods=methods)
            # The caller's grad mode is the same after the call.
            assert not torch.is_grad_enabled(), mode
            assert torch.is_inference_mode_enabled() == inference, mode
        assert torch.is_grad_enabled()
        # The capture against the hand-made reference...
        assert explanation.target_id == int(reference["target_id"]), mode
        np.testing.assert_allclose(explanation.logits, reference["logits"], atol=1e-5)
        np.testing.assert_allclose(explanation.attentions, reference["attentions"], atol=1e-6)
        np.testing.assert_allclose(
            explanation.scores["input_x_gradient"],
            reference["input_x_gradient"],
            rtol=1e-4,
            atol=1e-6,
        )
        # ...and every method's scores exactly those of a call in plain grad mode.
        for method in methods:
            np.testing.assert_array_equal(
                explanation.scores[method], normal.scores[method], err_msg=f"{mode} {method}"
            )
        _assert_same_state(before, model)


def test_a_batch_of_texts_inside_inference_mode() -> None:
    model, tokenizer = build("bert-cls")
    texts = [TEXT, "a dog runs in the park", "the movie was great"]
    with torch.inference_mode():
        explanations = attnwidget.explain(model, tokenizer, texts, methods=["input_x_gradient"])
    for text, explanation in zip(texts, explanations, strict=True):
        np.testing.assert_allclose(
            explanation.scores["input_x_gradient"],
            _reference("bert-cls", text)["input_x_gradient"],
            rtol=1e-4,
            atol=1e-6,
        )


def _plain_backward_works(name: str) -> bool:
    """Whether torch itself can differentiate the model loaded inside inference_mode.

    A second copy, loaded the same way, run as explain() runs it (eval, eager
    attention, frozen parameters, the tokenizer's inputs, attention weights
    returned), with no attnwidget code.
    """
    with torch.inference_mode():
        model, tokenizer = demo.load(name, attn_implementation="eager")
    model.requires_grad_(False)
    encoding = dict(tokenizer(TEXT, return_tensors="pt"))
    embeds = model.get_input_embeddings()(encoding.pop("input_ids")).detach()
    embeds.requires_grad_(True)
    try:
        out = model(inputs_embeds=embeds, output_attentions=True, **encoding)
        torch.autograd.grad(out.logits.sum(), [embeds])
    except RuntimeError as error:
        assert "inference tensor" in str(error).lower(), error
        return False
    return True


@pytest.mark.parametrize("name", ["sva-encoder", "sva-causal"])
def test_a_model_loaded_inside_inference_mode(name: str) -> None:
    # from_pretrained under inference_mode keeps normal parameters but makes
    # the buffers (position ids, token type ids, on some versions a causal
    # mask) inference tensors. Where autograd never saves them the model is
    # explained with the scores of a normally loaded model; where it must
    # (torch says so below) explain() refuses clearly and changes nothing.
    with torch.inference_mode():
        model, tokenizer = demo.load(name)
    assert any(b.is_inference() for b in model.buffers()) or not list(model.buffers())
    before = _state(model)
    if not _plain_backward_works(name):
        # (older transformers also make the parameters inference tensors)
        with pytest.raises(ModelNotSupportedError, match=r"is an inference tensor.*cannot save"):
            attnwidget.explain(model, tokenizer, TEXT, methods=["raw"])
        _assert_same_state(before, model)
        return
    normal_model, _ = demo.load(name)
    expected = attnwidget.explain(normal_model, tokenizer, TEXT, methods=METHODS)
    for context in (contextlib.nullcontext, torch.inference_mode):
        with context():
            explanation = attnwidget.explain(model, tokenizer, TEXT, methods=METHODS)
        for method in METHODS:
            np.testing.assert_array_equal(explanation.scores[method], expected.scores[method])
    _assert_same_state(before, model)


@pytest.mark.parametrize("mode", ["plain", *MODES])
def test_a_model_built_inside_inference_mode_is_refused_and_left_as_it_was(mode: str) -> None:
    with torch.inference_mode():
        model, tokenizer = build("gpt2-lm")
    assert all(p.is_inference() for p in model.parameters())
    before = _state(model)
    context = MODES.get(mode, contextlib.nullcontext)
    with context(), pytest.raises(ModelNotSupportedError) as error:
        attnwidget.explain(model, tokenizer, TEXT, methods=["raw"])
    message = str(error.value)
    assert "'transformer.wte.weight' is an inference tensor" in message
    assert "cannot save inference tensors for the backward pass" in message
    assert "outside torch.inference_mode()" in message
    assert torch.is_grad_enabled()
    _assert_same_state(before, model)
    # The fix the message gives works: the same weights built outside
    # inference_mode are explained.
    fixed, _ = build("gpt2-lm")
    attnwidget.explain(fixed, tokenizer, TEXT, methods=["raw"])


def test_an_inference_tensor_met_by_autograd_gives_a_clear_error() -> None:
    # A buffer or input made inside inference_mode that autograd must save
    # (here a factor of a product): torch's RuntimeError becomes a
    # ModelNotSupportedError saying why, and the model is put back.
    model, _ = build("bert-cls")
    model.train()
    before = _state(model)
    with torch.inference_mode():
        made_in_inference = torch.ones(3)
    with pytest.raises(ModelNotSupportedError, match=r"inference tensor.*cannot save it") as error:
        with capture_ready(model):
            assert not model.training and torch.is_grad_enabled()
            leaf = torch.ones(3, requires_grad=True)
            (leaf * made_in_inference).sum()
    assert isinstance(error.value.__cause__, RuntimeError)
    _assert_same_state(before, model)
    # Other errors pass through unchanged.
    with pytest.raises(RuntimeError, match="unrelated"), capture_ready(model):
        raise RuntimeError("unrelated")
    _assert_same_state(before, model)
