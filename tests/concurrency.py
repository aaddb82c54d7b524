"""Running a function from many threads at once, to show a race (or that it is gone)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def all_at_once(function: Callable[[], object], threads: int = 8) -> list:
    """``function()``'s results from ``threads`` threads released together by a barrier (a thread's
    error is raised here)."""
    barrier = threading.Barrier(threads)
    results: list = [None] * threads
    errors: list = []

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = function()
        except BaseException as error:  # re-raised in the caller
            errors.append(error)

    workers = [threading.Thread(target=run, args=(index,)) for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]
    return results
