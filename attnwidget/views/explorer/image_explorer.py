"""ImageExplorer: one image, every view, re-explained when the image or target changes.

The image counterpart of :class:`~attnwidget.views.explorer.explorer.Explorer` (which
hands image models here: ``Explorer(model, processor, image)``). An ipywidgets
composition with no front-end code of its own: an optional file picker for a
new image (decoded with Pillow when it is installed), a target picker (the
model's labels), the FlowView's method picker, a status line, and the views in
tabs: ImageView (heat maps over the image), SaliencyView, FlowView, HeadView
and ModelView, whose tokens are the special tokens by name and the patches by
grid position. Bad input (an image the processor refuses, NaN pixels, an
unknown target) is reported in the status line as plain text; the views keep
the previous explanation.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets

from attnwidget.capture.image import check_image_model
from attnwidget.pipeline.explain import explain
from attnwidget.results.explanation import Explanation
from attnwidget.views.core.format import format_number
from attnwidget.views.explorer.explorer import Explorer
from attnwidget.views.flow.flow_view import FlowView
from attnwidget.views.saliency.saliency_view import SaliencyView

log = logging.getLogger(__name__)

#: The target picker's "explain the prediction" choice.
PREDICTED = "predicted"
_PREDICTED_VALUE = ("__predicted__",)  # a sentinel no label can equal
ERROR_COLOR = "#d55e00"
#: The methods an ImageExplorer computes by default: quick ones, every view's own.
DEFAULT_IMAGE_METHODS = ("raw", "rollout", "flow", "grad_attention", "input_x_gradient", "lrp")
_TITLES = {
    "image": "Image",
    "saliency": "Saliency",
    "flow": "Flow",
    "head": "Heads",
    "model": "Model",
}


class ImageExplorer(widgets.VBox):
    """Explain one image with every view; choose another image or target to re-explain.

    Args:
        model, processor: a Vision Transformer image classifier and its image
            processor (as for :func:`attnwidget.explain`; ``processor=None``
            when images are given as ready pixel tensors).
        image: the initial image (PIL, numpy (H, W) / (H, W, 3) or a torch
            pixel tensor); None shows an empty Explorer.
        methods: the methods to compute (default
            :data:`DEFAULT_IMAGE_METHODS`); ImageView and SaliencyView show them
            all.
        target: the initial target (label name or index); None = the prediction.
        method: the FlowView's initial method.

    Attributes:
        target_picker, method_picker, upload, status: the controls.
        views: the views by name ("image", "saliency", "flow", "head", "model").

    Example::

        model, processor = demo.load("shapes-vit")
        explorer = attnwidget.Explorer(model, processor, demo.images(1)[0].image)
        explorer.image = another_image      # re-explains; so does the picker
        explorer.explanation, explorer.error
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        image: Any = None,
        *,
        methods: Sequence[str] | None = None,
        target: Any = None,
        method: str = "rollout",
        **kwargs: Any,
    ) -> None:
        check_image_model(model)
        self._model, self._processor = model, processor
        self._methods = list(DEFAULT_IMAGE_METHODS if methods is None else methods)
        self._image = image
        self._explanation: Explanation | None = None
        self._error = ""
        self._busy = False
        self._flow_method = method
        self.views: dict[str, widgets.Widget] = {}

        self.target_picker = widgets.Dropdown(description="Target:", options=self._targets(target))
        self.method_picker = widgets.Dropdown(description="Paths:", options=[method], value=method)
        self.upload = widgets.FileUpload(accept="image/*", multiple=False, description="Image…")
        self.status = widgets.Label(value="")
        self.status.add_class("attnw-explorer-status")
        self.tabs = widgets.Tab()
        controls = widgets.HBox([self.upload, self.target_picker, self.method_picker])
        super().__init__(children=[controls, self.status, self.tabs], **kwargs)
        self.add_class("attnw-explorer")
        self._busy = True
        self.target_picker.value = _PREDICTED_VALUE if target is None else target
        self._busy = False
        self.target_picker.observe(self._on_target, names="value")
        self.method_picker.observe(self._on_method, names="value")
        self.upload.observe(self._on_upload, names="value")
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

    @property
    def target(self) -> Any:
        """The chosen target (None: the prediction)."""
        value = self.target_picker.value
        return None if value == _PREDICTED_VALUE else value

    @target.setter
    def target(self, value: Any) -> None:
        self._busy = True
        try:
            self.target_picker.options = self._targets(value)
            self.target_picker.value = _PREDICTED_VALUE if value is None else value
        finally:
            self._busy = False
        self.run()

    @property
    def explanation(self) -> Explanation | None:
        """The explanation the views show (the last one that succeeded)."""
        return self._explanation

    @property
    def error(self) -> str:
        """The last run's error message, "" when it succeeded."""
        return self._error

    def run(self) -> Explanation | None:
        """Explain the current image for the current target and update every view.

        Returns the new explanation, or None when the input was rejected (the
        reason is in :attr:`error` and the status line; the views are kept).
        """
        if self._image is None:
            return self._fail("there is no image to explain; set explorer.image.")
        self._set_status("Explaining…")
        try:
            explanation = explain(
                self._model,
                self._processor,
                self._image,
                target=self.target,
                methods=self._methods,
            )
        except Exception as error:  # shown, never raised into the widget's void
            log.info("attnwidget ImageExplorer: explain failed: %s", error, exc_info=True)
            return self._fail(str(error).strip() or type(error).__name__)
        try:
            self._show(explanation)
        except Exception as error:
            log.warning("attnwidget ImageExplorer: a view failed: %s", error, exc_info=True)
            return self._fail(f"cannot show this explanation: {error}")
        self._explanation, self._error = explanation, ""
        self._set_status(_summary(explanation))
        return explanation

    # -- internals ----------------------------------------------------------------

    def _fail(self, message: str) -> None:
        self._error = message
        kept = " (the views still show the previous image)" if self._explanation else ""
        self.status.value = f"Error: {message}{kept}"
        self.status.style.text_color = ERROR_COLOR
        return None

    def _set_status(self, text: str) -> None:
        self.status.value = text
        self.status.style.text_color = None

    def _show(self, explanation: Explanation) -> None:
        from attnwidget.views import HeadView, ImageView, ModelView

        flow_method = self._flow_method
        views: dict[str, widgets.Widget] = {
            "image": ImageView(explanation),
            "saliency": SaliencyView(explanation),
            "flow": FlowView(explanation, method=flow_method),
            "head": HeadView(explanation),
            "model": ModelView(explanation),
        }
        views["flow"].observe(self._on_flow_method, names="method")
        self.views = views
        self.tabs.children = list(views.values())
        self.tabs.titles = [_TITLES[name] for name in views]
        self._busy = True
        try:
            self.method_picker.options = list(views["flow"].methods)
            self.method_picker.value = views["flow"].method
        finally:
            self._busy = False

    def _targets(self, extra: Any = None) -> list[tuple[str, Any]]:
        options: list[tuple[str, Any]] = [(PREDICTED, _PREDICTED_VALUE)]
        id2label = getattr(self._model.config, "id2label", None) or {}
        for index in sorted(id2label):
            options.append((str(id2label[index]), str(id2label[index])))
        if extra is not None and extra not in [value for _, value in options]:
            options.append((str(extra), extra))
        return options

    def _on_target(self, _change: dict[str, Any]) -> None:
        if not self._busy:
            self.run()

    # The paths picker and the FlowView stay in step exactly as in the text
    # Explorer (same attribute names): its handlers, not copies.
    _on_method = Explorer._on_method
    _on_flow_method = Explorer._on_flow_method

    def _on_upload(self, change: dict[str, Any]) -> None:
        files = change["new"]
        if not files:
            return
        content = files[0]["content"] if isinstance(files, (list, tuple)) else None
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

    def __repr__(self) -> str:
        return f"ImageExplorer(target={self.target!r}, views={list(self.views)})"


def _summary(explanation: Explanation) -> str:
    rows, cols = explanation.patch_grid or (0, 0)
    p = ""
    probs = explanation.probabilities
    if probs is not None and explanation.target_id is not None:
        p = f" (p = {format_number(probs[explanation.target_id])})"
    return (
        f"Explaining target {explanation.target!r}{p}: {rows}×{cols} patches, "
        f"{len(explanation.special_tokens)} special tokens, {explanation.num_layers} layers."
    )
