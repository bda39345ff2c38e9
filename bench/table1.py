"""Abnar & Zuidema (2020), Table 1, on the shipped ``sva-encoder``: every layer.

Run: ``python bench/table1.py [--n 2000] [--seed 0] [--special exclude|include]
[--gradient input_x_gradient|norm] [--blank-precision float32|float64]``
(about 4 minutes for the default 2000 sentences on one CPU thread).

Abnar & Zuidema ("Quantifying Attention Flow in Transformers", ACL 2020)
correlate, layer by layer, three attention-based importance scores of the
input tokens with two importance scores that look at the model's output:
blank-out (their ablation) and input gradients. Their model was a 6-layer
verb-number classifier reading [CLS]; ours is the shipped 4-layer, 4-head
``sva-encoder`` (same task, a synthetic grammar; :mod:`attnwidget.demo`).

For each of ``n`` held-out sentences (``demo.sentences(n, seed=seed,
split="test")``: every one has an attractor) the gold label (singular or
plural) is explained with ONE :func:`attnwidget.explain` call, methods
``blank_out`` and ``input_x_gradient``; its ``attentions`` (L, H, n, n) give,
for every layer l = 1..L, the [CLS] row of

* **raw**: the head-mean attention of layer l
  (:func:`attnwidget.raw_attention` with ``layer=l-1``);
* **rollout**: the rollout up to layer l (:func:`attnwidget.rollout`, its
  ``out[l-1]``; residual 0.5·I, heads averaged);
* **flow**: the maximum flow from node (l, [CLS]) to each input token
  (:func:`attnwidget.attention_flow` with ``layer=l-1, rows=[0]``). This is
  exact, not an approximation: the sources of node row l only reach the
  layers below them, so it is the same problem as the flow of the first l
  layers alone (``attentions[:l]``, ``layer=-1``), and gives bit-identical
  values (checked in ``tests/test_table1.py``).

Against

* **blank-out**: ``p(gold | x) − p(gold | x with token j replaced by [UNK])``,
  signed, from the library's ``blank_out`` (the float32 model's logits, the
  probabilities taken in float64). The shipped encoder is so sure of itself
  (p(gold) ≈ 0.99993 on every sentence) that in float32 most words would
  change p(gold) by less than it resolves near 1 (~6e-8); the library takes
  the softmax in float64 for that reason. The fraction of exact zeros and of
  ties is printed; ``--blank-precision float64`` runs a float64 copy of the
  whole model;
* **input gradient**: the library's ``input_x_gradient``,
  ``Σ_d e_{j,d} · ∂y/∂e_{j,d}`` with y the gold class's logit and e the word
  embeddings (signed). This is the definition the project's methods reference
  gives for the input-gradient baseline (its notes on this table say only
  "input gradients", with no formula); ``--gradient norm`` uses the other
  common reading, ``‖∂y/∂e_j‖₂``. The definition used is printed.

Tokens compared: by default (``--special exclude``) the words of the sentence
only, [CLS] and [SEP] left out: the paper ranks the sentence's input tokens. Note
what this implies at layer 1: rollout's and flow's [CLS] row there is
``0.5·W_1[CLS, j]`` for every j ≠ [CLS], the raw attention halved, so the
three rank the words identically and their correlations are equal by
construction. With ``--special include``, [CLS] and [SEP] are compared too
(their blank-out computed the same way, by replacing them by [UNK]); the
residual then puts [CLS] itself on top of rollout's and flow's rankings. The
paper's layer-1 gap (raw 0.69, rollout and flow 0.32) suggests that it kept
[CLS] in its rankings.

Per sentence and layer, the Spearman correlation is
:func:`scipy.stats.spearmanr` (average ranks for ties). A sentence where
either map is constant over the compared tokens gives NaN: these are counted,
reported and left out of the mean and standard deviation (population std,
ddof=0, over the sentences). Prints the tables next to the paper's numbers,
a "what held" summary computed from the numbers (the same tests applied to
the paper's own numbers), the run time and the exact command.
:func:`evaluate` returns the numbers (used by ``tests/test_table1.py``).
"""

from __future__ import annotations

import argparse
import copy
import shlex
import sys
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import stats
from tqdm import tqdm

