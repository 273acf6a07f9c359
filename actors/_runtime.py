"""The runtime: one store, one task group, the namespace actors and the managers.

``open_runtime`` opens (creating) the store and the runtime's task group. Every background task
(namespace actors, compression drains) lives in that task group, so none outlives the runtime;
leaving the block closes every manager, waits for every drain, flushes the pending commit and
closes the store.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import anyio.abc

from .._deprecate import deprecated, replacement
from ..store._compile_records import CompileRecord
from ..store._disclosure import Disclosure
from ..store._erasure import Erasure, Tombstone
from ..store._errors import ArgumentTypeError, InvalidArgumentError
from ..store._groups import collapsing
from ..store._model import BranchInfo
from ..store._names import check_branch, check_optional_reader
from ..store._open import open_store
from ..store._reader import StoreReader
from ..store._store import Store
from ..store._views import ViewFilter
from ..strategies._base import ContextStrategy, check_strategy
from ..strategies._models import Model
from ..strategies._recorded import StrategyRecord, read_strategy_record, recorded_strategy
from ._core import RuntimeCore, RuntimeStatistics
from ._gate import ModelPolicy, check_model
from ._manager import ContextManager, Derivation, open_context_manager
from ._namespace import normalise_namespace
from ._privacy import Privacy, check_retain_for
from ._store_access import IntegrationRecords

__all__ = ["Runtime", "internal_store", "open_runtime"]

T = TypeVar("T")


class Runtime:
    """A store with its actors and managers. Made by :func:`open_runtime`, never directly.

    What a host calls: :meth:`manager` / :meth:`open_manager`, :meth:`reopen_derived`,
    :meth:`list_branches`, :meth:`recorded_strategy`, :attr:`store` (read-only inspection), the privacy calls
    (:meth:`erase`, :meth:`erase_participant`, :meth:`enforce_retention`, :meth:`erasures`,
    :meth:`tombstone`, :meth:`disclosures`, :meth:`disclosures_to`); :meth:`openai_session` is
    deprecated. For code that builds on asides (the bundled integrations, a host
    library): :meth:`start_soon`, :meth:`attachment` and :meth:`integration_records`. The plumbing the managers share (the
    namespace actors, branch signals, strategy holders, the context log's index) is the
    runtime's private ``RuntimeCore`` (docs/DESIGN.md, "The public surface").
    """

    def __init__(
        self,
        store: Store,
        tasks: anyio.abc.TaskGroup,
        model: Model | None,
        model_policy: ModelPolicy | None = None,
        *,
        retain_seconds: float | None = None,
        record_disclosures: bool = True,
    ) -> None:
        self._store = store
        self._reader = StoreReader(store)
        self._core = RuntimeCore(
            store, tasks, model, model_policy if model_policy is not None else ModelPolicy(), record_disclosures=record_disclosures
        )
        self._privacy = Privacy(store, self._core.wake_all_branches, retain_seconds=retain_seconds)
        if retain_seconds is not None and not store.read_only:
            tasks.start_soon(self._privacy.run_retention, min(retain_seconds / 10, 3600.0))

    # -- public --------------------------------------------------------------------------------

    @property
    def store(self) -> StoreReader:
        """The store, for read-only inspection: its reads (``asides.lowlevel.StoreReader``), no
        write. Writes go through managers and the privacy calls; an integration's records of its
        own through :meth:`integration_records`."""
        return self._reader

    def integration_records(self, prefix: str) -> IntegrationRecords:
        """A handle that writes state records under ``<prefix>/`` only and refuses a namespace's
        own records, and makes branches (``asides.lowlevel.IntegrationRecords``): for code building
        on asides that keeps records of its own beside the namespaces. Refuses a malformed
        ``prefix``."""
        return IntegrationRecords(self._store, prefix)

    @property
    def model(self) -> Model | None:
        """The default model managers compress with (``open_runtime(model=...)``), or ``None``."""
        return self._core.model

    @property
    def model_policy(self) -> ModelPolicy:
        """How this runtime treats compression models (``open_runtime(model_policy=...)``)."""
        return self._core.model_policy

    @property
    def records_disclosures(self) -> bool:
        """Whether compiles, previews and compression requests record what they showed
        (``open_runtime(record_disclosures=...)``)."""
        return self._core.records_disclosures

    @property
    def lease_holder(self) -> str:
        """How this runtime's compression leases show on a shared store: the application name its
        connections give the server (``asides pid <pid>``, unless the URL sets
        ``application_name``), which ``asides inspect`` and ``asides serve`` print beside the
        server process holding a lease (docs/postgres.md). The lease itself is a session lock,
        written nowhere."""
        import os

        return f"asides pid {os.getpid()}"

    @property
    def running_actors(self) -> int:
        """How many namespace actors run now (each ends once no manager, drain or request of its
        namespace is left)."""
        return self._core.running_actors

    def statistics(self) -> RuntimeStatistics:
        """What the runtime runs now, as one snapshot: its running actors (and each one's
        counts), its open managers (``asides.lowlevel.RuntimeStatistics``). The store's own
        counts are ``store.statistics()``."""
        return self._core.statistics()

    def list_branches(self) -> tuple[BranchInfo, ...]:
        """Every branch: name, parent, fork sequence and head."""
        return self._store.branches()

    def recorded_strategy(self, namespace: str | None, *, branch: str = "main") -> StrategyRecord | None:
        """The strategy ``namespace`` records on ``branch``, as ``asides inspect`` and ``asides
        compile`` name it: its name and options (``options`` is ``None`` for a record without
        them), or ``None`` when nothing is recorded (a namespace that only ever ran the default
        ``PassthroughStrategy()``, or none at all). Refuses a malformed namespace and an unknown
        branch. Works on a read-only runtime."""
        name = normalise_namespace(namespace)
        self._store.model.require_branch(check_branch(branch))
        return read_strategy_record(recorded_strategy(self._store.model, branch, name))

    async def open_manager(
        self,
        namespace: str | None = None,
        *,
        strategy: ContextStrategy,
        view_reader: str | None = None,
        view_filter: ViewFilter | None = None,
        branch: str = "main",
        model: Model | None = None,
    ) -> ContextManager:
        """Open a manager of ``namespace`` on ``branch`` (close it with ``await manager.aclose()``
        or by leaving the runtime).

        With ``view_reader``, the namespace is claimed for that reader if unclaimed (one state
        write); an open for another reader than the recorded one is refused with
        ``ReaderClaimError`` naming both, having written and registered nothing.
        With none, the manager compiles for the reader the namespace records, if any (R3).
        """
        return await self._open(
            namespace, strategy=strategy, view_reader=view_reader, view_filter=view_filter, branch=branch, model=model, derivation=None
        )

    async def _open(
        self,
        namespace: str | None,
        *,
        strategy: ContextStrategy,
        view_reader: str | None,
        view_filter: ViewFilter | None,
        branch: str,
        model: Model | None,
        derivation: Derivation | None,
    ) -> ContextManager:
        self._store.raise_if_failed()  # after a failed commit, every call says so
        if self._core.closing:
            raise RuntimeError("the runtime is closing; open managers inside its block")
        check_optional_reader(view_reader, "view_reader")
        if view_filter is not None and not callable(view_filter):
            raise ArgumentTypeError("view_filter", "must be a callable taking a Message and returning a bool")
        check_strategy(strategy)
        check_model(model, "open_manager")
        ns = normalise_namespace(namespace)
        self._store.branch_info(check_branch(branch))
        self._core.check_strategy_free(strategy)
        reader = self._core.actor(branch, ns).resolve_reader(view_reader, "open")
        return await open_context_manager(
            self._core,
            namespace=ns,
            strategy=strategy,
            reader=reader,
            view_filter=view_filter,
            branch=branch,
            model=model,
            claim=view_reader,
            action="open",
            derivation=derivation,
        )

    @asynccontextmanager
    async def manager(
        self,
        namespace: str | None = None,
        *,
        strategy: ContextStrategy,
        view_reader: str | None = None,
        view_filter: ViewFilter | None = None,
        branch: str = "main",
        model: Model | None = None,
    ) -> AsyncIterator[ContextManager]:
        """:meth:`open_manager` as an ``async with`` block that closes the manager on exit."""
        opened = await self.open_manager(
            namespace, strategy=strategy, view_reader=view_reader, view_filter=view_filter, branch=branch, model=model
        )
        try:
            yield opened
        finally:
            with anyio.CancelScope(shield=True):
                await opened.aclose()

    async def reopen_derived(self, branch: str, *, strategy: ContextStrategy, view_reader: str | None = None) -> ContextManager:
        """Reopen the manager a ``derive`` made on ``branch``: same namespace, compiling for the
        reader its branch records."""
        self._store.branch_info(check_branch(branch))
        derivation = Derivation.from_json(self._store.model.branch_meta(branch).get("derivation"))
        if derivation is None:
            raise InvalidArgumentError("branch", f"branch {branch!r} was not made by derive, so there is nothing to reopen; use manager()")
        return await self._open(
            derivation.namespace,
            strategy=strategy,
            view_reader=view_reader,
            view_filter=None,
            branch=branch,
            model=None,
            derivation=derivation,
        )

    # -- privacy (``Privacy``) -----------------------------------------------------------------

    async def erase(self, message_ids: Iterable[str], *, reason: str) -> Erasure:
        """Erase these messages' content from the store, from every branch: every version an
        edit left, every context-log copy, and every summary, memory, knowledge item and chunk
        record made from them (by provenance). What remains of each is a tombstone (its id, its
        place in the sequence, when and why it was erased: :meth:`tombstone`); compiles, views
        and ``get_all_messages`` leave it out. The commit is atomic; when it returns the erased
        text is in none of the store's files (docs/guarantees.md says what a PostgreSQL server
        keeps beyond them).

        Refused, erasing nothing: an id the store does not hold (``UnknownMessagesError``,
        naming every such id), a reason that is not a non-empty ``str``. Erasing an erased
        message again does nothing: the answer then names only the messages it erased now (none:
        ``message_ids == ()``, ``number == 0``). Never refused by a claim or a floor."""
        return await self._privacy.erase(message_ids, reason=reason)

    async def erase_participant(self, participant: str, *, reason: str) -> Erasure:
        """:meth:`erase` every message ``participant`` wrote, on every branch."""
        return await self._privacy.erase_participant(participant, reason=reason)

    async def enforce_retention(self) -> Erasure:
        """Erase, with the reason ``"retention"``, every message whose stored timestamp is older
        than the runtime's ``retain_for`` (``open_runtime``); refused (``InvalidArgumentError``)
        when the runtime has none."""
        return await self._privacy.enforce_retention()

    def disclosures(self, message_id: str) -> tuple[Disclosure, ...]:
        """Who was shown this message, how and when, oldest first: one :class:`Disclosure` per
        ``(namespace, reader, way)`` that first showed it (a compile, a preview, a search, a compression
        request; through a summary counts). Ids only; they outlive an erasure of the message.
        Works on a read-only runtime."""
        return self._privacy.disclosures(message_id)

    def disclosures_to(self, reader: str | None) -> tuple[Disclosure, ...]:
        """Every message ``reader`` (``None``: managers with no reader) was shown, oldest first."""
        return self._privacy.disclosures_to(reader)

    async def compile_records(
        self, *, namespace: str | None = None, branch: str | None = None, limit: int = 200
    ) -> tuple[CompileRecord, ...]:
        """The newest ``limit`` compile records (of ``namespace``, on ``branch``, when given),
        oldest first: each :meth:`ContextManager.compile` sent (never a preview) in numbers,
        by part, against its budget, and how much of it leads unchanged from the same manager's
        previous compile, with no text (works on a read-only runtime; written when the runtime
        records disclosures). Read from the store, never kept in memory: the cost follows the
        records returned, not the history. Refuses a namespace or branch that is no name and a
        ``limit`` that is not a positive ``int`` (``AsidesError`` naming it)."""
        if namespace is not None:
            namespace = normalise_namespace(namespace)
        if branch is not None:
            check_branch(branch)
        if type(limit) is not int:
            raise ArgumentTypeError("limit", f"must be an int, not {type(limit).__name__}")
        if limit < 1:
            raise InvalidArgumentError("limit", f"must be at least 1, not {limit}")
        return await self._store.compile_records(namespace=namespace, branch=branch, limit=limit)

    def erasures(self) -> tuple[Erasure, ...]:
        """Every erasure of the store, newest last (works on a read-only runtime)."""
        return self._privacy.erasures()

    def tombstone(self, message_id: str) -> Tombstone | None:
        """What remains of an erased message (its id, when and why it was erased), or ``None``
        when it was not erased. How a read says that a message was erased: views, compiles and
        ``get_all_messages`` leave it out; ``get_message`` returns it with no content, an empty
        participant and ``metadata["asides_erased"] = {"at", "reason", "erasure"}``."""
        return self._privacy.tombstone(message_id)

    @deprecated(
        "0.2.0",
        thing="asides.Runtime.openai_session",
        instead="asides.integrations.openai_agents.AsidesSession.bound_to(runtime, session_id, ...)",
    )
    async def openai_session(
        self,
        session_id: str,
        *,
        reader: str | None = None,
        strategy: ContextStrategy | None = None,
        session_settings: Any = None,
        private_tool_calls: bool = True,
    ) -> Any:
        """An OpenAI Agents SDK session (``Runner.run(..., session=)``) on the conversation
        ``session_id`` of this runtime's store, for ``reader``; it lives as long as the runtime.
        ``private_tool_calls`` as for ``AsidesSession``. Needs the ``openai-agents`` extra; see
        ``asides.integrations.openai_agents``."""
        bound_to = replacement("asides.integrations.openai_agents:AsidesSession.bound_to")  # a layer above: by name
        return await bound_to(
            self, session_id, reader=reader, strategy=strategy, session_settings=session_settings, private_tool_calls=private_tool_calls
        )

    # -- for code that builds on asides ----------------------------------------------------------

    def start_soon(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``fn()`` as a task of the runtime's task group: it is cancelled, and awaited,
        when the runtime's block ends, and an exception it raises ends the runtime (catch what
        you expect inside ``fn``). Call it from the runtime's event loop."""
        self._core.spawn(fn)

    def attachment(self, cls: type[T]) -> T:
        """The one instance of ``cls`` this runtime keeps, made by ``cls()`` the first time it is
        asked for; it lives as long as the runtime. For code that keeps per-runtime state beside
        asides (the bundled integrations keep their per-conversation locks and indexes so): use a
        class of your own, which nobody else asks for."""
        if not isinstance(cls, type):
            raise ArgumentTypeError("cls", f"an attachment is asked for by its class, not {type(cls).__name__}")
        return self._core.attachment(cls)

    # -- closing -------------------------------------------------------------------------------

    async def _aclose(self) -> None:
        await self._core.aclose()


