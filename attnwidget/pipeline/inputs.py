"""Checks of explain's inputs shared by its text, pair and bare-encoder branches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from attnwidget.capture.image_inputs import is_image_like
from attnwidget.capture.kinds import ENCODER_DECODER, refuse_model_name
from attnwidget.capture.run import Item, model_device
from attnwidget.capture.tokens import (
    check_vocabulary,
    describe_value,
    encode,
    second_segment_start,
)
from attnwidget.errors import InputError
from attnwidget.methods import available_methods, get_method, sinks

T = TypeVar("T")


def present(value: T | None, what: str) -> T:
    """``value``, which the capture always fills on this path (None would be a bug here)."""
    if value is None:
        raise AssertionError(f"the capture left {what} empty on a path that reads it")
    return value


#: Config fields that count a model's (encoder) self-attention layers.
_LAYER_FIELDS = ("num_hidden_layers", "n_layer", "encoder_layers", "num_layers")


def check_layer_options(model: Any, options: dict[str, dict[str, Any]]) -> None:
    """A layer-numbered option out of the model's range fails before the run."""
    start = options.get("chefer2021", {}).get("start_layer")
    config = getattr(model, "config", None)
    layers = next(
        (getattr(config, f) for f in _LAYER_FIELDS if isinstance(getattr(config, f, None), int)),
        None,
    )
    if start is None or layers is None or -layers <= start < layers:
        return
    raise InputError(
        f"method_options['chefer2021']['start_layer']={start} is out of range for a model "
        f"with {layers} layers; use 0 … {layers - 1} (0: all layers) or -{layers} … -1 "
        "(-1: the last layer only, the authors' BERT setting)."
    )


def as_text_list(value: Any, name: str) -> tuple[list[str], bool]:
    """``value`` (a text or a list of texts) as a list, and whether it was one text."""
    if is_image_like(value) or (
        isinstance(value, Sequence) and value and is_image_like(next(iter(value)))
    ):
        raise InputError(
            f"{name} is an image, but this is a text model; explain images with a Vision "
            "Transformer (e.g. ViTForImageClassification) and its image processor: "
            "explain(model, processor, image)."
        )
    if isinstance(value, str):
        return [value], True
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        if not value:
            raise InputError(f"{name} is an empty list; pass at least one text.")
        for index, item in enumerate(value):
            if not isinstance(item, str):  # name the item, not just "got list"
                raise InputError(
                    f"{name}[{index}] is {describe_value(item)}; pass a string or a list of "
                    "strings (one text each)."
                )
        return list(value), False
    raise InputError(f"{name} is {describe_value(value)}; pass a string or a list of strings.")


def broadcast(value: Any, count: int, name: str) -> list[str | None]:
    """``value`` (None, one text, or one per text) as one value per text."""
    if value is None or isinstance(value, str):
        return [value] * count
    if not isinstance(value, Sequence) or isinstance(value, bytes):
        raise InputError(
            f"{name} is {describe_value(value)}; pass a string, a list of strings (one per "
            "text), or None."
        )
    values = list(value)
    if len(values) != count:
        raise InputError(f"{len(values)} values for {name} but {count} texts; pass one per text.")
    for index, item in enumerate(values):
        if item is not None and not isinstance(item, str):
            raise InputError(
                f"{name}[{index}] is {describe_value(item)}; pass a string (or None for a "
                "text without one)."
            )
    return values


def check_model(model: Any) -> None:
    """Refuse what cannot be a loaded model, before anything runs: a name, None, no weights."""
    refuse_model_name(model)
    parameters = getattr(model, "parameters", None)
    if callable(parameters) and model_device(model).type == "meta":
        # Inputs go to the first parameter's device; a meta tensor has a shape
        # but no values, so torch would fail deep inside the forward pass.
        raise InputError(
            f"{type(model).__name__}'s parameters are on the meta device: the model has no "
            "weights (it was built under torch.device('meta') or init_empty_weights(), or "
            "loaded with a device_map that left them there). Load its weights first, e.g. "
            "with from_pretrained(...) and no device_map, or model.to_empty(device='cpu') "
            "followed by model.load_state_dict(...)."
        )


