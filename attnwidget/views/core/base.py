"""The base of every attnwidget view: one front-end bundle, many views.

Every view loads the same ES module, ``attnwidget/static/widget.js``, built
from ``js/src/index.ts`` by esbuild; its ``render`` dispatches on the synced
``_view`` trait, so each Python view class only declares its traits.
"""

from __future__ import annotations

import inspect
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import anywidget
import traitlets

from attnwidget._keywords import unknown_keywords_message
from attnwidget.errors import AttnWidgetError
from attnwidget.views.core.message_size import check_message

log = logging.getLogger(__name__)

#: Options of the widget itself (ipywidgets' DOMWidget) a view also takes as keywords.
WIDGET_OPTIONS: tuple[str, ...] = ("layout", "tabbable", "tooltip")

#: The built front end (a build artefact: ignored by git, shipped in wheels).
BUNDLE = Path(__file__).resolve().parents[2] / "static" / "widget.js"


class BundleMissingError(AttnWidgetError, FileNotFoundError):
    """The front-end bundle ``attnwidget/static/widget.js`` was never built."""


def _load_bundle() -> Any:
    if not BUNDLE.is_file():
        raise BundleMissingError(
            f"attnwidget's front-end bundle is missing: {BUNDLE}. Source checkouts must build "
            "it with Node.js: run `npm --prefix js install && npm --prefix js run build` in the "
            "repository root (or `pip install -e .`, which runs that build). Installing "
            "attnwidget from a wheel ships the bundle ready-made."
        )
    try:
        # Reads the file, and live-reloads it when ANYWIDGET_HMR=1 (`npm run dev`).
        from anywidget._util import try_file_contents

        return try_file_contents(BUNDLE)
    except ImportError:  # private anywidget API moved: plain text, no live reload
        return BUNDLE.read_text(encoding="utf-8")


@dataclass(frozen=True)
class RecordedReply:
    """A custom message the kernel would send in reply to a page request, saved
    in an exported page (``to_html``) so that the page answers itself.

    ``match``: the request keys this reply answers (every request whose keys
    include all of these, with equal values); ``content`` and ``buffers``:
    the message, exactly as :meth:`send` would send it.
    """

    match: dict[str, Any]
    content: dict[str, Any]
    buffers: list[bytes] = field(default_factory=list)


class _AttnWidget(anywidget.AnyWidget):
    """Base class of the views. Subclasses set ``_view`` to their JS view's name."""

    #: Which view of the bundle renders this model (see js/src/index.ts).
    _view = traitlets.Unicode("").tag(sync=True)
    #: Deprecated constructor keywords and their new names (still accepted, with a
    #: warning, by the subclass): a misspelt old name is pointed to the new one.
    _renamed_keywords: ClassVar[dict[str, str]] = {}

    def __init__(self, **kwargs: Any) -> None:
        # traitlets would only warn about a misspelt option (``methd="flow"``)
        # and the view would silently use the default: refuse it instead.
        valid = _keyword_traits(type(self))
        unknown = [name for name in kwargs if name not in valid]
        if unknown:
            raise TypeError(_unknown_kwargs_message(type(self), unknown))
        # Loaded on first use, not at import: `import attnwidget` works without
        # the bundle, and a missing bundle fails here with how to build it.
        if "_esm" not in _AttnWidget.__dict__:
            _AttnWidget._esm = _load_bundle()
        super().__init__(**kwargs)

    def to_html(
        self, path: str | os.PathLike[str] | None = None, *, title: str | None = None
    ) -> str:
        """This view as ONE self-contained HTML page; written to ``path`` when given.

        The page carries the front-end bundle and the view's current state (binary
        buffers base64-encoded), and loads nothing: it works offline, from a
        file, e-mailed or archived. Clicks and hovers work in the page; they no
        longer reach Python. The SVG/PNG buttons work there too.

        Args:
            path: where to write the page (UTF-8); None: only return it.
            title: the page title (and a heading); default: the view's class name.

        Returns:
            The HTML text.
        """
        from attnwidget.views.core.standalone import page

        text = page(self, title=title)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def set_state(self, sync_data: dict[str, Any]) -> None:
        """Apply a change from the page; a value Python refuses changes nothing.

        The page has already shown the value it sent (e.g. a picker the user
        moved), so on a refusal the page is sent Python's values back: both
        sides stay in step and the refusal is logged, instead of an exception
        escaping into the comm and the page showing a state Python never had.
        """
        try:
            super().set_state(sync_data)
        except traitlets.TraitError as error:
            log.warning("attnwidget: the page's change %r was refused: %s", sync_data, error)
            self.send_state([key for key in sync_data if key in self.keys])

    def _send(self, msg: dict[str, Any], buffers: Any = None) -> None:
        # Every state update and custom message goes through here: refuse one the
        # Jupyter server would drop (10 MiB) with an error naming its largest part,
        # instead of a page that silently shows nothing.
        check_message(type(self).__name__, msg, buffers, self._describe_message_part)
        super()._send(msg, buffers=buffers)

    def _describe_message_part(self, part: str) -> str:
        """What a too-large message's largest part holds, for its error (views override)."""
        return ""

    def _export_replies(self) -> tuple[list[RecordedReply], dict[str, Any] | None]:
        """What a saved page answers its own requests with: (recorded replies, the
        message for a request none of them matches, or None to leave it unanswered).

        Views that ask the kernel for data as the user navigates override this;
        by default a page holds only the live state.
        """
        return [], None

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # Live front ends draw the widget-view output and ignore the rest; hosts
        # with no widget manager (nbconvert, previews) show the fallback
        # (fallback.py). With ATTNWIDGET_STATIC=1 the fallback is the bare
        # fragment scripts/run_notebook.py gathers into one page instead.
        # anywidget's metadata (Colab's custom widget manager URL) is kept as is.
        from attnwidget.views.core.fallback import fallback_data
        from attnwidget.views.core.standalone import fragment, static_mode

        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return bundle
        data, metadata = bundle
        if static_mode():
            return {**data, "text/html": fragment(self)}, metadata
        try:
            extra = fallback_data(self)
        except Exception:  # a fallback must never cost the live view
            log.exception("attnwidget: no static fallback for this view")
            extra = {}
        return {**data, **extra}, metadata


def _keyword_traits(cls: type[_AttnWidget]) -> set[str]:
    """Traits that may be set as keywords: the widget's options and a view's own
    writable traits (for views whose constructor does not name them)."""
    base = set(_AttnWidget.class_trait_names())
    traits = cls.class_traits()
    own = {n for n, t in traits.items() if n not in base and not n.startswith("_")}
    return set(WIDGET_OPTIONS) | {n for n in own if not traits[n].read_only}


def constructor_options(cls: type[_AttnWidget]) -> list[str]:
    """The keyword arguments a view's constructor takes, in order (then the widget's)."""
    names: list[str] = []
    for klass in cls.__mro__:
        if klass is _AttnWidget:
            break
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        for parameter in inspect.signature(init).parameters.values():
            named = parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD)
            if named and parameter.name != "self" and parameter.name not in names:
                names.append(parameter.name)
    extra = sorted(_keyword_traits(cls) - set(names) - set(WIDGET_OPTIONS))
    return names + extra + [name for name in WIDGET_OPTIONS if name not in names]


def _unknown_kwargs_message(cls: type[_AttnWidget], unknown: list[str]) -> str:
    return unknown_keywords_message(
        cls.__name__, unknown, constructor_options(cls), cls._renamed_keywords
    )
