"""Train the shipped demo Vision Transformer ("shapes-vit") on the shapes data set.

Run ``python -m attnwidget.demo.train shapes-vit`` to retrain it and overwrite
``attnwidget/demo/models/shapes-vit/`` (config, safetensors weights, image
processor config and a model card), or add ``--evaluate`` to measure the
held-out accuracy of the saved model only.

The model is a small ViT (Dosovitskiy et al. 2021, "An Image is Worth 16x16
Words", ICLR): 32×32 RGB images cut into 4×4 patches (64 patch tokens and a
CLS token), 4 layers, 4 heads, hidden size 64, classifying the target shape of
:mod:`attnwidget.demo.shapes` from the CLS token. It trains on a fixed pool of
training-split images, each seen with a random horizontal flip and a random
permutation of the colour channels (both keep the label, the masks and the
colour contrast), with AdamW (Loshchilov & Hutter 2019), linear warm-up and
cosine decay, from Xavier-uniform weights and 2-D sine–cosine position
embeddings (as MAE, He et al. 2022). A second, training-only loss asks a
linear head on the final patch tokens what each patch shows (background, a
distractor, or the target and its shape): dense supervision, 64 targets per
image instead of one, that ties the patch tokens to the objects. The head is
thrown away; the shipped model is a plain ``ViTForImageClassification`` that
reads its class from the CLS token.

Training is deterministic: fixed seeds, a fixed thread count (one) and
``torch.use_deterministic_algorithms(True)`` give the same weights on every run
on the same machine and library versions (other CPUs or torch builds can differ
in the last bits, so the shipped weights are the reference).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

import numpy as np
import torch
from transformers import ViTForImageClassification, ViTImageProcessor

from attnwidget.demo import shapes
from attnwidget.demo.vision_model import (
    build_model,
    build_processor,
    pixel_values,
    sincos_position_embeddings,
)

__all__ = [
    "MODELS_DIR",
    "NAME",
    "VisionTrainSettings",
    "accuracy",
    "build_model",
    "build_processor",
    "evaluate",
    "main",
    "model_card",
    "pixel_values",
    "save",
    "train_model",
]

MODELS_DIR = Path(__file__).resolve().parent / "models"
NAME = "shapes-vit"
#: One thread: on a busy two-core machine two threads ran six times slower (each
#: op waits for the slower thread), and a fixed count keeps the run reproducible.
THREADS = 1
#: The held-out set every reported accuracy is measured on.
TEST_IMAGES = 1000


@dataclass(frozen=True)
class VisionTrainSettings:
    """Hyper-parameters of one training run (the defaults built the shipped model)."""

    seed: int = 0
    steps: int = 6000
    batch_size: int = 128
    n_train: int = 100_000
    lr: float = 2e-3
    warmup: int = 200
    weight_decay: float = 0.05
    #: weight of the auxiliary patch loss (0: the class loss alone)
    patch_loss: float = 0.5
    #: start the position embeddings from 2-D sine–cosine ones
    sincos: bool = True


def _set_determinism(seed: int) -> None:
    torch.manual_seed(seed)
    torch.set_num_threads(THREADS)
    torch.use_deterministic_algorithms(True)


def train_model(
    settings: VisionTrainSettings | None = None, *, log_every: int = 0
) -> ViTForImageClassification:
    """Train ``shapes-vit`` from scratch; returns it in eval mode.

    Deterministic for the same settings; torch's thread count, deterministic
    flag and CPU RNG state are restored afterwards.
    """
    settings = settings or VisionTrainSettings()
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        with torch.random.fork_rng(devices=[]):  # leave the caller's RNG state alone
            _set_determinism(settings.seed)
            return _train(settings, log_every)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def patch_targets(records: Sequence[shapes.ShapeImage], patch_size: int = 4) -> torch.Tensor:
    """long (B, rows, cols): what each patch shows, for the auxiliary patch loss.

    0 background, 1 a distractor, ``2 + label_id`` the target: the object that
    covers more of the patch's pixels (the target on a tie).
    """
    rows = shapes.IMAGE_SIZE // patch_size

    def cover(masks: np.ndarray) -> torch.Tensor:
        blocks = masks.reshape(len(masks), rows, patch_size, rows, patch_size)
        return torch.from_numpy(blocks.sum((2, 4)))

    target = cover(np.stack([r.mask for r in records]))
    distractor = cover(np.stack([r.distractor_mask for r in records]))
    label = torch.tensor([r.label_id for r in records])[:, None, None]
    out = torch.where(distractor > 0, 1, 0)
    return torch.where((target > 0) & (target >= distractor), 2 + label, out)


def _train(settings: VisionTrainSettings, log_every: int) -> ViTForImageClassification:
    records = shapes.generate(settings.n_train, seed=settings.seed, split="train")
    images = torch.from_numpy(np.stack([r.image for r in records])).permute(0, 3, 1, 2)
    labels = torch.tensor([r.label_id for r in records])
    patches = patch_targets(records)
    del records
    validation = shapes.generate(500, seed=settings.seed + 1, split="train") if log_every else []
    model = build_model()
    if settings.sincos:
        size, patch = model.config.image_size, model.config.patch_size
        assert isinstance(size, int) and isinstance(patch, int)  # build_model gives ints
        grid = size // patch
        with torch.no_grad():
            model.vit.embeddings.position_embeddings.copy_(
                sincos_position_embeddings(grid, model.config.hidden_size)
            )
    # Training only: a linear head on the patch tokens that names what each patch shows.
    aux_head = torch.nn.Linear(model.config.hidden_size, 2 + len(shapes.LABELS))
    params = [*model.parameters(), *aux_head.parameters()]
    optimizer = torch.optim.AdamW(
        [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": settings.weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ],
        lr=settings.lr,
    )

    def schedule(step: int) -> float:  # linear warm-up, cosine decay
        if step < settings.warmup:
            return (step + 1) / settings.warmup
        progress = (step - settings.warmup) / max(1, settings.steps - settings.warmup)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    generator = torch.Generator().manual_seed(settings.seed)
    permutations = torch.tensor([[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]])
    order = torch.randperm(len(labels), generator=generator)
    cursor = 0
    model.train()
    for step in range(settings.steps):
        if cursor + settings.batch_size > len(order):
            order = torch.randperm(len(labels), generator=generator)
            cursor = 0
        batch = order[cursor : cursor + settings.batch_size]
        cursor += settings.batch_size
        x, where = images[batch], patches[batch]
        flip = torch.rand(len(batch), generator=generator) < 0.5
        x = torch.where(flip[:, None, None, None], x.flip(-1), x)
        where = torch.where(flip[:, None, None], where.flip(-1), where)
        channels = permutations[torch.randint(6, (len(batch),), generator=generator)]
        x = torch.gather(x, 1, channels[:, :, None, None].expand_as(x))
        x = (x.float() * (1 / 255) - 0.5) / 0.5
        tokens = model.vit(pixel_values=x).last_hidden_state
        loss = torch.nn.functional.cross_entropy(model.classifier(tokens[:, 0]), labels[batch])
        if settings.patch_loss:
            patch_logits = aux_head(tokens[:, 1:]).flatten(0, 1)
            aux = torch.nn.functional.cross_entropy(patch_logits, where.flatten())
            loss = loss + settings.patch_loss * aux
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        scheduler.step()
        if log_every and (step + 1) % log_every == 0:
            model.eval()
            check = accuracy(model, validation)
            model.train()
            print(
                f"  {NAME} step {step + 1}/{settings.steps} loss {loss.item():.4f} "
                f"validation accuracy {check:.3f}",
                flush=True,
            )
    model.eval()
    return model


@torch.no_grad()
def predictions(
    model: ViTForImageClassification, records: Sequence[shapes.ShapeImage]
) -> list[int]:
    """The class id the model predicts for each record's image."""
    out: list[int] = []
    for start in range(0, len(records), 250):
        x = pixel_values([r.image for r in records[start : start + 250]])
        out += model(pixel_values=x).logits.argmax(-1).tolist()
    return out


