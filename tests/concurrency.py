"""Running test jobs in real threads, released at once (shared by the thread tests)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

#: Only reached if a thread hangs: a deadlock is a failure, not a wait.
JOIN_TIMEOUT = 120.0


def run_together(jobs: list[Callable[[], Any]], timeout: float = JOIN_TIMEOUT) -> list[Any]:
    """Run the jobs in threads released at once by a barrier; their results or exceptions."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def worker(index: int) -> None:
        barrier.wait()
        try:
            results[index] = jobs[index]()
        except BaseException as error:  # handed to the test thread
            results[index] = error

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(thread.is_alive() for thread in threads), "a thread hung (deadlock?)"
    return results
