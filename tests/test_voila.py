"""The example dashboard served by Voilà, in headless Chromium, with no network.

Starts ``voila examples/dashboard.ipynb`` on 127.0.0.1 (a free port) with the
``offline`` template of ``examples/voila/templates`` (Voilà's lab template
less its Font Awesome stylesheets from cdn.jsdelivr.net), aborts and records
every request that is not for 127.0.0.1, and checks that the Explorer, the
Annotator and the EvaluationView draw, and that a click reaches the kernel:
a token pinned in the Explorer's SaliencyView is pinned in its FlowView by
the kernel's links (the page has no path from one view to the other), and a
text typed in the Explorer's box is explained by the kernel.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import lanes
import pytest
from jupyter_ui import ROOT, Watch, free_port, watch_page

pytestmark = [pytest.mark.browser]

NOTEBOOK = ROOT / "examples" / "dashboard.ipynb"
#: JupyterLab extensions of the test environment that Voilà's page cannot load
#: (Notebook 7's, in the test extra; jupytext's, which mkdocs-jupyter brings).
DENIED = ("@jupyter-notebook/lab-extension", "jupyterlab-jupytext")


@pytest.fixture(scope="module")
def voila_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if lanes.in_ci():
        import voila  # noqa: F401  (the test extra's: its absence in CI is a broken install)
    else:
        pytest.importorskip("voila", reason="voila is not installed (pip install -e '.[test]')")
    base = tmp_path_factory.mktemp("voila")
    port = free_port()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        # Where Voilà finds the "offline" template (voila/templates/offline).
        "JUPYTER_PATH": os.pathsep.join(
            filter(None, [str(ROOT / "examples"), os.environ.get("JUPYTER_PATH")])
        ),
        # No configuration from (or runtime files left to) the user's own Jupyter.
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
    }
    env.pop("ATTNWIDGET_STATIC", None)  # the live widgets are under test
    command = [
        *(sys.executable, "-m", "voila", str(NOTEBOOK), "--template=offline", "--no-browser"),
        *(f"--port={port}", "--Voila.ip=127.0.0.1", "--Voila.port_retries=0"),
        # Voilà loads every installed front-end extension; these fail in its page
        # with console errors (an allowlist of anywidget and the widget manager
        # leaves the widget registry unprovided: nothing draws).
        *(f"--VoilaConfiguration.extension_denylist={name}" for name in DENIED),
    ]
    log = base / "voila.log"
    with log.open("wb") as out:
        # Its own session, so the server and its kernels end together.
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        # Ready once it listens: a request for "/" would run the notebook.
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"voila exited ({process.returncode}):\n{log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"voila did not start:\n{log.read_text()}") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/"
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
                process.wait(timeout=10)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue


@pytest.fixture(scope="module")
def dashboard(voila_url: str, browser: Any) -> Iterator[tuple[Any, Watch]]:
    context = browser.new_context(viewport={"width": 1300, "height": 1800})
    page = context.new_page()
    watch = watch_page(context, page)  # aborts and records anything not for 127.0.0.1
    started = time.monotonic()
    try:
        # Voilà streams the page while the kernel runs the cells.
        page.goto(voila_url, wait_until="commit", timeout=120000)
        page.locator(".attnw-evaluation .attnw-eval-cell").first.wait_for(timeout=120000)
        print(f"voila: the dashboard ran and drew in {time.monotonic() - started:.1f} s")
        yield page, watch
    finally:
        context.close()


def test_the_dashboard_draws_offline(dashboard: tuple[Any, Watch]) -> None:
    page, watch = dashboard
    page.locator(".attnw-saliency .attnw-tok").first.wait_for()
    page.locator(".attnw-annotator[data-state=ready]").wait_for()
    # 3 views (3 methods × 2 metrics in the table) and the Explorer's 4 tabs.
    assert page.locator(".attnw-evaluation .attnw-eval-cell").count() == 6
    assert page.locator(".attnw-frame").count() == 6
    assert page.locator(".attnw-error, .attnw-frame [data-state=error]").count() == 0
    watch.assert_clean()


def test_a_click_reaches_the_kernel(dashboard: tuple[Any, Watch]) -> None:
    page, watch = dashboard
    started = time.monotonic()
    page.locator('.attnw-saliency .attnw-tok[data-index="2"]').first.click()
    # Only the kernel's links pin the token in the FlowView (its tab shown first:
    # a view in a hidden tab draws when it is shown).
    page.locator(".lm-TabBar-tab", has_text="Flow").first.click()
    page.locator(".attnw-flow[data-selected='0:2']").wait_for(timeout=20000)
    page.locator(".lm-TabBar-tab", has_text="Saliency").first.click()
    # The Explorer's text box: the kernel explains the new text.
    box = page.locator(".attnw-explorer input[type=text]").first
    box.fill("the keys to the cabinet")
    box.press("Enter")
    page.locator('.attnw-saliency .attnw-tok:text-is("cabinet")').first.wait_for(timeout=20000)
    print(f"voila: the click and the new text took {time.monotonic() - started:.1f} s")
    watch.assert_clean()
