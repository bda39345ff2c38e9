"""Long work, announced before it starts and shown while it runs.

Work that can take more than a few seconds (:data:`LONG_WORK_SECONDS`) says
so first, with an estimate from the input's sizes, then shows its progress:
a tqdm bar when tqdm is installed (it comes with the ``evaluate`` extra, so
it is imported only here, on use), else a plain line printed every few
seconds. Both go to stderr, where a notebook shows them under the cell.

Stopping: Ctrl-C (KeyboardInterrupt) ends the work where it is; nothing
here holds a model or changes the caller's arrays, so nothing needs undoing.

``progress`` arguments take one of: None (show only when the estimate
reaches :data:`LONG_WORK_SECONDS`), True (always), False (never), or a
callable ``progress(done, total)`` that receives the counts instead (how a
view draws its own progress line in the page).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from attnwidget.errors import InputError

#: Work expected to take at least this many seconds is announced and shown.
LONG_WORK_SECONDS = 5.0
#: Seconds between two plain progress lines (when tqdm is missing).
PLAIN_EVERY_SECONDS = 5.0

ProgressArg = bool | Callable[[int, int], None] | None


def check_progress(value: Any, where: str = "progress") -> ProgressArg:
    """``value`` if it is None, a bool or a callable; else a clear InputError."""
    if value is None or isinstance(value, bool) or callable(value):
        return value
    raise InputError(
        f"{where}={value!r} must be None (show long work only), True, False, or a "
        "callable progress(done, total)."
    )


def wanted(progress: ProgressArg, estimate_s: float) -> bool:
    """Whether to announce and show: always for True or a callable, by the estimate for None."""
    if progress is None:
        return estimate_s >= LONG_WORK_SECONDS
    return progress is not False


def describe_seconds(seconds: float) -> str:
    """A rough duration for a person: "~8 s", "~3 min"."""
    if seconds < 90:
        return f"~{max(seconds, 1):.0f} s"
    return f"~{seconds / 60:.0f} min"


class Progress:
    """Counts work done; reports it to a callable, a tqdm bar, or plain lines.

    Use as a context manager (the bar is closed on Ctrl-C too)::

        with Progress(total, "attention flow", "pairs", progress, estimate_s) as bar:
            ...; bar.update(k)
    """

    def __init__(
        self,
        total: int,
        what: str,
        unit: str,
        progress: ProgressArg,
        estimate_s: float,
        *,
        announcement: str = "",
        stream: TextIO | None = None,
    ) -> None:
        self.total, self.what, self.unit = int(total), what, unit
        self.done = 0
        self._callback = progress if callable(progress) else None
        self._shown = wanted(progress, estimate_s) and self._callback is None
        self._stream = stream if stream is not None else sys.stderr
        self._bar: Any = None
        self._last = time.monotonic()
        if self._shown:
            # Said before the work starts, so a long wait is never silent.
            text = announcement or f"{what}: {self.total:,} {unit}"
            print(
                f"{text}; estimated {describe_seconds(estimate_s)} from the sizes. "
                "Ctrl-C stops it.",
                file=self._stream,
                flush=True,
            )
            try:
                from tqdm.auto import tqdm
            except ImportError:  # tqdm is optional (the evaluate extra): plain lines
                self._bar = None
            else:
                self._bar = tqdm(total=self.total, desc=what, unit=unit, file=self._stream)
        if self._callback is not None:
            self._callback(0, self.total)  # at once: the caller learns the work started

    def update(self, count: int = 1) -> None:
        self.done += count
        if self._callback is not None:
            self._callback(self.done, self.total)
        elif self._bar is not None:
            self._bar.update(count)
        elif self._shown:
            now = time.monotonic()
            if self.done >= self.total or now - self._last >= PLAIN_EVERY_SECONDS:
                self._last = now
                share = self.done / self.total if self.total else 1.0
                print(
                    f"{self.what}: {self.done:,}/{self.total:,} {self.unit} ({share:.0%})",
                    file=self._stream,
                    flush=True,
                )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