def check_tokenizer(tokenizer: Any, model: Any, call: str) -> None:
    """Refuse a missing tokenizer, or a text where the tokenizer goes, naming the fix.

    ``call`` is how the user calls the function, e.g. ``"explain"``.
    """
    config = getattr(model, "config", None)
    name = getattr(config, "name_or_path", "") or getattr(config, "_name_or_path", "")
    load = f"AutoTokenizer.from_pretrained({name!r})" if name else "AutoTokenizer.from_pretrained"
    if tokenizer is None:
        raise InputError(f"tokenizer is None; pass the model's tokenizer, e.g. {load}.")
    if isinstance(tokenizer, str):  # the text given where the tokenizer goes
        shown = tokenizer if len(tokenizer) <= 40 else tokenizer[:40] + "…"
        raise InputError(
            f"tokenizer is the str {shown!r}, not a tokenizer: was the tokenizer left out? "
            f"Call {call}(model, tokenizer, {shown!r}), with the model's tokenizer, e.g. "
            f"{load}."
        )
    if not callable(tokenizer):
        raise InputError(
            f"tokenizer is {describe_value(tokenizer)}, which cannot tokenise text; pass the "
            f"model's tokenizer, e.g. {load}."
        )


def text_item(
    model: Any,
    tokenizer: Any,
    text: str,
    pair: str | None,
    *,
    kind: str,
    limit: int | None,
    truncation: bool,
    decoder_text: str | None,
) -> Item:
    """One text (and its pair) tokenised as capture takes it; ids checked against the model."""
    encoding = encode(tokenizer, text, text_pair=pair, limit=limit, truncation=truncation)
    check_vocabulary(model, tokenizer, list(encoding["input_ids"]))
    decoder_ids = None
    if kind == ENCODER_DECODER:
        decoder_ids = [decoder_start_id(model)]
        if decoder_text:
            decoder_ids += tokenizer(decoder_text, add_special_tokens=False)["input_ids"]
            check_vocabulary(model, tokenizer, decoder_ids)
    elif decoder_text is not None:
        raise InputError("decoder_text is only for encoder–decoder models (T5, BART).")
    return Item(
        input_ids=list(encoding["input_ids"]),
        token_type_ids=list(encoding["token_type_ids"]) if "token_type_ids" in encoding else None,
        sentence_b_start=second_segment_start(encoding) if pair is not None else None,
        decoder_ids=decoder_ids,
    )


def check_pooled_row(row: int, pooled: tuple[int, ...], names: list[str], query_index: Any) -> None:
    """Refuse a classifier row other than the pooled one for methods explaining the logit.

    A sequence classifier's logit is computed from one pooled position, so
    gradient and re-run methods explain that position's prediction whatever
    ``query_index`` says, while attention methods would read row ``row``: one
    explanation would mix two meanings.
    """
    if row in pooled:
        return
    explaining = [name for name in names if get_method(name).explains_target]
    if not explaining:
        return
    readers = [name for name in available_methods() if not get_method(name).explains_target]
    where = f"position {pooled[0]}" if len(pooled) == 1 else "its first (CLS) or last token"
    raise InputError(
        f"query_index={query_index} asks for row {row}, but a sequence classifier computes "
        f"its logit from one pooled position ({where}); the requested methods that explain "
        f"the logit ({', '.join(explaining)}) would explain that position, not row {row}, "
        "so one explanation would mix two meanings. Leave query_index unset to explain the "
        f"prediction, or request only attention methods ({', '.join(readers)}), which can "
        "read any row."
    )


def decoder_start_id(model: Any) -> int:
    """The token an encoder-decoder's decoder starts from (config, else generation config)."""
    start = getattr(model.config, "decoder_start_token_id", None)
    if start is None:
        start = getattr(model.generation_config, "decoder_start_token_id", None)
    if start is None:
        raise InputError(
            "the model's config has no decoder_start_token_id; set it "
            "(model.config.decoder_start_token_id = <id>, often the pad or bos token's id)."
        )
    return int(start)


def plan_ignored(ignore: sinks.CheckedKeys, kind: str, keep: Any, lengths: Sequence[int]) -> Any:
    """explain()'s ``keep`` once ``ignore_keys`` is checked against the inputs (their
    ``lengths``): refused for encoder–decoders, out-of-range positions refused, and
    "all" when keys are left out. Raises before the model runs."""
    if kind == ENCODER_DECODER:
        sinks.refuse_ignored(ignore, "encoder–decoder models")
    for n in lengths:
        sinks.resolve_ignore_keys(ignore, n)
    return sinks.keep_for_ignored(keep, ignore)
