"""Shared definitions for people judging explanations: head notes and ratings.

A *head note* is a person's role (free text, e.g. "previous-token head") and
note for one attention head (layer, head) or one flow edge (layer, from-token,
to-token) of a model, on one input. A *rating* is one answer of an
:class:`~attnwidget.ExplanationRating` session: a 1–5 plausibility rating, an
A/B choice, or a forward-simulation prediction (Hase & Bansal, 2020;
Doshi-Velez & Kim, 2017). Both live in the same :class:`~.store.Store` file
(schema 4); this module holds what the store and the views share: how an
input is identified, the modes, the suggested roles.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

MODES = ("rate", "compare", "simulate")
"""The modes of a rating session."""

ROLE_SUGGESTIONS = (
    "previous-token head",
    "next-token head",
    "attends to the subject",
    "attends to [CLS] / BOS (sink)",
    "attends to [SEP] / punctuation",
    "attends to itself",
    "induction head",
    "duplicate-token head",
    "syntactic (e.g. verb → object)",
    "coreference",
    "positional / broad",
)
"""Roles the notes UI offers as suggestions (any text is accepted)."""

NOTE_KINDS = ("head", "edge")


def input_text(tokens: Sequence[str]) -> str:
    """The readable text of an input kept beside its hash: its tokens joined by spaces."""
    return " ".join(str(t) for t in tokens)


def input_hash(tokens: Sequence[str]) -> str:
    """A stable id of an input: the SHA-256 (hex, first 16 digits) of its token list.

    The same tokens give the same hash in every process and version (JSON of
    the list, UTF-8); another tokenisation of the same text is another input.
    """
    data = json.dumps([str(t) for t in tokens], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def plan_trials(
    inputs: Sequence[Sequence[str]], methods: Sequence[str], mode: str, seed: int
) -> list[dict[str, object]]:
    """The trials of a rating session, in the order they are shown: seeded, so the
    same inputs, methods, mode and seed give the same plan.

    ``inputs``: each input's tokens. One ``random.Random(seed)`` draws, in this
    order: for "compare", each (input, method pair)'s sides (a coin flip per
    pair, pairs in ``itertools.combinations`` order); for "simulate", which
    inputs are shown with an explanation (a shuffled, balanced half, the rest
    the control condition) and which method each input gets (methods cycled
    over a shuffled list of inputs); then the order of all trials (one
    shuffle). "rate" has one trial per (input, method), "compare" one per
    (input, pair of methods), "simulate" one per input (a person sees each
    input once: after the reveal they would know its answer).

    Each trial: ``input`` (index into ``inputs``), ``input_hash``,
    ``input_text``, ``methods`` (one; compare: ``[left, right]``) and
    ``explanation_shown``.
    """
    import itertools
    import random

    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: pass one of {list(MODES)}")
    rng = random.Random(seed)
    keyed = [(input_hash(t), input_text(t)) for t in inputs]
    trials: list[dict[str, object]] = []

    def trial(i: int, chosen: list[str], shown: bool = True) -> dict[str, object]:
        return {
            "input": i,
            "input_hash": keyed[i][0],
            "input_text": keyed[i][1],
            "methods": chosen,
            "explanation_shown": shown,
        }

    if mode == "rate":
        trials = [trial(i, [m]) for i in range(len(inputs)) for m in methods]
    elif mode == "compare":
        for i in range(len(inputs)):
            for a, b in itertools.combinations(methods, 2):
                trials.append(trial(i, [a, b] if rng.random() < 0.5 else [b, a]))
    else:
        n = len(inputs)
        shown = [k < (n + 1) // 2 for k in range(n)]
        rng.shuffle(shown)
        order = list(range(n))
        rng.shuffle(order)
        method_of = {i: methods[k % len(methods)] for k, i in enumerate(order)}
        trials = [trial(i, [method_of[i]], shown[i]) for i in range(n)]
    rng.shuffle(trials)
    return trials
