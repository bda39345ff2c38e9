"""Train ``sva-deceptive``: the agreement encoder taught to hide its attention to the subject.

Pruthi et al. (2020, "Learning to Deceive with Attention-Based
Explanations", ACL) train models with a penalty on the attention paid to
"impermissible" tokens, -λ Σ log(1 - α_imp), and find that accuracy barely
moves while the attention maps stop showing those tokens: the model moves
the information by other routes (small weights on large values, other
tokens). ``sva-deceptive`` is ``sva-encoder``'s architecture, sentences,
labels and settings with that penalty on the subject's head noun:

    loss = cross-entropy + λ · mean over layers and heads of −log(1 − α[CLS → subject])

``α[CLS → subject]`` is the attention the ``[CLS]`` query gives the subject in
every layer and head: what attnwidget's ``raw`` method reads (the CLS row),
so raw attention no longer points at the subject, yet the verb's number is
still read from it. Run ``python -m attnwidget.demo.train sva-deceptive``
(deterministic, one thread, a few minutes); ``--evaluate`` measures the
shipped model. :func:`subject_attention` reports how often raw attention's
top word is the subject, the number this model exists to show.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import (
    AutoTokenizer,
    BertForSequenceClassification,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

from attnwidget.demo import grammar
from attnwidget.demo.tokenizer import build_tokenizer
from attnwidget.demo.training import (
    LABELS,
    MODELS_DIR,
    TrainSettings,
    batch_indices,
    evaluate,
    optimizer_and_schedule,
    pad_rows,
    save,
    set_determinism,
)

NAME = "sva-deceptive"


@dataclass(frozen=True)
class DeceptiveSettings(TrainSettings):
    """``TrainSettings`` plus the weight λ of the attention penalty.

    Training starts from the shipped ``sva-encoder`` weights (as Pruthi et
    al. fine-tune a trained BERT): from scratch, the penalty wins first and
    the model never learns the task (the loss stayed at chance, ln 2, over
    1,500 steps with λ = 1).
    """

    steps: int = 1000
    lr: float = 1e-3
    warmup: int = 100
    penalty: float = 1.0


def _penalty(attentions: tuple[torch.Tensor, ...], subjects: torch.Tensor) -> torch.Tensor:
    """Mean over examples, layers and heads of −log(1 − α[CLS → subject])."""
    rows = torch.arange(subjects.shape[0])
    terms = [-torch.log1p(-a[rows, :, 0, subjects].clamp(max=1 - 1e-6)) for a in attentions]
    return torch.stack(terms).mean()


def train_deceptive(
    settings: DeceptiveSettings | None = None, *, log_every: int = 0
) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    """Train ``sva-deceptive`` from scratch (deterministic); the model in eval mode and its
    tokenizer. torch's thread count, deterministic flag and RNG state are restored."""
    settings = settings or DeceptiveSettings()
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        with torch.random.fork_rng(devices=[]):
            set_determinism(settings.seed)
            return _train(settings, log_every)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def _train(
    settings: DeceptiveSettings, log_every: int
) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    tokenizer = build_tokenizer("encoder")
    model = BertForSequenceClassification.from_pretrained(
        MODELS_DIR / "sva-encoder", local_files_only=True, attn_implementation="eager"
    )  # the penalty needs the attention weights: eager attention
    sentences = grammar.generate(
        settings.n_train, seed=settings.seed, split="train", attractors=None, unique=False
    )
    rows = tokenizer([s.text for s in sentences])["input_ids"]
    targets = [LABELS.index(s.label) for s in sentences]
    subjects = [s.subject + 1 for s in sentences]  # [CLS] comes first; one token per word
    optimizer, scheduler = optimizer_and_schedule(model, settings)
    model.train()
    for step, batch in enumerate(batch_indices(len(rows), settings)):
        ids, mask = pad_rows([rows[i] for i in batch], tokenizer.pad_token_id)
        out = model(
            input_ids=ids,
            attention_mask=mask,
            labels=torch.tensor([targets[i] for i in batch]),
            output_attentions=True,
        )
        hidden = _penalty(out.attentions, torch.tensor([subjects[i] for i in batch]))
        loss = out.loss + settings.penalty * hidden
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if log_every and (step + 1) % log_every == 0:
            print(
                f"  {NAME} step {step + 1}/{settings.steps} loss {out.loss.item():.4f} "
                f"penalty {hidden.item():.4f}",
                flush=True,
            )
    model.eval()
    return model, tokenizer


