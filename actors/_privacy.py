"""A runtime's privacy calls, a part the runtime owns (``Runtime`` delegates its privacy methods
to its ``Privacy``): erasure, by message, by participant and by age (retention), and the record
of who was shown what (disclosures).

Erasure is the one edit that narrows past a floor and ignores claims: it removes the data rather
than hiding it. ``Runtime.erase`` writes one atomic commit (store/_erasure.py says which records
it reaches), then wakes every branch's drains: each manager starts its strategy again from what
remains when it next runs (``ContextManager._catch_up``), and its drain writes the erased
summaries again from the messages left.
"""

from __future__ import annotations

import datetime
import logging
import math
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel

from ..store._disclosure import Disclosure
from ..store._erasure import Erasure, Tombstone
from ..store._errors import ArgumentTypeError, InvalidArgumentError
from ..store._names import check_participant

if TYPE_CHECKING:
    from ..store._store import Store

__all__ = ["Disclosure", "Privacy", "RETENTION_REASON", "check_retain_for"]

log = logging.getLogger("asides.actors")

#: The reason retention erases with.
RETENTION_REASON = "retention"


def check_retain_for(value: object) -> float | None:
    """``retain_for`` as seconds: ``None``, or a positive ``datetime.timedelta``."""
    if value is None:
        return None
    if not isinstance(value, datetime.timedelta):
        raise ArgumentTypeError("retain_for", f"must be a datetime.timedelta or None, not {type(value).__name__}")
    seconds = value.total_seconds()
    if not seconds > 0 or not math.isfinite(seconds):
        raise InvalidArgumentError("retain_for", f"must be a positive duration, got {value!r}")
    return seconds


def _check_reason(reason: object) -> str:
    if not isinstance(reason, str):
        raise ArgumentTypeError("reason", f"an erasure's reason is a str, not {type(reason).__name__}")
    if not reason.strip():
        raise InvalidArgumentError("reason", "an erasure needs a reason (it is kept with its record)")
    return reason


class Privacy:
    """Erasure, retention and disclosures of one runtime (``Runtime``'s privacy methods say what
    each promises and refuses). ``wake_all_branches`` is called after every erasure that erased
    something, so that the runtime's drains look again."""

    def __init__(self, store: Store, wake_all_branches: Callable[[], None], *, retain_seconds: float | None) -> None:
        self._store = store
        self._wake_all_branches = wake_all_branches
        self._retain_seconds = retain_seconds

    async def erase(self, message_ids: Iterable[str], *, reason: str) -> Erasure:
        """What ``Runtime.erase`` promises."""
        ids = _check_ids(message_ids)
        return await self._erase(ids, _check_reason(reason))

    async def erase_participant(self, participant: str, *, reason: str) -> Erasure:
        """What ``Runtime.erase_participant`` promises."""
        check_participant(participant)
        reason = _check_reason(reason)
        await self._store.sync()
        ids: list[str] = []
        for page in self._store.model.message_pages():  # a page in memory at a time
            ids.extend(message.id for message in page if message.participant == participant)
            await anyio.lowlevel.checkpoint()
        return await self._erase(ids, reason)

    async def enforce_retention(self) -> Erasure:
        """What ``Runtime.enforce_retention`` promises."""
        if self._retain_seconds is None:
            raise InvalidArgumentError("retain_for", "this runtime was opened without retain_for, so it has no retention to enforce")
        await self._store.sync()
        cutoff = time.time() - self._retain_seconds
        ids: list[str] = []
        for page in self._store.model.message_pages():  # a page in memory at a time
            ids.extend(message.id for message in page if message.timestamp < cutoff)
            await anyio.lowlevel.checkpoint()
        return await self._erase(ids, RETENTION_REASON)

    async def _erase(self, ids: list[str], reason: str) -> Erasure:
        self._store.raise_if_failed()
        if not ids:
            return Erasure(0, (), 0, 0, reason, time.time())
        done = await self._store.erase(ids, reason=reason, at=time.time())
        if done is None:
            return Erasure(0, (), 0, 0, reason, time.time())
        log.info(
            "erasure %d: %d message(s), %d summaries invalidated (%s)",
            done.number,
            len(done.message_ids),
            done.summaries_invalidated,
            reason,
        )
        self._wake_all_branches()  # drains look again
        return done

    async def run_retention(self, every: float) -> None:
        """The supervised background task ``retain_for`` starts: enforce retention now and then
        every ``every`` seconds until the runtime closes. A failure is logged and tried again
        at the next turn."""
        while True:
            try:
                erased = await self.enforce_retention()
                if erased.message_ids:
                    log.info("retention erased %d message(s)", len(erased.message_ids))
            except Exception:
                log.exception("retention could not erase old messages; trying again in %.0f s", every)
            await anyio.sleep(every)

    def disclosures(self, message_id: str) -> tuple[Disclosure, ...]:
        """What ``Runtime.disclosures`` promises."""
        if not isinstance(message_id, str):
            raise ArgumentTypeError("message_id", f"a message id is a str, not {type(message_id).__name__}")
        return self._store.disclosures(message_id)

    def disclosures_to(self, reader: str | None) -> tuple[Disclosure, ...]:
        """What ``Runtime.disclosures_to`` promises."""
        return self._store.disclosures_to(reader)

    def erasures(self) -> tuple[Erasure, ...]:
        """What ``Runtime.erasures`` promises."""
        return self._store.erasures()

    def tombstone(self, message_id: str) -> Tombstone | None:
        """What ``Runtime.tombstone`` promises."""
        return self._store.tombstone(message_id)


def _check_ids(message_ids: object) -> list[str]:
    if isinstance(message_ids, str) or not isinstance(message_ids, Iterable):
        raise ArgumentTypeError("message_ids", "must be an iterable of message ids (str), e.g. [message.id]")
    ids = list(message_ids)
    for index, message_id in enumerate(ids):
        if not isinstance(message_id, str):
            raise ArgumentTypeError(f"message_ids[{index}]", f"a message id is a str, not {type(message_id).__name__}")
    return ids
