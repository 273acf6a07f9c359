"""What a store tells its listeners (``store.add_listener``): one event per write, after the
write is in memory. A PostgreSQL store tells of other processes' commits with subclasses of
these (``...Elsewhere``, store/_rows.py)."""

from __future__ import annotations

import attrs

from ._erasure import Erasure
from ._messages import Message
from ._model_parts import BranchInfo

__all__ = ["BranchCreated", "MessageEdited", "MessagesAppended", "MessagesErased", "StatesWritten", "StoreEvent", "StrategyNoted"]


@attrs.frozen
class MessagesAppended:
    """Messages appended to ``branch``, in order."""

    branch: str
    messages: tuple[Message, ...]


@attrs.frozen
class MessageEdited:
    """A message of ``branch`` replaced: as it was and as it is."""

    branch: str
    before: Message
    after: Message


@attrs.frozen
class StatesWritten:
    """State records written on ``branch``, by key."""

    branch: str
    keys: tuple[str, ...]


@attrs.frozen
class BranchCreated:
    """A new branch."""

    info: BranchInfo


@attrs.frozen
class MessagesErased:
    """An erasure (store/_erasure.py): its messages are tombstones on every branch, and the
    records derived from them are gone. ``branch`` is the erasure records' own (``""``)."""

    branch: str
    erasure: Erasure


@attrs.frozen
class StrategyNoted:
    """A strategy note (store/_notes.py): ``namespace`` on ``branch`` runs another strategy. It
    took no sequence of the branch."""

    branch: str
    namespace: str


StoreEvent = MessagesAppended | MessageEdited | StatesWritten | BranchCreated | MessagesErased | StrategyNoted