import attnwidget
from attnwidget import demo

MODEL = "sva-encoder"
METHODS = ("raw", "rollout", "flow")
TARGETS = ("blank_out", "input_gradient")
#: The two readings of "input gradients": title in the table, full definition.
GRADIENTS = {
    "input_x_gradient": (
        "input × gradient of the gold logit",
        "input × gradient, score_j = Σ_d e_{j,d} · ∂y/∂e_{j,d}, y = the gold class's logit, "
        "e = the word embeddings, signed (attnwidget's input_x_gradient)",
    ),
    "norm": (
        "gradient norm ‖∂y/∂e_j‖ of the gold logit",
        "gradient norm, score_j = ‖∂y/∂e_j‖₂ over the embedding, y = the gold class's logit, "
        "e = the word embeddings (computed here; --gradient norm)",
    ),
}

#: Abnar & Zuidema (2020), Table 1: Spearman with blank-out, verb-number
#: task, 6 layers, 2000 samples (mean, std), as quoted in the project's
#: reference notes (shared/reference/methods.md).
PAPER_BLANK_OUT: dict[str, list[tuple[float, float]]] = {
    "raw": [(0.69, 0.27), (0.10, 0.43), (-0.11, 0.49), (-0.09, 0.52), (0.20, 0.45), (0.29, 0.39)],
    "rollout": [(0.32, 0.26), (0.38, 0.27), (0.51, 0.26), (0.62, 0.26), (0.70, 0.25), (0.71, 0.24)],
    "flow": [(0.32, 0.26), (0.44, 0.29), (0.70, 0.25), (0.70, 0.22), (0.71, 0.22), (0.70, 0.22)],
}
#: The same with input gradients, last layer only (means).
PAPER_INPUT_GRADIENT_LAST: dict[str, float] = {"raw": 0.46, "rollout": 0.54, "flow": 0.61}


@dataclass
class Table1:
    """Per-sentence Spearman correlations and what the run saw.

    ``rho[(target, method)]`` is an (N, L) array: sentence i, layer l+1; NaN
    where one of the two maps was constant over the compared tokens.
    """

    n: int
    seed: int
    special: str
    gradient: str
    blank_precision: str
    num_layers: int
    texts: list[str]
    labels: list[str]
    rho: dict[tuple[str, str], np.ndarray]
    accuracy: float
    mean_tokens: float
    blank_zero_fraction: float
    blank_tied_fraction: float
    gold_probability: tuple[float, float]
    constant: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    flow_seconds: float = 0.0

    def mean(self, target: str, method: str) -> np.ndarray:
        """(L,) mean over the sentences with a finite correlation."""
        return _nan_stat(self.rho[(target, method)], np.nanmean)

    def std(self, target: str, method: str) -> np.ndarray:
        """(L,) population standard deviation, likewise."""
        return _nan_stat(self.rho[(target, method)], np.nanstd)

    def nan_count(self, target: str, method: str) -> np.ndarray:
        """(L,) sentences left out (NaN) at each layer."""
        return np.isnan(self.rho[(target, method)]).sum(axis=0)


def _nan_stat(values: np.ndarray, fn) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column stays NaN
        return fn(values, axis=0)


