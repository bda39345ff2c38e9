"""The widgets: thin anywidget classes over one front-end bundle.

Each view class declares its synced traits; the JS for all views lives in one
ES module built from ``js/`` into ``attnwidget/static/widget.js``.
"""

from __future__ import annotations

from ._base import BUNDLE, BundleMissingError
from .saliency import SaliencyView

__all__ = ["BUNDLE", "BundleMissingError", "SaliencyView"]
