"""attnwidget's views in a real marimo server, driven in headless Chromium.

Serves ``examples/marimo_views.py`` (the example docs/hosts/marimo.md points
to) with ``marimo run`` on 127.0.0.1 (a free port, no token), opens it with
every request that is not for 127.0.0.1 aborted and recorded (marimo's front
end must come from the package, not a CDN), and checks that a SaliencyView,
a HeadView, a FlowView and the Explorer draw; that a click on a token reaches
Python and re-runs the cell that reads the view's ``.value``; that a change
made in Python (a marimo dropdown's cell sets ``heads.layer``) redraws the
view; and that the Explorer's views, wrapped by marimo, still pin a token in
each other through Python. marimo renders each anywidget in a shadow root:
Playwright's CSS locators reach into it, ``document.querySelector`` does not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import lanes
import pytest
from jupyter_ui import ROOT, Watch, free_port, watch_page

pytestmark = [pytest.mark.browser]

NOTEBOOK = ROOT / "examples" / "marimo_views.py"
#: What the page shows once every cell ran (the first view and the Explorer's tabs).
SALIENCY = ".attnw-saliency"


def needed(module: str) -> None:
    """Import ``module`` (of the test extra); a skip without it, a failure in CI."""
    if lanes.in_ci():
        __import__(module)  # CI installs the test extra: its absence is a broken install
    else:
        pytest.importorskip(module, reason=f"{module} is not installed (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def marimo_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    needed("marimo")
    base = tmp_path_factory.mktemp("marimo")
    port = free_port()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        # marimo's own state (recent files, config) stays in the test's folder.
        "HOME": str(base),
        "XDG_CONFIG_HOME": str(base / "config"),
        "XDG_STATE_HOME": str(base / "state"),
        "XDG_CACHE_HOME": str(base / "cache"),
    }
    command = [
        *(sys.executable, "-m", "marimo", "run", str(NOTEBOOK)),
        *("--headless", "--host", "127.0.0.1", "--port", str(port), "--no-token"),
    ]
    log = base / "marimo.log"
    with log.open("wb") as out:
        # Its own session, so the server and its kernels end together.
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"marimo exited ({process.returncode}):\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"marimo did not start:\n{log.read_text()}") from None
                time.sleep(0.2)
        yield url
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def marimo_page(marimo_url: str, browser: Any) -> Iterator[tuple[Any, Watch]]:
    """The example, opened once, every cell run and every view drawn."""
    context = browser.new_context(viewport={"width": 1300, "height": 1800})
    page = context.new_page()
    watch = watch_page(context, page)  # aborts and records anything not for 127.0.0.1
    started = time.monotonic()
    try:
        page.goto(marimo_url)
        # Four views and the Explorer's first tab; the kernel imports torch first.
        page.locator(f"{SALIENCY}[data-selected]").nth(1).wait_for(timeout=90000)
        page.locator(".attnw-headview[data-state=ready]").first.wait_for()
        page.locator(".attnw-flow[data-state=ready]").first.wait_for()
        print(f"marimo: every cell ran and drew in {time.monotonic() - started:.1f} s")
        yield page, watch
    finally:
        context.close()


def test_every_view_and_the_explorer_draw_offline(marimo_page: tuple[Any, Watch]) -> None:
    page, watch = marimo_page
    assert page.locator(".attnw-frame").count() == 4  # 3 views + the Explorer's shown tab
    assert page.locator(".attnw-saliency .attnw-tok").count() > 0
    assert page.locator(".attnw-headview .attnw-headbox").count() == 4  # the demo's 4 heads
    assert page.locator(".attnw-error, .attnw-frame [data-state=error]").count() == 0
    # The Explorer: its status line (plain text) and its views in marimo's tabs.
    page.get_by_text("Explaining target", exact=False).first.wait_for()
    tabs = page.get_by_role("tab")
    assert [t.strip() for t in tabs.all_text_contents()] == ["Saliency", "Flow", "Heads", "Model"]
    watch.assert_clean()


def test_a_click_on_a_token_reruns_the_cell_that_reads_it(marimo_page: tuple[Any, Watch]) -> None:
    page, watch = marimo_page
    view = page.locator(SALIENCY).first
    started = time.monotonic()
    for index, token in ((2, "keys"), (5, "cabinet")):
        view.locator(f'.attnw-tok[data-index="{index}"]').first.click()
        # The dependent cell ran again in the kernel and its output changed.
        page.get_by_text(f"Picked token: {token}").wait_for(timeout=15000)
        assert view.get_attribute("data-selected") == str(index)
    print(f"marimo: two clicks and their cells took {time.monotonic() - started:.1f} s")
    watch.assert_clean()


def test_a_change_in_python_redraws_the_view(marimo_page: tuple[Any, Watch]) -> None:
    page, watch = marimo_page
    heads = page.locator(".attnw-headview").first
    assert heads.get_attribute("data-layer") == "0"
    # marimo's dropdown re-runs the cell that sets heads.layer in Python.
    page.get_by_label("HeadView layer").select_option("2")
    page.locator('.attnw-headview[data-layer="2"][data-state=ready]').wait_for(timeout=15000)
    assert heads.locator(".attnw-layer select, select.attnw-layer").first.input_value() == "2"
    watch.assert_clean()


def test_the_explorers_views_pin_a_token_in_each_other(marimo_page: tuple[Any, Watch]) -> None:
    page, watch = marimo_page
    explorer_saliency = page.locator(SALIENCY).nth(1)
    explorer_saliency.locator('.attnw-tok[data-index="2"]').first.click()
    # The click reached Python, whose links set the FlowView's pin; marimo's
    # tab draws the FlowView anew when shown, from its synced state.
    page.get_by_role("tab", name="Flow").click()
    page.get_by_role("tabpanel").locator(".attnw-flow[data-selected='0:2']").wait_for(timeout=15000)
    watch.assert_clean()
