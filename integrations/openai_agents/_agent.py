"""One agent's session on one conversation, inside the runtime's event loop.

**Conversations.** A conversation (a ``session_id``) is a branch of its own,
``openai-agents/<session_id>``, forked from ``main`` at sequence 0, so it shares nothing with
``main`` or with any other conversation, and a write on it reaches only the agents on it. An id
that cannot be a branch name (too long, holding a control character), and every id that starts
with ``~``, names the branch ``openai-agents/~<sha256 of the id>``: no id is used as it is where
it could be mistaken for a hashed name, so two ids never name one branch. The branch records the
id it was made for, and an open whose branch records another id (or none) is refused
(:class:`ConversationMismatchError`).

**Agents.** Each agent on a conversation is a reader (or no reader) and has, on that branch:

* its records ``openai-agents/<agent>/session`` (``{"start", "generation", "revision"}``) and
  ``openai-agents/<agent>/popped/<message id>``, where ``<agent>`` is the reader's name (``~``
  for no reader; ``~<sha256>`` for a name holding ``/``, starting with ``~`` or too long);
* its namespace ``openai-agents/<agent>/<generation>``, claimed for its reader, which holds its
  memories (the strategy's state) and its narrowing floor.

**An append-only log, and removing items from one agent's view.** Nothing is ever deleted:
``pop_item`` writes a ``popped`` record for the message, ``clear_session`` moves ``start`` to the
branch's head and starts a new generation (a fresh namespace: no memory of what came before).
The agent's manager reads the branch through a view filter that leaves out messages at or before
``start`` and popped ones, so its compiles, its compression and its ``get_items`` no longer see
them; every other agent's view is untouched. Both writes bump ``revision``; a session that finds
the stored revision changed (another session object of the same agent) reopens its manager.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import attrs

from ...actors._manager import ContextManager
from ...actors._runtime import Runtime, internal_store
from ...store._blocks import content_for_reader
from ...store._messages import Message
from ...store._names import MAX_NAME_LENGTH, name_problem
from ...strategies._base import CompiledMessage
from ...strategies._models import Model
from .._rules import body_of, edited_messages, wholly_visible, write_batch
from ._errors import ConversationMismatchError
from ._items import prepare_items, session_record, speaker_of
from ._render import compile_items, current_item

__all__ = ["Agent", "branch_of", "agent_segment"]

PREFIX = "openai-agents"
UNBOUNDED = 2**62  # the budget of a session's compile: everything its strategy selects
_SCAN = 64  # messages read at a time when looking for the newest item to pop


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def branch_of(session_id: str) -> str:
    """The branch of the conversation ``session_id`` (see the module docstring): one branch per
    id, never the same for two ids (short of a SHA-256 collision)."""
    name = f"{PREFIX}/{session_id}"
    if session_id.startswith("~") or name_problem(name) is not None:
        return f"{PREFIX}/~{_digest(session_id)}"
    return name


SESSION_META = "openai_agents_session"
"""The key of a conversation branch's meta that records the session id it was made for."""


def agent_segment(reader: str | None) -> str:
    """The path segment naming an agent in its records and namespaces."""
    if reader is None:
        return "~"
    if "/" in reader or reader.startswith("~") or len(reader) > MAX_NAME_LENGTH // 2:
        return f"~{_digest(reader)}"
    return reader


@attrs.frozen
class ViewRule:
    """Which messages of the branch an agent's view holds: after ``start``, not popped."""

    start: int
    popped: frozenset[str]

    def __call__(self, message: Message) -> bool:
        return message.sequence > self.start and message.id not in self.popped


class _Hub:
    """Per runtime (``Runtime.attachment``): one lock per conversation, held by every session
    call on it, so that a batch of items stays together and a pop sees the newest item."""

    def __init__(self) -> None:
        self._locks: dict[str, anyio.Lock] = {}

    def lock(self, branch: str) -> anyio.Lock:
        lock = self._locks.get(branch)
        if lock is None:
            lock = self._locks[branch] = anyio.Lock()
        return lock


def _hub(runtime: Runtime) -> _Hub:
    return runtime.attachment(_Hub)


