"""NeuronView on long inputs: refused before the model runs when the page could not
take it, announced and shown when it will take long, and Ctrl-C leaves the model
as it was. Real tiny models; the interrupt comes from a real forward hook."""

from __future__ import annotations

import pytest
from test_restoration import assert_restored, snapshot
from tiny_models import build, long_bert

import attnwidget
from attnwidget.capture.qk import qk_layouts
from attnwidget.errors import InputError
from attnwidget.views import NeuronView
from attnwidget.views.attention.neuron_size import neuron_size
from attnwidget.views.core.message_size import MESSAGE_CAP


def text_of(tokens: int) -> str:
    return " ".join(["the keys to the cabinet"] * (tokens // 5))


def test_a_text_too_long_for_the_page_is_refused_before_the_model_runs() -> None:
    model, tokenizer = long_bert()
    text = text_of(1500)
    n = len(tokenizer(text)["input_ids"])
    size = neuron_size(model, qk_layouts(model), n)
    assert size.page_bytes > MESSAGE_CAP  # 8·4·n² bytes of scores and weights alone
    calls = []
    hook = model.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        with pytest.raises(InputError, match=r"at most [\d,]+ tokens") as caught:
            NeuronView(model, tokenizer, text)
    finally:
        hook.remove()
    assert calls == [], "the model ran before the refusal"
    # The length it names does fit: the view is built at that length.
    most = int(str(caught.value).split("at most ")[1].split(" tokens")[0].replace(",", ""))
    fitting = tokenizer.decode(tokenizer(text)["input_ids"][1 : most - 1])
    view = NeuronView(model, tokenizer, fitting, progress=False)
    assert len(view.tokens) <= most


def test_long_work_is_announced_first_and_its_steps_counted(capsys) -> None:
    model, tokenizer = build("bert-cls")
    NeuronView(model, tokenizer, "the keys to the cabinet")
    assert capsys.readouterr().err == ""  # short: quiet
    NeuronView(model, tokenizer, "the keys to the cabinet", progress=True)
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("NeuronView (") and "estimated" in first and "Ctrl-C" in first
    seen = []
    NeuronView(model, tokenizer, "the keys", progress=lambda d, t: seen.append((d, t)))
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    with pytest.raises(InputError, match="callable"):
        NeuronView(model, tokenizer, "the keys", progress="loud")


def test_the_estimate_grows_with_the_sizes() -> None:
    model, _ = long_bert()
    layouts = qk_layouts(model)
    short, long = (neuron_size(model, layouts, n) for n in (100, 1000))
    assert long.seconds > 10 * short.seconds and long.page_bytes > 90 * short.page_bytes


@pytest.mark.parametrize("family", ["bert-cls", "llama-lm"])
def test_ctrl_c_in_the_forward_pass_leaves_the_model_as_it_was(family: str) -> None:
    model, tokenizer = build(family)
    model.train()  # not the capture's state: it must come back
    before = snapshot(model)
    layer = next(
        m for n, m in model.named_modules() if n.endswith("layer.1") or n.endswith("layers.1")
    )

    def interrupt(*_args):
        raise KeyboardInterrupt  # as Ctrl-C arrives halfway through the forward pass

    hook = layer.register_forward_hook(interrupt)
    with pytest.raises(KeyboardInterrupt):
        NeuronView(model, tokenizer, "the keys to the cabinet")
    hook.remove()
    assert_restored(model, before)
    assert NeuronView(model, tokenizer, "the keys").num_layers > 0  # and it still works
    assert_restored(model, before)


def test_ctrl_c_in_explain_leaves_the_model_as_it_was() -> None:
    model, tokenizer = build("bert-cls")
    model.train()
    before = snapshot(model)
    calls = []

    def interrupt(*_args):
        calls.append(1)
        if len(calls) == 2:  # the second pass: chefer2021's relevance pass
            raise KeyboardInterrupt

    hook = model.register_forward_hook(interrupt)
    with pytest.raises(KeyboardInterrupt):
        attnwidget.explain(model, tokenizer, "the keys to the cabinet", methods=["chefer2021"])
    hook.remove()
    assert len(calls) == 2
    assert_restored(model, before)