def layer_maps(attentions: np.ndarray, query: int = 0) -> tuple[dict[str, np.ndarray], float]:
    """Every layer's raw / rollout / flow row of ``query``: method -> (L, n).

    Also returns the seconds spent in attention flow.
    """
    num_layers = attentions.shape[0]
    layers = range(num_layers)
    raw = np.stack([attnwidget.raw_attention(attentions, layer=k)[query] for k in layers])
    rolled = attnwidget.rollout(attentions)[:, query, :]
    start = time.perf_counter()
    flow = np.stack(
        [attnwidget.attention_flow(attentions, layer=k, rows=[query])[0] for k in layers]
    )
    return {"raw": raw, "rollout": rolled, "flow": flow}, time.perf_counter() - start


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """scipy's Spearman correlation; NaN (no warning) when either side is constant."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(stats.spearmanr(a, b).statistic)


def blank_out_by_model(model, ids: np.ndarray, target_id: int, blank_id: int, mask: np.ndarray):
    """Blank-out of the positions in ``mask`` with ``model``, as the library computes it.

    Replaces each such token by ``blank_id`` and returns ``p(x) − p(x')`` of
    ``target_id`` (0 elsewhere), through :func:`attnwidget.blank_out`. The
    softmax runs in the model's dtype (float32 as the library, or float64
    with a float64 copy of the model).
    """

    def probability(batch: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            logits = model(input_ids=torch.as_tensor(batch)).logits
        dtype = torch.float64 if logits.dtype == torch.float64 else torch.float32
        return logits.to(dtype).softmax(dim=-1)[:, target_id].numpy()

    return attnwidget.blank_out(probability, ids, blank_id=blank_id, positions=mask)


def gradient_norm(model, ids: np.ndarray, target_id: int) -> np.ndarray:
    """``‖∂y/∂e_j‖`` (L2 over the embedding), y the target logit, e the word embeddings."""
    embeddings = model.get_input_embeddings()(torch.as_tensor(ids[None])).detach()
    embeddings.requires_grad_(True)
    logit = model(inputs_embeds=embeddings).logits[0, target_id]
    (grad,) = torch.autograd.grad(logit, embeddings)
    return grad[0].double().norm(dim=-1).numpy()


def special_mask(tokenizer, input_ids: np.ndarray) -> np.ndarray:
    """(n,) True at the tokenizer's special tokens ([CLS], [SEP])."""
    mask = tokenizer.get_special_tokens_mask(input_ids.tolist(), already_has_special_tokens=True)
    return np.asarray(mask, dtype=bool)


def compared_positions(tokenizer, input_ids: np.ndarray, special: str) -> np.ndarray:
    """Indices of the tokens compared: the words, or every token with ``special="include"``."""
    if special == "include":
        return np.arange(len(input_ids))
    return np.flatnonzero(~special_mask(tokenizer, input_ids))


def sentence_scores(
    model,
    tokenizer,
    text: str,
    label: str,
    *,
    special: str = "exclude",
    gradient: str = "input_x_gradient",
    model64=None,
):
    """One sentence: (explanation, positions, {target: (n,) scores}, maps, flow seconds).

    ``model64`` (a float64 copy of ``model``): compute blank-out with it
    instead of taking the library's float32 one.
    """
    exp = attnwidget.explain(
        model, tokenizer, text, target=label, methods=["blank_out", "input_x_gradient"]
    )
    ids = exp.input_ids
    positions = compared_positions(tokenizer, ids, special)
    if model64 is not None:
        everything = np.ones(ids.size, dtype=bool)
        blank = blank_out_by_model(model64, ids, exp.target_id, tokenizer.unk_token_id, everything)
    else:
        blank = np.asarray(exp.scores["blank_out"], dtype=np.float64)
        if special == "include":  # the library leaves special tokens at 0
            mask = special_mask(tokenizer, ids)
            extra = blank_out_by_model(model, ids, exp.target_id, tokenizer.unk_token_id, mask)
            blank = np.where(mask, extra, blank)
    if gradient == "norm":
        grads = gradient_norm(model, ids, exp.target_id)
    else:
        grads = np.asarray(exp.scores["input_x_gradient"], dtype=np.float64)
    maps, flow_seconds = layer_maps(exp.attentions, exp.query_index)
    return exp, positions, {"blank_out": blank, "input_gradient": grads}, maps, flow_seconds