def internal_store(runtime: Runtime) -> Store:
    """Not API: the runtime's writable store, for asides' own layers (the CLI, ``asides serve``,
    the inspection reports, the bundled integrations) where they read the store's model or write
    below the actors on purpose. A host reads ``Runtime.store`` and writes through managers."""
    return runtime._store


@asynccontextmanager
async def open_runtime(
    path: str = ":memory:",
    *,
    model: Model | None = None,
    read_only: bool = False,
    model_policy: ModelPolicy | None = None,
    synchronous: str | None = None,
    retain_for: datetime.timedelta | None = None,
    record_disclosures: bool = True,
    message_cache: int | None = None,
) -> AsyncIterator[Runtime]:
    """Open (creating) the store at ``path`` and a runtime over it for the block.

    With ``read_only``, the store file is opened read-only (see ``open_store``): nothing is
    created or written, it works while another process's runtime holds the file, and every write
    raises ``StoreReadOnlyError``. A manager opened there for a reader on an unclaimed namespace
    compiles for that reader without recording a claim (a preview).

    ``model`` is the default model managers compress with. A second process (or runtime) opening
    the same file is refused with ``StoreLockedError``. Leaving the block closes every manager,
    waits for every drain, flushes the pending commit and closes the store. Works under Trio (the
    reference backend) and asyncio.

    ``synchronous`` is the durability of a commit (``open_store``), each backend's own by
    default: on a store file ``NORMAL``, which survives a crash of the process (``FULL`` also a
    power loss, at a cost per commit); on PostgreSQL the server's setting, which by default
    survives a crash of the server (``NORMAL`` opts out: a crash of the server may lose the last
    fraction of a second of commits).

    ``retain_for`` (a ``datetime.timedelta``): messages whose stored timestamp is older than that
    are erased, with the reason ``"retention"``, by a supervised background task (at open, then
    every tenth of the period, at most hourly); ``Runtime.enforce_retention()`` does it at once.

    ``record_disclosures`` (on by default): every compile, preview and compression request
    records which messages it showed, and to whom (``Runtime.disclosures``); ``False`` records
    nothing. A read-only runtime records nothing either (it cannot write), but answers.

    ``message_cache``: how many of the messages read back from a store file stay decoded in
    memory (``open_store``; 20,000 by default). Opening a file leaves in it the body of every
    message that names no reader, so an open holds what each message needs to be found and
    ordered, not its text.
    """
    if not isinstance(record_disclosures, bool):
        raise ArgumentTypeError("record_disclosures", f"must be a bool, not {type(record_disclosures).__name__}")
    check_model(model, "open_runtime")
    retain_seconds = check_retain_for(retain_for)
    async with open_store(path, read_only=read_only, synchronous=synchronous, message_cache=message_cache) as store, collapsing():
        async with anyio.create_task_group() as tasks:
            runtime = Runtime(store, tasks, model, model_policy, retain_seconds=retain_seconds, record_disclosures=record_disclosures)
            try:
                yield runtime
            finally:
                with anyio.CancelScope(shield=True):
                    await runtime._aclose()
                tasks.cancel_scope.cancel()
