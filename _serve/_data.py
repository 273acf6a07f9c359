"""What ``asides serve`` answers, as JSON-ready data: pure reads of one :class:`Snapshot`.

Every function here reads; none writes (the runtime is read-only, and a compile is a preview).
Each refuses what it cannot answer with a :class:`RequestError`: :class:`NotFound` (404) names
the unknown branch, namespace, reader or message; :class:`BadParameter` (400) names the
malformed parameter. The log is paged: a page holds at most ``MAX_PAGE`` messages and looks at
most ``MAX_SCAN`` of them (a filter that matches little says where to go on, ``next_after``).
"""

from __future__ import annotations

import inspect
import logging
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

from .._inspection._preview import STRATEGIES, block_line, compile_as_json, covered
from .._inspection._records import (
    namespace_records,
    namespace_strategy,
    namespaces_on,
    recorded_summaries,
)
from .._inspection._report import MessageCounts, describe_store, namespace_lease_holders
from ..actors._errors import ReaderClaimError
from ..actors._manager import ContextManager
from ..actors._records import is_reader_record, reader_keys
from ..actors._runtime import internal_store
from ..store._blocks import ContentBlock, TextBlock, ThinkingBlock
from ..store._blocks.block_types import UNREADABLE_AUDIENCE
from ..store._blocks.reader import content_for_reader, effective_audience, is_thinking
from ..store._errors import AsidesError
from ..store._message_ids import as_message_ids
from ..store._messages import Message
from ..store._names import name_problem
from ..store._views import reader_view
from ..strategies._capabilities import HasEstimator
from ..strategies._tokens import default_estimate
from ._snapshots import MANAGER_CACHE, Snapshot

__all__ = [
    "BadParameter",
    "NotFound",
    "RequestError",
    "MAX_PAGE",
    "MAX_SCAN",
    "audit",
    "compare_page",
    "COMPILE_DEFAULTS",
    "erasures",
    "newest_record",
    "known_readers",
    "memories",
    "messages_by_id",
    "messages_page",
    "namespaces",
    "view",
]

log = logging.getLogger("asides.serve")

MAX_PAGE = 500
MAX_SCAN = 5_000
#: A compile's budget when the request names none: ``ContextManager.compile``'s own defaults
#: (``max_tokens`` and ``reserve``, its ``reserve_for_response``), which the page starts with.
_COMPILE_PARAMETERS = inspect.signature(ContextManager.compile).parameters
COMPILE_DEFAULTS: dict[str, int] = {
    "max_tokens": _COMPILE_PARAMETERS["max_tokens"].default,
    "reserve": _COMPILE_PARAMETERS["reserve_for_response"].default,
}
#: The namespace a view for a reader that no namespace records compiles in (passthrough, held in
#: memory only: the runtime is read-only).
PREVIEW_NAMESPACE = "asides-serve-preview"


class RequestError(AsidesError):
    """A request the inspector refuses; ``status`` is the HTTP status, ``path`` the parameter."""

    status = 400

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class NotFound(RequestError):
    status = 404


class BadParameter(RequestError):
    status = 400


# -- parameters ------------------------------------------------------------------------------------


def whole_number(value: str | None, path: str, *, default: int, least: int = 0, most: int | None = None) -> int:
    """``value`` as a whole number in [least, most], ``default`` when absent; 400 otherwise."""
    if value is None or value == "":
        return default
    try:
        number = int(value, 10)
    except ValueError:
        raise BadParameter(path, f"{value!r} is not a whole number") from None
    if number < least or (most is not None and number > most):
        raise BadParameter(path, f"{number} is out of range ({least} to {'any' if most is None else most})")
    return number


def a_name(value: str | None, path: str, what: str) -> str:
    if value is None or value == "":
        raise BadParameter(path, f"{what} is required")
    problem = name_problem(value, what=what)
    if problem is not None:
        raise BadParameter(path, problem)
    return value


def branch_of(snapshot: Snapshot, value: str | None) -> str:
    branch = a_name(value or "main", "branch", "a branch name")
    if not snapshot.runtime.store.has_branch(branch):
        names = ", ".join(info.name for info in snapshot.runtime.list_branches())
        raise NotFound("branch", f"the store has no branch {branch!r} (its branches: {names})")
    return branch


