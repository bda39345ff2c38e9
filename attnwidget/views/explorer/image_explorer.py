"""ImageExplorer: one image, every view, re-explained when the image or target changes.

The image counterpart of :class:`~attnwidget.views.explorer.explorer.Explorer` (which
hands image models here: ``Explorer(model, processor, image)``), on the same
base (:mod:`attnwidget.views.explorer._base`): an optional file picker for a
new image (decoded with Pillow when it is installed), a target picker (the
model's labels), the FlowView's method picker, a button per method (the
slower ones computed when picked), a status line, a progress line, and the
views in tabs: ImageView (heat maps over the image), SaliencyView, FlowView,
HeadView and ModelView, whose tokens are the special tokens by name and the
patches by grid position. A patch pinned in the image is that token in the
other views. Bad input (an image the processor refuses, NaN pixels, an
unknown target) is reported in the status line as plain text; the views keep
the previous explanation.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets

from attnwidget.capture.image import check_image_model
from attnwidget.errors import InputError
from attnwidget.pipeline.explain import DEFAULT_METHODS
from attnwidget.results.explanation import Explanation
from attnwidget.views.core.format import format_number
from attnwidget.views.core.selection import renamed_keyword
from attnwidget.views.explorer._base import ERROR_COLOR, PREDICTED, ExplorerBase, check_keywords

__all__ = ["DEFAULT_IMAGE_METHODS", "ERROR_COLOR", "PREDICTED", "ImageExplorer"]

#: The methods an ImageExplorer draws with (one forward and one backward pass);
#: flow, lrp, chefer2021, integrated_gradients and blank_out are computed when picked.
DEFAULT_IMAGE_METHODS: tuple[str, ...] = DEFAULT_METHODS
_PARAMETERS = [
    "model",
    "processor",
    "image",
    "methods",
    "on_demand",
    "method_options",
    "target",
    "flow_method",
    "ignore_keys",
]


class ImageExplorer(ExplorerBase):
    """Explain one image with every view; choose another image or target to re-explain.

    Args:
        model, processor: a Vision Transformer image classifier and its image
            processor (as for :func:`attnwidget.explain`; ``processor=None``
            when images are given as ready pixel tensors).
        image: the initial image (PIL, numpy (H, W) / (H, W, 3) or a torch
            pixel tensor); None shows an empty Explorer.
        methods: the methods the first drawing computes (default
            :data:`DEFAULT_IMAGE_METHODS`).
        on_demand: the methods offered as buttons and computed when picked
            (default: lrp and chefer2021 where their engines run, flow,
            integrated_gradients, blank_out).
        method_options: per-method options, as for :func:`attnwidget.explain`.
        target: the initial target (label name or index); None = the prediction.
        flow_method: the FlowView's initial method (default "rollout"); the
            ``methods`` are what is computed. Named ``method`` before (still
            accepted for one release, with a DeprecationWarning).
        ignore_keys: keys left out of every attention row, rows renormalised,
            in every explanation and view (``"special"``: the non-patch tokens;
            ``"first"`` or positions; see :func:`attnwidget.explain`).

    Attributes:
        upload, target_picker, method_picker, method_buttons, status,
        progress_line: the controls.
        views: the views by name ("image", "saliency", "flow", "head", "model").

    Example::

        model, processor = demo.load("shapes-vit")
        explorer = attnwidget.Explorer(model, processor, demo.images(1)[0].image)
        explorer.image = another_image      # re-explains; so does the picker
        explorer.compute("lrp")             # what its button does
    """

    _OWNER = "ImageExplorer"

    def __init__(
        self,
        model: Any,
        processor: Any,
        image: Any = None,
        *,
        methods: Sequence[str] | None = None,
        on_demand: Sequence[str] | None = None,
        method_options: dict[str, dict[str, Any]] | None = None,
        target: Any = None,
        flow_method: str | None = None,
        ignore_keys: str | Sequence[int] | None = None,
        **kwargs: Any,
    ) -> None:
        flow_method = renamed_keyword(kwargs, "method", "flow_method", "ImageExplorer", flow_method)
        check_keywords("ImageExplorer", kwargs, _PARAMETERS)
        check_image_model(model)
        self._model = model
        self._image = image
        self._configure(methods, on_demand, method_options, ("head",))
        self.upload = widgets.FileUpload(accept="image/*", multiple=False, description="Image…")
        self._start(
            model,
            processor,
            inputs=[],
            controls=[self.upload],
            flow_method=flow_method or "rollout",
            target=target,
            kwargs=kwargs,
            ignore_keys=ignore_keys,
        )
        self.upload.observe(self._on_upload, names="value")
        self._refresh_buttons()
        if image is not None:
            self.run()
        else:
            self._set_status("Choose an image (the Image… button, or explorer.image = ...).")

    # -- public API -------------------------------------------------------------

    @property
    def image(self) -> Any:
        """The image being explained (as given)."""
        return self._image

    @image.setter
    def image(self, value: Any) -> None:
        self._image = value
        self.run()

    # -- the ExplorerBase hooks ---------------------------------------------------

    def _inputs(self) -> tuple[dict[str, Any], str]:
        if self._image is None:
            raise InputError("there is no image to explain; set explorer.image.")
        return {"text": self._image, "target": self.target}, ""

    def _view_classes(self) -> dict[str, type]:
        from attnwidget.views.attention.head_view import HeadView
        from attnwidget.views.attention.model_view import ModelView
        from attnwidget.views.flow.flow_view import FlowView
        from attnwidget.views.image.image_view import ImageView
        from attnwidget.views.saliency.saliency_view import SaliencyView

        return {
            "image": ImageView,
            "saliency": SaliencyView,
            "flow": FlowView,
            "head": HeadView,
            "model": ModelView,
        }

    def _summary(self, explanation: Explanation) -> str:
        rows, cols = explanation.patch_grid or (0, 0)
        p = ""
        probs = explanation.probabilities
        if probs is not None and explanation.target_id is not None:
            p = f" (p = {format_number(probs[explanation.target_id])})"
        return (
            f"Explaining target {explanation.target!r}{p}: {rows}×{cols} patches, "
            f"{len(explanation.special_tokens)} special tokens, {explanation.num_layers} layers."
        )

    # -- internals ----------------------------------------------------------------

    def _on_upload(self, change: dict[str, Any]) -> None:
        files = change["new"]
        if not files:
            return
        content = files[0]["content"] if isinstance(files, (list, tuple)) else None
        if content is None:
            self._fail("the picked file came without its content; pick it again.")
            return
        try:
            from PIL import Image
        except ImportError:
            self._fail("reading an image file needs Pillow (pip install pillow).")
            return
        try:
            self._image = Image.open(io.BytesIO(bytes(content))).convert("RGB")
        except Exception as error:
            self._fail(f"the file is not an image Pillow can read: {error}")
            return
        self.run()
