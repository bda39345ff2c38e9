"""What kind of model is being explained, from its class and config."""

from __future__ import annotations

import os
from typing import Any

from attnwidget.errors import InputError, ModelNotSupportedError

ENCODER = "encoder"  # sequence classifier (BERT, RoBERTa, DistilBERT, ELECTRA, GPT-2 cls.)
MASKED_LM = "masked-lm"
CAUSAL_LM = "causal-lm"
ENCODER_DECODER = "encoder-decoder"
IMAGE = "image"  # image classifier (ViT, DeiT, BEiT, Dinov2), read at [CLS]
#: A bare text model without a head (``AutoModel``: BertModel, XLMRobertaModel,
#: MPNetModel, ...): sentence embeddings (attnwidget.explain_similarity).
EMBEDDING = "embedding"

KINDS = (ENCODER, MASKED_LM, CAUSAL_LM, ENCODER_DECODER, IMAGE)

_SUFFIXES = (
    ("ForImageClassification", IMAGE),
    ("ForImageClassificationWithTeacher", IMAGE),
    ("ForSequenceClassification", ENCODER),
    ("ForMaskedLM", MASKED_LM),
    ("ForCausalLM", CAUSAL_LM),
    ("LMHeadModel", CAUSAL_LM),
    ("ForConditionalGeneration", ENCODER_DECODER),
)


def refuse_model_name(model: Any) -> None:
    """An :class:`InputError` for a model's name (or folder) or None where a model goes."""
    if isinstance(model, (str, os.PathLike)):
        name = os.fspath(model)
        raise InputError(
            f"model is the name {name!r}, not a model; pass the loaded model, e.g. "
            f"AutoModelForSequenceClassification.from_pretrained({name!r}) (or "
            "AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM, AutoModel "
            "for the head you explain), with its tokenizer "
            f"AutoTokenizer.from_pretrained({name!r})."
        )
    if model is None:
        raise InputError(
            "model is None; pass a loaded model, e.g. "
            "AutoModelForSequenceClassification.from_pretrained(name)."
        )


def model_kind(model: Any) -> str:
    """Classify a Hugging Face model by its head.

    Raises :class:`ModelNotSupportedError` for a model without a head that
    scores a target (e.g. a bare ``BertModel``), naming the classes to use,
    and :class:`InputError` for a model's name or None (:func:`refuse_model_name`).
    """
    refuse_model_name(model)
    config = getattr(model, "config", None)
    names = [cls.__name__ for cls in type(model).__mro__]
    for name in names:
        for suffix, kind in _SUFFIXES:
            if name.endswith(suffix):
                if kind == ENCODER_DECODER and not getattr(config, "is_encoder_decoder", False):
                    continue
                if kind == CAUSAL_LM and getattr(config, "is_encoder_decoder", False):
                    return ENCODER_DECODER
                return kind
    if getattr(config, "is_encoder_decoder", False) and hasattr(model, "get_decoder"):
        return ENCODER_DECODER
    raise ModelNotSupportedError(
        f"{type(model).__name__} has no head that scores a target, so there is nothing to "
        "explain. Load the model with a head: AutoModelForSequenceClassification (classifiers), "
        "AutoModelForMaskedLM, AutoModelForCausalLM, AutoModelForSeq2SeqLM, or "
        "AutoModelForImageClassification for Vision Transformers. A bare text encoder's "
        "sentence embeddings are explained by attnwidget.explain(model, tokenizer, text, "
        "text_pair=other, target='similarity')."
    )


def is_bare_encoder(model: Any) -> bool:
    """True for a bare text model without a head (``AutoModel``): BertModel, RobertaModel,
    XLMRobertaModel, MPNetModel, DistilBertModel, ...

    It is its own ``base_model`` (a model with a head holds the bare one as a
    child), reads token ids, and is not an encoder–decoder. :func:`model_kind`
    refuses such a model; :func:`attnwidget.explain` explains it through
    :mod:`attnwidget.pipeline.similarity`.
    """
    config = getattr(model, "config", None)
    if config is None or getattr(config, "is_encoder_decoder", False):
        return False
    if getattr(model, "main_input_name", None) != "input_ids":
        return False
    if not callable(getattr(model, "get_input_embeddings", None)):
        return False
    return getattr(model, "base_model", None) is model