# -- blocks and messages ---------------------------------------------------------------------------


def _audience(block: ContentBlock) -> list[str] | str | None:
    names = effective_audience(block)
    if names is None:
        return None
    if names is UNREADABLE_AUDIENCE or not isinstance(names, frozenset):
        return "unreadable"
    return sorted(names)


def block_json(block: ContentBlock, audience: list[str] | str | None = None) -> dict[str, Any]:
    """A block for the page: its type, a line of text, and who may see it (``None``: everyone;
    ``"unreadable"``: no one)."""
    if isinstance(block, TextBlock):
        shown = block.text
    elif isinstance(block, ThinkingBlock):
        shown = block.thinking
    else:
        shown = block_line(block)
    return {"type": getattr(block, "type", "block"), "text": shown, "audience": audience}


def message_json(message: Message, reader: str | None = None, *, as_stored: bool = True) -> dict[str, Any] | None:
    """A message for the page. ``as_stored``: every block, each marked with its audience;
    otherwise what ``reader`` sees of it (``None`` when nothing), each block still marked."""
    if as_stored:
        blocks = [block_json(b, _audience(b)) for b in message.content]
    else:
        seen, _ = reader_view(message, reader)
        if seen is None:
            return None
        # the reader view keeps the stored order: pair each block it kept with its stored audience
        kept = [(b, _audience(b)) for b in message.content if content_for_reader((b,), reader)]
        if len(kept) != len(seen.content):  # the view left thinking out, beside a hidden block
            kept = [(b, a) for b, a in kept if not is_thinking(b)]
        blocks = [block_json(shown, audience) for shown, (_, audience) in zip(seen.content, kept, strict=True)]
    return {
        "id": message.id,
        "sequence": message.sequence,
        "participant": message.participant,
        "timestamp": message.timestamp,
        "metadata": dict(message.metadata),
        "blocks": blocks,
    }


def audiences_of(message: Message) -> tuple[bool, frozenset[str], frozenset[str] | None]:
    """Whether any block of ``message`` has an audience; the readers any of them names; the
    readers every one of them names (``None`` when none has one). An audience asides cannot
    read names no one."""
    union: set[str] = set()
    every: frozenset[str] | None = None
    for block in message.content:
        audience = effective_audience(block)
        if audience is None:
            continue
        names = audience if isinstance(audience, frozenset) else frozenset()
        union |= names
        every = names if every is None else every & names
    return every is not None, frozenset(union), every


def lines_for(message: Message) -> frozenset[str]:
    """The readers some block of ``message`` is for, by its audience (none for a message every
    reader sees whole)."""
    return audiences_of(message)[1]


def page_message(snapshot: Snapshot, message: Message, reader: str | None) -> dict[str, Any] | None:
    """:func:`message_json` of ``message`` as stored (``reader`` ``None``) or as ``reader`` sees
    it, with ``erased``: ``None``, or the erasure's ``at``, ``reason`` and number (``erasure``)
    when the message was erased (it then holds no participant and no block)."""
    shown = message_json(message, reader, as_stored=reader is None)
    if shown is not None:
        stone = snapshot.runtime.tombstone(message.id)
        shown["erased"] = None if stone is None else {"at": stone.erased_at, "reason": stone.reason, "erasure": stone.erasure}
    return shown


def _start_position(snapshot: Snapshot, branch: str, after: int) -> int:
    """The position of the first message of ``branch`` whose sequence is above ``after``."""
    store = snapshot.runtime.store
    low, high = 0, store.length(branch)
    while low < high:
        middle = (low + high) // 2
        if store.messages(branch, middle, middle + 1)[0].sequence <= after:
            low = middle + 1
        else:
            high = middle
    return low


def kept_counts(snapshot: Snapshot) -> MessageCounts:
    """The snapshot's :class:`MessageCounts` (kept across changes: the census and each reader's
    view it keeps are brought up to date with what was written since)."""
    found = snapshot.kept.get("message counts")
    if not isinstance(found, MessageCounts):
        found = snapshot.kept["message counts"] = MessageCounts(internal_store(snapshot.runtime))
    return found


