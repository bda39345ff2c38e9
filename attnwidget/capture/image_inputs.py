"""Images as a Vision Transformer sees them: user input → uint8 RGB → pixel tensor.

Users bring PIL images, numpy arrays (grey (H, W), RGB (H, W, 3), uint8 or
floats in [0, 1]) and torch tensors ((3, H, W) or a (1, 3, H, W) batch, with
or without a processor), one or a list. Everything is checked here, before
the model runs, so a bad pixel never reaches the model and the error names
the input, what was expected and the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import torch

from attnwidget.errors import InputError

if TYPE_CHECKING:  # pillow is optional
    from PIL import Image

#: One image as users pass it (see the module docstring for shapes and dtypes).
ImageLike: TypeAlias = "Image.Image | np.ndarray | torch.Tensor"


@dataclass
class ImageInput:
    """One image: what is shown (``image``) and what the model reads (``pixel_values``).

    ``image`` is uint8 RGB (H, W, 3) as given (a normalised pixel tensor
    given without a processor is shown min–max scaled); ``pixel_values`` is
    float (1, 3, H', W'), the processor's output or the tensor given.
    ``black_pixels`` (same shape) is what the model reads for a black image of
    the same size: the processor's output for all-zero pixels, or zeros when
    the pixel tensor was given without a processor (the "black" baseline of
    integrated gradients and occlusion, :mod:`attnwidget.methods.pixels`).
    """

    image: np.ndarray
    pixel_values: torch.Tensor
    black_pixels: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.black_pixels is None:
            self.black_pixels = torch.zeros_like(self.pixel_values)


def is_image_like(value: Any) -> bool:
    """True for a PIL image, an array or tensor of 2–4 dims (not a string)."""
    if _is_pil(value):
        return True
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return value.ndim in (2, 3, 4)
    return False


def as_image_list(images: Any) -> tuple[list[Any], bool]:
    """``(images, single)``: one image or a list of them (a (B, 3, H, W) tensor is B)."""
    if isinstance(images, str):
        raise InputError(
            "this is an image model, but a string was given; pass a PIL image, a numpy "
            "array (H, W) or (H, W, 3) or a torch tensor (3, H, W) (for text, use a text model)."
        )
    if isinstance(images, torch.Tensor) and images.ndim == 4:
        if images.shape[0] == 0:
            raise InputError("the image batch is empty; pass at least one image.")
        return [images[i] for i in range(images.shape[0])], images.shape[0] == 1
    if is_image_like(images):
        return [images], True
    if isinstance(images, Sequence):
        items = list(images)
        if not items:
            raise InputError("the list of images is empty; pass at least one image.")
        for index, item in enumerate(items):
            if not is_image_like(item):
                raise InputError(
                    f"item {index} of the image list is a {type(item).__name__}; pass PIL "
                    "images, numpy arrays (H, W) / (H, W, 3) or torch tensors (3, H, W)."
                )
        return items, False
    raise InputError(
        f"an image model needs an image, got {type(images).__name__}; pass a PIL image, a "
        "numpy array (H, W) / (H, W, 3), a torch tensor (3, H, W), or a list of them."
    )


def prepare_image(value: Any, processor: Any, *, index: int = 0) -> ImageInput:
    """One user image → :class:`ImageInput` (checked; ``index`` names it in errors)."""
    where = f"image {index}"
    if processor is None:
        return _from_pixels(value, where)
    rgb = to_rgb_uint8(value, where)
    try:
        out = processor(images=rgb, return_tensors="pt")
    except Exception as error:  # the processor's own message, with ours around it
        raise InputError(
            f"the image processor ({type(processor).__name__}) failed on {where} "
            f"{rgb.shape}: {error}. Pass the model's own AutoImageProcessor, or "
            "processor=None with a ready (3, H, W) pixel tensor."
        ) from error
    pixels = out["pixel_values"] if hasattr(out, "__getitem__") else None
    if not isinstance(pixels, torch.Tensor) or pixels.ndim != 4 or pixels.shape[1] != 3:
        raise InputError(
            f"the processor {type(processor).__name__} did not return pixel_values of shape "
            "(1, 3, H, W); pass the model's image processor (AutoImageProcessor), not a "
            "tokenizer or another model's processor."
        )
    black = processor(images=np.zeros_like(rgb), return_tensors="pt")["pixel_values"]
    return ImageInput(image=rgb, pixel_values=pixels.float(), black_pixels=black.float())


def to_rgb_uint8(value: Any, where: str = "the image") -> np.ndarray:
    """A PIL image, array or (3, H, W) tensor as uint8 RGB (H, W, 3)."""
    if _is_pil(value):
        return np.asarray(value.convert("RGB"), dtype=np.uint8).copy()
    if isinstance(value, torch.Tensor):
        array = value.detach().cpu().float().numpy()
        if array.ndim == 3 and array.shape[0] in (1, 3) and array.shape[-1] not in (1, 3):
            array = np.moveaxis(array, 0, -1)  # channels first → last
    else:
        array = np.asarray(value)
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    if array.ndim == 2:
        array = np.stack([array] * 3, axis=-1)
    if array.ndim != 3 or array.shape[-1] != 3:
        raise InputError(
            f"{where} has shape {tuple(array.shape)}; expected (H, W) grey or (H, W, 3) RGB "
            "(an RGBA image: drop the alpha channel, e.g. image.convert('RGB'))."
        )
    if array.shape[0] < 1 or array.shape[1] < 1:
        raise InputError(f"{where} has shape {tuple(array.shape)}: it has no pixels.")
    if array.dtype == np.uint8:
        return np.ascontiguousarray(array)
    if array.dtype == bool or not np.issubdtype(array.dtype, np.number):
        raise InputError(f"{where} has dtype {array.dtype}; pass uint8 (0–255) or floats (0–1).")
    values = array.astype(np.float64)
    _check_finite(values, where)
    if values.min() < 0 or values.max() > 255:
        raise InputError(
            f"{where} has values from {values.min():.3g} to {values.max():.3g}; pass uint8 "
            "0–255 or floats 0–1 (a normalised pixel tensor: pass processor=None)."
        )
    if values.max() <= 1.0:
        values = values * 255.0
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)


def _from_pixels(value: Any, where: str) -> ImageInput:
    """A ready pixel tensor (processor=None): used as it is, shown min–max scaled."""
    tensor = value if isinstance(value, torch.Tensor) else None
    if tensor is None:
        raise InputError(
            f"processor=None needs {where} as a ready pixel tensor (3, H, W) of the model's "
            f"input size, but got a {type(value).__name__}; pass the model's image processor "
            "(AutoImageProcessor.from_pretrained(...)) to prepare PIL images and arrays."
        )
    if tensor.ndim != 3 or tensor.shape[0] != 3:
        raise InputError(
            f"{where} is a tensor of shape {tuple(tensor.shape)}; with processor=None pass "
            "pixel values (3, H, W) (or a batch (B, 3, H, W))."
        )
    pixels = tensor.detach().float().cpu()
    _check_finite(pixels.numpy(), where)
    shown = pixels.numpy().transpose(1, 2, 0)
    low, high = float(shown.min()), float(shown.max())
    scaled = (shown - low) / (high - low) if high > low else np.zeros_like(shown)
    image = np.clip(np.rint(scaled * 255.0), 0, 255).astype(np.uint8)
    return ImageInput(image=image, pixel_values=pixels[None])


def _check_finite(values: np.ndarray, where: str) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        position = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(
            f"{where} contains NaN/inf ({int(bad.sum())} values, the first at index "
            f"{position}); replace them before explaining."
        )


def _is_pil(value: Any) -> bool:
    try:
        from PIL import Image
    except ImportError:  # PIL is optional: without it no value is a PIL image
        return False
    return isinstance(value, Image.Image)
