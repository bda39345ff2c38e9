"""Train the two shipped demo models on the subject–verb agreement grammar.

Run ``python -m attnwidget.demo.train`` to retrain both models and overwrite
the files under ``attnwidget/demo/models/`` (a few minutes on one CPU thread).
Training is deterministic: a fixed seed, one thread and
``torch.use_deterministic_algorithms(True)`` give the same weights on
every run on the same machine and library versions. (Different CPUs or torch
builds can differ in the last bits of floating point, so the shipped weights are
the reference, not something a retrain must reproduce bit for bit.)

* ``sva-encoder``: a 4-layer ``BertForSequenceClassification`` that reads
  ``[CLS] prefix [SEP]`` and classifies the verb's number from ``[CLS]``.
* ``sva-causal``: a 4-layer ``GPT2LMHeadModel`` trained as a language model on
  whole sentences ``[BOS] prefix verb predicate . [EOS]``; after the prefix it
  should give the agreeing verb ("is"/"are") more probability than the other.

The task is Linzen et al. (2016)'s verb-number prediction, the one Abnar &
Zuidema (2020) used to compare raw attention, rollout and flow.

``python -m attnwidget.demo.train shapes-vit [--evaluate]`` trains (or
evaluates) the demo Vision Transformer instead; see
:mod:`attnwidget.demo.train_vision`. ``python -m attnwidget.demo.train
sva-deceptive`` trains the encoder with Pruthi et al.'s (2020) attention
penalty; see :mod:`attnwidget.demo.train_deceptive`. ``python -m
attnwidget.demo.train seq2seq [--kinds ...]`` trains the RNN encoder–decoders
with attention; see :mod:`attnwidget.demo.train_seq2seq`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from transformers import (
    AutoTokenizer,
    BertConfig,
    BertForSequenceClassification,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

from attnwidget.demo import grammar
from attnwidget.demo.tokenizer import MAX_LENGTH, build_tokenizer
from attnwidget.demo.training import (
    LABELS,
    MODELS_DIR,
    TrainSettings,
    accuracy,
    batch_indices,
    evaluate,
    metric_lines,
    model_card,
    optimizer_and_schedule,
    pad_rows,
    predictions,
    save,
    set_determinism,
)

__all__ = [
    "MODELS_DIR",
    "TrainSettings",
    "accuracy",
    "build_model",
    "evaluate",
    "main",
    "model_card",
    "predictions",
    "save",
    "train_model",
]

_KIND = {"sva-encoder": "encoder", "sva-causal": "causal"}


def build_model(name: str, tokenizer: PreTrainedTokenizerFast) -> PreTrainedModel:
    """A freshly initialised model of the given demo name (weights from torch's RNG)."""
    if name == "sva-encoder":
        config = BertConfig(
            vocab_size=len(tokenizer),
            hidden_size=64,
            num_hidden_layers=4,
            num_attention_heads=4,
            intermediate_size=256,
            max_position_embeddings=MAX_LENGTH,
            type_vocab_size=2,
            hidden_dropout_prob=0.1,
            attention_probs_dropout_prob=0.0,
            pad_token_id=tokenizer.pad_token_id,
            id2label=dict(enumerate(LABELS)),
            label2id={label: i for i, label in enumerate(LABELS)},
            problem_type="single_label_classification",
        )
        return BertForSequenceClassification(config)
    if name == "sva-causal":
        gpt2_config = GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=MAX_LENGTH,
            n_embd=64,
            n_layer=4,
            n_head=4,
            n_inner=256,
            resid_pdrop=0.1,
            embd_pdrop=0.1,
            attn_pdrop=0.0,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
        return GPT2LMHeadModel(gpt2_config)
    raise ValueError(f"unknown demo model {name!r}; expected one of {sorted(_KIND)}")


def _encode_training_data(
    name: str, tokenizer: PreTrainedTokenizerFast, sentences: list[grammar.Sentence]
) -> tuple[list[list[int]], list[int]]:
    if name == "sva-encoder":
        rows = tokenizer([s.text for s in sentences])["input_ids"]
        targets = [LABELS.index(s.label) for s in sentences]
    else:
        rows = [
            [*r, tokenizer.eos_token_id]
            for r in tokenizer([s.full_text for s in sentences])["input_ids"]
        ]
        targets = [0] * len(sentences)
    return rows, targets


def train_model(
    name: str, settings: TrainSettings | None = None, *, log_every: int = 0
) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    """Train one demo model from scratch; returns it in eval mode with its tokenizer.

    Runs with torch's seed set, one thread and deterministic algorithms, so two
    calls with the same settings give identical weights; torch's thread count,
    deterministic flag and CPU RNG state are restored afterwards.
    """
    if name not in _KIND:
        raise ValueError(f"unknown demo model {name!r}; expected one of {sorted(_KIND)}")
    settings = settings or TrainSettings()
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        with torch.random.fork_rng(devices=[]):  # leave the caller's RNG state alone
            set_determinism(settings.seed)
            return _train(name, settings, log_every)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def _train(
    name: str, settings: TrainSettings, log_every: int
) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    tokenizer = build_tokenizer(_KIND[name])
    model = build_model(name, tokenizer)
    sentences = grammar.generate(
        settings.n_train, seed=settings.seed, split="train", attractors=None, unique=False
    )
    rows, targets = _encode_training_data(name, tokenizer, sentences)
    optimizer, scheduler = optimizer_and_schedule(model, settings)
    model.train()
    for step, batch in enumerate(batch_indices(len(rows), settings)):
        ids, mask = pad_rows([rows[i] for i in batch], tokenizer.pad_token_id)
        if name == "sva-encoder":
            labels = torch.tensor([targets[i] for i in batch])
        else:
            labels = ids.masked_fill(mask == 0, -100)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if log_every and (step + 1) % log_every == 0:
            print(f"  {name} step {step + 1}/{settings.steps} loss {loss.item():.4f}", flush=True)
    model.eval()
    return model, tokenizer


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point: retrain the demo models and write their files.

    With ``--evaluate`` it only measures the held-out accuracy of the models
    in ``--out`` (by default the shipped ones). A first argument
    ``shapes-vit`` hands the rest to :func:`attnwidget.demo.train_vision.main`.
    """
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["shapes-vit"]:
        from attnwidget.demo import train_vision

        train_vision.main(arguments[1:])
        return
    if arguments[:1] == ["sva-deceptive"]:
        from attnwidget.demo import train_deceptive

        train_deceptive.main(arguments[1:])
        return
    if arguments[:1] == ["seq2seq"]:
        from attnwidget.demo import train_seq2seq

        train_seq2seq.main(arguments[1:])
        return
    parser = argparse.ArgumentParser(
        prog="python -m attnwidget.demo.train",
        description=__doc__.split("\n\n")[0],
        epilog="python -m attnwidget.demo.train shapes-vit [--evaluate] trains the demo ViT.",
    )
    parser.add_argument("--out", type=Path, default=MODELS_DIR, help="output directory")
    parser.add_argument(
        "--models", nargs="+", choices=sorted(_KIND), default=["sva-encoder", "sva-causal"]
    )
    parser.add_argument("--steps", type=int, default=TrainSettings.steps)
    parser.add_argument("--seed", type=int, default=TrainSettings.seed)
    parser.add_argument(
        "--evaluate", action="store_true", help="evaluate the saved models, do not train"
    )
    args = parser.parse_args(arguments)
    settings = TrainSettings(seed=args.seed, steps=args.steps)
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    for name in args.models:
        path = Path(args.out) / name
        start = time.perf_counter()
        if args.evaluate:
            cls = BertForSequenceClassification if name == "sva-encoder" else GPT2LMHeadModel
            model = cls.from_pretrained(path, local_files_only=True)
            model.eval()
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        else:
            model, tokenizer = train_model(name, settings, log_every=500)
        seconds = time.perf_counter() - start
        metrics = evaluate(model, tokenizer)
        if not args.evaluate:
            save(name, model, tokenizer, args.out, settings=settings, metrics=metrics)
            print(f"{name}: trained in {seconds:.0f} s")
        n_params = sum(p.numel() for p in model.parameters())
        size = sum(f.stat().st_size for f in path.iterdir())
        print(f"{name}: {n_params:,} parameters, {size:,} bytes in {path}")
        for line in metric_lines(metrics):
            print(f"  held-out accuracy, {line}")


if __name__ == "__main__":
    main()