def evaluate(
    n: int = 2000,
    seed: int = 0,
    *,
    special: str = "exclude",
    gradient: str = "input_x_gradient",
    blank_precision: str = "float32",
    progress: bool = True,
    model_and_tokenizer=None,
) -> Table1:
    """Spearman of raw / rollout / flow with blank-out and input gradients, per layer.

    Args:
        n, seed: ``demo.sentences(n, seed=seed, split="test")``.
        special: ``"exclude"`` (compare the words) or ``"include"`` ([CLS], [SEP] too).
        gradient: ``"input_x_gradient"`` (default) or ``"norm"`` (‖∂y/∂e_j‖).
        blank_precision: ``"float32"`` (the library's blank-out, default) or
            ``"float64"`` (the same drop computed with a float64 copy of the model).
        progress: show a tqdm bar on stderr.
        model_and_tokenizer: reuse a loaded ``sva-encoder`` (eager attention).
    """
    if special not in ("exclude", "include"):
        raise ValueError(f"special must be 'exclude' or 'include', not {special!r}")
    if gradient not in GRADIENTS:
        raise ValueError(f"gradient must be one of {', '.join(GRADIENTS)}, not {gradient!r}")
    if blank_precision not in ("float32", "float64"):
        raise ValueError(f"blank_precision must be float32 or float64, not {blank_precision!r}")
    start = time.perf_counter()
    model, tokenizer = model_and_tokenizer or demo.load(MODEL, attn_implementation="eager")
    model64 = copy.deepcopy(model).double() if blank_precision == "float64" else None
    examples = demo.sentences(n, seed=seed, split="test")
    num_layers = model.config.num_hidden_layers
    rho = {(t, m): np.full((n, num_layers), np.nan) for t in TARGETS for m in METHODS}
    constant = {name: 0 for name in (*TARGETS, *METHODS)}
    correct, tokens, zeros, tied, flow_seconds = 0, 0, 0, 0, 0.0
    gold = []
    loop = tqdm(examples, desc="table1", unit="sentence", disable=not progress, file=sys.stderr)
    for i, example in enumerate(loop):
        exp, positions, targets, maps, seconds = sentence_scores(
            model,
            tokenizer,
            example.text,
            example.label,
            special=special,
            gradient=gradient,
            model64=model64,
        )
        flow_seconds += seconds
        correct += int(np.argmax(exp.probabilities) == exp.target_id)
        gold.append(float(exp.probabilities[exp.target_id]))
        blank = targets["blank_out"][positions]
        tokens += positions.size
        zeros += int((blank == 0).sum())
        tied += positions.size - np.unique(blank).size
        for target, scores in targets.items():
            constant[target] += int(np.ptp(scores[positions]) == 0)
        for method, rows in maps.items():
            constant[method] += int(any(np.ptp(row[positions]) == 0 for row in rows))
            for target, scores in targets.items():
                for layer in range(num_layers):
                    rho[(target, method)][i, layer] = spearman(
                        rows[layer][positions], scores[positions]
                    )
    return Table1(
        n=n,
        seed=seed,
        special=special,
        gradient=gradient,
        blank_precision=blank_precision,
        num_layers=num_layers,
        texts=[e.text for e in examples],
        labels=[e.label for e in examples],
        rho=rho,
        accuracy=correct / max(n, 1),
        mean_tokens=tokens / max(n, 1),
        blank_zero_fraction=zeros / max(tokens, 1),
        blank_tied_fraction=tied / max(tokens, 1),
        gold_probability=(min(gold, default=np.nan), max(gold, default=np.nan)),
        constant=constant,
        seconds=time.perf_counter() - start,
        flow_seconds=flow_seconds,
    )


def _cell(mean: float, std: float | None = None) -> str:
    if np.isnan(mean):
        return "n/a"
    text = f"{mean:.2f}".replace("-", "−")
    return text if std is None else f"{text}±{std:.2f}"


def titles(result: Table1) -> dict[str, str]:
    """Target name -> its title in the tables, for this run's definitions."""
    precision = (
        "the library's: float32 model, float64 probabilities"
        if result.blank_precision == "float32"
        else "a float64 copy of the model"
    )
    return {
        "blank_out": (
            f"blank-out (drop in p(gold) when the token is replaced by [UNK]; {precision})"
        ),
        "input_gradient": f"input gradients ({GRADIENTS[result.gradient][0]})",
    }


