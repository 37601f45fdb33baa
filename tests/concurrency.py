"""Run a test worker on several threads at once and collect what they raise."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def run_on_threads(worker: Callable[[int], Any], count: int) -> list[BaseException]:
    """Start ``worker(0) ... worker(count - 1)`` on threads, join them, return the exceptions raised."""
    errors: list[BaseException] = []

    def guarded(k: int) -> None:
        try:
            worker(k)
        except BaseException as err:  # noqa: BLE001 - returned to the test
            errors.append(err)

    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors
