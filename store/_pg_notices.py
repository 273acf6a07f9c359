"""When a PostgreSQL store's commits announce themselves to the other processes (``NOTIFY``): a
rule on times alone, with no I/O, so that it can be tested directly.

A commit announces itself when the last announcement is :data:`NOTICE_GAP` old, or while other
processes write (they must hear of each commit at once, or their next commits find their ids
taken). Otherwise the announcement is owed, and made :data:`NOTICE_GAP` after the last at the
latest, covering every commit made meanwhile. A lone commit is announced at once; a busy writer
announces a few of its commits, not each one (an announcement costs about a fifth of a commit,
docs/postgres.md).
"""

from __future__ import annotations

import math

__all__ = ["NOTICE_GAP", "OTHERS_WRITING_SECONDS", "Notices"]

#: The shortest time between two announcements of a writer no other process writes beside.
NOTICE_GAP = 0.002
#: For this long after another process was last seen writing, every commit announces itself.
OTHERS_WRITING_SECONDS = 1.0


class Notices:
    """One store's announcements. Times are the event loop's clock, in seconds."""

    def __init__(self, *, gap: float | None = None) -> None:
        self.gap = NOTICE_GAP if gap is None else gap
        #: Whether a commit was made that no announcement covers yet.
        self.owed = False
        self._announced_at = -math.inf
        self._others_writing_until = -math.inf

    def due(self, now: float) -> bool:
        """Whether a commit made ``now`` is to announce itself."""
        return now >= self._announced_at + self.gap or now < self._others_writing_until

    def committed(self, announced: bool, now: float) -> bool:
        """A commit was made at ``now``, announcing itself or not. Returns whether an
        announcement has just become owed (the idle committer's wait then needs a deadline)."""
        if announced:
            self._announced_at = now
            self.owed = False
            return False
        newly = not self.owed
        self.owed = True
        return newly

    def others_write(self, now: float) -> None:
        """Another process was seen writing at ``now`` (its commit heard of, or its ids met)."""
        self._others_writing_until = now + OTHERS_WRITING_SECONDS

    def owed_at(self) -> float:
        """When the owed announcement is to be made (infinite when none is owed). A wait until
        this time, and :meth:`due` at it, agree: both compare against the same sum."""
        return self._announced_at + self.gap if self.owed else math.inf