def known_readers(snapshot: Snapshot, branch: str) -> list[str]:
    """Every reader the branch knows of: recorded by a namespace, or named by an audience."""
    key = ("readers", branch)
    found = snapshot.cache.get(key)
    if found is None:
        model = internal_store(snapshot.runtime).model
        names = set(kept_counts(snapshot).readers_named(branch))
        names.update(value for namespace, value in reader_keys(model, branch) if namespace and is_reader_record(value))
        found = snapshot.cache[key] = sorted(names)
    return list(found)


def reader_of(snapshot: Snapshot, branch: str, value: str | None, path: str = "reader") -> str:
    reader = a_name(value, path, "a reader's name")
    readers = known_readers(snapshot, branch)
    if reader not in readers:
        known = ", ".join(readers) or "none"
        raise NotFound(
            path, f"no reader {reader!r} on branch {branch!r}: no namespace records it and no audience names it (readers: {known})"
        )
    return reader


def messages_page(
    snapshot: Snapshot,
    *,
    branch: str | None,
    after: str | None,
    limit: str | None,
    participant: str | None = None,
    reader: str | None = None,
    private: str | None = None,
) -> dict[str, Any]:
    """Messages of ``branch`` after sequence ``after``, oldest first, at most ``limit``; only
    ``participant``'s, or as ``reader`` sees them (only those it sees anything of); with
    ``private`` (``1``), only those holding a block whose audience names ``reader``."""
    name = branch_of(snapshot, branch)
    after_seq = whole_number(after, "after", default=-1, least=-1)
    count = whole_number(limit, "limit", default=100, least=1, most=MAX_PAGE)
    who = None if reader in (None, "") else reader_of(snapshot, name, reader)
    only_lines = whole_number(private, "private", default=0, least=0, most=1) == 1
    if only_lines and who is None:
        raise BadParameter("private", "private=1 needs a reader: the lines for whom")
    speaker = None if participant in (None, "") else a_name(participant, "participant", "a participant's name")
    store = snapshot.runtime.store
    total = store.length(name)
    position = _start_position(snapshot, name, after_seq)
    out: list[dict[str, Any]] = []
    scanned = 0
    last_seen: int | None = None
    while position < total and len(out) < count and scanned < MAX_SCAN:
        chunk = store.messages(name, position, min(total, position + max(count, 64)))
        for message in chunk:
            position += 1
            scanned += 1
            last_seen = message.sequence
            if (speaker is not None and message.participant != speaker) or (only_lines and who not in lines_for(message)):
                pass
            else:
                shown = page_message(snapshot, message, who)
                if shown is not None:
                    out.append(shown)
            if len(out) >= count or scanned >= MAX_SCAN:
                break
    return {
        "branch": name,
        "reader": who,
        "participant": speaker,
        "messages": out,
        "next_after": last_seen if position < total else None,
        "total": total,
        "head": store.head(name),
    }


def messages_by_id(snapshot: Snapshot, *, branch: str | None, ids: str | None, reader: str | None = None) -> dict[str, Any]:
    """The messages named by ``ids`` (comma-separated, at most ``MAX_PAGE``), in log order: as
    stored, or as ``reader`` sees them (leaving out those it sees nothing of); an id the branch
    does not hold is a 404 naming it."""
    name = branch_of(snapshot, branch)
    who = None if reader in (None, "") else reader_of(snapshot, name, reader)
    if not ids:
        raise BadParameter("ids", "give one or more message ids, comma-separated")
    wanted = [part.strip() for part in ids.split(",") if part.strip()]
    if len(wanted) > MAX_PAGE:
        raise BadParameter("ids", f"at most {MAX_PAGE} ids at once, got {len(wanted)}")
    store = snapshot.runtime.store
    found = []
    for message_id in wanted:
        message = store.get_message(name, message_id) if message_id.isdigit() else None
        if message is None:
            raise NotFound("ids", f"branch {name!r} holds no message {message_id!r}")
        found.append(message)
    found.sort(key=lambda m: m.sequence)
    shown = [page_message(snapshot, m, who) for m in found]
    return {"branch": name, "reader": who, "messages": [m for m in shown if m is not None]}