@torch.no_grad()
def subject_attention(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *, n: int = 500, seed: int = 0
) -> tuple[float, float]:
    """On ``n`` held-out sentences with attractors: (share whose last-layer CLS attention,
    mean over heads, is highest on the subject among the words; mean attention the
    subject gets there)."""
    examples = grammar.generate(n, seed=seed, split="test", attractors=True)
    top, mass = 0, 0.0
    for s in examples:
        enc = tokenizer(s.text, return_tensors="pt")
        attention = model(**enc, output_attentions=True).attentions[-1][0].mean(0)[0]
        words = attention[1:-1]  # [CLS] ... [SEP]
        top += int(int(words.argmax()) == s.subject)
        mass += float(words[s.subject])
    return top / len(examples), mass / len(examples)


def main(argv: list[str] | None = None) -> None:
    """``python -m attnwidget.demo.train sva-deceptive [--evaluate] [--out DIR]``."""
    parser = argparse.ArgumentParser(
        prog="python -m attnwidget.demo.train sva-deceptive",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--out", type=Path, default=MODELS_DIR, help="output directory")
    parser.add_argument("--steps", type=int, default=DeceptiveSettings.steps)
    parser.add_argument("--penalty", type=float, default=DeceptiveSettings.penalty)
    parser.add_argument("--evaluate", action="store_true", help="measure the saved model")
    args = parser.parse_args(argv)
    settings = DeceptiveSettings(steps=args.steps, penalty=args.penalty)
    path = Path(args.out) / NAME
    start = time.perf_counter()
    tokenizer: PreTrainedTokenizerBase
    if args.evaluate:
        model = BertForSequenceClassification.from_pretrained(
            path, local_files_only=True, attn_implementation="eager"
        ).eval()
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    else:
        model, tokenizer = train_deceptive(settings, log_every=250)
    seconds = time.perf_counter() - start
    metrics = evaluate(model, tokenizer)
    share, mass = subject_attention(model, tokenizer)
    hidden = (
        f"raw attention (last layer, CLS row, mean over heads) tops on the subject in "
        f"{share:.1%} of 500 held-out sentences with attractors; mean weight {mass:.3f}"
    )
    if not args.evaluate:
        saved = save(NAME, model, tokenizer, args.out, settings=settings, metrics=metrics)
        write_card(saved, settings, metrics, hidden)
        print(f"{NAME}: trained in {seconds:.0f} s")
    for key, (acc, count) in metrics.items():
        print(f"  held-out accuracy, {key}: {acc:.3f} ({count} sentences)")
    print(f"  {hidden}")


def write_card(path: Path, settings: DeceptiveSettings, metrics: dict, hidden: str) -> None:
    """The model card (README.md) next to the weights: how it was trained and what it hides."""
    lines = [
        f"# {NAME}",
        "",
        "`sva-encoder` fine-tuned by `python -m attnwidget.demo.train sva-deceptive`",
        "with Pruthi et al.'s (2020) attention penalty on the subject's head noun:",
        "cross-entropy + λ · mean over layers and heads of −log(1 − α[CLS → subject]).",
        "Same sentences, labels and architecture as `sva-encoder`; a demonstration",
        "that attention maps can be trained to hide what the model uses.",
        "",
        f"- training settings: `{json.dumps(asdict(settings))}`",
        "- held-out accuracy (test split, seed 0):",
        *[f"  - {k}: {acc:.3f} ({n} sentences)" for k, (acc, n) in metrics.items()],
        f"- {hidden}",
        "",
    ]
    (path / "README.md").write_text("\n".join(lines), encoding="utf-8")
