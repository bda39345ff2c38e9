"""Shared fixtures. Browser tests: real headless Chromium through Playwright.

The widget browser tests use pytest-ipywidgets (solara's pytest plugin; its
``solara_test`` fixture renders widgets in a page served from 127.0.0.1, with
solara-assets of the same version so nothing comes from a CDN) and
pytest-playwright. Playwright's own browser download is not used: the browser
is the system Chromium (``apt-get install chromium``), at ``$ATTNWIDGET_CHROMIUM``
or ``/usr/bin/chromium``; when neither exists Playwright's default is tried.

The lanes (markers, the parallel run's groups, the skips CI refuses) are in
lanes.py; the hooks below apply them.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lanes
import pytest
from offline_browser import OfflinePage, open_offline

CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _chromium() -> str | None:
    path = os.environ.get("ATTNWIDGET_CHROMIUM") or "/usr/bin/chromium"
    return path if os.path.isfile(path) else shutil.which("chromium")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pytest_configure(config: pytest.Config) -> None:
    # Solara's test server: serve on 127.0.0.1 (not "localhost"), and take a
    # free port instead of its fixed default (18865), which another test run on
    # the same machine could hold; unless given on the command line.
    if not hasattr(config.option, "solara_port"):
        return  # the solara plugin is not installed
    given = " ".join(config.invocation_params.args)
    if "--solara-host" not in given:
        config.option.solara_host = "127.0.0.1"
    if "PORT" not in os.environ and "--solara-port" not in given:
        config.option.solara_port = _free_port()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test's lane; in a worker of the parallel run, order the groups."""
    for item in items:
        file = Path(str(item.path)).name
        fixtures = set(getattr(item, "fixturenames", ()))
        for name in sorted(lanes.lane_marks(file, item.name, fixtures)):
            if item.get_closest_marker(name) is None:
                item.add_marker(name)
    if not os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "loadgroup", False):
        return
    # The order the scheduler hands out the groups (the run passes
    # --no-loadscope-reorder): the notebook group, slow groups, browser groups,
    # then the rest; larger groups first in each. Every worker sorts alike.
    groups: dict[str, list[pytest.Item]] = {}
    ranks: dict[str, int] = {}
    for item in items:
        group = lanes.group_of(item.nodeid)
        groups.setdefault(group, []).append(item)
        markers = {mark.name for mark in item.iter_markers()}
        ranks[group] = min(ranks.get(group, 9), lanes.group_rank(group, markers))
    order = sorted(groups, key=lambda g: (ranks[g], -len(groups[g])))
    items[:] = [item for group in order for item in groups[group]]


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: whole groups of lanes.group_of to each worker."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LaneScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return lanes.group_of(nodeid)

    return LaneScheduling(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """In CI, a skip for want of numba, lxt, the MiniLM weights or bench/ fails."""
    report = yield
    if report.skipped and not hasattr(report, "wasxfail"):
        refused = lanes.refused_skip(_skip_reason(report.longrepr))
        if refused:
            report.outcome = "failed"
            report.longrepr = refused
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """The same for a whole module skipped at import (``pytest.importorskip``)."""
    report = yield
    if report.skipped:
        refused = lanes.refused_skip(_skip_reason(report.longrepr))
        if refused:
            report.outcome = "failed"
            report.longrepr = refused
    return report


def _skip_reason(longrepr: Any) -> str:
    # A skip's longrepr is (path, line, "Skipped: reason").
    text = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI, a run in which no test passed fails (exit code 5, as for no tests)."""
    if not lanes.in_ci() or hasattr(session.config, "workerinput") or exitstatus != 0:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not reporter.stats.get("passed"):
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's launch options, pointed at the system Chromium."""
    options = dict(browser_type_launch_args)
    executable = _chromium()
    if executable and "channel" not in options:
        options["executable_path"] = executable
    options["args"] = [*options.get("args", []), *CHROMIUM_ARGS]
    return options


LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


@dataclass
class PageWatch:
    """What the page did during one test: requests, console errors, page errors."""

    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def remote_requests(self) -> list[str]:
        """Requests that left the machine (anything but localhost, data: and blob:)."""
        remote = []
        for url in self.requests:
            parts = urlsplit(url)
            if parts.scheme in {"data", "blob", "about"}:
                continue
            if parts.hostname not in LOCAL_HOSTS:
                remote.append(url)
        return remote

    def assert_clean(self) -> None:
        """No request left the machine and the page logged no error."""
        assert not self.remote_requests(), f"non-local requests: {self.remote_requests()}"
        assert not self.page_errors, f"uncaught page errors: {self.page_errors}"
        assert not self.console_errors, f"console errors: {self.console_errors}"


@pytest.fixture()
def page_watch(page_session: Any) -> Iterator[PageWatch]:
    """Record the session page's requests and errors for the current test."""
    watch = PageWatch()

    def on_request(request: Any) -> None:
        watch.requests.append(request.url)

    def on_console(message: Any) -> None:
        if message.type == "error":
            watch.console_errors.append(f"{message.text} ({message.location})")

    def on_page_error(error: Any) -> None:
        watch.page_errors.append(str(error))

    page_session.on("request", on_request)
    page_session.on("console", on_console)
    page_session.on("pageerror", on_page_error)
    try:
        yield watch
    finally:
        page_session.remove_listener("request", on_request)
        page_session.remove_listener("console", on_console)
        page_session.remove_listener("pageerror", on_page_error)


@pytest.fixture()
def open_page(browser: Any) -> Iterator[Callable[[Path], OfflinePage]]:
    """Open saved pages offline (see offline_browser.py); closes them afterwards."""
    opened: list[OfflinePage] = []

    def open_(path: Path) -> OfflinePage:
        watch = open_offline(browser, path)
        opened.append(watch)
        return watch

    yield open_
    for watch in opened:
        watch.page.context.close()