def compare_page(snapshot: Snapshot, *, branch: str | None, readers: str | None, after: str | None, limit: str | None) -> dict[str, Any]:
    """Two readers' views of the same messages, side by side: each message either sees
    anything of, with each block marked ``seen_by`` (one reader alone: a difference)."""
    name = branch_of(snapshot, branch)
    given = [part for part in (readers or "").split(",") if part]
    if len(given) != 2:
        raise BadParameter("readers", "give two readers, comma-separated (readers=ann,bob)")
    pair = [reader_of(snapshot, name, given[0], "readers"), reader_of(snapshot, name, given[1], "readers")]
    after_seq = whole_number(after, "after", default=-1, least=-1)
    count = whole_number(limit, "limit", default=100, least=1, most=MAX_PAGE)
    store = snapshot.runtime.store
    total = store.length(name)
    position = _start_position(snapshot, name, after_seq)
    rows: list[dict[str, Any]] = []
    scanned = 0
    last_seen: int | None = None
    while position < total and len(rows) < count and scanned < MAX_SCAN:
        message = store.messages(name, position, position + 1)[0]
        position += 1
        scanned += 1
        last_seen = message.sequence
        views = [reader_view(message, r)[0] for r in pair]
        if views[0] is None and views[1] is None:
            continue
        blocks = []
        for block in message.content:
            audience = _audience(block)
            seen_by = [r for r in pair if audience is None or (isinstance(audience, list) and r in audience)]
            if seen_by:
                blocks.append({**block_json(block, audience), "seen_by": seen_by})
        row = {"id": message.id, "sequence": message.sequence, "participant": message.participant, "blocks": blocks}
        row["differs"] = any(len(b["seen_by"]) == 1 for b in blocks)
        rows.append(row)
    return {
        "branch": name,
        "readers": pair,
        "messages": rows,
        "next_after": last_seen if position < total else None,
        "total": total,
    }


# -- namespaces ------------------------------------------------------------------------------------


def strategy_of(snapshot: Snapshot, branch: str, namespace: str) -> str:
    """The name of the strategy ``namespace`` runs on ``branch``, as ``asides inspect`` finds it."""
    model = internal_store(snapshot.runtime).model
    return namespace_strategy(model, branch, namespace).name


def namespace_record(snapshot: Snapshot, branch: str, namespace: str) -> dict[str, Any]:
    return namespace_records(internal_store(snapshot.runtime).model, branch, namespace)


def namespace_names(snapshot: Snapshot, branch: str) -> list[str]:
    """The namespaces of ``branch``, by name (kept until the store changes)."""
    key = ("namespace names", branch)
    found = snapshot.cache.get(key)
    if found is None:
        found = snapshot.cache[key] = sorted(namespaces_on(internal_store(snapshot.runtime).model, branch))
    return list(found)


def namespace_of(snapshot: Snapshot, branch: str, value: str | None) -> str:
    namespace = a_name(value, "namespace", "a namespace")
    names = namespace_names(snapshot, branch)
    if namespace not in names:
        raise NotFound("namespace", f"branch {branch!r} has no namespace {namespace!r} (its namespaces: {', '.join(names) or 'none'})")
    return namespace


async def manager_for(snapshot: Snapshot, branch: str, namespace: str, reader: str | None, strategy: str) -> ContextManager:
    """An open manager for compiles, kept by the snapshot for the next request."""
    key = (branch, namespace, reader, strategy)
    manager = snapshot.managers.get(key)
    if manager is None or manager.closed:
        manager = await snapshot.runtime.open_manager(namespace, strategy=STRATEGIES[strategy](), view_reader=reader, branch=branch)
        await snapshot.remember_manager(key, manager)
    return manager