def format_table(result: Table1) -> str:
    """The two tables (ours next to the paper's) as markdown."""
    TARGET_TITLES = titles(result)
    L = result.num_layers
    paper_layers = len(PAPER_BLANK_OUT["raw"])
    width = max(L, paper_layers)
    header = "| method | source | " + " | ".join(f"layer {k}" for k in range(1, width + 1))
    lines = [f"### Spearman with {TARGET_TITLES['blank_out']}", ""]
    lines += [header + " | NaN (left out) |", "|---|---|" + "---|" * (width + 1)]
    for method in METHODS:
        mean, std = result.mean("blank_out", method), result.std("blank_out", method)
        ours = [_cell(mean[k], std[k]) for k in range(L)] + [""] * (width - L)
        nans = "/".join(str(int(c)) for c in result.nan_count("blank_out", method))
        lines.append(f"| {method} | ours ({L} layers) | " + " | ".join(ours) + f" | {nans} |")
        paper = [_cell(m, s) for m, s in PAPER_BLANK_OUT[method]] + [""] * (width - paper_layers)
        lines.append(f"| {method} | paper ({paper_layers} layers) | " + " | ".join(paper) + " | |")
    lines += ["", f"### Spearman with {TARGET_TITLES['input_gradient']}", ""]
    header = "| method | " + " | ".join(f"layer {k}" for k in range(1, L + 1))
    lines += [header + " | paper, last layer | NaN (left out) |", "|---|" + "---|" * (L + 2)]
    for method in METHODS:
        mean, std = result.mean("input_gradient", method), result.std("input_gradient", method)
        ours = " | ".join(_cell(mean[k], std[k]) for k in range(L))
        nans = "/".join(str(int(c)) for c in result.nan_count("input_gradient", method))
        paper = _cell(PAPER_INPUT_GRADIENT_LAST[method])
        lines.append(f"| {method} | {ours} | {paper} | {nans} |")
    return "\n".join(lines)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _num(value: float, sign: bool = False) -> str:
    """Two decimals with a real minus sign."""
    return (f"{value:+.2f}" if sign else f"{value:.2f}").replace("-", "−")


def shape_checks(blank: dict[str, np.ndarray], grad_last: dict[str, float]) -> list[tuple]:
    """The paper's shape as (claim, held, numbers) from per-layer means.

    ``blank``: method -> (L,) means with blank-out (L ≥ 3); ``grad_last``:
    method -> the last layer's mean with input gradients. Applied to our
    numbers and to the paper's.
    """
    raw, roll, flow = (np.asarray(blank[m], dtype=float) for m in METHODS)
    L = raw.size
    middle = raw[1 : L - 1]
    low = int(np.argmin(middle)) + 2
    checks = [
        (
            "raw decorrelates in the middle layers (its lowest middle layer is below layers 1 "
            "and L)",
            bool(middle.min() < raw[0] and middle.min() < raw[-1]),
            f"layer 1 {_num(raw[0])}, layer {low} {_num(middle.min())}, layer {L} {_num(raw[-1])}",
        ),
        (
            "raw is above rollout and flow at layer 1",
            bool(raw[0] > roll[0] and raw[0] > flow[0]),
            f"raw {_num(raw[0])}, rollout {_num(roll[0])}, flow {_num(flow[0])}",
        ),
    ]
    for name, values in (("rollout", roll), ("flow", flow)):
        falls = -np.diff(values)
        checks += [
            (
                f"{name} rises with depth (layer L above layer 1)",
                bool(values[-1] > values[0]),
                " → ".join(_num(v) for v in values),
            ),
            (
                f"{name} never falls by more than 0.02 from a layer to the next",
                bool(np.all(falls <= 0.02)),
                f"largest fall {_num(max(0.0, float(falls.max())))}",
            ),
        ]
    gap = min((roll[1:] - raw[1:]).min(), (flow[1:] - raw[1:]).min())
    checks += [
        (
            "rollout and flow stay high: above raw at every layer after the first",
            bool(gap > 0),
            f"smallest margin {_num(gap, sign=True)}",
        ),
        (
            "flow ≥ rollout at the last layer (blank-out)",
            bool(flow[-1] >= roll[-1]),
            f"flow {_num(flow[-1])}, rollout {_num(roll[-1])}",
        ),
        (
            "input gradients, last layer: flow > rollout > raw",
            bool(grad_last["flow"] > grad_last["rollout"] > grad_last["raw"]),
            ", ".join(f"{m} {_num(grad_last[m])}" for m in ("flow", "rollout", "raw")),
        ),
    ]
    return checks


