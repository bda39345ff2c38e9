"""The Explorer's background work: one job at a time, off the kernel's thread.

A method picked in the page (lrp, chefer2021, flow, …) can take seconds to
minutes, so it runs in a worker thread while the page stays usable. Jobs run
one after another in submission order; the model itself is guarded by the
per-model lock :func:`attnwidget.explain` holds (``capture.state.model_lock``),
so a job and an explain() from the kernel's thread never run the model at
once. A job that raises is logged by its owner and kept here, so that
:meth:`Jobs.wait` raises it in Python: nothing fails silently.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable


class Jobs:
    """A queue of callables run in order by one worker thread (started when needed)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._pending: deque[Callable[[], None]] = deque()
        self._thread: threading.Thread | None = None
        self._idle = threading.Event()
        self._idle.set()
        self._errors: list[BaseException] = []

    @property
    def busy(self) -> bool:
        """Whether a job is running or waiting."""
        return not self._idle.is_set()

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` after the jobs already submitted, in the worker thread."""
        with self._lock:
            self._pending.append(job)
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()

    def wait(self, timeout: float | None = None) -> None:
        """Block until every submitted job has run; raise the first error one raised.

        Raises:
            TimeoutError: jobs still run after ``timeout`` seconds.
            Exception: what a job raised since the last ``wait`` (the others
                were logged by their owner).
        """
        if threading.current_thread() is self._thread:
            raise RuntimeError("Jobs.wait() was called from a job; it would wait for itself.")
        if not self._idle.wait(timeout):
            raise TimeoutError(f"{self._name}: still computing after {timeout} s.")
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise errors[0]

    def forget_errors(self) -> None:
        """Drop the errors kept for :meth:`wait` (their owner has shown and logged them)."""
        with self._lock:
            self._errors = []

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._thread = None
                    self._idle.set()
                    return
                job = self._pending.popleft()
            try:
                job()
            except Exception as error:  # kept for wait(); the owner has shown and logged it
                with self._lock:
                    self._errors.append(error)