def _drain(snapshot: Snapshot, holder: str | None) -> dict[str, Any]:
    """Whether a host is compressing the namespace, as far as a reader of the store can tell:
    on a shared store, whether a session holds its compression lease (``pg_locks``)."""
    if not snapshot.runtime.store.path.startswith(("postgresql://", "postgres://")):
        return {"running": None, "why": "on a SQLite store the host's drain runs in the host's process and records nothing while it runs"}
    if holder is None:
        return {"running": False, "why": "no process holds the compression lease"}
    return {"running": True, "why": f"{holder} holds the compression lease", "holder": holder}


async def namespaces(snapshot: Snapshot) -> dict[str, Any]:
    """Every branch and its namespaces: reader claim, floor, strategy, lease, pending work and
    whether a drain runs (``asides inspect``'s report, with those added)."""
    report = snapshot.cache.get(("namespaces",))
    if report is not None:
        return dict(report)
    generation = snapshot.generation
    rt = snapshot.runtime
    holders = await namespace_lease_holders(rt)
    report = describe_store(rt, rt.store.path, holders, counts=kept_counts(snapshot))
    opened = 0
    for branch in report["branches"]:
        for ns in branch["namespaces"]:
            holder = holders.get((branch["name"], ns["namespace"]))
            ns["lease"] = None if holder is None else {"holder": holder}
            ns["drain"] = _drain(snapshot, holder)
            if opened < MANAGER_CACHE:  # each costs a manager caught up with the whole log
                opened += 1
                ns["pending_work"] = await _pending(snapshot, branch["name"], ns)
            else:
                ns["pending_work"] = f"unknown: asides serve works it out for the first {MANAGER_CACHE} namespaces only"
        branch["newest_record"] = newest_record(snapshot, branch["name"])
    # the first of the newest: a fork that wrote nothing of its own yet ties with its parent
    report["newest_branch"] = max(report["branches"], key=lambda b: b["newest_record"])["name"]
    snapshot.remember(("namespaces",), report, generation)
    return dict(report)


def newest_record(snapshot: Snapshot, branch: str) -> int:
    """The record id of the newest message or state record ``branch`` holds (its parent's up to
    the fork point included; an edit is not counted); 0 when it holds none."""
    store = internal_store(snapshot.runtime)
    model = store.model
    length = store.length(branch)
    newest = int(store.messages(branch, length - 1, length)[0].id) if length else 0
    for key in model.state_keys(branch):
        record = model.state_record_id(branch, key)
        if record is not None and record > newest:
            newest = record
    return newest


async def _pending(snapshot: Snapshot, branch: str, ns: dict[str, Any]) -> str | None:
    if ns["reader_status"] == "unreadable":
        return "unknown: the reader record is unreadable"
    if ns["strategy"] not in STRATEGIES:
        return f"unknown: asides serve cannot run strategy {ns['strategy']!r}"
    try:
        async with snapshot.lock:  # the namespace's own reader: the manager its views reuse
            manager = await manager_for(snapshot, branch, ns["namespace"], ns["reader"], ns["strategy"])
            await manager.preview_context()  # catches the strategy up with the log
            pending = manager.pending_work()
    except AsidesError as exc:
        return f"unknown: {exc}"
    return None if pending is None else pending.replace(" (no compression model)", "")


# -- a reader's view -------------------------------------------------------------------------------


def _estimator(manager: ContextManager) -> Any:
    strategy = manager.strategy
    return (strategy.estimator if isinstance(strategy, HasEstimator) else None) or default_estimate


