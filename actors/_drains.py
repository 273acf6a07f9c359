"""Supervised compression drains (SPEC D3, F).

A drain is a task in the runtime's task group, one per compressing manager at a time, started
when the manager's strategy has work. It runs the strategy's ``tick`` (one unit of work, in the
namespace actor's turn, with the model request made outside it) until ``tick`` returns ``False``.
It stops when the namespace actor reports a claim change that leaves the manager stale (its
cancel scope is cancelled, so a pending request is abandoned), when the manager closes or moves,
or when the runtime closes. Model errors are logged and retried with back-off (1 s doubling to
5 min; only an answer from the model starts it again at 1 s, so units that ask nothing, such as
closing chunks, do not hide a failing model); they never take the runtime down. Cancellation
always propagates.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from ._errors import ManagerClosedError, ReaderClaimError, ReaderRecordError, StrategyNotStartedError

if TYPE_CHECKING:
    from ._manager import ContextManager

__all__ = ["run_drain", "FIRST_BACKOFF", "MAX_BACKOFF"]

log = logging.getLogger("asides.drains")

FIRST_BACKOFF = 1.0
MAX_BACKOFF = 300.0


async def run_drain(manager: ContextManager) -> None:
    """Tick ``manager`` until its strategy has nothing (more) to do or it may not go on."""
    backoff = FIRST_BACKOFF
    while True:
        answered = manager._answers
        try:
            did = await manager._tick_unit()
        except (ReaderClaimError, ReaderRecordError) as exc:
            log.warning("drain of namespace %r on %r stopped: %s", manager.namespace, manager.branch, exc)
            return
        except (ManagerClosedError, StrategyNotStartedError):
            return
        except Exception as exc:
            log.warning(
                "drain of namespace %r on %r: a unit failed (%r); it stays pending, retrying in %.0f s",
                manager.namespace,
                manager.branch,
                exc,
                backoff,
            )
            manager._signal()
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)
            continue
        if manager._answers != answered:
            backoff = FIRST_BACKOFF  # the model answered: it is healthy again
        if not did:
            return
