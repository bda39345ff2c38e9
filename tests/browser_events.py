"""Wait on an event, not a fixed time, before asserting that nothing happened.

The XSS checks assert that a hostile token never ran: had one been parsed as
markup, ``<img src=x onerror=...>`` is the vector that fires last (its error
event comes after the failed load; inline ``<script>`` and ``<svg onload>``
run as they are inserted). :func:`settle_injected` loads the same ``x`` from
the page and returns once that load's error event has fired, one frame
later: by then a hostile image inserted before it would have fired too.
The sentinel's own failed load is dropped from the watch's console errors.
"""

from __future__ import annotations

from typing import Any

#: Resolves after the error (or load) event of an image at ``x`` and one frame.
_SENTINEL = """() => new Promise(resolve => {
  const done = () => requestAnimationFrame(() => setTimeout(() => resolve(true), 0));
  const img = new Image();
  img.onerror = done;
  img.onload = done;
  img.src = 'x';
})"""


def settle_injected(page: Any, watch: Any) -> None:
    """Return once an injected ``<img src=x onerror=...>`` would have fired.

    ``watch``: the page's PageWatch / OfflinePage, whose ``console_errors``
    lose the sentinel's "failed to load" line (a hostile image that loaded
    ``x`` is caught by the checks that follow: its element or its handler).
    """
    url = page.evaluate("() => new URL('x', document.baseURI).href")
    assert page.evaluate(_SENTINEL) is True
    # Quoted, as the message and its location name it: a bare substring would also
    # drop the lines of a page whose own URL starts with it (".../xss.html").
    quoted = f"'{url}'"
    watch.console_errors[:] = [e for e in watch.console_errors if quoted not in e]
