"""Every public view's largest message is under the cap (issue 20), view by view.

Each view is built on the largest input it is meant for, as in a notebook: the
widgets' comms are real ``comm.base_comm.BaseComm`` objects (what ipykernel's
comms are) whose transport records each message's size, so the first state
(the ``comm_open`` that carries it), every state update and every custom reply
is measured, those of a container's child widgets included. The page's requests
go to the handlers the view registered with ``on_msg`` (as ipywidgets' dispatch
calls them, but raising what they raise), and each must be answered without an
error reply. Where an input is too large for the page, the view refuses it
with an :class:`InputError` naming the part, and nothing over the cap went out.
``test_message_caps.py`` covers the Annotator, the AttentionCalculator, HeadView
and AttentionMatrixView.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from typing import Any, ClassVar

import comm
import numpy as np
import pytest
import torch
import transformers as tf
from comm.base_comm import BaseComm
from image_fixtures import made_explanation
from tiny_models import build, long_bert

import attnwidget
from attnwidget import demo
from attnwidget.capture.qk import qk_layouts
from attnwidget.demo.seq2seq import MAX_LENGTH, translate
from attnwidget.errors import InputError
from attnwidget.evaluation import evaluate
from attnwidget.results.explanation import Explanation
from attnwidget.views import (
    AlignmentView,
    AttentionMatrixView,
    EvaluationView,
    Explorer,
    FlowView,
    GenerationView,
    ImageView,
    ModelView,
    NeuronView,
    SaliencyView,
)
from attnwidget.views.attention.head_view import HeadView
from attnwidget.views.attention.neuron_size import STATE_RESERVE, neuron_size
from attnwidget.views.core.message_size import MESSAGE_CAP, message_bytes
from attnwidget.views.explorer.image_explorer import ImageExplorer
from attnwidget.views.flow._stack import MAX_TOKENS as FLOW_MAX_TOKENS


class KernelComm(BaseComm):
    """A widget comm as ipykernel's, whose transport records (kind, bytes) per message."""

    sent: ClassVar[
        list[tuple[str, int, str]]
    ] = []  # (message type, bytes, view or model); per test
    #: The ``type`` of each custom message sent (e.g. "attention", "error"); per test.
    replies: ClassVar[list[str]] = []

    def __init__(self, *args: Any, owner: str = "?", **kwargs: Any) -> None:
        self.owner = owner
        super().__init__(*args, **kwargs)

    def publish_msg(
        self,
        msg_type: str,
        data: Any = None,
        metadata: Any = None,
        buffers: Any = None,
        **keys: Any,
    ) -> None:
        size = message_bytes(data or {}, buffers or ())
        KernelComm.sent.append((msg_type, size, self.owner))
        if isinstance(data, dict) and data.get("method") == "custom":
            KernelComm.replies.append(str((data.get("content") or {}).get("type")))


@pytest.fixture
def notebook(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int, str]]]:
    """Widgets built in the test open kernel comms (as in a notebook); yields what they sent."""
    sent: ClassVar[list[tuple[str, int, str]]] = []
    monkeypatch.setattr(KernelComm, "sent", sent)
    monkeypatch.setattr(KernelComm, "replies", [])

    def create_comm(**kwargs: Any) -> KernelComm:
        data = kwargs.get("data") or {}
        state = data.get("state") or {}
        owner = str(state.get("_view") or state.get("_model_name", "?"))
        return KernelComm(owner=owner, **kwargs)

    monkeypatch.setattr(comm, "create_comm", create_comm)
    yield sent


def largest(sent: list[tuple[str, int, str]]) -> int:
    """The largest message recorded; every one is under the cap."""
    assert sent, "nothing was sent: the comm did not record"
    over = [entry for entry in sent if entry[1] > MESSAGE_CAP]
    assert not over, f"messages over the {MESSAGE_CAP:,}-byte cap: {over}"
    return max(size for _, size, _ in sent)


def page_asks(view: Any, content: dict[str, Any]) -> None:
    """A custom message from the page, given to the view's handlers as ipywidgets'
    dispatch does, but raising what they raise (the dispatch only logs it, and the
    page would wait for a reply that never comes)."""
    before = len(KernelComm.replies)
    for callback in view._msg_callbacks.callbacks:
        callback(view, content, [])
    answered = KernelComm.replies[before:]
    assert answered and "error" not in answered, (content, answered)


