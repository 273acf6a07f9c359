"""``AsidesSessionService``: Google ADK's ``BaseSessionService`` over an asides store.

**Sessions.** An ADK session (``app_name``, ``user_id``, ``id``) is a branch of its own,
``adk/<app>/<user>/<id>``, forked from ``main`` at sequence 0: it shares nothing with ``main`` or
with another session, and a write on it reaches only the agents on it. A name part that holds
``/``, starts with ``~`` or would make the branch name too long, and every session made again
after a delete, names the branch ``adk/~<sha256>`` instead, so two sessions never share a branch.
The branch records the session it was made for (its meta ``adk_session``).

**Records** (``Runtime.integration_records("adk")``, on ``main``): one per session,
``adk/session/<app>/<user>/<id>`` (its state, its branch, its last update time and revision, and
whether it was deleted); one per app, ``adk/app/<app>`` (``app:`` state), one per user,
``adk/user/<app>/<user>`` (``user:`` state). A name part is used as it is, or as ``~<sha256>``
when it holds ``/`` or starts with ``~``. ``temp:`` state is never written.

**Events.** Each event with content is a line of the session's branch, said by its author
(``integrations/adk/_events.py``); an event with no content (a state change, an agent's end) is a
record on the session's branch, ``adk/event/<position>.<n>``, where ``position`` is how many lines
the branch held when it was appended. An agent's tool call is written together with its results
(one private message, or the call and its results as two public ones, ``private_tool_calls``): a
call is held in the service until the event answering it is appended, and a call whose answer
never comes (a run cancelled while its tool ran) is never written, nor are the events with which
ADK seals an aborted run (``error_code`` ``INVOCATION_ABORTED``: an error answering each call
still waiting, or a mark when none was; google-adk 2.15 on). A call ADK marks long-running
(its answer comes in a later invocation) is written at once.

All work runs in the runtime's event loop (``integrations/_loop.py``): a runtime given to the
constructor is used in its own loop (make the service there); a path or URL opens a runtime of
the service's own on a thread of its own on first use (``integrations/_host.py``), shared with
every other integration object on that store in this process, and closed by :meth:`close`.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions import _session_util
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from ...actors._manager import ContextManager
from ...actors._runtime import internal_store
from ...store._errors import ArgumentTypeError, InvalidArgumentError
from ...store._messages import Message
from ...store._names import MAX_NAME_LENGTH, check_participant, name_problem
from ...strategies._base import ContextStrategy
from ...strategies._passthrough import PassthroughStrategy
from .._host import ThreadHost, acquire_host, release_host
from .._loop import LoopHandle, RuntimeClosedError
from .._rules import agent_reader, answered_calls, check_private_tool_calls, edited_messages, made_calls, write_batch
from .._shared import Prepared, Said, batches, plan_for
from ._events import KEY, USER, audience_of, events_of, metadata_for, private_content, said_of, shell_json
from ._plugin import AsidesPlugin

if TYPE_CHECKING:
    from ...actors._runtime import Runtime
    from ...store._search import SearchHit
    from ...strategies._provider_plan import Segment

__all__ = ["AsidesSessionService", "ServiceClosedError"]

log = logging.getLogger("asides.adk")
#: The ``error_code`` of the events with which ADK seals an aborted run (its
#: ``events._abort_events``): made up by ADK, never written (the module docstring).
ABORTED = "INVOCATION_ABORTED"

T = TypeVar("T")
UNBOUNDED = 2**62  # the budget of an agent's compile: everything its strategy selects
SESSION_META = "adk_session"
_SCAN = 64  # messages read at a time when reading a session's tail
_MANAGERS = 32  # open managers a runtime keeps for ADK sessions (the least recently used close)
LOCKED_HINT = (
    "An AsidesSessionService built from a path opens a runtime of its own on its file; if this process's host runtime "
    "holds the file, give the service that runtime: AsidesSessionService(rt)"
)


class ServiceClosedError(RuntimeClosedError):
    """The service was used after :meth:`AsidesSessionService.close`, or after its runtime closed."""


def _digest(*values: str) -> str:
    joined = "\x00".join(values)
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def segment(value: str) -> str:
    """A name part as it stands in a branch or record name (``~<sha256>`` when it cannot)."""
    if not value or "/" in value or value.startswith("~") or len(value) > 64 or name_problem(value) is not None:
        return f"~{_digest(value)}"
    return value


def _text(value: object, path: str, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(path, f"must be a string, not {type(value).__name__}")
    if not value and not empty:
        raise InvalidArgumentError(path, "must not be empty")
    return value


def branch_of(app_name: str, user_id: str, session_id: str, generation: int) -> str:
    """The branch of a session (see the module docstring)."""
    name = f"{KEY}/{segment(app_name)}/{segment(user_id)}/{segment(session_id)}"
    if generation or any(s.startswith("~") for s in name.split("/")[1:]) or name_problem(name, limit=MAX_NAME_LENGTH) is not None:
        return f"{KEY}/~{_digest(app_name, user_id, session_id, str(generation))}"
    return name


def session_key(app_name: str, user_id: str | None = None, session_id: str | None = None) -> str:
    """The record key of a session, or the prefix of an app's (and a user's) sessions."""
    key = f"{KEY}/session/{segment(app_name)}/"
    if user_id is not None:
        key += f"{segment(user_id)}/"
        if session_id is not None:
            key += segment(session_id)
    return key


def app_key(app_name: str) -> str:
    return f"{KEY}/app/{segment(app_name)}"


def user_key(app_name: str, user_id: str) -> str:
    return f"{KEY}/user/{segment(app_name)}/{segment(user_id)}"


EVENT_RECORDS = f"{KEY}/event/"


def _strategy_factory(strategy: object) -> Callable[[], Any]:
    """Each manager's own strategy: a fresh ``PassthroughStrategy()``, a copy of the strategy
    given (which is never used itself), or what a factory returns."""
    if strategy is None:
        return PassthroughStrategy
    if isinstance(strategy, ContextStrategy):
        return lambda: copy.deepcopy(strategy)
    if callable(strategy):
        return strategy
    raise ArgumentTypeError("strategy", f"must be a strategy, a function returning one, or None, not {type(strategy).__name__}")


class _Shared:
    """Per runtime (``Runtime.attachment``): one lock per session record, and the managers ADK
    sessions use (a writer per branch, a reader's per branch and agent), the least recently used
    closed beyond :data:`_MANAGERS`."""

    def __init__(self) -> None:
        self._locks: dict[str, anyio.Lock] = {}
        self._managers: OrderedDict[tuple[str, str | None], ContextManager] = OrderedDict()
        self._opening = anyio.Lock()

    def lock(self, key: str) -> anyio.Lock:
        found = self._locks.get(key)
        if found is None:
            found = self._locks[key] = anyio.Lock()
        return found

    async def manager(self, runtime: Runtime, branch: str, reader: str | None, strategy: Callable[[], Any]) -> ContextManager:
        async with self._opening:
            found = self._managers.get((branch, reader))
            if found is not None and not found.closed:
                self._managers.move_to_end((branch, reader))
                return found
            namespace = f"{KEY}/writer" if reader is None else f"{KEY}/agent/{segment(reader)}"
            opened = await runtime.open_manager(namespace, strategy=strategy(), view_reader=reader, branch=branch)
            self._managers[branch, reader] = opened
            while len(self._managers) > _MANAGERS:
                (old_branch, _), old = next(iter(self._managers.items()))
                if self.lock(old_branch).locked():
                    break  # in use: kept until a later open
                self._managers.popitem(last=False)
                await old.aclose()
            return opened


class AsidesSessionService(BaseSessionService):
    """ADK's session service on an asides store: sessions, their events, and ``app:``, ``user:``
    and session state, durable across service objects and processes; ``temp:`` state lives in
    the session object only, as in every ADK service.

    ``store`` is a store path, a PostgreSQL URL or an open ``asides.Runtime`` (then make the
    service in the runtime's event loop; it works there). ``strategy`` decides what each agent's
    view holds (:meth:`plugin`): ``None`` is ``PassthroughStrategy()``; a strategy object is
    copied for each agent's manager (it serves as a template); a function returning a strategy is
    called for each. With ``private_tool_calls`` (the default, as for every asides integration)
    an agent's tool calls and their results are for its reader alone; its answers are public.

    Refuses a ``store`` that is no path, URL or runtime, a runtime outside its own event loop and
    a ``private_tool_calls`` that is no bool, with an :class:`~asides.AsidesError`, having opened
    nothing. Every method may be called from any asyncio loop or thread.
    """

    def __init__(self, store: str | Path | Runtime, *, strategy: Any = None, private_tool_calls: bool = True) -> None:
        self._private_tool_calls = check_private_tool_calls(private_tool_calls)
        self._strategy = _strategy_factory(strategy)
        self._pending: dict[tuple[str, str], list[Event]] = {}
        self._closed = False
        self._host: ThreadHost | None = None
        self._opening = threading.Lock()
        if isinstance(store, (str, Path)):
            _text(str(store), "store")
            self._path: str | Path | None = store
            self._runtime: Runtime | None = None
            self._loop: LoopHandle | None = None
        elif hasattr(store, "open_manager") and hasattr(store, "start_soon"):
            self._path = None
            self._runtime = store
            try:
                self._loop = LoopHandle.here(store.start_soon, closed=ServiceClosedError)
            except Exception:
                raise InvalidArgumentError(
                    "store", "a runtime is used in its own event loop: make the service inside the runtime's block"
                ) from None
        else:
            raise ArgumentTypeError("store", f"must be a store path, a PostgreSQL URL or an asides Runtime, not {type(store).__name__}")

    # -- the runtime ----------------------------------------------------------------------------

    @property
    def private_tool_calls(self) -> bool:
        """Whether an agent's tool calls and their results are for its reader alone."""
        return self._private_tool_calls

    def _acquire(self) -> None:
        with self._opening:
            if self._closed:
                raise ServiceClosedError("the session service is closed")
            if self._loop is None:
                assert self._path is not None
                host = acquire_host(self._path, hint=LOCKED_HINT)
                self._host, self._runtime, self._loop = host, host.runtime, host.loop_as(ServiceClosedError)

    async def _ready(self) -> tuple[Runtime, LoopHandle]:
        if self._closed:
            raise ServiceClosedError("the session service is closed")
        if self._loop is None:  # opened on first use, off the caller's loop (starting a host waits)
            await anyio.to_thread.run_sync(self._acquire)
        assert self._runtime is not None and self._loop is not None
        return self._runtime, self._loop

    async def _call(self, fn: Callable[[Runtime], Awaitable[T]], *, writes: bool = False) -> T:
        runtime, loop = await self._ready()
        return await (loop.finish if writes else loop.run)(lambda: fn(runtime))

    @property
    def runtime(self) -> Runtime:
        """The runtime the service works in (opened now when the service opens its own)."""
        if self._loop is None:
            self._acquire()
        assert self._runtime is not None
        return self._runtime

    async def close(self) -> None:
        """Close the service (idempotent). A service built from a path releases its runtime (the
        last object on the store closes it); one given a runtime leaves it open."""
        with self._opening:
            if self._closed:
                return
            self._closed = True
            host, self._host = self._host, None
        if host is not None:
            await anyio.to_thread.run_sync(release_host, host)

    # -- records ----------------------------------------------------------------------------------

    @staticmethod
    def _record(runtime: Runtime, key: str) -> dict[str, Any] | None:
        value = runtime.store.get_state("main", key)
        return dict(value) if isinstance(value, Mapping) else None

    @staticmethod
    def _scoped(runtime: Runtime, key: str) -> dict[str, Any]:
        value = runtime.store.get_state("main", key)
        state = value.get("state") if isinstance(value, Mapping) else None
        return dict(state) if isinstance(state, Mapping) else {}

    def _merged(self, runtime: Runtime, record: Mapping[str, Any]) -> dict[str, Any]:
        state = dict(record.get("state") or {})
        for key, value in self._scoped(runtime, app_key(record["app_name"])).items():
            state[State.APP_PREFIX + key] = value
        for key, value in self._scoped(runtime, user_key(record["app_name"], record["user_id"])).items():
            state[State.USER_PREFIX + key] = value
        return copy.deepcopy(state)

    @staticmethod
    def _scope_writes(runtime: Runtime, app_name: str, user_id: str, deltas: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
        writes: dict[str, Any] = {}
        if deltas["app"]:
            key = app_key(app_name)
            state = AsidesSessionService._scoped(runtime, key)
            state.update(deltas["app"])
            writes[key] = {"app_name": app_name, "state": state}
        if deltas["user"]:
            key = user_key(app_name, user_id)
            state = AsidesSessionService._scoped(runtime, key)
            state.update(deltas["user"])
            writes[key] = {"app_name": app_name, "user_id": user_id, "state": state}
        return writes

    def _session(self, runtime: Runtime, record: Mapping[str, Any], events: list[Event]) -> Session:
        session = Session(
            app_name=record["app_name"],
            user_id=record["user_id"],
            id=record["id"],
            state=self._merged(runtime, record),
            events=events,
            last_update_time=float(record.get("update_time", 0.0)),
        )
        session._storage_update_marker = str(record.get("revision", 0))
        return session

    # -- BaseSessionService -----------------------------------------------------------------------

    async def create_session(
        self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None, session_id: str | None = None
    ) -> Session:
        """A new session, empty, with ``state`` (``app:`` and ``user:`` keys go to the app's and
        the user's state, ``temp:`` keys nowhere). ``session_id`` (stripped of surrounding
        blanks) or a fresh id names it. Refuses an id in use (``AlreadyExistsError``, ADK's own)
        and malformed names or state (:class:`~asides.AsidesError`), writing nothing."""
        _text(app_name, "app_name")
        _text(user_id, "user_id")
        if session_id is not None:
            session_id = _text(session_id, "session_id", empty=True).strip() or None
        if state is not None and not isinstance(state, Mapping):
            raise ArgumentTypeError("state", f"must be a dict, not {type(state).__name__}")
        deltas = _session_util.extract_json_safe_state_delta(dict(state or {}))
        sid = session_id or uuid.uuid4().hex

        async def create(runtime: Runtime) -> Session:
            key = session_key(app_name, user_id, sid)
            async with runtime.attachment(_Shared).lock(key):
                found = self._record(runtime, key)
                if found is not None and not found.get("deleted"):
                    raise AlreadyExistsError(f"Session with id {sid} already exists.")
                generation = int(found.get("generation", 0)) + 1 if found is not None else 0
                branch = branch_of(app_name, user_id, sid, generation)
                meta = {"app_name": app_name, "user_id": user_id, "id": sid, "generation": generation}
                store = runtime.store
                records = runtime.integration_records(KEY)
                if not store.has_branch(branch):
                    await records.create_branch(branch, "main", 0, meta={SESSION_META: meta})
                elif store.branch_meta(branch).get(SESSION_META) != meta:
                    raise InvalidArgumentError("session_id", f"the branch {branch!r} is held by another session; nothing was written")
                now = time.time()
                record = {
                    "app_name": app_name,
                    "user_id": user_id,
                    "id": sid,
                    "branch": branch,
                    "generation": generation,
                    "created": now,
                    "update_time": now,
                    "revision": 0,
                    "state": deltas["session"],
                    "deleted": False,
                }
                writes = self._scope_writes(runtime, app_name, user_id, deltas)
                writes[key] = record
                await records.set_states("main", writes)
                return self._session(runtime, record, [])

        return await self._call(create, writes=True)

    async def get_session(
        self, *, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
    ) -> Session | None:
        """The session with its events, oldest first (``None`` when there is none, or it was
        deleted): with ``config.num_recent_events`` the newest that many only (read from the
        tail, never the whole session), with ``config.after_timestamp`` those from that time on.
        Events are as appended (an edited line as it reads now, an erased one left out); its
        state merges the app's (``app:``), the user's (``user:``) and the session's."""
        _text(app_name, "app_name")
        _text(user_id, "user_id")
        sid = _text(session_id, "session_id", empty=True).strip()
        if config is not None and not isinstance(config, GetSessionConfig):
            raise ArgumentTypeError("config", f"must be a GetSessionConfig, not {type(config).__name__}")
        limit = config.num_recent_events if config is not None else None
        after = config.after_timestamp if config is not None else None

        async def get(runtime: Runtime) -> Session | None:
            key = session_key(app_name, user_id, sid)
            async with runtime.attachment(_Shared).lock(key):  # after any append under way in this runtime
                record = self._record(runtime, key)
                if record is None or record.get("deleted"):
                    return None
                return self._session(runtime, record, read_events(runtime, record["branch"], limit, after))

        return await self._call(get)

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        """The app's sessions (of ``user_id``, or of every user for ``None``), without events,
        with merged state, oldest update first."""
        _text(app_name, "app_name")
        if user_id is not None:
            _text(user_id, "user_id")

        async def listed(runtime: Runtime) -> ListSessionsResponse:
            found = runtime.store.state_items("main", session_key(app_name, user_id))
            sessions = [
                self._session(runtime, dict(r), [])
                for r in found.values()
                if isinstance(r, Mapping) and not r.get("deleted") and r.get("app_name") == app_name
                and (user_id is None or r.get("user_id") == user_id)
            ]
            sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
            return ListSessionsResponse(sessions=sessions)

        return await self._call(listed)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session: it is no longer found or listed, its lines are erased from the log
        (``Runtime.erase``: tombstones remain, no content), and its id may be used again (a new
        session, on a new branch). A session that does not exist is left as it is."""
        _text(app_name, "app_name")
        _text(user_id, "user_id")
        sid = _text(session_id, "session_id", empty=True).strip()

        async def delete(runtime: Runtime) -> None:
            key = session_key(app_name, user_id, sid)
            async with runtime.attachment(_Shared).lock(key):
                record = self._record(runtime, key)
                if record is None or record.get("deleted"):
                    return
                for pending in [k for k in self._pending if k[0] == record["branch"]]:
                    del self._pending[pending]
                await runtime.integration_records(KEY).set_states("main", {key: {**record, "deleted": True, "state": {}}})
                ids = [m.id for m in runtime.store.messages(record["branch"]) if m.content]
                if ids:
                    await runtime.erase(ids, reason=f"adk delete_session {app_name}/{user_id}/{sid}")

        await self._call(delete, writes=True)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's state (``user:`` keys without the prefix)."""
        _text(app_name, "app_name")
        _text(user_id, "user_id")

        async def get(runtime: Runtime) -> dict[str, Any]:
            return copy.deepcopy(self._scoped(runtime, user_key(app_name, user_id)))

        return await self._call(get)

    async def append_event(self, session: Session, event: Event) -> Event:
        """Append ``event`` to ``session`` (a partial event is returned untouched): its line (or
        its record) is written, its state delta applied (``temp:`` keys to the session object
        only), and the session object brought up to date. Refuses, writing nothing: a session
        that does not exist (``SessionNotFoundError``), a session object older than the stored
        session (``StaleSessionError``, ADK's own: another object appended since this one was
        read), a malformed event or audience (:class:`~asides.AsidesError`). Once started, the
        write finishes even if the caller is cancelled meanwhile."""
        if not isinstance(session, Session):
            raise ArgumentTypeError("session", f"must be an ADK Session, not {type(session).__name__}")
        if not isinstance(event, Event):
            raise ArgumentTypeError("event", f"must be an ADK Event, not {type(event).__name__}")
        if event.partial:
            return event
        author = event.author or USER
        check_participant(author, "event.author")
        audience = audience_of(event)
        said = said_of(event)
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)

        async def append(runtime: Runtime) -> None:
            key = session_key(session.app_name, session.user_id, session.id)
            async with runtime.attachment(_Shared).lock(key):
                record = self._record(runtime, key)
                if record is None or record.get("deleted"):
                    raise SessionNotFoundError(f"Session {session.id} not found.")
                marker = session._storage_update_marker
                if marker is not None:
                    stale = marker != str(record.get("revision", 0))
                else:  # a session object this service did not make: by its time, as ADK's SQLite service
                    stale = float(record.get("update_time", 0.0)) > session.last_update_time
                if stale:
                    raise StaleSessionError(
                        "The session object is older than the stored session: another session object appended to it since "
                        "this one was read (a stale session); get the session again. Nothing was written."
                    )
                branch = record["branch"]
                await self._write(runtime, branch, author, event, said, audience)
                deltas = _session_util.extract_json_safe_state_delta(dict(event.actions.state_delta or {}))
                writes = self._scope_writes(runtime, session.app_name, session.user_id, deltas)
                state = dict(record.get("state") or {})
                state.update(deltas["session"])
                revision = int(record.get("revision", 0)) + 1
                writes[key] = {**record, "state": state, "update_time": event.timestamp, "revision": revision}
                await runtime.integration_records(KEY).set_states("main", writes)
                session.last_update_time = event.timestamp
                session._storage_update_marker = str(revision)

        await self._call(append, writes=True)
        return self._commit_event_to_session(session, event)

    # -- writing events -------------------------------------------------------------------------

    async def _write(
        self, runtime: Runtime, branch: str, author: str, event: Event, said: Said | None, audience: tuple[str, ...] | None
    ) -> None:
        """Write ``event`` on ``branch`` (see the module docstring): held when it is a call that
        waits for its answer, with the calls it answers when it answers them."""
        if event.error_code == ABORTED:  # ADK's seal of an aborted run: its made-up answers are not written
            self._drop_waiting(branch)
            return
        if author == USER:  # a new input: a call still waiting was cut off by its run's end
            self._drop_waiting(branch)
        if said is None:
            await self._write_record(runtime, branch, event)
            return
        pending_key = (branch, author)
        held = self._pending.get(pending_key, [])
        answered = answered_calls(said.content)
        if held and answered is not None and answered <= {c for e in held for c in made_calls(said_of(e).content)}:  # type: ignore[union-attr]
            del self._pending[pending_key]
            await self._write_events(runtime, branch, author, [*held, event])
            return
        if held:
            self._drop(pending_key)
        if made_calls(said.content) and not event.long_running_tool_ids:
            self._pending[pending_key] = [event]
            return
        await self._write_events(runtime, branch, author, [event], audience)

    def _drop_waiting(self, branch: str) -> None:
        """Drop every call of ``branch`` still waiting for its answer (:meth:`_drop`)."""
        for key in [k for k in self._pending if k[0] == branch]:
            self._drop(key)

    def _drop(self, key: tuple[str, str]) -> None:
        held = self._pending.pop(key, [])
        if held:
            log.info("adk: %s's tool call on %s was never answered; it is not written to the log", key[1], key[0])

    async def _write_events(
        self, runtime: Runtime, branch: str, author: str, events: Sequence[Event], audience: tuple[str, ...] | None = None
    ) -> None:
        said = [s for s in (said_of(e) for e in events) if s is not None]
        by_id = {e.id: e for e in events}
        private_calls = self._private_tool_calls and author != USER
        prepared: list[Prepared] = []
        for group, group_audience in batches(said, reader=author, private_tool_calls=private_calls):
            group_events = [by_id[s.id] for s in group if s.id is not None]
            chosen = audience or next((a for a in (audience_of(e) for e in group_events) if a is not None), None) or group_audience
            blocks = [b for s in group for b in s.content]
            content = tuple(private_content(blocks, author, chosen)) if chosen is not None else tuple(blocks)
            metadata = metadata_for(group_events, [s.content for s in group], private=chosen is not None)
            prepared.append(Prepared(author, content, metadata))
        writer = await runtime.attachment(_Shared).manager(runtime, branch, None, PassthroughStrategy)
        await write_batch(writer, prepared)

    @staticmethod
    async def _write_record(runtime: Runtime, branch: str, event: Event) -> None:
        position = runtime.store.length(branch)
        prefix = f"{EVENT_RECORDS}{position:012d}."
        n = len(runtime.store.state_items(branch, prefix))
        await runtime.integration_records(KEY).set_states(branch, {f"{prefix}{n:06d}": shell_json(event)})

    async def session_branch(self, *, app_name: str, user_id: str, session_id: str) -> str | None:
        """The branch holding the session's lines (``None`` when there is no such session), for
        ``asides inspect`` or a host manager on it (``rt.open_manager(..., branch=...)``)."""
        _text(app_name, "app_name")
        _text(user_id, "user_id")
        sid = _text(session_id, "session_id", empty=True).strip()

        async def get(runtime: Runtime) -> str | None:
            record = self._record(runtime, session_key(app_name, user_id, sid))
            return None if record is None or record.get("deleted") else str(record["branch"])

        return await self._call(get)

    # -- what the plugin and the memory service use -----------------------------------------------

    async def _reader_manager(self, runtime: Runtime, branch: str, agent: str) -> ContextManager:
        return await runtime.attachment(_Shared).manager(runtime, branch, agent, self._strategy)

    async def view(self, session: Session, agent: str) -> list[Segment]:
        """The agent ``agent``'s view of ``session`` as the neutral plan (``integrations/_shared.py``)."""
        reader = agent_reader(agent)

        async def plan(runtime: Runtime) -> list[Segment]:
            record = self._record(runtime, session_key(session.app_name, session.user_id, session.id))
            if record is None or record.get("deleted"):
                raise SessionNotFoundError(f"Session {session.id} not found.")
            branch = record["branch"]
            manager = await self._reader_manager(runtime, branch, reader)
            ctx = await manager.compile(max_tokens=UNBOUNDED, reserve_for_response=0)
            store = runtime.store
            edited = edited_messages(internal_store(runtime), branch)
            return plan_for(ctx, key=KEY, reader=reader, stored=lambda i: store.get_message(branch, i), edited=edited)

        return await self._call(plan)

    async def search(self, app_name: str, user_id: str, agent: str, query: str, limit: int) -> list[tuple[str, SearchHit]]:
        """What ``agent`` may see of ``query`` in the user's sessions of the app, best first:
        ``(session id, hit)`` pairs, at most ``limit``."""
        reader = agent_reader(agent)

        async def found(runtime: Runtime) -> list[tuple[str, SearchHit]]:
            hits: list[tuple[str, SearchHit]] = []
            for record in runtime.store.state_items("main", session_key(app_name, user_id)).values():
                if not isinstance(record, Mapping) or record.get("deleted") or record.get("user_id") != user_id:
                    continue
                manager = await self._reader_manager(runtime, record["branch"], reader)
                hits.extend((record["id"], hit) for hit in await manager.search(query, limit=limit))
            hits.sort(key=lambda pair: (-pair[1].score, -(pair[1].timestamp or 0.0)))
            return hits[:limit]

        return await self._call(found)

    async def drain(self, session: Session, agent: str) -> None:
        """Wait until ``agent``'s strategy on ``session`` has caught up with its compression."""

        async def drained(runtime: Runtime) -> None:
            record = self._record(runtime, session_key(session.app_name, session.user_id, session.id))
            if record is not None and not record.get("deleted"):
                await (await self._reader_manager(runtime, record["branch"], agent_reader(agent))).drain()

        await self._call(drained)

    def plugin(self) -> AsidesPlugin:
        """The ADK plugin that gives each agent's model its own view of the session (see
        :class:`~asides.integrations.adk.AsidesPlugin`)."""
        return AsidesPlugin(self)

    def __repr__(self) -> str:
        where = self._path if self._path is not None else "runtime"
        return f"<AsidesSessionService {where!s}{' closed' if self._closed else ''}>"


def read_events(runtime: Runtime, branch: str, limit: int | None, after: float | None) -> list[Event]:
    """The events of ``branch``, oldest first: the newest ``limit`` (``None``: all), from the
    time ``after`` on; read from the tail in steps of :data:`_SCAN` lines."""
    if limit == 0:
        return []
    store = runtime.store
    records: dict[int, list[Any]] = {}
    for key, value in sorted(store.state_items(branch, EVENT_RECORDS).items()):
        position = int(key[len(EVENT_RECORDS) :].split(".")[0])
        records.setdefault(position, []).append(value)
    out: list[Event] = []

    def take(events: list[Event]) -> bool:
        """Add ``events`` (newest first); whether to stop."""
        for event in events:
            if after is not None and event.timestamp < after:
                return True
            out.append(event)
            if limit is not None and len(out) >= limit:
                return True
        return False

    stop = store.length(branch)
    position = stop
    chunk: list[Message] = []
    while True:
        if take([Event.model_validate(r) for r in reversed(records.get(position, []))]):
            break
        if position == 0:
            break
        if not chunk:
            start = max(0, position - _SCAN)
            chunk = store.messages(branch, start, position)
        message = chunk.pop()
        position -= 1
        if take(list(reversed(events_of(message)))):
            break
    out.reverse()
    return out