def _left_out(snapshot: Snapshot, branch: str, seen: Sequence[Message], sources: Sequence[Sequence[str]]) -> tuple[int, list[list[int]]]:
    """The messages of the reader's view ``seen`` that the compile leaves out: how many, and
    their runs of neighbours (first and last position in ``seen``), oldest first. ``sources``:
    the ids each compiled message stands for, in the compile's order.

    The work grows with the compile, not with the messages its memories cover, nor with the
    history: on a branch a message's id grows with its sequence, so the messages of ``seen``
    that some ids stand for lie between the first and the last of them. Consecutive raw
    messages are taken together, and a memory as a whole: the stretch of ``seen`` between its
    first and last message (two reads and two binary searches, ``seen`` being in sequence
    order) is what it covers when it starts and ends there and holds as many messages as the
    memory covers, as a memory of the reader's own view does. Otherwise (an edit moved a
    message it covers out of the view, say) each run of consecutive ids is placed on its own."""
    spans: list[tuple[int, int]] = []
    for ids in _stretches(sources):
        whole = _placed(snapshot, branch, seen, ids[0], ids[-1])
        if whole is not None and whole[1] - whole[0] == len(ids) and seen[whole[0]].id == ids[0] and seen[whole[1] - 1].id == ids[-1]:
            spans.append(whole)
            continue
        for first, last in _id_spans(ids):
            found = _placed(snapshot, branch, seen, first, last)
            if found is not None:
                spans.append(found)
    bounds: list[list[int]] = []
    kept = 0
    reached = 0  # every position before it is covered or already in a bound
    for start, stop in sorted(spans):
        if start > reached:
            bounds.append([reached, start - 1])
        if stop > reached:
            kept += stop - max(start, reached)
            reached = stop
    if reached < len(seen):
        bounds.append([reached, len(seen) - 1])
    return len(seen) - kept, bounds


def _stretches(sources: Sequence[Sequence[str]]) -> list[Sequence[str]]:
    """``sources`` with each stretch of consecutive single-message sources (raw messages, in
    order) joined into one, so that they are placed together, and a source the one before it
    repeats (a memory shown as two messages) left out."""
    out: list[Sequence[str]] = []
    joined: list[str] = []
    previous: Sequence[str] | None = None
    for ids in sources:
        repeated = previous is not None and (ids is previous or (len(ids) == len(previous) > 1 and ids == previous))
        previous = ids
        if repeated:
            continue
        if len(ids) == 1:
            joined.append(ids[0])
            continue
        if joined:
            out.append(joined)
            joined = []
        if len(ids):
            out.append(ids)
    if joined:
        out.append(joined)
    return out


def _placed(snapshot: Snapshot, branch: str, seen: Sequence[Message], first: str, last: str) -> tuple[int, int] | None:
    """The positions of ``seen`` from message ``first`` to message ``last`` (``start``,
    ``stop``), or ``None`` when either is not on the branch or nothing of ``seen`` lies between."""
    store = snapshot.runtime.store
    low, high = store.get_message(branch, first), store.get_message(branch, last)
    if low is None or high is None:
        return None
    start = bisect_left(seen, low.sequence, key=lambda m: m.sequence)
    stop = bisect_right(seen, high.sequence, key=lambda m: m.sequence)
    return (start, stop) if start < stop else None


def _id_spans(ids: Sequence[str]) -> list[tuple[str, str]]:
    """The first and last id of each run of consecutive ids of ``ids`` (each id alone where
    they are not store-issued numbers)."""
    held = as_message_ids(ids)
    if not held.numeric:
        return [(i, i) for i in held]
    return [(str(first), str(first + count - 1)) for first, count in held.runs()]


def _runs(seen: Sequence[Message], bounds: Sequence[Sequence[int]], why: str, limit: int = 50) -> list[dict[str, Any]]:
    """The left-out runs (``bounds``: first and last position in the reader's view ``seen``),
    with first and last sequence and id, and how many; the newest ``limit`` runs."""
    return [
        {
            "first_sequence": seen[first].sequence,
            "last_sequence": seen[last].sequence,
            "first_id": seen[first].id,
            "last_id": seen[last].id,
            "count": last - first + 1,
            "why": why,
        }
        for first, last in bounds[-limit:]
    ]


