"""The keys of the strategy-state records written under one namespace on one branch, as its
actor learns of them: what ``StrategyState.revision`` and ``StrategyState.written_since`` answer.

A strategy that keeps its records' meaning in memory remembers the revision it last took in and
asks for the keys written since. The actor keeps the newest keys only (at least
:data:`WRITTEN_WINDOW`, at most twice as many), so what it holds does not grow with how long it
lives; a revision older than what it holds is answered by the store instead: every key of the
namespace whose record on the branch was written after the actor started, each once, oldest
first. That answer may hold keys written before the revision asked for too; a strategy that
reads each key's current value (as every built-in one does) takes them in alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

__all__ = ["WRITTEN_WINDOW", "WrittenKeys"]

#: How many of the newest keys an actor keeps at least (and at most twice as many).
WRITTEN_WINDOW: Final = 1024


class WrittenKeys:
    """The keys written under a namespace since its actor started, in the order it learnt of
    them: the newest ones held (``window``, :data:`WRITTEN_WINDOW` when not given, and at most
    twice as many), older ones asked of ``since_start`` (every key written since the actor
    started, each once, oldest first)."""

    __slots__ = ("_held", "_dropped", "_window", "_since_start")

    def __init__(self, since_start: Callable[[], Iterable[str]], window: int | None = None) -> None:
        window = WRITTEN_WINDOW if window is None else window
        if window < 1:
            raise ValueError(f"window must be at least 1, not {window!r}")
        self._held: list[str] = []
        self._dropped = 0  # how many of the oldest keys were let go
        self._window = window
        self._since_start = since_start

    @property
    def revision(self) -> int:
        """How many keys were written since the actor started."""
        return self._dropped + len(self._held)

    @property
    def held(self) -> int:
        """How many keys are held (at most twice the window)."""
        return len(self._held)

    def add(self, keys: Iterable[str]) -> None:
        """Keys written now, oldest first."""
        self._held.extend(keys)
        if len(self._held) > 2 * self._window:
            drop = len(self._held) - self._window
            del self._held[:drop]
            self._dropped += drop

    def since(self, revision: int) -> tuple[str, ...]:
        """The keys written since ``revision``, oldest first: exactly those, when held; else
        every key written since the actor started, each once (a superset)."""
        if revision >= self._dropped:
            return tuple(self._held[revision - self._dropped :])
        return tuple(self._since_start())
