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
import json
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import (
    AutoTokenizer,
    BertConfig,
    BertForSequenceClassification,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedModel,
    PreTrainedTokenizerFast,
)

from attnwidget.demo import grammar
from attnwidget.demo.tokenizer import MAX_LENGTH, build_tokenizer

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

MODELS_DIR = Path(__file__).resolve().parent / "models"
LABELS = ("singular", "plural")
_KIND = {"sva-encoder": "encoder", "sva-causal": "causal"}


@dataclass(frozen=True)
class TrainSettings:
    """Hyper-parameters of one training run (the defaults built the shipped models)."""

    seed: int = 0
    steps: int = 1500
    batch_size: int = 64
    n_train: int = 40_000
    lr: float = 2e-3
    warmup: int = 200
    weight_decay: float = 0.01


def _set_determinism(seed: int, threads: int = 1) -> None:
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


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
        config = GPT2Config(
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
        return GPT2LMHeadModel(config)
    raise ValueError(f"unknown demo model {name!r}; expected one of {sorted(_KIND)}")


def _pad(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
    return ids, mask


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
            _set_determinism(settings.seed)
            return _train(name, settings, log_every)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def optimizer_and_schedule(
    model: PreTrainedModel, settings: TrainSettings
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW (no weight decay on biases and norms) with linear warm-up and cosine decay."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": settings.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=settings.lr,
    )

    def schedule(step: int) -> float:
        if step < settings.warmup:
            return (step + 1) / settings.warmup
        progress = (step - settings.warmup) / max(1, settings.steps - settings.warmup)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)


def batch_indices(count: int, settings: TrainSettings) -> Iterator[list[int]]:
    """``settings.steps`` batches of example indices: seeded shuffles, reshuffled when spent."""
    generator = torch.Generator().manual_seed(settings.seed)
    order = torch.randperm(count, generator=generator).tolist()
    cursor = 0
    for _ in range(settings.steps):
        if cursor + settings.batch_size > len(order):
            order = torch.randperm(count, generator=generator).tolist()
            cursor = 0
        yield order[cursor : cursor + settings.batch_size]
        cursor += settings.batch_size


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
        ids, mask = _pad([rows[i] for i in batch], tokenizer.pad_token_id)
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


@torch.no_grad()
def predictions(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, texts: list[str]
) -> list[str]:
    """The number ("singular"/"plural") each model predicts for each prefix."""
    out: list[str] = []
    for start in range(0, len(texts), 256):
        enc = tokenizer(texts[start : start + 256], padding=True, return_tensors="pt")
        logits = model(**enc).logits
        if logits.dim() == 2:  # sequence classification
            out += [model.config.id2label[int(i)] for i in logits.argmax(-1)]
        else:  # causal LM: compare "is" and "are" after the last real token
            last = enc["attention_mask"].sum(1) - 1
            final = logits[torch.arange(len(last)), last]
            is_id, are_id = tokenizer.convert_tokens_to_ids(["is", "are"])
            out += ["plural" if a > b else "singular" for b, a in final[:, [is_id, are_id]]]
    return out


def accuracy(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    sentences: list[grammar.Sentence],
) -> float:
    """Share of sentences whose verb number the model predicts correctly."""
    predicted = predictions(model, tokenizer, [s.text for s in sentences])
    return sum(p == s.label for p, s in zip(predicted, sentences, strict=True)) / len(sentences)


def evaluate(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, *, n: int = 500, seed: int = 0
) -> dict[str, tuple[float, int]]:
    """Held-out (test split) accuracy: name -> (accuracy, number of sentences).

    ``n`` sentences with attractors and ``n`` without; the ``k_attractors``
    rows split the sentences with attractors by their number of attractors.
    """
    with_attr = grammar.generate(n, seed=seed, split="test", attractors=True)
    without = grammar.generate(n, seed=seed, split="test", attractors=False)
    result = {
        "with_attractors": (accuracy(model, tokenizer, with_attr), len(with_attr)),
        "without_attractors": (accuracy(model, tokenizer, without), len(without)),
    }
    for k in (1, 2, 3):
        subset = [s for s in with_attr if len(s.attractors) == k]
        if subset:
            result[f"{k}_attractors"] = (accuracy(model, tokenizer, subset), len(subset))
    return result


def _metric_lines(metrics: dict[str, tuple[float, int]]) -> list[str]:
    return [f"{k}: {acc:.3f} ({n} sentences)" for k, (acc, n) in metrics.items()]


def model_card(
    name: str,
    model: PreTrainedModel,
    *,
    settings: TrainSettings,
    metrics: dict[str, tuple[float, int]],
) -> str:
    """The README.md written next to a model's weights."""
    n_params = sum(p.numel() for p in model.parameters())
    lines = [
        f"# {name}",
        "",
        "A tiny model shipped with attnwidget for demos and tests, trained by",
        "`python -m attnwidget.demo.train` on a synthetic subject–verb agreement",
        "grammar (`attnwidget/demo/grammar.py`): the task of Linzen et al. (2016),",
        "as used by Abnar & Zuidema (2020).",
        "",
        f"- architecture: `{type(model).__name__}`, {n_params:,} parameters",
        f"- training settings: `{json.dumps(asdict(settings))}`",
        "- held-out accuracy (test split, seed 0):",
        *[f"  - {line}" for line in _metric_lines(metrics)],
        "",
    ]
    return "\n".join(lines)


def save(
    name: str,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    out_dir: Path,
    *,
    settings: TrainSettings,
    metrics: dict[str, tuple[float, int]],
) -> Path:
    """Write weights (safetensors), config, tokenizer and a model card to ``out_dir/name``."""
    path = Path(out_dir) / name
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    # Name the class every transformers version (4.x and 5.x) knows.
    config_file = path / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    card = model_card(name, model, settings=settings, metrics=metrics)
    (path / "README.md").write_text(card)
    for file in path.iterdir():
        file.chmod(0o644)  # safetensors writes 0600; the files must be readable once installed
    return path


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
        for line in _metric_lines(metrics):
            print(f"  held-out accuracy, {line}")


if __name__ == "__main__":
    main()