async def view(
    snapshot: Snapshot,
    *,
    branch: str | None,
    reader: str | None,
    namespace: str | None = None,
    max_tokens: str | None = None,
    reserve: str | None = None,
) -> dict[str, Any]:
    """The compile ``reader`` would be sent now (a preview), as ``asides compile --format json``
    gives it, with each message's token estimate and what was left out and why.

    The namespace is ``namespace`` when given (it must exist on the branch and record ``reader``
    or none), else the one namespace that records ``reader`` (the first by name, when several
    do), else a passthrough preview held in memory."""
    name = branch_of(snapshot, branch)
    who = reader_of(snapshot, name, reader)
    budget = whole_number(max_tokens, "max_tokens", default=COMPILE_DEFAULTS["max_tokens"], least=1, most=10_000_000)
    kept_back = whole_number(reserve, "reserve", default=0, least=0, most=10_000_000)
    if kept_back >= budget:
        raise BadParameter("reserve", f"{kept_back} leaves nothing of max_tokens={budget}")
    key = ("view", name, who, namespace or None, budget, kept_back)
    known = snapshot.cache.get(key)
    if known is None:
        generation = snapshot.generation
        known = await _view(snapshot, name, who, namespace or None, budget, kept_back)
        snapshot.remember(key, known, generation)
    return dict(known)


def claiming(snapshot: Snapshot, branch: str, reader: str) -> list[str]:
    """The namespaces of ``branch`` whose record names ``reader``, by name."""
    return sorted(n for n, value in reader_keys(internal_store(snapshot.runtime).model, branch) if n and value == reader)


async def reader_manager(snapshot: Snapshot, branch: str, reader: str, namespace: str | None) -> tuple[str, str, ContextManager]:
    """The namespace, strategy and open manager through which the inspector reads as
    ``reader``: ``namespace`` when given, else the namespace that records the reader (the first
    by name), else a passthrough preview held in memory. Call it holding ``snapshot.lock``."""
    if namespace:
        ns = namespace_of(snapshot, branch, namespace)
        strategy = strategy_of(snapshot, branch, ns)
    else:
        recording = claiming(snapshot, branch, reader)
        ns, strategy = (recording[0], strategy_of(snapshot, branch, recording[0])) if recording else (PREVIEW_NAMESPACE, "passthrough")
    if strategy not in STRATEGIES:
        raise BadParameter("namespace", f"namespace {ns!r} runs strategy {strategy!r}, which asides serve cannot run")
    try:
        return ns, strategy, await manager_for(snapshot, branch, ns, reader, strategy)
    except ReaderClaimError as exc:
        raise BadParameter("namespace", str(exc)) from None


async def _view(snapshot: Snapshot, name: str, who: str, namespace: str | None, budget: int, kept_back: int) -> dict[str, Any]:
    async with snapshot.lock:
        ns, strategy, manager = await reader_manager(snapshot, name, who, namespace)
        compiled = await manager.preview_context(max_tokens=budget, reserve_for_response=kept_back)
        seen = manager.view_messages()
    about = {"namespace": ns, "branch": name, "reader": who, "strategy": strategy, "max_tokens": budget, "reserve": kept_back}
    result = compile_as_json(compiled, about)
    estimate = _estimator(manager)
    sources = result["provenance"]["entries"]
    for shown, message, source in zip(result["messages"], compiled.messages, sources, strict=True):
        shown["token_estimate"] = estimate(message.content)
        shown["blocks"] = [block_json(b) for b in message.content]
        shown["source"] = source
    left, bounds = _left_out(snapshot, name, seen, [e.message_ids for e in compiled.provenance.entries])
    cut = sorted((i for i, whole in compiled.provenance.complete.items() if not whole), key=int)
    why = (
        "older than what fits the budget"
        if strategy in ("passthrough", "windowed-passthrough")
        else "neither in the recent window nor covered by a memory in this compile"
    )
    result["left_out"] = {
        "runs": _runs(seen, bounds, why),
        "count": left,
        "cut": [{"id": i, "why": "in the compile, but not whole (cut to fit, repaired, or its thinking left out)"} for i in cut[:200]],
        "hidden": {
            "count": snapshot.runtime.store.length(name) - len(seen),
            "why": f"every block of them has an audience that leaves {who!r} out",
        },
    }
    return result


