"""explain_generation: every step equals a per-step explain(), decoding, the seq2seq split.

References are computed here independently: per-step ``explain`` on the
prefix text (its token ids checked to round-trip, so the comparison is exact
at the token level), ``model.generate`` for greedy decoding, a hand-written
sampler, and plain Hugging Face forwards/backwards for the decoder-prefix
scores of encoder–decoders.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import build

import attnwidget
from attnwidget import demo, explain, explain_generation
from attnwidget.capture import generation as capture_generation
from attnwidget.errors import InputError, ModelNotSupportedError, UnknownMethodError

PROMPT = "the keys to the"
FORCED = " cabinet are on the table"


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _built(family: str):
    """A tiny model in eval mode (the references below run it directly, without dropout)."""
    model, tok = build(family)
    return model.eval(), tok


def _close(got: np.ndarray, want: np.ndarray) -> None:
    scale = max(float(np.abs(want).max()), 1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


def _check_causal_steps(model, tok, gexp, methods) -> None:
    n_prompt = len(gexp.prompt_ids)
    for t in range(len(gexp)):
        step = gexp.step(t)
        ids = [*gexp.prompt_ids, *gexp.generated_ids[:t]]
        text = tok.decode(ids, skip_special_tokens=True)
        want = explain(model, tok, text, target=int(gexp.generated_ids[t]), methods=methods)
        # The prefix text round-trips to the same ids: the comparison is token-exact.
        assert list(want.input_ids) == list(step.input_ids) == ids
        assert step.target_id == want.target_id and step.query_index == want.query_index
        np.testing.assert_allclose(step.attentions, want.attentions, atol=1e-6)
        np.testing.assert_allclose(step.probabilities, want.probabilities, rtol=1e-4, atol=1e-7)
        for name in methods:
            _close(step.scores[name], want.scores[name])
            row = gexp.scores[name][t]
            np.testing.assert_array_equal(row[: n_prompt + t], step.scores[name])
            assert np.isnan(row[n_prompt + t :]).all()
            np.testing.assert_array_equal(gexp.source_scores[name][t], row[:n_prompt])
            np.testing.assert_array_equal(gexp.prefix_scores[name][t], row[n_prompt:])


@pytest.mark.parametrize("family", ["gpt2-lm", "llama-lm"])
def test_steps_equal_per_step_explain_tiny(family: str, monkeypatch) -> None:
    model, tok = _built(family)
    monkeypatch.setattr(capture_generation, "STEP_BATCH", 3)  # several batches of steps
    gexp = explain_generation(model, tok, PROMPT, generated=FORCED)
    forced = tok(FORCED, add_special_tokens=False)["input_ids"]
    assert gexp.kind == "causal-lm" and list(gexp.generated_ids) == forced
    assert gexp.methods == list(attnwidget.DEFAULT_METHODS)
    assert gexp.scores["raw"].shape == (len(gexp), len(gexp.prompt_ids) + len(gexp) - 1)
    assert gexp.scores["raw"].dtype == np.float32
    _check_causal_steps(model, tok, gexp, gexp.methods)


def test_demo_causal_greedy_steps_and_attention_only_path() -> None:
    model, tok = demo.load("sva-causal")
    gexp = explain_generation(model, tok, "the keys to the cabinet", max_new_tokens=4)
    _check_causal_steps(model, tok, gexp, gexp.methods)
    # Attention-only methods: one forward pass, no gradient; flow as well.
    attention = explain_generation(
        model, tok, "the keys to the cabinet", max_new_tokens=4, methods=["raw", "flow"]
    )
    assert list(attention.generated_ids) == list(gexp.generated_ids)
    assert attention.step(0).attention_grads is None
    _check_causal_steps(model, tok, attention, ["raw", "flow"])


@pytest.mark.parametrize("family", ["gpt2-lm", "llama-lm"])
def test_greedy_equals_model_generate(family: str) -> None:
    model, tok = _built(family)
    ids = tok(PROMPT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=tok.pad_token_id)
    gexp = explain_generation(model, tok, PROMPT, max_new_tokens=6, methods=["raw"])
    assert list(gexp.generated_ids) == out[0, ids.shape[1] :].tolist()
    assert len(gexp.generated_tokens) == len(gexp) == 6


def test_demo_greedy_equals_generate_and_stops_after_eos() -> None:
    model, tok = demo.load("sva-causal")
    prompt = "the author that the critics praise"
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=12, do_sample=False)
    new = out[0, ids.shape[1] :].tolist()
    gexp = explain_generation(model, tok, prompt, max_new_tokens=12, methods=["raw"])
    assert list(gexp.generated_ids) == new
    assert new[-1] == tok.eos_token_id and len(new) < 12  # the trained model ends the sentence
    assert gexp.generated_tokens[-1] == "[EOS]"


def test_forced_continuation_text_and_ids() -> None:
    model, tok = _built("gpt2-lm")
    forced = tok(FORCED, add_special_tokens=False)["input_ids"]
    by_text = explain_generation(model, tok, PROMPT, generated=FORCED, methods=["raw"])
    by_ids = explain_generation(model, tok, PROMPT, generated=forced, methods=["raw"])
    assert list(by_text.generated_ids) == list(by_ids.generated_ids) == forced
    pieces = tok.convert_ids_to_tokens(forced)
    assert by_text.generated_tokens == [p.lstrip("Ġ") or "␣" for p in pieces]
    np.testing.assert_array_equal(by_text.scores["raw"], by_ids.scores["raw"])
    # Each step's probability is the model's softmax at that step (plain forward).
    prompt_ids = tok(PROMPT)["input_ids"]
    for t, target in enumerate(forced):
        with torch.no_grad():
            logits = model(torch.tensor([prompt_ids + forced[:t]])).logits[0, -1]
        want = torch.softmax(logits.double(), -1)[target].item()
        assert by_text.probabilities[t] == pytest.approx(want, rel=1e-4)


def test_sampling_is_reproducible_with_a_seed() -> None:
    model, tok = _built("gpt2-lm")
    runs = [
        explain_generation(
            model, tok, PROMPT, max_new_tokens=5, do_sample=True, seed=s, methods=["raw"]
        )
        for s in (7, 7, 8)
    ]
    assert list(runs[0].generated_ids) == list(runs[1].generated_ids)
    assert list(runs[0].generated_ids) != list(runs[2].generated_ids)
    # The documented sampler: a torch.Generator seeded with the seed, full softmax.
    generator = torch.Generator().manual_seed(7)
    ids = tok(PROMPT)["input_ids"]
    want = []
    for _ in range(5):
        with torch.no_grad():
            logits = model(torch.tensor([ids + want])).logits[0, -1].float()
        want.append(int(torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)[0]))
    assert list(runs[0].generated_ids) == want


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_encoder_decoder_source_and_prefix_kept_apart(family: str) -> None:
    model, tok = _built(family)
    gexp = explain_generation(model, tok, PROMPT, generated=FORCED)
    count = len(gexp)
    start = model.config.decoder_start_token_id
    source_ids = tok(PROMPT)["input_ids"]
    assert gexp.kind == "encoder-decoder" and list(gexp.prompt_ids) == source_ids
    assert gexp.tokens == gexp.prompt_tokens and len(gexp.prefix_tokens) == count
    for name in gexp.methods:
        assert gexp.source_scores[name].shape == (count, len(source_ids))
        assert not np.isnan(gexp.source_scores[name]).any()
    embed = model.get_input_embeddings()
    model.set_attn_implementation("eager")  # the reference reads attention weights
    for t in range(count):
        target = int(gexp.generated_ids[t])
        prefix_text = tok.decode(list(gexp.generated_ids[:t]))
        want = explain(model, tok, PROMPT, decoder_text=prefix_text or None, target=target)
        step = gexp.step(t)
        decoder = [start, *gexp.generated_ids[:t].tolist()]
        assert step.decoder_tokens == want.decoder_tokens and step.query_index == t
        for name in gexp.methods:
            _close(step.scores[name], want.scores[name])
            np.testing.assert_array_equal(gexp.source_scores[name][t], step.scores[name])
        # Decoder-prefix scores, from a plain forward and backward here.
        src = embed(torch.tensor([source_ids])).detach()
        dec = embed(torch.tensor([decoder])).detach().requires_grad_(True)
        out = model(inputs_embeds=src, decoder_inputs_embeds=dec, output_attentions=True)
        (grad,) = torch.autograd.grad(out.logits[0, t, target], [dec])
        raw = out.decoder_attentions[-1][0].mean(0)[t].detach().numpy()
        ixg = (dec * grad).sum(-1)[0].detach().numpy()
        _close(gexp.prefix_scores["raw"][t, : t + 1], raw)
        _close(gexp.prefix_scores["input_x_gradient"][t, : t + 1], ixg)
        assert np.isnan(gexp.prefix_scores["raw"][t, t + 1 :]).all()


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_encoder_decoder_greedy_equals_generate(family: str) -> None:
    model, tok = _built(family)
    ids = tok(PROMPT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model.generate(
            ids, max_new_tokens=4, do_sample=False, forced_eos_token_id=None, min_length=0
        )
    gexp = explain_generation(model, tok, PROMPT, max_new_tokens=4, methods=["raw"])
    assert list(gexp.generated_ids) == out[0, 1:].tolist()


def test_bad_input_is_refused_with_the_fix() -> None:
    model, tok = _built("gpt2-lm")
    with pytest.raises(InputError, match="prompt is empty"):
        explain_generation(model, tok, "  ")
    with pytest.raises(InputError, match="at least 1 token"):
        explain_generation(model, tok, PROMPT, max_new_tokens=0)
    with pytest.raises(UnknownMethodError, match="nope"):
        explain_generation(model, tok, PROMPT, methods=["nope"])
    with pytest.raises(InputError, match="string"):
        explain_generation(model, tok, PROMPT, methods="raw")
    with pytest.raises(InputError, match="token id 100000"):
        explain_generation(model, tok, PROMPT, generated=[3, 100000])
    with pytest.raises(InputError, match="empty"):
        explain_generation(model, tok, PROMPT, generated=[])
    with pytest.raises(InputError, match="at most 64"):
        explain_generation(model, tok, PROMPT, max_new_tokens=60)
    encoder, wp = build("bert-cls")
    with pytest.raises(ModelNotSupportedError, match="does not generate"):
        explain_generation(encoder, wp, PROMPT)
    masked, wp = build("bert-mlm")
    with pytest.raises(ModelNotSupportedError, match="AutoModelForCausalLM"):
        explain_generation(masked, wp, PROMPT)
    gexp = explain_generation(model, tok, PROMPT, max_new_tokens=2, methods=["raw"])
    with pytest.raises(InputError, match="out of range"):
        gexp.step(2)
    assert gexp.step(-1) is gexp.steps[1]


def test_every_registered_method_equals_per_step_explain() -> None:
    """Methods that re-run the model (blank-out, IG, LRP) or read head values, too."""
    model, tok = _built("gpt2-lm")
    names = [m for m in attnwidget.available_methods() if m not in attnwidget.DEFAULT_METHODS]
    options = {"integrated_gradients": {"steps": 16}}
    gexp = explain_generation(
        model, tok, PROMPT, generated=" cabinet", methods=names, method_options=options
    )
    assert len(gexp) >= 2
    for t in range(len(gexp)):
        text = tok.decode([*gexp.prompt_ids, *gexp.generated_ids[:t]])
        target = int(gexp.generated_ids[t])
        want = explain(model, tok, text, target=target, methods=names, method_options=options)
        assert list(want.input_ids) == list(gexp.step(t).input_ids)
        for name in names:
            _close(gexp.step(t).scores[name], want.scores[name])