def accuracy(model: ViTForImageClassification, records: Sequence[shapes.ShapeImage]) -> float:
    """Share of records whose label the model predicts."""
    predicted = predictions(model, records)
    return sum(p == r.label_id for p, r in zip(predicted, records, strict=True)) / len(records)


def evaluate(
    model: ViTForImageClassification, *, n: int = TEST_IMAGES, seed: int = 0
) -> dict[str, tuple[float, int]]:
    """Held-out accuracy on ``shapes.generate(n, seed=seed, split="test")``.

    Returns name → (accuracy, number of images): ``"all"``, then one row per label.
    """
    records = shapes.generate(n, seed=seed, split="test")
    predicted = predictions(model, records)
    hits = [p == r.label_id for p, r in zip(predicted, records, strict=True)]
    result = {"all": (sum(hits) / len(hits), len(hits))}
    for label in shapes.LABELS:
        mine = [h for h, r in zip(hits, records, strict=True) if r.label == label]
        result[label] = (sum(mine) / len(mine), len(mine))
    return result


def top_patch_locations(
    model: ViTForImageClassification, processor: ViTImageProcessor, *, n: int = 200, seed: int = 0
) -> dict[str, dict[str, float]]:
    """For rollout and grad_attention: share of held-out images whose top patch is where.

    Explains the predicted class of ``n`` test images with :func:`attnwidget.explain`
    and counts where each method's highest-scored patch lies (target, distractor,
    background; see :func:`attnwidget.evaluation.patch_location`).
    """
    from attnwidget.evaluation import patch_location
    from attnwidget.pipeline.explain import explain

    methods = ("rollout", "grad_attention")
    counts = {m: dict.fromkeys(("target", "distractor", "background"), 0) for m in methods}
    records = shapes.generate(n, seed=seed, split="test")
    for record in records:
        exp = explain(model, processor, record.image, methods=list(methods))
        assert exp.patch_size is not None  # an image explanation has its patch size
        for m in methods:
            place = patch_location(
                exp.patch_scores(m), record.mask, record.distractor_mask, exp.patch_size
            )
            counts[m][place] += 1
    return {m: {k: v / n for k, v in c.items()} for m, c in counts.items()}


