"""Checks of explain's inputs shared by its text, pair and bare-encoder branches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from attnwidget.capture.image_inputs import is_image_like
from attnwidget.errors import InputError

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
    if isinstance(value, Sequence) and value and all(isinstance(v, str) for v in value):
        return list(value), False
    if isinstance(value, Sequence) and not value:
        raise InputError(f"{name} is an empty list; pass at least one text.")
    raise InputError(f"{name} must be a string or a list of strings, got {type(value).__name__}.")


def broadcast(value: Any, count: int, name: str) -> list[str | None]:
    """``value`` (None, one text, or one per text) as one value per text."""
    if value is None or isinstance(value, str):
        return [value] * count
    values = list(value)
    if len(values) != count:
        raise InputError(f"{len(values)} values for {name} but {count} texts; pass one per text.")
    return values
