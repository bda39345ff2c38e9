"""The Explorer's display in marimo, which draws anywidgets but no ipywidgets boxes.

The Explorer is an ipywidgets VBox (text box, pickers, buttons, Tab): marimo
shows none of those (marimo #5099). Its views are anywidgets, which marimo
draws through ``mo.ui.anywidget``; so marimo is given the Explorer's status
and progress lines and its views in marimo's own tabs. The input comes from
Python (``explorer.text = ...``, ``explorer.target = ...``,
``explorer.compute(...)``), e.g. from a marimo text box in another cell. The
views stay the Explorer's own: a pin in one is spread to the others in Python,
as in Jupyter.
"""

from __future__ import annotations

from typing import Any


def marimo_display(explorer: Any, titles: dict[str, str]) -> Any:
    """What marimo shows for ``explorer``: its lines, then its views in tabs."""
    import marimo as mo  # only ever called by marimo, so it is installed

    lines = [str(explorer.status.value), str(explorer.progress_line.value)]
    parts: list[Any] = [mo.plain_text(line) for line in lines if line]
    # The views of now: a run may rebuild one (e.g. as a matrix view past a token limit).
    views = {titles.get(name, name): mo.ui.anywidget(view) for name, view in explorer.views.items()}
    if views:
        parts.append(mo.ui.tabs(views))
    return mo.vstack(parts)