def model_card(
    model: ViTForImageClassification,
    *,
    settings: VisionTrainSettings,
    metrics: dict[str, tuple[float, int]],
    locations: dict[str, dict[str, float]] | None = None,
    n_locations: int = 0,
    seconds: float | None = None,
) -> str:
    """The README.md written next to the weights."""
    n_params = sum(p.numel() for p in model.parameters())
    c = model.config
    assert isinstance(c.image_size, int) and isinstance(c.patch_size, int)  # as built
    # transformers types id2label dict[int, str] | dict[str, str] | None; ours is set.
    id2label = cast("dict[int, str]", c.id2label)
    lines = [
        f"# {NAME}",
        "",
        "A tiny Vision Transformer shipped with attnwidget for demos and tests, trained by",
        f"`python -m attnwidget.demo.train {NAME}` on the synthetic shapes data set",
        "(`attnwidget/demo/shapes.py`): name the shape of the one target object",
        f"({', '.join(shapes.LABELS)}) among distractors "
        f"({', '.join(shapes.DISTRACTORS)}) on a textured background.",
        "",
        f"- architecture: `{type(model).__name__}` (Dosovitskiy et al. 2021), "
        f"{n_params:,} parameters: {c.image_size}×{c.image_size} RGB, patch {c.patch_size} "
        f"({(c.image_size // c.patch_size) ** 2} patches + CLS), {c.num_hidden_layers} layers, "
        f"{c.num_attention_heads} heads, hidden {c.hidden_size}, MLP {c.intermediate_size}",
        f"- labels: `{json.dumps({int(k): v for k, v in id2label.items()})}`",
        "- image processor: `ViTImageProcessor`, resize to 32×32, mean = std = 0.5",
        f"- training settings: `{json.dumps(asdict(settings))}`: random horizontal flips "
        "and colour-channel permutations; AdamW, warm-up then cosine decay; Xavier-uniform "
        "initialisation and 2-D sine–cosine starting position embeddings; plus, with weight "
        "`patch_loss`, a training-only linear head on the patch tokens that names what each "
        "patch shows (background, distractor, or the target and its shape), not shipped",
    ]
    if seconds is not None:
        lines.append(f"- training time: {seconds:.0f} s, {THREADS} CPU thread(s)")
    all_acc, n_test = metrics["all"]
    lines += [
        f'- held-out accuracy (`demo.images({n_test}, seed=0, split="test")`): **{all_acc:.1%}**',
        *[f"  - {k}: {acc:.1%} ({n} images)" for k, (acc, n) in metrics.items() if k != "all"],
    ]
    if locations:
        lines.append(
            f"- top patch of the predicted class's map on the first {n_locations} of those "
            "images "
            "(target / distractor / background):"
        )
        for method, share in locations.items():
            lines.append(
                f"  - `{method}`: {share['target']:.0%} / {share['distractor']:.0%} / "
                f"{share['background']:.0%}"
            )
    return "\n".join([*lines, ""])


