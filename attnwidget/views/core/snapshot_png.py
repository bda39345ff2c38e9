"""A PNG picture of a view, drawn by the front-end bundle in headless Chromium.

For notebook previews that show pictures but run no scripts (GitHub's): the
view's standalone page is opened offline (every request but the page itself
is refused) and the drawn view, without its toolbar, is screenshot. The
kernel has no renderer of its own for the views, so this needs Playwright
(``pip install playwright``) and a Chromium: the system's ``chromium`` when
there is one, else Playwright's own (``playwright install chromium``).

It runs in a thread of its own: Playwright's synchronous API refuses to run
inside the kernel's asyncio loop, and a thread has none.
"""

from __future__ import annotations

import os
import shutil
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnwidget.views.core.base import _AttnWidget

#: Width of the page the view is drawn in (a notebook cell's).
WIDTH = 900
#: Longest wait for the view to draw, in milliseconds.
TIMEOUT_MS = 20_000
#: Chromium flags: no sandbox (kernels run as root in containers), nothing in the background.
_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-sync"]
#: Drawn: the view element exists and a view that reports its state is ready.
_DRAWN_JS = """() => {
  const root = document.querySelector('.attnw-frame .attnw-view > *');
  return !!root && (root.dataset.state ?? 'ready') === 'ready';
}"""


class SnapshotUnavailable(RuntimeError):
    """No PNG can be made here (no Playwright, no Chromium, or the view did not draw)."""


def _executable() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _shoot(page_html: str) -> bytes:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_executable(), args=_ARGS)
        try:
            context = browser.new_context(viewport={"width": WIDTH, "height": 800})
            # Offline: the page is set as content; anything it asks for is refused.
            context.route("**/*", lambda route: route.abort())
            page = context.new_page()
            page.set_content(page_html, wait_until="domcontentloaded")
            page.wait_for_function(_DRAWN_JS, timeout=TIMEOUT_MS)
            page.evaluate("() => document.fonts.ready")
            page.wait_for_function(
                "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
                ".then(() => true)"
            )
            return page.locator(".attnw-frame .attnw-view").first.screenshot(type="png")
        finally:
            browser.close()


def snapshot_png(widget: _AttnWidget) -> bytes:
    """The view as drawn by its bundle, as PNG bytes; SnapshotUnavailable if it cannot be."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        raise SnapshotUnavailable(
            f"no picture of this {type(widget).__name__}: the PNG snapshot "
            "(ATTNWIDGET_SNAPSHOT_PNG) needs Playwright (pip install playwright) and Chromium"
        ) from None
    from attnwidget.views.core.standalone import page

    page_html = page(widget)
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["png"] = _shoot(page_html)
        except Exception as error:  # reported in the kernel's thread below
            result["error"] = error

    worker = threading.Thread(target=run, name="attnwidget-snapshot", daemon=True)
    worker.start()
    worker.join(timeout=TIMEOUT_MS / 1000 + 30)
    if "png" in result:
        return bytes(result["png"])
    error = result.get("error", "timed out")
    raise SnapshotUnavailable(
        f"no picture of this {type(widget).__name__}: headless Chromium failed ({error}). "
        f"PLAYWRIGHT_BROWSERS_PATH={os.environ.get('PLAYWRIGHT_BROWSERS_PATH', '')!r}; "
        "install Chromium (apt-get install chromium, or playwright install chromium)"
    )
