"""Tiny trained models shipped with attnwidget, and the data they were made for.

The text models' task is subject–verb agreement (Linzen, Dupoux & Goldberg
2016, "Assessing the ability of LSTMs to learn syntax-sensitive dependencies",
TACL 4), the task Abnar & Zuidema (2020, "Quantifying Attention Flow in Transformers",
ACL) used to compare raw attention, attention rollout and attention flow:
given a sentence up to its main verb, is the verb singular ("is") or plural
("are")? The sentences come from a small synthetic English grammar
(:mod:`attnwidget.demo.grammar`) with prepositional phrases, relative clauses,
adjectives and *attractors*, nouns of the other number between subject and
verb ("the keys to the cabinet [are]", "the author that the critics praise [is]").

Models (weights, config and a word-level tokenizer or an image processor in
the package, so nothing is downloaded):

* ``"sva-encoder"``: a 4-layer, 4-head ``BertForSequenceClassification``
  (hidden size 64) that reads ``[CLS] prefix [SEP]`` and predicts
  ``config.id2label == {0: "singular", 1: "plural"}`` from ``[CLS]``.
* ``"sva-causal"``: a 4-layer, 4-head ``GPT2LMHeadModel`` (hidden size 64)
  trained as a language model on whole sentences; its tokenizer prepends
  ``[BOS]``, and after the prefix it should rank the agreeing verb above the
  other one.
* ``"sva-deceptive"``: ``sva-encoder`` fine-tuned with Pruthi et al.'s
  (2020, "Learning to Deceive with Attention-Based Explanations", ACL)
  penalty on the attention ``[CLS]`` gives the subject in every layer and
  head: as accurate on the same sentences and labels, while its raw
  attention almost never points at the subject (see
  :mod:`attnwidget.demo.train_deceptive`).
* ``"shapes-vit"``: a 4-layer, 4-head ``ViTForImageClassification`` (hidden
  size 64; Dosovitskiy et al. 2021) on 32×32 RGB images cut into 4×4 patches,
  with its ``ViTImageProcessor``. It names the shape of the one target object
  (``config.id2label == {0: "square", 1: "circle", 2: "triangle", 3: "cross"}``)
  in images of the synthetic shapes data set (:mod:`attnwidget.demo.shapes`),
  which also holds distractor objects of other shapes on a textured
  background; :func:`images` gives the images with the target's pixel mask, to
  check image explanations against (as Chefer, Gur & Wolf 2021 do with
  segmentation masks).
* ``"seq2seq-<kind>"`` for ``kind`` in ``dot``, ``general``, ``additive``,
  ``location``, ``scaled_dot``, ``cosine`` and ``local-p``: tiny GRU
  encoder–decoders with attention (Bahdanau et al. 2015; Luong et al. 2015)
  in plain ``torch.nn``, trained to reverse strings of letters, one per score
  function of :mod:`attnwidget.teach` plus Luong's local-p;
  ``load("seq2seq-additive")`` returns ``(model, vocab)``, a
  :class:`~attnwidget.demo.seq2seq.Seq2SeqAttention` and a
  :class:`~attnwidget.demo.seq2seq.Vocab` (characters ↔ ids, with checks), and
  :func:`attnwidget.demo.seq2seq.translate` gives the alignment matrix (see
  :mod:`attnwidget.demo.seq2seq`).

Example::

    from attnwidget import demo

    model, tokenizer = demo.load("sva-encoder")
    for ex in demo.sentences(3, seed=0):  # held-out sentences with attractors
        print(ex.text, "->", ex.verb, ex.subject_index, ex.attractor_indices)

    model, processor = demo.load("shapes-vit")
    for record in demo.images(3, seed=0):  # held-out images
        print(record.label, record.mask.sum(), "target pixels")

Retrain with ``python -m attnwidget.demo.train`` (the two text models;
deterministic, a few minutes on one CPU thread) and
``python -m attnwidget.demo.train shapes-vit`` (the ViT) and
``python -m attnwidget.demo.train seq2seq`` (the seq2seq models).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from attnwidget.demo import grammar, shapes
from attnwidget.demo.shapes import ShapeImage

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast, ViTImageProcessor

__all__ = [
    "DEMO_MODELS",
    "SVAExample",
    "ShapeImage",
    "available",
    "images",
    "load",
    "model_path",
    "sentences",
]

# The attention kinds of the seq2seq demo models (attnwidget.demo.seq2seq.KINDS,
# repeated here so that listing the models does not import torch).
_SEQ2SEQ_KINDS = ("dot", "general", "additive", "location", "scaled_dot", "cosine", "local-p")

#: Demo model name -> one-line description.
DEMO_MODELS: Mapping[str, str] = MappingProxyType(
    {
        "sva-encoder": (
            "4-layer BERT classifier: verb number (singular/plural) from the sentence "
            "prefix, read at [CLS]"
        ),
        "sva-causal": (
            "4-layer GPT-2 language model: predicts 'is'/'are' as the next word after "
            "the sentence prefix"
        ),
        "sva-deceptive": (
            "sva-encoder fine-tuned with Pruthi et al.'s (2020) penalty on [CLS]'s attention "
            "to the subject: as accurate, its raw attention hides the subject"
        ),
        "shapes-vit": (
            "4-layer ViT image classifier (32×32, patch 4): the shape of the target object "
            "(square/circle/triangle/cross) among distractors, read at [CLS]"
        ),
        **{
            f"seq2seq-{kind}": (
                f"GRU encoder–decoder with {kind} attention (Bahdanau 2015 / Luong 2015) "
                "that reverses strings of 5–10 letters; load() gives (model, vocab)"
            )
            for kind in _SEQ2SEQ_KINDS
        },
    }
)

_MODELS_DIR = Path(__file__).resolve().parent / "models"
# Special tokens each model's tokenizer puts before the first word
# ([CLS] for the encoder, [BOS] for the causal model).
_TOKENS_BEFORE_TEXT = {"sva-encoder": 1, "sva-causal": 1, "sva-deceptive": 1}


def available() -> dict[str, str]:
    """The demo model names, each with a one-line description."""
    return dict(DEMO_MODELS)


def _check_name(name: object, what: str = "demo model") -> str:
    if not isinstance(name, str) or name not in DEMO_MODELS:
        raise ValueError(f"unknown {what} {name!r}; available: {', '.join(sorted(DEMO_MODELS))}")
    return name


# Demo model name -> the transformers model class it loads as.
_MODEL_CLASSES = {
    "sva-encoder": "BertForSequenceClassification",
    "sva-causal": "GPT2LMHeadModel",
    "sva-deceptive": "BertForSequenceClassification",
    "shapes-vit": "ViTForImageClassification",
}
# The image models, which come with an image processor instead of a tokenizer.
_IMAGE_MODELS = frozenset({"shapes-vit"})


def model_path(name: str) -> Path:
    """The directory that holds a demo model's config, weights and tokenizer or processor."""
    return _MODELS_DIR / _check_name(name)


