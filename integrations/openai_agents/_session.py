"""``AsidesSession``: the OpenAI Agents SDK's ``Session`` protocol over an asides store."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import sniffio
from agents.handoffs import Handoff
from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
from agents.run_config import CallModelData, ModelInputData

from ...store._errors import ArgumentTypeError, InvalidArgumentError
from ...store._names import check_reader
from ...strategies._models import Model
from ...strategies._passthrough import PassthroughStrategy
from .._rules import agent_reader, check_private_tool_calls
from ._agent import Agent
from ._errors import AsyncioRequiredError
from ._host import ThreadHost, acquire_host, release_host
from ._loop import SessionClosedError, session_loop

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

    from ...actors._runtime import Runtime

__all__ = ["AsidesSession"]

log = logging.getLogger("asides.openai_agents")

T = TypeVar("T")


def _settings(value: SessionSettings | dict[str, Any] | None) -> SessionSettings:
    """``SessionSettings()`` for ``None``; a dict converted as the SDK's own sessions convert it
    (an unknown key is refused)."""
    return coerce_session_settings(value) if value is not None else SessionSettings()


def _audience(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ArgumentTypeError("audience", f"must be a list of reader names, not {type(value).__name__}")
    if not value:
        raise InvalidArgumentError("audience", "must name at least one reader: an item for no one would be seen by no one")
    return tuple(check_reader(name, f"audience[{n}]") for n, name in enumerate(value))


def _session_reader(value: object) -> str | None:
    """A session's reader: ``None`` (no reader), or an agent's reader (``integrations/_rules.py``)."""
    return None if value is None else agent_reader(value)


class AsidesSession:
    """A session of the OpenAI Agents SDK (``Runner.run(agent, input, session=...)``) on an asides
    store: ``get_items``, ``add_items``, ``pop_item``, ``clear_session`` and a synchronous
    ``close()``, as the SDK's ``SQLiteSession`` has them, plus what only asides can do.

    ``session_id`` names a conversation: sessions with other ids on the same store never see
    it. Several agents share a conversation by opening sessions with the same id, each with its
    own ``reader``: they share its log, and each sees only what its reader may see. ``db_path``
    is the store file (``":memory:"``, the default, is a private in-memory store); sessions on one
    file in one process share one store. ``strategy`` decides what ``get_items`` returns
    (default ``PassthroughStrategy()``: every item, exactly as added; a compressing strategy gives
    the agent's memories as assistant messages, then the recent items as they were added);
    ``model`` is the model a compressing strategy writes memories with. A strategy object serves
    one session. With ``private_tool_calls`` (the default, as for every integration) the agent's
    tool calls and their outputs are for its reader alone; its messages are public (a session
    with no reader has no one to keep them for: its calls are public).

    Every method may be called from any asyncio event loop or thread (``Runner.run_sync`` too),
    and under Trio. The SDK's ``Runner`` itself needs asyncio: a Runner's call from another loop
    is refused (:class:`AsyncioRequiredError`) before it writes anything. Inside a host's own
    runtime use ``await AsidesSession.bound_to(runtime, ...)``. ``reader`` may not be named like a shared
    role (``user``, ``system``, ``developer``, ``assistant``, in any case:
    :class:`ReservedReaderError`).
    """

    session_id: str
    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        reader: str | None = None,
        strategy: Any = None,
        model: Model | None = None,
        private_tool_calls: bool = True,
    ) -> None:
        self._setup(session_id, session_settings, reader, private_tool_calls)
        host = acquire_host(db_path)
        try:
            agent = Agent(
                host.runtime,
                session_id,
                reader=self._reader,
                strategy=_strategy(strategy),
                model=model,
                private_tool_calls=self._private_tool_calls,
            )
            host.loop_as(SessionClosedError).run_blocking(agent.open)
        except BaseException:
            release_host(host)
            raise
        self._host: ThreadHost | None = host
        self._loop = host.loop_as(SessionClosedError)
        self._agent = agent

    def _setup(self, session_id: object, session_settings: Any, reader: object, private_tool_calls: object) -> None:
        if not isinstance(session_id, str):
            raise ArgumentTypeError("session_id", f"must be a string, not {type(session_id).__name__}")
        self.session_id = session_id
        self.session_settings = _settings(session_settings)
        self._reader = _session_reader(reader)
        self._private_tool_calls = check_private_tool_calls(private_tool_calls)
        self._closed = False
        #: The agents a handoff sent this session's runs to, by name (:meth:`call_model_input_filter`).
        self._others: dict[str, Agent] = {}

    @classmethod
    async def bound_to(
        cls,
        runtime: Runtime,
        session_id: str,
        *,
        reader: str | None = None,
        strategy: Any = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        model: Model | None = None,
        private_tool_calls: bool = True,
    ) -> AsidesSession:
        """A session working in ``runtime`` (call it in the runtime's event loop); it is closed at
        the latest when the runtime closes."""
        self = cls.__new__(cls)
        self._setup(session_id, session_settings, reader, private_tool_calls)
        self._host = None
        self._loop = session_loop(runtime.start_soon)
        self._agent = Agent(
            runtime, session_id, reader=self._reader, strategy=_strategy(strategy), model=model, private_tool_calls=self._private_tool_calls
        )
        await self._agent.open()
        return self

    # -- what the agent sees ------------------------------------------------------------------

    @property
    def reader(self) -> str | None:
        """The reader this session's agent is (``None``: an agent that sees no private line)."""
        return self._reader

    @property
    def private_tool_calls(self) -> bool:
        """Whether the agent's tool calls and their outputs are for its reader alone."""
        return self._private_tool_calls

    @property
    def branch(self) -> str:
        """The conversation's branch in the store (``openai-agents/<session_id>``)."""
        return self._agent.branch

    @property
    def namespace(self) -> str:
        """The namespace holding this agent's memories and claim on the conversation's branch."""
        return self._agent.namespace

    async def _call(self, action: str, fn: Callable[[], Awaitable[T]], wrapper: object = None, *, writes: bool = False) -> T:
        """``fn`` run in the runtime's loop; with ``writes``, to its end even if the caller is
        cancelled meanwhile (``LoopHandle.finish``: a batch is never left half written)."""
        if self._closed:
            raise SessionClosedError(f"{action} was refused: session {self.session_id!r} is closed")
        if wrapper is not None:
            _check_runner_loop(action)
        return await (self._loop.finish(fn) if writes else self._loop.run(fn))

    # -- the SDK's Session protocol -----------------------------------------------------------

    # Each method takes the SDK's optional ``wrapper`` (its run context): the SDK hands it only
    # to a session whose four methods all accept it, and only from a ``Runner``, which is how a
    # Runner's call is told from a direct one (see :func:`_check_runner_loop`).

    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> list[TResponseInputItem]:
        """This agent's view of the conversation as input items, oldest first: items exactly as
        added (its own and shared ``user``/``system``/``developer`` lines), other agents' lines
        as user messages naming them, memories as assistant messages; an item edited since it was
        added, as it reads now. ``limit`` (else ``session_settings.limit``) keeps the newest that
        many. Called by the SDK's Runner outside asyncio: :class:`AsyncioRequiredError`."""
        resolved = resolve_session_limit(limit, self.session_settings)
        return await self._call("get_items", lambda: self._agent.get_items(resolved), wrapper)

    async def add_items(self, items: list[TResponseInputItem], *, audience: Sequence[str] | None = None, wrapper: Any = None) -> None:
        """Add ``items`` to the conversation, in order, said by this agent (or, for a ``user``,
        ``system`` or ``developer`` message, by that role). With ``audience``, only those readers'
        compiles and views hold them; without, the agent's tool calls and outputs are for its
        reader alone when ``private_tool_calls`` holds. A malformed item refuses the whole batch,
        writing nothing; once started, the batch is written whole even if the caller is cancelled."""
        checked = _audience(audience)
        await self._call("add_items", lambda: self._agent.add_items(items, checked), wrapper, writes=True)

    async def pop_item(self, *, wrapper: Any = None) -> TResponseInputItem | None:
        """Remove the newest item this agent added from its view and return it (``None`` when
        there is none; an item edited since it was added comes back as it reads now). Other
        agents' items stay, and nothing leaves another agent's view."""
        item: TResponseInputItem | None = await self._call("pop_item", self._agent.pop_item, wrapper)
        return item

    async def clear_session(self, *, wrapper: Any = None) -> None:
        """Empty this agent's view of the conversation (its memories start afresh); nothing
        leaves another agent's view."""
        await self._call("clear_session", self._agent.clear, wrapper)

    # -- handoffs ------------------------------------------------------------------------------

    async def call_model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """A ``RunConfig(call_model_input_filter=session.call_model_input_filter)``: before each
        model call of a run on this session, the agent about to be called is sent its own view.

        For the session's own agent (its ``reader``), the input is left as the SDK made it (it
        is that agent's view, and the items of the run). For another agent, as after a handoff,
        whose reader is its name, the input becomes: that reader's view of the conversation as
        stored (as its own session's ``get_items`` gives it, with passthrough: every line it may
        see, others' lines naming them, no line whose audience leaves it out); then the items of
        this run before the handoff to it that the log does not hold yet, their messages only
        (their tool calls and outputs are the previous agents': kept only with
        ``private_tool_calls`` false); then every item from the handoff to it on (its own turn).
        So after a handoff the receiving agent is never sent another agent's private lines or
        tool output.
        An agent named like a shared role (``user``, ``assistant``, ...) is refused with
        :class:`~asides.integrations.ReservedReaderError`, as a session for it would be."""
        name = data.agent.name
        if name == self._reader:
            return data.model_data
        given = list(data.model_data.input)
        items = await self._call("call_model_input_filter", lambda: self._view_for(name, given, data.agent))
        return ModelInputData(input=items, instructions=data.model_data.instructions)

    async def _view_for(self, name: str, given: list[Any], agent: Any) -> list[Any]:
        """In the runtime's loop: ``name``'s view of the stored conversation, then what of
        ``given`` the log does not hold yet (see :meth:`call_model_input_filter`)."""
        other = self._others.get(name)
        if other is None:
            other = Agent(
                self._agent.runtime,
                self.session_id,
                reader=agent_reader(name),
                strategy=PassthroughStrategy(),
                model=None,
                private_tool_calls=self._private_tool_calls,
            )
            await other.open()
            self._others[name] = other
        theirs = await other.get_items(None)
        handed = _handoff_index(given, agent)
        earlier, own = (given, []) if handed is None else (given[: handed + 1], given[handed + 1 :])
        stored = Counter(_canonical(item) for item in await self._agent.get_items(None))
        fresh: list[Any] = []
        for item in earlier:
            key = _canonical(item)
            if stored[key] > 0:
                stored[key] -= 1  # in the log: ``theirs`` holds what this reader may see of it
            elif not self._private_tool_calls or _field(item, "type") not in _TOOL_ITEMS:
                fresh.append(item)
        return theirs + fresh + own

    # -- beyond the protocol ------------------------------------------------------------------

    async def drain(self) -> None:
        """Wait until the strategy's background compression has caught up."""
        await self._call("drain", self._agent.drain)

    def close(self) -> None:
        """Close the session (synchronous, idempotent). The last session on a store file closes
        the store. A session from :meth:`bound_to` closes its manager in the runtime's
        loop (at the latest when the runtime closes)."""
        if self._closed:
            return
        self._closed = True
        others, self._others = list(self._others.values()), {}
        for other in others:
            self._close_agent(other)
        host, self._host = self._host, None
        if host is None:
            if self._loop.on_loop_thread:
                self._loop.spawn(self._agent.aclose)
            else:
                try:
                    self._loop.run_blocking(self._agent.aclose)
                except SessionClosedError:
                    pass  # the runtime closed, and the manager with it
            return
        try:
            self._loop.run_blocking(self._agent.aclose)
        except SessionClosedError:
            pass
        finally:
            release_host(host)

    def _close_agent(self, agent: Agent) -> None:
        """Close one of the session's agents in the runtime's loop (see :meth:`close`)."""
        if self._loop.on_loop_thread:
            self._loop.spawn(agent.aclose)
            return
        try:
            self._loop.run_blocking(agent.aclose)
        except SessionClosedError:
            pass  # the runtime closed, and the manager with it

    def __repr__(self) -> str:
        return f"<AsidesSession {self.session_id!r} reader={self._reader!r}{' closed' if self._closed else ''}>"


def _check_runner_loop(action: str) -> None:
    """Refuse a call from the SDK's ``Runner`` in an event loop that is not asyncio's: the SDK
    runs on asyncio only, and under Trio it would fail at its next ``asyncio.create_task`` with
    ``RuntimeError: no running event loop``, after this session had stored the turn's input."""
    try:
        library: str | None = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        library = None
    if library == "asyncio":
        return
    refusal = AsyncioRequiredError(
        f"{action} was refused: the OpenAI Agents SDK's Runner runs on asyncio only, and it was called under "
        f"{library or 'no known event loop'}; nothing was written. Run the Runner under asyncio (asyncio.run(main()), "
        "or anyio.run(main, backend='asyncio')), or from Trio in a worker thread: "
        "await trio.to_thread.run_sync(functools.partial(Runner.run_sync, agent, text, session=session)). "
        "The session's own methods (get_items, add_items, ...) work under Trio as they are."
    )
    # Logged too: the Runner's own cleanup then fails under Trio the same way, and its
    # RuntimeError is what the caller sees, with this refusal as its context.
    log.error("%s", refusal)
    raise refusal


def _strategy(strategy: Any) -> Any:
    return PassthroughStrategy() if strategy is None else strategy


_TOOL_ITEMS = frozenset({"function_call", "function_call_output", "reasoning", "computer_call", "computer_call_output"})


def _canonical(item: Any) -> str:
    """An item as a comparable text (items are JSON-like dicts, or SDK models)."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(exclude_unset=True)
    return json.dumps(item, sort_keys=True, default=str)


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _hands_to(item: Any, name: str) -> bool:
    """Whether a tool output is the SDK's answer to a handoff to ``name`` (``{"assistant": name}``,
    whatever the handoff tool is called)."""
    output = _field(item, "output")
    if not isinstance(output, str):
        return False
    try:
        said = json.loads(output)
    except ValueError:
        return False
    return isinstance(said, dict) and said == {"assistant": name}


def _handoff_index(items: list[Any], agent: Any) -> int | None:
    """The position of the newest answer to a handoff to ``agent`` in ``items`` (``None``: none)."""
    name = Handoff.default_tool_name(agent)
    calls = {_field(item, "call_id") for item in items if _field(item, "type") == "function_call" and _field(item, "name") == name}
    found = None
    for index, item in enumerate(items):
        if _field(item, "type") == "function_call_output" and (_field(item, "call_id") in calls or _hands_to(item, agent.name)):
            found = index
    return found
