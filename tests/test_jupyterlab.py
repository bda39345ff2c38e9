"""Smoke test in a real JupyterLab: the quickstart notebook, run from the UI.

Starts ``jupyter lab`` on 127.0.0.1 (a free port, a random token, a temporary
copy of ``notebooks/``), opens ``quickstart.ipynb`` in headless Chromium,
restarts the kernel and runs every cell from the toolbar, then checks that

- every cell ran (each code cell got an execution count, none shows an error),
- every attnwidget view the notebook displays was drawn by the widget
  manager (one output with one ``.attnw-frame`` each, none loading, no
  ``.attnw-error``),
- a click on a SaliencyView token reaches the kernel: a cell added through
  the UI prints ``view.selected_token``,
- token text (SaliencyView, HeadView) and the ModelView's canvas labels
  reach a WCAG contrast ratio of 4.5 with their background, in the light
  theme and after switching JupyterLab to "JupyterLab Dark" from its menu,
- the page logged no error and requested nothing outside 127.0.0.1.

The server (and its kernel) is shut down in a finalizer.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_ui import (
    CELLS_RAN_JS,
    CONTRAST_JS,
    Server,
    assert_views_drawn,
    displayed_views,
    jupyter_server,
    watch_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "quickstart.ipynb"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (the notebook extra)")
    with jupyter_server("lab", tmp_path_factory.mktemp("jupyterlab")) as server:
        yield server


#: Text the views show, and the WCAG AA ratio it must reach against what is
#: behind it: SaliencyView tokens (own background per score), HeadView tokens,
#: and the labels the ModelView draws on its canvas.
LEGIBLE = {
    "saliency tokens": ".jp-OutputArea-output .attnw-saliency .attnw-tok",
    "head view tokens": ".jp-OutputArea-output .attnw-headview .attnw-token:not(.attnw-masked)",
    "model view labels": "canvas:.jp-OutputArea-output .attnw-modelview canvas.attnw-thumbs",
}


def assert_legible(page: Any, theme: str) -> None:
    # A theme switch swaps style sheets; the ModelView redraws its canvas labels
    # (watchHostTheme) and says with which text colour: wait for that redraw.
    page.wait_for_function(
        """palette => {
             const views = [...document.querySelectorAll('.jp-OutputArea-output .attnw-modelview')];
             return views.length > 0 && views.every(v => v.dataset.palette === palette);
           }""",
        arg="light" if theme == "light" else "dark",
        timeout=20000,
    )
    for what, selector in LEGIBLE.items():
        ratio = page.evaluate(CONTRAST_JS, [selector, 18])
        assert ratio is not None, f"{theme}: no {what} found ({selector})"
        assert ratio >= 4.5, f"{theme} theme: {what} have contrast {ratio:.2f} (< 4.5)"


def test_quickstart_runs_in_jupyterlab(lab: Server, browser: Any) -> None:
    started = time.monotonic()
    notebook = lab.root / NOTEBOOK
    expected = displayed_views(notebook)
    assert expected >= 1, "the quickstart should display at least one attnwidget view"
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    code_cells = sum(c["cell_type"] == "code" for c in cells)
    # The round trip reads the first SaliencyView back through its variable.
    assert any(
        re.search(r"^view = attnwidget\.SaliencyView\(", "".join(c["source"]), re.M) for c in cells
    ), "the quickstart no longer names its first SaliencyView `view`: update this test"

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    watch = watch_page(context, page)
    try:
        page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?token={lab.token}")
        page.locator(".jp-Notebook").first.wait_for(timeout=30000)
        # The notebook's kernel must be up: "restart and run all" with no kernel
        # yet opens a "Select Kernel" dialog instead.
        page.wait_for_function(
            """() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
                 .map(e => e.textContent)
                 .some(t => /\\|\\s*Idle/.test(t) && !/No Kernel/.test(t))""",
            timeout=30000,
        )
        # The toolbar's "restart the kernel and run all cells" (its command id
        # differs between JupyterLab 4 releases).
        page.locator(
            '.jp-NotebookPanel-toolbar [data-command="notebook:restart-run-all"], '
            '.jp-NotebookPanel-toolbar [data-command="runmenu:restart-and-run-all"]'
        ).first.click()
        dialog = page.locator(".jp-Dialog")
        assert "Restart" in (dialog.text_content() or ""), dialog.text_content()
        dialog.locator(".jp-mod-accept").click()

        # Every code cell gets a number; a failing cell stops the run with an error output.
        page.wait_for_function(CELLS_RAN_JS, arg=code_cells, timeout=90000)
        assert_views_drawn(page, expected)
        views = page.locator(".jp-OutputArea-output .attnw-saliency")
        assert views.count() >= 1
        assert views.first.locator(".attnw-tok").count() > 0

        # A click in the page -> the kernel: pick a token other than the selected one.
        first = views.first
        selected = int(first.get_attribute("data-selected") or -1)
        target = 1 if selected != 1 else 2
        first.locator(f'.attnw-tok[data-index="{target}"]').first.click()
        page.wait_for_function(
            "([el, k]) => el.dataset.selected === String(k)",
            arg=[first.element_handle(), target],
        )
        # Read it back in Python through a new cell, added and run from the UI.
        last_cell = page.locator(".jp-Notebook .jp-Cell").last
        last_cell.locator(".jp-InputPrompt").click()  # select it (command mode)
        page.keyboard.press("Escape")
        page.keyboard.press("b")  # insert a cell below
        page.keyboard.press("Enter")  # edit it
        page.keyboard.insert_text('print("kernel sees", view.selected_token)')
        page.keyboard.press("Shift+Enter")
        page.get_by_text(f"kernel sees {target}", exact=True).wait_for(timeout=20000)

        # Legible in the light theme, and after switching to JupyterLab Dark.
        assert_legible(page, "light")
        page.locator("#jp-MainMenu .lm-MenuBar-item", has_text="Settings").click()
        page.locator(".lm-Menu-item", has_text="Theme").first.hover()
        page.get_by_role("menuitem", name="JupyterLab Dark", exact=True).click()
        page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=20000)
        page.keyboard.press("Escape")
        assert_legible(page, "dark")

        watch.assert_clean()
    finally:
        context.close()
    elapsed = time.monotonic() - started
    assert elapsed < 60, f"the JupyterLab smoke test took {elapsed:.0f} s (budget: 60 s)"
