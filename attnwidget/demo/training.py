"""What every demo trainer shares: settings, batches, the optimiser, accuracy, saving.

Used by :mod:`attnwidget.demo.train` (the agreement models) and
:mod:`attnwidget.demo.train_deceptive` (Pruthi et al.'s 2020 penalty).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from attnwidget.demo import grammar

MODELS_DIR = Path(__file__).resolve().parent / "models"
LABELS = ("singular", "plural")


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


def set_determinism(seed: int, threads: int = 1) -> None:
    """Seed torch, fix its thread count and ask for deterministic kernels."""
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


def pad_rows(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token rows padded to one width: ``(ids, attention_mask)``."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
    return ids, mask


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


@torch.no_grad()
def predictions(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: list[str]
) -> list[str]:
    """The number ("singular"/"plural") each model predicts for each prefix."""
    out: list[str] = []
    for start in range(0, len(texts), 256):
        enc = tokenizer(texts[start : start + 256], padding=True, return_tensors="pt")
        logits = model(**enc).logits
        if logits.dim() == 2:  # sequence classification
            # transformers types id2label dict[int, str] | dict[str, str] | None; a loaded
            # classifier's config has int keys.
            id2label = cast("dict[int, str]", model.config.id2label)
            out += [id2label[int(i)] for i in logits.argmax(-1)]
        else:  # causal LM: compare "is" and "are" after the last real token
            last = enc["attention_mask"].sum(1) - 1
            final = logits[torch.arange(len(last)), last]
            # typed int | list[int]; a list of tokens gives a list of ids
            ids = cast("list[int]", tokenizer.convert_tokens_to_ids(["is", "are"]))
            is_id, are_id = ids
            out += ["plural" if a > b else "singular" for b, a in final[:, [is_id, are_id]]]
    return out


def accuracy(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    sentences: list[grammar.Sentence],
) -> float:
    """Share of sentences whose verb number the model predicts correctly."""
    predicted = predictions(model, tokenizer, [s.text for s in sentences])
    return sum(p == s.label for p, s in zip(predicted, sentences, strict=True)) / len(sentences)


def evaluate(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *, n: int = 500, seed: int = 0
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


def metric_lines(metrics: dict[str, tuple[float, int]]) -> list[str]:
    """One "name: accuracy (n sentences)" line per metric."""
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
        *[f"  - {line}" for line in metric_lines(metrics)],
        "",
    ]
    return "\n".join(lines)


def save(
    name: str,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
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
