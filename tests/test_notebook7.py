"""Smoke test in Jupyter Notebook 7: the quickstart notebook, run from the UI.

Notebook 7 is a different front end on the same JupyterLab components (its
own shell, URLs and menus, one document per tab): the widgets must load and
draw there too. Starts ``jupyter notebook`` on 127.0.0.1 (a free port, a
random token, a temporary copy of ``notebooks/``), opens
``quickstart.ipynb``, restarts the kernel and runs every cell from the
toolbar, and checks that every cell ran, every attnwidget view was drawn, a token
click reaches the page's model, and the page logged no error and requested
nothing outside 127.0.0.1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_ui import (
    CELLS_RAN_JS,
    Server,
    api,
    assert_views_drawn,
    displayed_views,
    jupyter_server,
    watch_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "quickstart.ipynb"


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    notebook = pytest.importorskip("notebook", reason="Notebook 7 is not installed (test extra)")
    if int(notebook.__version__.split(".")[0]) < 7:
        pytest.skip(f"notebook {notebook.__version__} is not Notebook 7")
    with jupyter_server("notebook", tmp_path_factory.mktemp("notebook7")) as server:
        yield server


def kernel_idle(server: Server) -> bool:
    """The notebook's kernel is started and idle (asked of the server, not the UI)."""
    sessions = api(server, "/api/sessions")
    return any(
        s["path"].endswith(NOTEBOOK) and s["kernel"]["execution_state"] == "idle" for s in sessions
    )


def test_quickstart_runs_in_notebook7(notebook7: Server, browser: Any) -> None:
    started = time.monotonic()
    path = notebook7.root / NOTEBOOK
    expected = displayed_views(path)
    assert expected >= 1, "the quickstart should display at least one attnwidget view"
    code_cells = sum(
        c["cell_type"] == "code" for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
    )

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    watch = watch_page(context, page, block=False)
    # Notebook 7.6's keyboard-shortcut plugin throws this while it loads the
    # settings (notebook_core.*.js, at every page load, with or without
    # attnwidget): its bug, not ours. Any other uncaught error fails the test.
    watch.tolerated.append(("reading 'schema'", "/static/notebook/notebook_core."))
    try:
        page.goto(f"{notebook7.url}/notebooks/{NOTEBOOK}?token={notebook7.token}")
        page.locator(".jp-Notebook").first.wait_for(timeout=30000)
        # Run all with no kernel yet would open a "Select Kernel" dialog.
        deadline = time.monotonic() + 30
        while not kernel_idle(notebook7):
            sessions = api(notebook7, "/api/sessions")
            assert time.monotonic() < deadline, f"the notebook's kernel did not start: {sessions}"
            time.sleep(0.2)
        # The notebook toolbar's "restart the kernel and run all cells" (the
        # same command as JupyterLab's), confirmed in its dialog.
        page.locator('.jp-Toolbar [data-command="notebook:restart-run-all"]').first.click()
        dialog = page.locator(".jp-Dialog")
        assert "Restart" in (dialog.text_content() or ""), dialog.text_content()
        dialog.locator(".jp-mod-accept").click()

        page.wait_for_function(CELLS_RAN_JS, arg=code_cells, timeout=90000)
        assert_views_drawn(page, expected)

        # A click draws the selection in the page (the kernel round trip is the
        # JupyterLab test's: the same widget manager and comm code).
        view = page.locator(".jp-OutputArea-output .attnw-saliency").first
        assert view.locator(".attnw-tok").count() > 0
        target = 1 if view.get_attribute("data-selected") != "1" else 2
        view.locator(f'.attnw-tok[data-index="{target}"]').first.click()
        page.wait_for_function(
            "([el, k]) => el.dataset.selected === String(k)",
            arg=[view.element_handle(), target],
        )
        watch.assert_clean()
    finally:
        context.close()
    elapsed = time.monotonic() - started
    assert elapsed < 60, f"the Notebook 7 smoke test took {elapsed:.0f} s (budget: 60 s)"