def load(
    name: str, *, attn_implementation: str | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerFast | ViTImageProcessor]:
    """Load a shipped demo model and its tokenizer or image processor from the package, offline.

    Args:
        name: ``"sva-encoder"``, ``"sva-causal"``, ``"sva-deceptive"``,
            ``"shapes-vit"`` or ``"seq2seq-<kind>"`` (see :data:`DEMO_MODELS`).
        attn_implementation: passed on to ``from_pretrained`` when given
            (e.g. ``"eager"``); by default transformers picks.

    Returns:
        ``(model, tokenizer)`` for the text models, ``(model, processor)``
        (a ``ViTImageProcessor``) for ``"shapes-vit"``, ``(model, vocab)`` for
        ``"seq2seq-<kind>"`` (a plain-torch
        :class:`~attnwidget.demo.seq2seq.Seq2SeqAttention` and its
        :class:`~attnwidget.demo.seq2seq.Vocab`; translate with
        :func:`attnwidget.demo.seq2seq.translate`); the model in eval mode
        on the CPU.

    Raises:
        ValueError: for an unknown name (the message lists the names).
        FileNotFoundError: when the model files are missing from the install.
    """
    path = model_path(name)
    if not (path / "model.safetensors").is_file():
        command = "python -m attnwidget.demo.train" + (f" {name}" if name in _IMAGE_MODELS else "")
        if name.startswith("seq2seq-"):
            command = f"python -m attnwidget.demo.train seq2seq --kinds {name[8:]}"
        raise FileNotFoundError(
            f"demo model files are missing from {path}; reinstall attnwidget or "
            f"recreate them with `{command}`"
        )
    if name.startswith("seq2seq-"):
        from attnwidget.demo.seq2seq import load_model

        return load_model(path)  # type: ignore[return-value]
    import transformers

    kwargs: dict[str, Any] = {"local_files_only": True}
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    cls = getattr(transformers, _MODEL_CLASSES[name])
    model = cls.from_pretrained(path, **kwargs)
    model.eval()
    if name in _IMAGE_MODELS:
        processor = transformers.ViTImageProcessor.from_pretrained(path, local_files_only=True)
        return model, processor
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    # AutoTokenizer is typed with every backend; each demo's tokenizer_config.json
    # names PreTrainedTokenizerFast (demo.training.save).
    return model, cast("PreTrainedTokenizerFast", tokenizer)