def softmax_attention(layers: int, heads: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = rng.random((layers, heads, n, n), dtype=np.float32) ** 4
    weights /= weights.sum(-1, keepdims=True)
    return weights


def tokens(n: int) -> list[str]:
    return ["[CLS]", *(f"word{k}" for k in range(1, n - 1)), "[SEP]"]


def ask_attention(view: HeadView | ModelView) -> None:
    """The page asks for every layer (all heads: the largest reply) of every matrix."""
    for m in view.attention.matrices:
        for layer in range(m.shape[0]):
            page_asks(view, {"type": "request", "matrix": m.key, "layer": layer})
            page_asks(view, {"type": "request", "matrix": m.key, "layer": layer, "head": 0})


def ask_flow(view: FlowView, methods: list[str] | None = None) -> None:
    """The page asks for every layer's fused attention and a token's paths."""
    for layer in range(view.shape[0]):
        page_asks(view, {"type": "request", "version": view.version, "layer": layer})
    for method in methods if methods is not None else view.methods:
        content = {
            "type": "compute",
            "id": 1,
            "version": view.version,
            "method": method,
            "layer": view.shape[0],
            "token": 0,
        }
        page_asks(view, content)


def ask_images(view: ImageView) -> None:
    """The page asks for every query-map layer."""
    for name in ("attention", "rollout"):
        for layer in range(view.num_layers):
            page_asks(view, {"type": "request", "map": name, "layer": layer})


def ask_tiles(view: AttentionMatrixView) -> None:
    levels = view.levels_of()
    for level in range(len(levels)):
        page_asks(
            view,
            {
                "type": "tiles",
                "version": view.version,
                "level": level,
                "tiles": [[i, j] for i in range(4) for j in range(4)],
            },
        )


def drive(view: Any) -> None:
    """Every request the page may make of ``view``."""
    if isinstance(view, (HeadView, ModelView)):
        ask_attention(view)
    elif isinstance(view, FlowView):
        ask_flow(view, [m for m in view.methods if m != "flow"])  # flow: see its own test
    elif isinstance(view, ImageView):
        ask_images(view)
    elif isinstance(view, AttentionMatrixView):
        ask_tiles(view)


# ---- text views at the longest inputs they draw --------------------------------------


def test_saliency_view_at_4096_tokens(notebook) -> None:
    n = 4096  # explain's longest input in docs/guide/long-inputs.md
    rng = np.random.default_rng(0)
    methods = ["raw", "rollout", "grad_attention", "input_x_gradient", "lrp"]
    # What explain(..., keep="rows") returns at that length: scores, no (L, H, n, n).
    scores = {name: rng.random(n).astype(np.float32) for name in methods}
    rows = rng.random((4, 8, n), dtype=np.float32)
    rows /= rows.sum(-1, keepdims=True)
    exp = Explanation(
        tokens=tokens(n), attentions=None, scores=scores, keep="rows", attention_rows=rows
    )
    view = SaliencyView(exp)
    view.send_state()
    view.selected_token = n - 2
    size = largest(notebook)
    assert any(kind == "comm_open" for kind, _, _ in notebook)
    print(f"SaliencyView n={n}: largest message {size:,} B")


def test_compare_view_at_4096_tokens(notebook) -> None:
    from types import SimpleNamespace

    n = 4096  # as the SaliencyView: compare(exp, ...) of a long explanation
    rng = np.random.default_rng(1)
    methods = ["raw", "rollout", "grad_attention", "input_x_gradient", "lrp"]
    scores = {name: rng.random(n).astype(np.float32) for name in methods}
    rows = rng.random((2, 2, n), dtype=np.float32)
    rows /= rows.sum(-1, keepdims=True)
    exp = Explanation(
        tokens=tokens(n), attentions=None, scores=scores, keep="rows", attention_rows=rows
    )
    exp.input_ids = np.array([101, *range(1000, 1000 + n - 2), 102])
    stub = SimpleNamespace(all_special_ids=[101, 102])
    rationale = (np.arange(n) % 7 == 0).astype(int)
    comparison = attnwidget.compare(
        exp, tokenizer=stub, rationale=rationale, rationale_unit="tokens", replacement_id=0
    )
    view = attnwidget.CompareView(comparison, selected_pair=methods[:2])
    view.send_state()
    view.selected_token = n - 2
    view.agreement_metric = "top20%"
    size = largest(notebook)
    assert any(kind == "comm_open" for kind, _, _ in notebook)
    print(f"CompareView n={n}, {len(methods)} methods: largest message {size:,} B")


def test_model_view_at_1024_tokens_pages_its_attention(notebook) -> None:
    n = 1024  # ModelView's longest before it shows an AttentionMatrixView
    exp = Explanation.from_attentions(softmax_attention(2, 2, n), tokens(n))
    view = ModelView(exp)
    assert isinstance(view, ModelView)
    view.send_state()
    ask_attention(view)
    assert KernelComm.replies.count("attention") >= 2 * 2  # every layer and head came
    size = largest(notebook)
    print(f"ModelView n={n}: largest message {size:,} B over {len(notebook)} messages")


@pytest.mark.parametrize(("cls", "heads", "n"), [(ModelView, 4, 1024), (HeadView, 16, 512)])
def test_a_layer_of_exactly_8_mib_is_paged_under_the_cap(notebook, cls, heads, n) -> None:
    exp = Explanation.from_attentions(softmax_attention(1, heads, n), tokens(n), methods=None)
    view = cls(exp)
    assert isinstance(view, cls)
    view.send_state()
    ask_attention(view)
    largest(notebook)


def test_flow_view_at_1024_tokens(notebook) -> None:
    n = FLOW_MAX_TOKENS  # 1,024: FlowView's longest before an AttentionMatrixView
    exp = Explanation.from_attentions(softmax_attention(3, 2, n), tokens(n))
    view = FlowView(exp)
    assert isinstance(view, FlowView) and view.shape == [3, n]
    view.send_state()
    before = len(notebook)
    ask_flow(view, ["raw", "rollout"])  # flow's max-flow at 1,024 tokens takes ~20 s
    assert len(notebook) >= before + 3 + 2  # every layer and both path replies came
    size = largest(notebook)
    print(f"FlowView n={n}: largest message {size:,} B")


def test_neuron_view_at_its_longest_text_and_one_past_it(notebook) -> None:
    model, tokenizer = long_bert()
    words = " ".join(["the keys to the cabinet"] * 300)
    ids = tokenizer(words)["input_ids"]
    with pytest.raises(InputError, match=r"NeuronView: .* at most ([\d,]+) tokens") as caught:
        NeuronView(model, tokenizer, words, progress=False)
    assert "scores" in str(caught.value)  # the part that grows
    most = int(str(caught.value).split("at most ")[1].split(" tokens")[0].replace(",", ""))
    assert not notebook  # refused before anything was built or sent
    # 8 tokens under that, the whole state (the front-end bundle, ~230 KB, included) fits.
    n = most - 8
    view = NeuronView(model, tokenizer, tokenizer.decode(ids[1 : n - 1]), progress=False)
    assert len(view.tokens) == n
    view.send_state()  # the whole state, as when the page (re)connects
    view.layer = 0  # the other layer's arrays
    size = largest(notebook)
    assert size > (MESSAGE_CAP - STATE_RESERVE) * 0.95  # really at the edge
    print(f"NeuronView n={n}: largest message {size:,} B")


def test_neuron_view_state_fits_at_the_length_its_refusal_names(notebook) -> None:
    model, tokenizer = long_bert()
    words = " ".join(["the keys to the cabinet"] * 300)
    ids = tokenizer(words)["input_ids"]
    most = neuron_size(model, qk_layouts(model), len(ids)).most_tokens()
    view = NeuronView(model, tokenizer, tokenizer.decode(ids[1 : most - 1]), progress=False)
    assert len(view.tokens) == most
    largest(notebook)  # what the constructor sent fits: the layer's arrays alone
    view.send_state()
    largest(notebook)


# ---- images, generation, evaluation, alignment -----------------------------------------


def test_image_view_of_the_shipped_vit_every_layer(notebook) -> None:
    model, processor = demo.load("shapes-vit")
    image = demo.images(1, seed=0)[0].image
    exp = attnwidget.explain(
        model, processor, image, methods=["raw", "rollout", "grad_attention", "input_x_gradient"]
    )
    for method in ("query_attention", None):
        view = ImageView(exp, selected_method=method) if method else ImageView(exp)
        view.send_state()
        ask_images(view)
    size = largest(notebook)
    print(f"ImageView shapes-vit: largest message {size:,} B")


def test_image_view_at_vit_base_size_every_layer(notebook) -> None:
    exp = made_explanation(14, 14, layers=12, heads=12, seed=1)  # ViT-B/16: 197 tokens
    view = ImageView(exp, selected_method="query_attention")
    view.send_state()
    ask_images(view)
    assert sum(1 for kind, _, _ in notebook if kind == "comm_msg") >= 2 * 12
    size = largest(notebook)
    print(f"ImageView ViT-B/16 shapes: largest message {size:,} B")


def test_generation_view_of_20_generated_tokens(notebook) -> None:
    model, tokenizer = build("gpt2-lm")
    gexp = attnwidget.explain_generation(
        model.eval(), tokenizer, "the keys to the cabinet", max_new_tokens=20
    )
    assert len(gexp) == 20
    view = GenerationView(gexp)
    view.send_state()
    for step in range(len(gexp)):
        view.selected_step = step
    view.aggregate = "words"
    size = largest(notebook)
    print(f"GenerationView 20 steps: largest message {size:,} B")


def test_evaluation_view_of_an_evaluate_result(notebook) -> None:
    model, tokenizer = demo.load("sva-encoder")
    texts = [s.text for s in demo.sentences(24, seed=2)]
    result = evaluate(
        model,
        tokenizer,
        texts,
        methods=["raw", "rollout", "input_x_gradient"],
        metrics=["comprehensiveness_aopc", "sufficiency_aopc"],
        progress=False,
    )
    view = EvaluationView(result)
    view.send_state()
    view.selected_example = view.example_ids[-1]
    size = largest(notebook)
    print(f"EvaluationView {len(texts)} examples: largest message {size:,} B")


def test_alignment_view_of_the_longest_translation(notebook) -> None:
    model, vocab = demo.load("seq2seq-additive")
    result = translate(model, vocab, "abcdefghij"[:MAX_LENGTH])
    view = AlignmentView(result)
    view.send_state()
    view.selected_output, view.selected_input = 0, 0
    size = largest(notebook)
    print(f"AlignmentView {MAX_LENGTH} letters: largest message {size:,} B")


def test_an_alignment_too_large_for_the_page_is_refused_naming_it(notebook) -> None:
    # An alignment of another seq2seq model: 1,500 × 1,500 float32 is 8.6 MiB.
    n = 1500
    big = type("Translation", (), {})()
    big.input_tokens = [f"i{k}" for k in range(n)]
    big.output_tokens = [f"o{k}" for k in range(n)]
    big.alignment = np.full((n, n), 1 / n, dtype=np.float32)
    with pytest.raises(InputError, match=r"AlignmentView: .* largest part is 'alignment'"):
        AlignmentView(big)
    largest(notebook)  # nothing over the cap went out


# ---- the explorers and their child views -----------------------------------------------


@functools.cache
def long_classifier() -> tuple[Any, Any]:
    """A tiny BERT classifier that takes 512 positions."""
    _, tokenizer = build("bert-cls")
    config = tf.BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=512,
        pad_token_id=0,
        id2label={0: "negative", 1: "positive"},
        label2id={"negative": 0, "positive": 1},
    )
    torch.manual_seed(0)
    tokenizer = copy.deepcopy(tokenizer)  # the tiny tokenizers stop at 64 too
    tokenizer.model_max_length = 512
    return tf.BertForSequenceClassification(config).eval(), tokenizer


