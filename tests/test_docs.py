"""The documentation site: built offline, complete, and drawn without a network.

The site is built once per run (``mkdocs build --strict``: a notebook error, a
broken internal link or an unrenderable docstring fails it), or taken from
``$ATTNWIDGET_DOCS_SITE`` when scripts/test.sh has just built it. Its pages are
then served from a real HTTP server on 127.0.0.1 (ES modules do not load from
``file:``) and opened in headless Chromium with every other host blocked.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import attnwidget

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("ATTNWIDGET_DOCS_SITE")
    if given:
        return Path(given).resolve()
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["NO_MKDOCS_2_WARNING"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0, f"mkdocs build failed:\n{done.stdout[-4000:]}{done.stderr[-8000:]}"
    return out


def _api_directives() -> dict[str, str]:
    """Public name -> the object path documented for it in docs/api/*.md."""
    found: dict[str, str] = {}
    for page in sorted((DOCS / "api").glob("*.md")):
        for path in re.findall(r"^::: ([\w.]+)\s*$", page.read_text(encoding="utf-8"), re.M):
            found[path.rsplit(".", 1)[1]] = path
    return found


def test_every_public_name_has_an_api_entry_and_no_entry_is_stale() -> None:
    documented = _api_directives()
    public = set(attnwidget.__all__)
    missing = sorted(public - set(documented))
    assert not missing, f"no API entry in docs/api/: {missing}"
    assert not set(documented) - public, f"API entries not public: {set(documented) - public}"
    for name, path in documented.items():
        # The documented path is the object the public name gives.
        module, _, attr = path.rpartition(".")
        __import__(module)
        assert getattr(sys.modules[module], attr) is getattr(attnwidget, name), path


def test_every_method_has_its_notes_page() -> None:
    notes = {p.stem for p in (DOCS / "methods" / "_notes").glob("*.md")}
    methods = set(attnwidget.available_methods())
    assert methods == notes, f"missing notes: {methods - notes}; stale: {notes - methods}"


def test_the_built_site_has_every_page(site: Path) -> None:
    api = "".join(p.read_text(encoding="utf-8") for p in (site / "api").rglob("*.html"))
    for name, path in _api_directives().items():
        assert f'id="{path}"' in api, f"the API pages render no entry for {name} ({path})"
    for method in attnwidget.available_methods():
        page = (site / "methods" / method / "index.html").read_text(encoding="utf-8")
        # The options table is the registry's, whatever the page's prose says.
        for option in attnwidget.method_info(method).options:
            assert f"<code>{option.name}</code>" in page, (method, option.name)
    for host in (DOCS / "hosts").glob("*.md"):
        assert (site / "hosts" / host.stem / "index.html").is_file(), host
    assert (site / "assets" / "attnwidget" / "widget.js").is_file()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # the test reports what matters
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    yield from _serve(site)


def _serve(directory: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _pages(site: Path) -> list[str]:
    folders = [p.relative_to(site).parent for p in site.rglob("index.html")]
    return sorted("" if f == Path(".") else f"{f.as_posix()}/" for f in folders)


def test_every_page_loads_offline_and_draws_its_views(
    browser: Any, site: Path, served: str
) -> None:
    pages = _pages(site)
    assert len(pages) > 30, pages
    outside, errors, views_seen = _walk(browser, served, pages)
    assert not outside, f"requests that left the site: {sorted(set(outside))[:10]}"
    assert not errors, f"console errors: {errors[:10]}"
    # The tutorials and the view pages hold dozens of views between them.
    assert views_seen >= 20, views_seen


def test_the_walk_catches_a_page_that_reaches_out(browser: Any, tmp_path: Path) -> None:
    # The check above passes only if it can fail: a page that loads a CDN
    # script and an image, and fetches from a LAN address, is caught on each.
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "index.html").write_text(
        "<!doctype html><html><body>"
        '<script src="https://cdn.jsdelivr.net/npm/some-widget-manager.js"></script>'
        '<img src="https://example.org/logo.png">'
        "<script>fetch('http://10.0.0.1/track').catch(() => {});</script>"
        "</body></html>",
        encoding="utf-8",
    )
    for base in _serve(tmp_path):
        outside, errors, views_seen = _walk(browser, base, ["planted/"])
        hosts = {urlsplit(url).hostname for url in outside}
        assert hosts == {"cdn.jsdelivr.net", "example.org", "10.0.0.1"}, outside
        assert errors, "the blocked script's failure reached no console"
        assert views_seen == 0


def _walk(browser: Any, served: str, pages: list[str]) -> tuple[list[str], list[str], int]:
    """Open each page with every host but ``served`` blocked: the requests that
    tried to leave, the console errors, and how many views the pages drew."""
    context = browser.new_context()
    outside: list[str] = []

    def route(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).scheme in {"data", "blob"} or url.startswith(served):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(f"{page.url}: {m.text}"))
    page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
    views_seen = 0
    for path in pages:
        page.goto(served + "/" + path.lstrip("/"), wait_until="load")
        # A script's own requests may come after load: let the page settle.
        page.wait_for_load_state("networkidle")
        blocks = page.locator("script[data-attnwidget-state]").count()
        if blocks:
            # Every state block gets its view drawn after it, with content.
            page.wait_for_function(
                "n => document.querySelectorAll('.attnw-standalone-view').length >= n",
                arg=blocks,
                timeout=20_000,
            )
            empty = page.evaluate(
                "() => [...document.querySelectorAll('.attnw-standalone-view')]"
                ".filter(v => v.getBoundingClientRect().height < 10).length"
            )
            assert empty == 0, f"{path}: {empty} of {blocks} views drew nothing"
            views_seen += blocks
        frames = page.locator("iframe.attnw-docs-frame").count()
        for index in range(frames):
            frame = page.frame_locator("iframe.attnw-docs-frame").nth(index)
            frame.locator(".attnw-standalone-view").first.wait_for(timeout=20_000)
    context.close()
    return outside, errors, views_seen
