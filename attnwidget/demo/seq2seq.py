"""Tiny RNN encoder–decoders with attention: the classic alignment models.

The attention heat maps people first met were the alignments of RNN
encoder–decoders (Bahdanau, Cho & Bengio 2015; Luong, Pham & Manning 2015).
The demo models ``seq2seq-<kind>`` are such models, trained on a toy
translation task the package generates: **character reversal** (``"abcde"`` →
``"edcba"``, 5 to 10 lowercase letters), where the right alignment is the
anti-diagonal.

Architecture (plain ``torch.nn``), the same for every kind:

* encoder: embedding (32) → bidirectional GRU (32 per direction); the keys and
  values are its outputs k_j (64 each);
* decoder: a GRU (64) started from tanh(W [→h_n; ←h_1]) and fed the previous
  output token; its state h_t is the query (Luong et al.'s h_t, attention after
  the recurrent step, no input feeding);
* attention: weights α_t = softmax(score(h_t, k)) over the source, with
  ``score`` one of :func:`attnwidget.teach.attention_scores`' kinds (``dot``,
  ``general``, ``additive``, ``location``, ``scaled_dot``, ``cosine``, the
  latter with a learned β) and exactly its formulas; context c_t = Σ α_tj k_j;
  h̃_t = tanh(W_c [c_t; h_t]); next-token logits W_s h̃_t.
* ``local-p``: Luong et al.'s (2015) local attention with predictive alignment:
  ``general`` scores, p_t = (n − 1) · sigmoid(v_pᵀ tanh(W_p h_t)), only keys
  with |s − p_t| ≤ D (D = 2) and the softmax weights multiplied by
  exp(−(s − p_t)² / (2σ²)), σ = D / 2, not renormalised — what
  :func:`attnwidget.teach.attention` computes with
  ``alignment=local_p_alignment(...)``.

Use::

    model, vocab = attnwidget.demo.load("seq2seq-additive")
    result = translate(model, vocab, "abcdef")
    result.output_text           # 'fedcba'
    result.alignment             # float32 (output steps, input tokens)
"""

from __future__ import annotations

import json
import math
import random
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from attnwidget.errors import InputError

__all__ = [
    "KINDS",
    "Seq2SeqAttention",
    "Translation",
    "Vocab",
    "examples",
    "load_model",
    "translate",
]

#: The attention kinds of the shipped models (``seq2seq-<kind>``).
KINDS: tuple[str, ...] = (
    "dot",
    "general",
    "additive",
    "location",
    "scaled_dot",
    "cosine",
    "local-p",
)
ALPHABET = "abcdefghijklmnopqrstuvwxyz"
MIN_LENGTH, MAX_LENGTH = 5, 10
LOCAL_WINDOW = 2
SPECIALS = ("<pad>", "<s>", "</s>")