def owners(sent: list[tuple[str, int, str]]) -> set[str]:
    return {owner for _, _, owner in sent}


def test_explorer_on_a_few_hundred_tokens_and_its_views(notebook) -> None:
    model, tokenizer = long_classifier()
    text = " ".join(["the keys to the old cabinet are on the table"] * 25)
    explorer = Explorer(model, tokenizer, text)
    assert explorer.error == ""
    n = len(explorer.explanation.tokens)
    assert 300 <= n <= 512
    explorer.send_state()
    for view in explorer.views.values():
        view.send_state()
        drive(view)
    explorer.compute("lrp")
    explorer.wait()
    drive(explorer.views["flow"])
    # The box, the tabs and every view opened a comm and sent through it.
    assert {"SaliencyView", "FlowView", "HeadView", "ModelView"} <= {
        type(v).__name__ for v in explorer.views.values()
    }
    assert len(owners(notebook)) > 4
    size = largest(notebook)
    print(f"Explorer n={n}: largest message {size:,} B")


def test_image_explorer_of_the_shipped_vit_and_its_views(notebook) -> None:
    model, processor = demo.load("shapes-vit")
    explorer = attnwidget.Explorer(model, processor, demo.images(1, seed=3)[0].image)
    assert isinstance(explorer, ImageExplorer) and explorer.error == ""
    explorer.send_state()
    for view in explorer.views.values():
        view.send_state()
        drive(view)
    explorer.compute("flow", "lrp")
    explorer.wait()
    for view in explorer.views.values():
        drive(view)
    assert "image" in explorer.views and len(owners(notebook)) > 4
    size = largest(notebook)
    print(f"ImageExplorer shapes-vit: largest message {size:,} B")
