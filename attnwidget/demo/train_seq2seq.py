"""Train the ``seq2seq-<kind>`` demo models on character reversal.

``python -m attnwidget.demo.train seq2seq [--kinds dot additive ...]
[--steps N] [--evaluate]`` trains (or only evaluates) the models of
:mod:`attnwidget.demo.seq2seq` and writes ``model.safetensors``,
``config.json`` and a model card ``README.md`` to
``attnwidget/demo/models/seq2seq-<kind>/``. Training is deterministic: a fixed
seed, one thread and ``torch.use_deterministic_algorithms(True)``; the data
come from :func:`attnwidget.demo.seq2seq.examples`, whose training split never
holds a held-out string. Teacher-forced cross-entropy, Adam, gradient norm
clipped at 1 (Bahdanau et al. 2015 and Luong et al. 2015 train their models
the same way, at a far larger scale).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from attnwidget.demo.seq2seq import KINDS, Seq2SeqAttention, Vocab, batch, examples

__all__ = ["MODELS_DIR", "Seq2SeqSettings", "accuracy", "main", "save", "train"]

MODELS_DIR = Path(__file__).resolve().parent / "models"


@dataclass(frozen=True)
class Seq2SeqSettings:
    """Hyper-parameters of one training run (the defaults built the shipped models)."""

    seed: int = 0
    steps: int = 1500
    batch_size: int = 64
    lr: float = 3e-3
    embed: int = 32
    hidden: int = 64


def _targets(vocab: Vocab, targets: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Decoder inputs ``<s> y`` and labels ``y </s>``, padded (labels padded with -100)."""
    ids = [vocab.encode(t) for t in targets]
    n = max(len(i) for i in ids) + 1
    tgt_in = [[Vocab.bos_id] + i + [Vocab.pad_id] * (n - 1 - len(i)) for i in ids]
    labels = [i + [Vocab.eos_id] + [-100] * (n - 1 - len(i)) for i in ids]
    return torch.tensor(tgt_in), torch.tensor(labels)


def train(
    kind: str, settings: Seq2SeqSettings = Seq2SeqSettings(), *, log_every: int = 0
) -> tuple[Seq2SeqAttention, Vocab]:
    """Train one model from scratch, deterministically."""
    torch.manual_seed(settings.seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    vocab = Vocab()
    model = Seq2SeqAttention(kind, len(vocab), embed=settings.embed, hidden=settings.hidden)
    model.train()
    optimiser = torch.optim.Adam(model.parameters(), lr=settings.lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: max(0.05, 1.0 - step / settings.steps)
    )
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
    data = examples(settings.steps * settings.batch_size, seed=settings.seed, split="train")
    for step in range(settings.steps):
        chunk = data[step * settings.batch_size : (step + 1) * settings.batch_size]
        src, lengths = batch(vocab, [s for s, _ in chunk])
        tgt_in, labels = _targets(vocab, [t for _, t in chunk])
        logits, _ = model(src, lengths, tgt_in)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        if log_every and (step + 1) % log_every == 0:
            print(f"  {kind} step {step + 1}: loss {loss.item():.4f}", flush=True)
    model.eval()
    return model, vocab


@torch.no_grad()
def accuracy(model: Seq2SeqAttention, vocab: Vocab, n: int = 1000, seed: int = 0) -> float:
    """Exact-match accuracy of greedy decoding on ``n`` held-out examples."""
    model.eval()
    pairs = examples(n, seed=seed, split="test")
    correct = 0
    for start in range(0, n, 250):
        chunk = pairs[start : start + 250]
        src, lengths = batch(vocab, [s for s, _ in chunk])
        ids, _, _, _ = model.greedy(src, lengths, vocab.max_length + 1)
        correct += sum(
            vocab.decode(row) == t for row, (_, t) in zip(ids.tolist(), chunk, strict=True)
        )
    return correct / n


_CARD = """# seq2seq-{kind}

A GRU encoder–decoder with `{kind}` attention (see `attnwidget.demo.seq2seq`),
after Bahdanau et al. (2015) and Luong et al. (2015), trained by
`python -m attnwidget.demo.train seq2seq --kinds {kind}` to reverse strings of
{lo}–{hi} lowercase letters (`abcde` → `edcba`).

- held-out exact match: {accuracy:.3f} ({n} unseen strings, greedy decoding)
- parameters: {params:,}; embedding {embed}, bidirectional GRU encoder 2 × {half},
  GRU decoder {hidden}
- training settings: `{settings}` (Adam, teacher forcing, gradient clip 1,
  one thread, deterministic), {seconds:.0f} s on one CPU thread

Load with `model, vocab = attnwidget.demo.load("seq2seq-{kind}")` and
`attnwidget.demo.seq2seq.translate(model, vocab, "abcdef")`.
"""


def save(
    model: Seq2SeqAttention,
    vocab: Vocab,
    out: Path,
    *,
    settings: Seq2SeqSettings,
    acc: float,
    n: int,
    seconds: float,
) -> Path:
    """Write weights, config and model card to ``out/seq2seq-<kind>``."""
    from safetensors.torch import save_file

    path = Path(out) / f"seq2seq-{model.kind}"
    path.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path / "model.safetensors"))
    config = {**model.config, "alphabet": vocab.alphabet, "task": "reversal"}
    config["held_out_exact_match"] = round(acc, 4)
    config["training"] = asdict(settings)
    (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    from attnwidget.demo.seq2seq import MAX_LENGTH, MIN_LENGTH

    card = _CARD.format(
        kind=model.kind,
        lo=MIN_LENGTH,
        hi=MAX_LENGTH,
        accuracy=acc,
        n=n,
        params=sum(p.numel() for p in model.parameters()),
        embed=settings.embed,
        half=settings.hidden // 2,
        hidden=settings.hidden,
        settings=json.dumps(asdict(settings)),
        seconds=seconds,
    )
    (path / "README.md").write_text(card)
    return path


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point (``python -m attnwidget.demo.train seq2seq ...``)."""
    parser = argparse.ArgumentParser(
        prog="python -m attnwidget.demo.train seq2seq", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--out", type=Path, default=MODELS_DIR, help="output directory")
    parser.add_argument("--steps", type=int, default=Seq2SeqSettings.steps)
    parser.add_argument("--seed", type=int, default=Seq2SeqSettings.seed)
    parser.add_argument("--evaluate", action="store_true", help="evaluate the saved models")
    args = parser.parse_args(argv)
    settings = Seq2SeqSettings(seed=args.seed, steps=args.steps)
    n = 1000
    total = time.perf_counter()
    for kind in args.kinds:
        start = time.perf_counter()
        if args.evaluate:
            from attnwidget.demo.seq2seq import load_model

            model, vocab = load_model(Path(args.out) / f"seq2seq-{kind}")
        else:
            model, vocab = train(kind, settings, log_every=400)
        seconds = time.perf_counter() - start
        acc = accuracy(model, vocab, n)
        if not args.evaluate:
            save(model, vocab, args.out, settings=settings, acc=acc, n=n, seconds=seconds)
        print(f"seq2seq-{kind}: held-out exact match {acc:.3f} ({seconds:.0f} s)", flush=True)
    print(f"total {time.perf_counter() - total:.0f} s")


if __name__ == "__main__":
    main()
