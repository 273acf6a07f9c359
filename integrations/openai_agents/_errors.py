"""The errors an ``AsidesSession`` raises on purpose, beyond the store's and the runtime's own (and
:class:`ReservedReaderError`, which every integration raises: its home is ``asides.integrations``)."""

from __future__ import annotations

from ...store._errors import AsidesError, InvalidArgumentError
from .._rules import ReservedReaderError  # every integration refuses those names (integrations/_rules.py)

__all__ = ["AsyncioRequiredError", "ConversationMismatchError", "ReservedReaderError"]


class ConversationMismatchError(InvalidArgumentError):
    """A session was opened on a conversation branch that records another session id (or none:
    a branch a host made itself). ``path`` is ``session_id``; the message names both ids.
    Nothing was written: two ids never share one conversation."""


class AsyncioRequiredError(AsidesError, RuntimeError):
    """The OpenAI Agents SDK's ``Runner`` called a session from an event loop that is not
    asyncio (under Trio, say): the SDK runs on asyncio only. Refused at the Runner's first
    session call, before anything is written; the message says what to do instead."""
