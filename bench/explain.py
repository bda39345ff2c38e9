"""Cost of ``explain()`` relative to one plain forward+backward pass.

Run: ``python bench/explain.py`` (add ``--repeats N``). For each model the
reference is measured in the same run: a plain forward of the stock model in
eval mode followed by ``logit.backward()`` (parameters require grad, as they
do by default). The ratio printed is best(explain) / best(reference);
the goal is ≤ 1.5 with the default methods (raw, rollout, grad_attention,
input_x_gradient). Each figure is the best of ``--repeats`` alternating runs.
"""

from __future__ import annotations

import argparse
import time

import torch
import transformers as tf
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

import attnwidget


def plain_forward_backward(model, inputs, row: int, target: int) -> None:
    outputs = model(**inputs)
    logits = outputs.logits[0] if outputs.logits.ndim == 2 else outputs.logits[0, row]
    logits[target].backward()
    model.zero_grad(set_to_none=True)


def paired_times(reference, ours, repeats: int) -> tuple[float, float]:
    """Best-of-``repeats`` seconds for two callables, run alternately.

    Alternating the two and keeping each one's minimum makes the ratio robust
    to other load on the machine (both see the same conditions; the minimum
    is the run least disturbed).
    """
    reference()
    ours()  # warm-up
    best_reference = best_ours = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        reference()
        best_reference = min(best_reference, time.perf_counter() - start)
        start = time.perf_counter()
        ours()
        best_ours = min(best_ours, time.perf_counter() - start)
    return best_reference, best_ours


def word_tokenizer(vocab_size: int) -> PreTrainedTokenizerFast:
    """A real word-level tokenizer over the words w0..wV (with [CLS]/[SEP])."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {token: i for i, token in enumerate(specials)}
    vocab.update({f"w{i}": len(specials) + i for i in range(vocab_size - len(specials))})
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def synthetic_bert(n: int):
    """A 6-layer, hidden-256 BERT classifier (random weights, seed 0), a word
    tokenizer and an n-token text of random words for it."""
    torch.manual_seed(0)
    tokenizer = word_tokenizer(1000)
    text = " ".join(f"w{i}" for i in torch.randint(0, 990, (n - 2,)).tolist())
    bert = tf.BertForSequenceClassification(
        tf.BertConfig(
            vocab_size=1000,
            hidden_size=256,
            num_hidden_layers=6,
            num_attention_heads=8,
            intermediate_size=1024,
            max_position_embeddings=max(512, n),
        )
    ).eval()
    return bert, tokenizer, text


def cases(n: int):
    """(name, model, tokenizer, text): synthetic 6-layer models and the demo models."""
    bert, tokenizer, text = synthetic_bert(n)
    gpt2 = tf.GPT2LMHeadModel(
        tf.GPT2Config(
            vocab_size=1000,
            n_embd=256,
            n_layer=6,
            n_head=8,
            n_positions=max(512, n),
            bos_token_id=2,
            eos_token_id=3,
        )
    ).eval()
    found = [
        (f"bert-6x256 n={n}", bert, tokenizer, text),
        (f"gpt2-6x256 n={n}", gpt2, tokenizer, text),
    ]
    try:
        from attnwidget import demo

        for name in ("sva-encoder", "sva-causal"):
            model, demo_tokenizer = demo.load(name)
            example = next(iter(demo.sentences(1, seed=0, model=name)))
            found.append((f"{name} (demo)", model, demo_tokenizer, example.text))
    except Exception as error:
        print(f"(demo models skipped: {error})")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--n", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(2)
    print(f"{'model':28s} {'plain fwd+bwd':>14s} {'explain()':>11s} {'ratio':>7s}")
    for name, model, tokenizer, text in cases(args.n):
        inputs = dict(tokenizer(text, return_tensors="pt"))
        exp = attnwidget.explain(model, tokenizer, text)
        reference, ours = paired_times(
            lambda m=model, i=inputs, e=exp: plain_forward_backward(
                m, i, e.query_index, e.target_id
            ),
            lambda m=model, t=tokenizer, x=text: attnwidget.explain(m, t, x),
            args.repeats,
        )
        print(
            f"{name:28s} {reference * 1e3:11.1f} ms {ours * 1e3:8.1f} ms {ours / reference:6.2f}x"
        )


if __name__ == "__main__":
    main()