class Vocab:
    """Characters ↔ ids for the reversal task (the models' "tokenizer").

    Ids 0, 1, 2 are ``<pad>``, ``<s>`` (the decoder's first input) and
    ``</s>`` (end of output); the letters follow. :meth:`encode` checks its
    input and says what to fix.
    """

    pad_id, bos_id, eos_id = 0, 1, 2

    def __init__(self, alphabet: str = ALPHABET, max_length: int = MAX_LENGTH) -> None:
        self.alphabet = alphabet
        self.max_length = max_length
        self.tokens: tuple[str, ...] = SPECIALS + tuple(alphabet)
        self._ids = {token: i for i, token in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        return f"Vocab({self.alphabet!r}, max_length={self.max_length})"

    def tokenize(self, text: Any) -> list[str]:
        """The input tokens of ``text`` (one per character), checked."""
        if not isinstance(text, str):
            raise InputError(f"text must be a string of letters; got {type(text).__name__}.")
        if not text:
            raise InputError(
                f"text is empty: give {MIN_LENGTH} to "
                f"{self.max_length} letters from {self.alphabet!r}, e.g. 'abcde'."
            )
        unknown = sorted({c for c in text if c not in self.alphabet})
        if unknown:
            raise InputError(
                f"unknown symbol(s) {', '.join(repr(c) for c in unknown)} in {text!r}: the "
                f"models know only the lowercase letters {self.alphabet!r}; remove or "
                "replace the others (no spaces, digits or capitals)."
            )
        if len(text) < MIN_LENGTH:
            raise InputError(
                f"text is too short: {len(text)} letters, the models were trained on "
                f"{MIN_LENGTH} to {self.max_length}; give at least {MIN_LENGTH} (e.g. 'abcde')."
            )
        if len(text) > self.max_length:
            raise InputError(
                f"text is too long: {len(text)} letters, the models were trained on at most "
                f"{self.max_length}; shorten it to {self.max_length} or fewer."
            )
        return list(text)

    def encode(self, text: Any) -> list[int]:
        """Ids of the letters of ``text`` (no special tokens)."""
        return [self._ids[c] for c in self.tokenize(text)]

    def decode(self, ids: list[int]) -> str:
        """The letters of ``ids`` up to the first ``</s>`` (specials dropped)."""
        out = []
        for i in ids:
            if i == self.eos_id:
                break
            if i >= len(SPECIALS):
                out.append(self.tokens[i])
        return "".join(out)


def in_held_out(text: str) -> bool:
    """Whether ``text`` belongs to the held-out split (1 string in 10, by CRC-32)."""
    return zlib.crc32(text.encode()) % 10 == 0


def examples(n: int, *, seed: int = 0, split: str = "test") -> list[tuple[str, str]]:
    """``n`` deterministic (source, target) pairs of the reversal task.

    ``split="train"`` never yields a held-out string and ``"test"`` only
    held-out ones (:func:`in_held_out`), so test accuracy is on unseen inputs.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test'; got {split!r}")
    rng = random.Random(f"{split}-{seed}")
    pairs: list[tuple[str, str]] = []
    while len(pairs) < n:
        length = rng.randint(MIN_LENGTH, MAX_LENGTH)
        text = "".join(rng.choice(ALPHABET) for _ in range(length))
        if in_held_out(text) == (split == "test"):
            pairs.append((text, text[::-1]))
    return pairs


class Seq2SeqAttention(nn.Module):
    """GRU encoder–decoder with one attention kind (see the module docstring)."""

    def __init__(
        self,
        kind: str,
        vocab_size: int,
        *,
        embed: int = 32,
        hidden: int = 64,
        max_length: int = MAX_LENGTH,
        window: int = LOCAL_WINDOW,
    ) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"unknown attention kind {kind!r}; choose from {', '.join(KINDS)}")
        self.kind, self.hidden, self.max_length, self.window = kind, hidden, max_length, window
        self.config = {
            "kind": kind,
            "vocab_size": vocab_size,
            "embed": embed,
            "hidden": hidden,
            "max_length": max_length,
            "window": window,
        }
        self.src_embed = nn.Embedding(vocab_size, embed)
        self.tgt_embed = nn.Embedding(vocab_size, embed)
        self.encoder = nn.GRU(embed, hidden // 2, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(hidden, hidden)
        self.decoder = nn.GRU(embed, hidden, batch_first=True)
        self.combine = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, vocab_size)
        score = "general" if kind == "local-p" else kind
        if score == "general":
            self.W = nn.Parameter(torch.eye(hidden) + 0.01 * torch.randn(hidden, hidden))
        elif score == "additive":
            self.W1 = nn.Linear(hidden, hidden // 2, bias=False)
            self.W2 = nn.Linear(hidden, hidden // 2, bias=False)
            self.v_a = nn.Parameter(torch.randn(hidden // 2) / math.sqrt(hidden // 2))
        elif score == "location":
            self.W = nn.Parameter(torch.randn(max_length, hidden) / math.sqrt(hidden))
        elif score == "cosine":
            self.beta = nn.Parameter(torch.tensor(5.0))
        if kind == "local-p":
            self.W_p = nn.Linear(hidden, hidden // 2, bias=False)
            self.v_p = nn.Parameter(torch.randn(hidden // 2) / math.sqrt(hidden // 2))

    @property
    def score_kind(self) -> str:
        """The :func:`attnwidget.teach.attention_scores` kind the model scores with."""
        return "general" if self.kind == "local-p" else self.kind

    def score_params(self, n: int) -> dict[str, Any]:
        """The score function's parameters as numpy, as ``attention_scores`` takes them."""

        def arr(t: torch.Tensor) -> np.ndarray:
            return t.detach().double().numpy()

        kind = self.score_kind
        if kind == "general":
            return {"W": arr(self.W)}
        if kind == "additive":
            return {"W1": arr(self.W1.weight), "W2": arr(self.W2.weight), "v_a": arr(self.v_a)}
        if kind == "location":
            return {"W": arr(self.W[:n])}
        if kind == "cosine":
            return {"beta": float(self.beta)}
        return {}

    def local_p_params(self) -> dict[str, Any]:
        """``W_p``, ``v_p`` and ``window`` for :func:`attnwidget.teach.local_p_alignment`."""
        return {
            "W_p": self.W_p.weight.detach().double().numpy(),
            "v_p": self.v_p.detach().double().numpy(),
            "window": self.window,
        }

    def encode(self, src: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys (B, N, hidden) and the decoder's first state (1, B, hidden)."""
        packed = nn.utils.rnn.pack_padded_sequence(
            self.src_embed(src), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        out, last = self.encoder(packed)
        keys, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        state = torch.tanh(self.bridge(torch.cat([last[0], last[1]], dim=-1)))
        return keys, state.unsqueeze(0)

    def _scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        kind = self.score_kind
        if kind == "dot":
            return q @ k.transpose(1, 2)
        if kind == "scaled_dot":
            return q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        if kind == "general":
            return q @ self.W @ k.transpose(1, 2)
        if kind == "additive":
            hid = torch.tanh(self.W1(q)[:, :, None, :] + self.W2(k)[:, None, :, :])
            return hid @ self.v_a
        if kind == "location":
            return q @ self.W[: k.shape[1]].T
        qn = q / q.norm(dim=-1, keepdim=True)
        kn = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        return self.beta * (qn @ kn.transpose(1, 2))

    def attend(
        self, q: torch.Tensor, keys: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Weights (B, T, N) and contexts (B, T, hidden) of the queries ``q`` (B, T, hidden)."""
        n = keys.shape[1]
        positions = torch.arange(n, device=keys.device)
        keep = (positions[None, :] < lengths[:, None])[:, None, :]  # (B, 1, N)
        scores = self._scores(q, keys)
        gaussian = None
        if self.kind == "local-p":
            logits = torch.tanh(self.W_p(q)) @ self.v_p
            p = (lengths[:, None].to(q.dtype) - 1) * torch.sigmoid(logits)  # (B, T)
            distance = positions[None, None, :].to(q.dtype) - p[..., None]
            keep = keep & (distance.abs() <= self.window)
            sigma = self.window / 2.0
            gaussian = torch.exp(-(distance**2) / (2 * sigma**2))
        weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
        if gaussian is not None:
            weights = weights * gaussian
        return weights, weights @ keys

    def forward(
        self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced logits (B, T, V) and attention weights (B, T, N)."""
        keys, state = self.encode(src, lengths)
        q, _ = self.decoder(self.tgt_embed(tgt_in), state)
        weights, context = self.attend(q, keys, lengths)
        hidden = torch.tanh(self.combine(torch.cat([context, q], dim=-1)))
        return self.out(hidden), weights

    @torch.no_grad()
    def greedy(
        self, src: torch.Tensor, lengths: torch.Tensor, max_steps: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Greedy decoding: ids (B, S), weights (B, S, N), queries (B, S, H), keys (B, N, H)."""
        keys, state = self.encode(src, lengths)
        token = torch.full((src.shape[0], 1), Vocab.bos_id, dtype=torch.long)
        ids, weights, queries = [], [], []
        for _ in range(max_steps):
            q, state = self.decoder(self.tgt_embed(token), state)
            w, context = self.attend(q, keys, lengths)
            logits = self.out(torch.tanh(self.combine(torch.cat([context, q], dim=-1))))
            token = logits.argmax(-1)
            ids.append(token)
            weights.append(w)
            queries.append(q)
        return torch.cat(ids, 1), torch.cat(weights, 1), torch.cat(queries, 1), keys


def batch(vocab: Vocab, sources: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded source ids (B, N) and lengths (B,)."""
    encoded = [vocab.encode(s) for s in sources]
    n = max(len(e) for e in encoded)
    src = torch.tensor([e + [Vocab.pad_id] * (n - len(e)) for e in encoded], dtype=torch.long)
    return src, torch.tensor([len(e) for e in encoded], dtype=torch.long)


@dataclass(frozen=True, eq=False)
class Translation:
    """One translation and its alignment.

    Attributes:
        input_tokens: the source characters.
        output_tokens: the generated tokens, one per decoder step, ending with
            ``"</s>"`` when the model stopped by itself.
        alignment: float32 (len(output_tokens), len(input_tokens)): row t is
            the attention of output step t over the input (for ``local-p``
            the Gaussian-weighted weights, rows summing to less than 1).
        queries: float32 (steps, hidden): the decoder states h_t that attended.
        keys: float32 (n, hidden): the encoder outputs (keys and values).
        kind: the model's attention kind.
    """

    input_tokens: list[str]
    output_tokens: list[str]
    alignment: np.ndarray
    queries: np.ndarray
    keys: np.ndarray
    kind: str

    @property
    def output_text(self) -> str:
        """The output letters, without ``</s>``."""
        return "".join(t for t in self.output_tokens if t not in SPECIALS)


def translate(model: Seq2SeqAttention, vocab: Vocab, text: str) -> Translation:
    """Translate ``text`` greedily and keep the alignment (output steps × input tokens)."""
    if not isinstance(model, Seq2SeqAttention):
        raise InputError(
            f"model must be a seq2seq demo model; got {type(model).__name__} "
            "(load one with attnwidget.demo.load('seq2seq-additive'))."
        )
    tokens = vocab.tokenize(text)
    src, lengths = batch(vocab, [text])
    model.eval()
    ids, weights, queries, keys = model.greedy(src, lengths, vocab.max_length + 1)
    row = ids[0].tolist()
    steps = row.index(Vocab.eos_id) + 1 if Vocab.eos_id in row else len(row)
    return Translation(
        input_tokens=tokens,
        output_tokens=[vocab.tokens[i] for i in row[:steps]],
        alignment=weights[0, :steps].numpy().astype(np.float32),
        queries=queries[0, :steps].numpy().astype(np.float32),
        keys=keys[0].numpy().astype(np.float32),
        kind=model.kind,
    )


def load_model(path: Path) -> tuple[Seq2SeqAttention, Vocab]:
    """Load a model saved by :mod:`attnwidget.demo.train_seq2seq` from ``path``."""
    from safetensors.torch import load_file

    config = json.loads((path / "config.json").read_text())
    vocab = Vocab(config["alphabet"], config["max_length"])
    model = Seq2SeqAttention(
        config["kind"],
        config["vocab_size"],
        embed=config["embed"],
        hidden=config["hidden"],
        max_length=config["max_length"],
        window=config["window"],
    )
    model.load_state_dict(load_file(str(path / "model.safetensors")))
    model.eval()
    return model, vocab