class Agent:
    """An agent's session state. It may be made anywhere; every method runs in the runtime's
    event loop (``open`` first)."""

    def __init__(
        self, runtime: Runtime, session_id: str, *, reader: str | None, strategy: Any, model: Model | None, private_tool_calls: bool
    ) -> None:
        self.runtime = runtime
        self.session_id = session_id
        self.reader = reader
        self.private_tool_calls = private_tool_calls
        self.speaker = speaker_of(reader)
        self.branch = branch_of(session_id)
        self.records = f"{PREFIX}/{agent_segment(reader)}"
        self._writes = runtime.integration_records(self.records)
        self._strategy = strategy
        self._model = model
        self._lock: anyio.Lock | None = None
        self._manager: ContextManager | None = None
        self._rule = ViewRule(0, frozenset())
        self._revision: int | None = None
        self._state: dict[str, int] = {"start": 0, "generation": 0, "revision": 0}

    @property
    def namespace(self) -> str:
        return f"{self.records}/{self._state['generation']}"

    @property
    def lock(self) -> anyio.Lock:
        """The conversation's lock in this runtime, held by every call of every session on it."""
        assert self._lock is not None, "the session is not open"
        return self._lock

    @property
    def manager(self) -> ContextManager:
        assert self._manager is not None, "the session is not open"
        return self._manager

    # -- opening, and following the agent's records -------------------------------------------

    async def open(self) -> None:
        """Make the conversation's branch when it is new, and open the agent's manager."""
        self._lock = _hub(self.runtime).lock(self.branch)
        async with self.lock:
            store = self.runtime.store
            recorded = _storable(self.session_id)
            if not store.has_branch(self.branch):
                await self._writes.create_branch(self.branch, "main", 0, meta={SESSION_META: recorded})
            else:
                found = store.branch_meta(self.branch).get(SESSION_META)
                if found != recorded:
                    said = "records no session id" if found is None else f"records the session id {found!r}"
                    raise ConversationMismatchError(
                        "session_id",
                        f"the conversation {self.session_id!r} would be the branch {self.branch!r}, which {said}: "
                        "two ids never share a conversation, so this open was refused and nothing was written",
                    )
            await self._follow()

    def _stored_state(self) -> dict[str, int]:
        value = self.runtime.store.get_state(self.branch, f"{self.records}/session")
        state = {"start": 0, "generation": 0, "revision": 0}
        if isinstance(value, Mapping):
            for key in state:
                if isinstance(value.get(key), int) and not isinstance(value.get(key), bool):
                    state[key] = value[key]
        return state

    async def _follow(self) -> None:
        """(Re)open the manager when the agent's records changed since it was opened."""
        state = self._stored_state()
        if self._manager is not None and state["revision"] == self._revision:
            return
        prefix = f"{self.records}/popped/"
        popped = frozenset(key[len(prefix) :] for key in self.runtime.store.state_items(self.branch, prefix))
        if self._manager is not None:
            await self._manager.aclose()
            self._manager = None
        self._state = state
        self._rule = ViewRule(state["start"], popped)
        self._manager = await self.runtime.open_manager(
            self.namespace,
            strategy=self._strategy,
            view_reader=self.reader,
            view_filter=self._rule,
            branch=self.branch,
            model=self._model,
        )
        self._revision = state["revision"]

    async def _write_records(self, records: dict[str, Any], **changes: int) -> None:
        state = dict(self._state, revision=self._state["revision"] + 1, **changes)
        records[f"{self.records}/session"] = state
        await self._writes.set_states(self.branch, records)
        await self._follow()

    # -- the session's calls ------------------------------------------------------------------

    async def get_items(self, limit: int | None) -> list[Any]:
        """The agent's compile as items, the newest ``limit`` of them (``None``: all; a negative
        limit: all, as SQLite's ``LIMIT -1``; ``0``: none)."""
        async with self.lock:
            await self._follow()
            store = self.runtime.store
            manager = self.manager
            ctx = await manager.compile(max_tokens=UNBOUNDED, reserve_for_response=0)
            items = compile_items(
                ctx,
                speaker=self.speaker,
                reader=manager.view_reader,
                stored=lambda i: store.get_message(self.branch, i),
                edited=edited_messages(internal_store(self.runtime), self.branch),
            )
        if limit is None or limit < 0:
            return items
        return items[-limit:] if limit else []

    async def add_items(self, items: Sequence[Any], audience: tuple[str, ...] | None) -> None:
        """Add every item, in order; refused as a whole (nothing written) when one is malformed.
        Without ``audience``, the agent's tool calls and outputs are for its reader alone when
        its tool calls are private (``integrations/_rules.py``)."""
        prepared = prepare_items(
            items, speaker=self.speaker, reader=self.reader, audience=audience, private_tool_calls=self.private_tool_calls
        )
        async with self.lock:
            await self._follow()
            await write_batch(self.manager, prepared)

    async def pop_item(self) -> Any:
        """Leave the newest item this agent added out of its view, and return it (``None`` when
        its view holds none)."""
        async with self.lock:
            await self._follow()
            found = self._newest_own()
            if not found:
                return None
            record = session_record(found[0])
            assert record is not None
            edited = edited_messages(internal_store(self.runtime), self.branch)
            await self._write_records({f"{self.records}/popped/{m.id}": True for m in found})
            if record.item_json is not None and not any(edited(m) for m in found):
                return record.item()
            # edited since it was added: the item as it reads now, not the copy saved with it
            blocks = tuple(b for m in found for b in content_for_reader(m.content, self.reader))
            return current_item(CompiledMessage(found[0].participant, blocks), self.speaker)

    def _newest_own(self) -> list[Message]:
        """The messages of the newest item in this agent's view that it added (several when the
        item was stored as shards), or ``[]``."""
        store = self.runtime.store
        rule = self._rule
        stop = store.length(self.branch)
        while stop > 0:
            chunk = store.messages(self.branch, max(0, stop - _SCAN), stop)
            for message in reversed(chunk):
                if message.sequence <= rule.start:
                    return []
                record = session_record(message)
                if not rule(message) or record is None or record.reader != self.reader:
                    continue
                if not wholly_visible(message, self.reader):
                    continue
                return self._shards_of(message)
            stop -= len(chunk)
        return []

    def _shards_of(self, message: Message) -> list[Message]:
        body = body_of(message)
        if body is None:
            return [message]
        return [m for m in self.runtime.store.messages(self.branch) if m.metadata.get("body_id") == body]

    async def clear(self) -> None:
        """Empty this agent's view: everything up to now is left out, its memories start afresh."""
        async with self.lock:
            await self._follow()
            head = self.runtime.store.head(self.branch)
            await self._write_records({}, start=head, generation=self._state["generation"] + 1)

    async def drain(self) -> None:
        async with self.lock:
            await self._follow()
            manager = self.manager
        await manager.drain()

    async def aclose(self) -> None:
        if self._manager is not None:
            manager, self._manager = self._manager, None
            await manager.aclose()



def _storable(value: str) -> str:
    """``value`` with any lone surrogate replaced, so that it can be stored as text."""
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
