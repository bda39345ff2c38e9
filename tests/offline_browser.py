"""Open local HTML files in headless Chromium with the network cut off.

Used by the export and notebook tests: every request that is not for a
``file:``, ``data:`` or ``blob:`` URL is aborted and recorded, and so is every
console error and uncaught page error, so a test can assert the page needed
nothing from outside and ran cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

#: URL schemes that never leave the machine.
LOCAL_SCHEMES = {"file", "data", "blob", "about"}


@dataclass
class OfflinePage:
    """A page plus what it tried to do."""

    page: Any
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def remote_requests(self) -> list[str]:
        """Requests for anything but local schemes (each was aborted)."""
        outside = [u for u in self.requests if urlsplit(u).scheme not in LOCAL_SCHEMES]
        return sorted(set(outside) | set(self.blocked))

    def assert_clean(self) -> None:
        """Nothing was requested from outside and the page logged no error."""
        assert self.requests, "the request listener saw nothing (not even the page itself)"
        assert not self.remote_requests(), f"requests to outside: {self.remote_requests()}"
        assert not self.page_errors, f"uncaught page errors: {self.page_errors}"
        assert not self.console_errors, f"console errors: {self.console_errors}"


def open_offline(browser: Any, path: Path) -> OfflinePage:
    """Open ``path`` in a fresh context of ``browser`` whose network is cut off."""
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    watch = OfflinePage(page=page)

    def route(route: Any) -> None:
        if urlsplit(route.request.url).scheme in LOCAL_SCHEMES:
            route.continue_()
        else:
            watch.blocked.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page.on("request", lambda request: watch.requests.append(request.url))
    page.on(
        "console",
        lambda message: (
            watch.console_errors.append(f"{message.text} ({message.location})")
            if message.type == "error"
            else None
        ),
    )
    page.on("pageerror", lambda error: watch.page_errors.append(str(error)))
    page.goto(path.resolve().as_uri())
    return watch