def what_held(result: Table1) -> str:
    """The shape checks on our numbers next to the same checks on the paper's."""
    ours = shape_checks(
        {m: result.mean("blank_out", m) for m in METHODS},
        {m: float(result.mean("input_gradient", m)[-1]) for m in METHODS},
    )
    paper = shape_checks(
        {m: [v for v, _ in PAPER_BLANK_OUT[m]] for m in METHODS}, PAPER_INPUT_GRADIENT_LAST
    )
    lines = ["| claim | ours | paper |", "|---|---|---|"]
    for (claim, held, numbers), (_, paper_held, paper_numbers) in zip(ours, paper, strict=True):
        lines.append(
            f"| {claim} | {_yes(held)} ({numbers}) | {_yes(paper_held)} ({paper_numbers}) |"
        )
    lines.append("")
    for target in TARGETS:
        a, b = result.rho[(target, "flow")][:, -1], result.rho[(target, "rollout")][:, -1]
        diff = (a - b)[np.isfinite(a - b)]
        if diff.size < 2:
            continue
        se = diff.std(ddof=1) / np.sqrt(diff.size)
        lines.append(
            f"- Last layer, flow − rollout with {target}: {diff.mean():+.3f} ± {se:.3f} "
            f"(paired, mean ± standard error over {diff.size} sentences)".replace("-0", "−0")
        )
    return "\n".join(lines)


def report(result: Table1, command: str) -> str:
    """Everything the script prints after the progress bar."""
    words = "words only ([CLS], [SEP] left out)"
    compared = words if result.special == "exclude" else "every token, [CLS] and [SEP] included"
    constant = ", ".join(f"{k} {v}" for k, v in result.constant.items())
    parts = [
        f"## Abnar & Zuidema (2020), Table 1, on {MODEL}",
        "",
        f"{result.n} held-out sentences (demo.sentences({result.n}, seed={result.seed}, "
        f'split="test"), all with attractors), {result.num_layers} layers; the gold label '
        f"explained, the [CLS] row; accuracy {result.accuracy:.3f}; "
        f"{result.mean_tokens:.1f} compared tokens per sentence.",
        f"Tokens compared: {compared}.",
        f"Input gradient: {GRADIENTS[result.gradient][1]}.",
        "Per sentence scipy.stats.spearmanr; mean ± std (ddof=0) over the sentences; NaN "
        "(a constant map) counted per layer 1/2/…/L and left out.",
        f"Sentences with a constant map (any layer for the attention methods): {constant}.",
        f"Blank-out ({result.blank_precision}): {result.blank_zero_fraction:.1%} of the compared "
        f"tokens score exactly 0 and {result.blank_tied_fraction:.1%} tie with another token of "
        f"their sentence; p(gold) is {result.gold_probability[0]:.6f} to "
        f"{result.gold_probability[1]:.6f} (min to max)"
        + (
            " (the library takes these probabilities in float64: float32 would resolve "
            "changes near 1 of ~6e-8 only)."
            if result.blank_precision == "float32"
            else "."
        ),
        "",
        format_table(result),
        "",
        "### What held",
        "",
        what_held(result),
        "",
    ]
    if result.special == "exclude":
        parts.append(
            "At layer 1 the three are equal by construction here: rollout's and flow's [CLS] "
            "row is 0.5·raw on every word (run with --special include to rank [CLS] too).\n"
        )
    parts += [
        f"Run time: {result.seconds:.1f} s (attention flow, every layer: "
        f"{result.flow_seconds:.1f} s, {1000 * result.flow_seconds / max(result.n, 1):.1f} ms "
        "per sentence).",
        f"Command: {command}",
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="sentences (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of demo.sentences (default 0)")
    parser.add_argument(
        "--special",
        choices=["exclude", "include"],
        default="exclude",
        help="compare the words only (default) or [CLS] and [SEP] too",
    )
    parser.add_argument(
        "--gradient",
        choices=sorted(GRADIENTS),
        default="input_x_gradient",
        help="input gradient: input × gradient (default) or the gradient's norm",
    )
    parser.add_argument(
        "--blank-precision",
        choices=["float32", "float64"],
        default="float32",
        help="blank-out from the library (float32 model, default) or from a float64 copy of it",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    given = sys.argv[1:] if argv is None else argv
    command = shlex.join(["python", "bench/table1.py", *given])
    result = evaluate(
        args.n,
        args.seed,
        special=args.special,
        gradient=args.gradient,
        blank_precision=args.blank_precision,
    )
    print(report(result, command))


if __name__ == "__main__":
    main()