async def warm(snapshot: Snapshot) -> None:
    """Do, before the first request, what a first request would otherwise wait for: the
    readers of each branch (the census of its audiences: :class:`MessageCounts`), the
    namespaces' report, which opens each namespace's manager, and the view of each reader,
    which opens a passthrough preview manager for a reader no namespace records (up to
    :data:`MANAGER_CACHE` managers in all). Each manager then catches up with the changes by
    itself, so a reader's first view answers at once. None of it reads every message: it costs
    the blocks of messages that may name a reader, the namespaces' records and what the
    previews' compiles send."""
    for info in snapshot.runtime.list_branches():
        known_readers(snapshot, info.name)
    await namespaces(snapshot)
    for info in snapshot.runtime.list_branches():
        for reader in known_readers(snapshot, info.name):
            if len(snapshot.managers) >= MANAGER_CACHE:
                return
            try:
                await view(snapshot, branch=info.name, reader=reader)
            except RequestError as exc:  # a strategy asides serve cannot run: its request says so
                log.info("no view of %r on %r to warm: %s", reader, info.name, exc)


# -- memories and audit ----------------------------------------------------------------------------


def memories(snapshot: Snapshot, *, branch: str | None, namespace: str | None) -> dict[str, Any]:
    """The namespace's summary tree by level: each memory with its span, children, and the
    memory that merged it (``merged_into``), newest level first."""
    name = branch_of(snapshot, branch)
    ns = namespace_of(snapshot, name, namespace)
    records = namespace_record(snapshot, name, ns)
    found = recorded_summaries(records)
    parents = {child: record.summary.id for record in found for child in record.children}
    levels: dict[int, list[dict[str, Any]]] = {}
    for record in sorted(found, key=lambda r: (r.summary.first_sequence, r.summary.id)):
        s = record.summary
        levels.setdefault(s.level, []).append(
            {
                "id": s.id,
                "level": s.level,
                "text": s.text,
                **covered(s.message_ids),
                "first_sequence": s.first_sequence,
                "last_sequence": s.last_sequence,
                "children": list(record.children),
                "merged_into": parents.get(s.id),
            }
        )
    reader = records.get("reader")
    return {
        "branch": name,
        "namespace": ns,
        "reader": reader if isinstance(reader, str) else None,
        "levels": [{"level": level, "memories": levels[level]} for level in sorted(levels, reverse=True)],
    }


def _plain(value: Any) -> Any:
    if hasattr(value, "__attrs_attrs__") or hasattr(value, "__dataclass_fields__"):
        fields = getattr(value, "__attrs_attrs__", None)
        names = [f.name for f in fields] if fields is not None else list(value.__dataclass_fields__)
        return {n: _plain(getattr(value, n)) for n in names}
    if isinstance(value, (list, tuple, frozenset, set)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def erasures(snapshot: Snapshot, *, after: str | None) -> dict[str, Any]:
    """The store's erasures numbered above ``after`` (default: every one), oldest first, each
    with its ``number``, ``message_ids``, ``reason``, ``at`` and what it invalidated; and
    ``count``, how many the store holds."""
    done = snapshot.runtime.erasures()
    since = whole_number(after, "after", default=0, least=0)
    return {"erasures": [_plain(e) for e in done if e.number > since], "count": len(done)}


def audit(snapshot: Snapshot, *, message: str | None) -> dict[str, Any]:
    """Who was shown ``message``, how and when, and whether and why it was erased.

    Reads ``Runtime.disclosures(message_id)`` and ``Runtime.erasures()`` where this build has
    them; where it does not, says so (``"recording": "unavailable in this build"``), never an
    empty list that would read as "shown to no one"."""
    rt = snapshot.runtime
    if not message or not message.isdigit():
        raise BadParameter("message", f"{message!r} is not a message id (a whole number)" if message else "a message id is required")
    where = [info.name for info in rt.list_branches() if rt.store.get_message(info.name, message) is not None]
    if not where:
        raise NotFound("message", f"the store holds no message {message!r}")
    result: dict[str, Any] = {"message": message, "branches": where}
    if not hasattr(rt, "disclosures") or not hasattr(rt, "erasures"):
        result.update(recording="unavailable in this build", disclosures=None, erasures=None)
        return result
    shown = rt.disclosures(message)
    erased = [e for e in rt.erasures() if message in tuple(getattr(e, "message_ids", ()))]
    result.update(recording="recorded", disclosures=[_plain(d) for d in shown], erasures=[_plain(e) for e in erased])
    return result