def save(
    model: ViTForImageClassification,
    processor: ViTImageProcessor,
    out_dir: Path,
    *,
    card: str,
) -> Path:
    """Write config, weights (safetensors), processor config and card to ``out_dir/shapes-vit``."""
    path = Path(out_dir) / NAME
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    (path / "README.md").write_text(card)
    for file in path.iterdir():
        file.chmod(0o644)  # safetensors writes 0600; the files must be readable once installed
    return path


def load_saved(path: Path) -> tuple[ViTForImageClassification, ViTImageProcessor]:
    """The model (eval mode, eager attention) and processor saved in ``path``."""
    model = ViTForImageClassification.from_pretrained(
        path, local_files_only=True, attn_implementation="eager"
    )
    model.eval()
    return model, ViTImageProcessor.from_pretrained(path, local_files_only=True)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point (``python -m attnwidget.demo.train shapes-vit [...]``)."""
    parser = argparse.ArgumentParser(
        prog=f"python -m attnwidget.demo.train {NAME}", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, default=MODELS_DIR, help="output directory")
    parser.add_argument("--steps", type=int, default=VisionTrainSettings.steps)
    parser.add_argument("--seed", type=int, default=VisionTrainSettings.seed)
    parser.add_argument(
        "--evaluate", action="store_true", help="evaluate the saved model, do not train"
    )
    args = parser.parse_args(argv)
    settings = VisionTrainSettings(seed=args.seed, steps=args.steps)
    path = Path(args.out) / NAME
    if args.evaluate:
        model, processor = load_saved(path)
    else:
        start = time.perf_counter()
        model = train_model(settings, log_every=500)
        seconds = time.perf_counter() - start
        processor = build_processor()
        print(f"{NAME}: trained in {seconds:.0f} s")
    metrics = evaluate(model)
    if not args.evaluate:
        n_locations = 200
        locations = top_patch_locations(model, processor, n=n_locations)
        card = model_card(
            model,
            settings=settings,
            metrics=metrics,
            locations=locations,
            n_locations=n_locations,
            seconds=seconds,
        )
        save(model, processor, args.out, card=card)
    n_params = sum(p.numel() for p in model.parameters())
    size = sum(f.stat().st_size for f in path.iterdir())
    print(f"{NAME}: {n_params:,} parameters, {size:,} bytes in {path}")
    acc, n = metrics["all"]
    print(f"  held-out accuracy: {acc:.3f} ({n} test images, seed 0)")
    for label, (acc, n) in metrics.items():
        if label != "all":
            print(f"    {label}: {acc:.3f} ({n} images)")


if __name__ == "__main__":
    main()
