"""Run one call in a background thread and collect its result (or exception) later.

What `concurrent.futures` offers, without the ~6 ms its import (and logging's) adds to
every `fwdoctor check`: the KB loads while the probes run, and a `--deep` probe's child
imports torch while the static probes read files.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """`func(*args)` started now in a daemon thread; `result()` waits for it."""

    def __init__(self, func: Callable[..., T], *args: Any) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(func, args), daemon=True)
        self._thread.start()

    def _run(self, func: Callable[..., T], args: tuple[Any, ...]) -> None:
        try:
            self._value = func(*args)
        except BaseException as exc:  # handed to the caller of result(), raised there
            self._error = exc

    def wait(self, seconds: float) -> bool:
        """Wait at most `seconds` for the call; True when it has finished."""
        self._thread.join(seconds)
        return not self._thread.is_alive()

    def result(self) -> T:
        """The call's return value; its exception, if it raised, is raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