@dataclass(frozen=True)
class SVAExample:
    """One agreement example: a sentence prefix and the verb it needs.

    Attributes:
        text: the sentence up to, not including, its main verb.
        label: ``"singular"`` or ``"plural"``, the number of the subject
            (the encoder's class label).
        verb: ``"is"`` or ``"are"``, the agreeing verb (the causal model's
            next token).
        subject_index: position of the subject's head noun among the model's
            tokens, special tokens counted (``[CLS]``/``[BOS]`` is 0).
        attractor_indices: positions, likewise, of the nouns between subject
            and verb whose number differs from the subject's.
    """

    text: str
    label: str
    verb: str
    subject_index: int
    attractor_indices: tuple[int, ...]

    @property
    def n_attractors(self) -> int:
        """How many attractors the prefix has."""
        return len(self.attractor_indices)


def sentences(
    n: int,
    *,
    seed: int,
    split: str = "test",
    model: str = "sva-encoder",
    attractors: bool | None = True,
) -> list[SVAExample]:
    """Draw ``n`` distinct agreement examples from the grammar, deterministically.

    Args:
        n: how many examples (>= 0).
        seed: random seed; the same arguments give the same list every time.
        split: ``"test"`` (held out, never seen in training) or ``"train"``.
            A sentence's split is a function of its text, so the two never
            overlap, and each test sentence follows its subject noun with a
            noun (lemma) that never follows that subject in training (in most
            attractor sentences, that noun is the first attractor).
        model: the demo model whose tokens ``subject_index`` and
            ``attractor_indices`` count (the texts do not depend on it).
        attractors: ``True`` (the default) gives only sentences with at least
            one attractor, ``False`` only sentences without, ``None`` the
            grammar's natural mix (about half have attractors). E.g.
            ``sentences(500, seed=0)`` is 500 held-out sentences with attractors.

    Raises:
        ValueError: for a bad ``n``, ``seed``, ``split``, ``model`` or ``attractors``.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, not {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, not {seed!r}")
    if split not in grammar.SPLITS:
        raise ValueError(f"split must be one of {', '.join(grammar.SPLITS)}, not {split!r}")
    if _check_name(model) not in _TOKENS_BEFORE_TEXT:
        raise ValueError(
            f"model must be a text demo model ({', '.join(_TOKENS_BEFORE_TEXT)}), not {model!r}; "
            "for the images of 'shapes-vit' use demo.images()"
        )
    if attractors is not None and not isinstance(attractors, bool):
        raise ValueError(f"attractors must be True, False or None, not {attractors!r}")
    offset = _TOKENS_BEFORE_TEXT[model]
    return [
        SVAExample(
            text=s.text,
            label=s.label,
            verb=s.verb,
            subject_index=s.subject + offset,
            attractor_indices=tuple(i + offset for i in s.attractors),
        )
        for s in grammar.generate(n, seed=seed, split=split, attractors=attractors)
    ]


def images(n: int, *, seed: int = 0, split: str = "test") -> list[ShapeImage]:
    """Draw ``n`` images of the shapes data set that ``"shapes-vit"`` was made for.

    Each :class:`~attnwidget.demo.shapes.ShapeImage` holds the uint8 RGB
    ``image`` (32×32×3), its ``label`` and ``label_id`` (the model's class id),
    the target object's pixel ``mask`` and the distractors' ``distractor_mask``
    (see :mod:`attnwidget.demo.shapes`).

    Args:
        n: how many images (>= 1).
        seed: a non-negative random seed; the same arguments give the same
            images every time.
        split: ``"test"`` (held out, never seen in training) or ``"train"``;
            the two come from disjoint random streams.

    Raises:
        ValueError: for a bad ``n``, ``seed`` or ``split``.
    """
    return shapes.generate(n, seed=seed, split=split)
