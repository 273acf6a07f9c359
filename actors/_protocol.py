"""The messages a namespace actor receives in its inbox.

An actor handles one inbox item at a time, in order:

* :class:`TurnRequest`: lend the actor's turn to the requesting task (a manager's compile, edit,
  strategy start or tick; a drain's unit of work). The actor grants it and waits until the
  requester releases it, so the requester's work runs in its own task (its errors and
  cancellation stay its own) while nothing else touches the namespace. A requester that gives up
  before the grant is skipped.
* :class:`MessagesAdded`: messages written on the actor's branch (through any manager); the actor
  hands each attached manager's strategy the reader's view of each (SPEC F, A4).
* :class:`MessageChanged`: a message edited on the branch; attached managers re-check readiness.
"""

from __future__ import annotations

import anyio
import attrs

from ..store._messages import Message

__all__ = ["TurnRequest", "MessagesAdded", "MessageChanged", "InboxItem"]


class TurnRequest:
    """A request for the actor's turn."""

    __slots__ = ("granted", "released", "abandoned")

    def __init__(self) -> None:
        self.granted = anyio.Event()
        self.released = anyio.Event()
        self.abandoned = False


@attrs.frozen
class MessagesAdded:
    messages: tuple[Message, ...]


@attrs.frozen
class MessageChanged:
    message: Message


InboxItem = TurnRequest | MessagesAdded | MessageChanged
