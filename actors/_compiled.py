"""What a compile returns, and how a strategy's selection becomes it.

:func:`assemble` is pure: it appends the message injections, places the positioned injections
(the shapes the provider APIs take), and reports provenance from the reader's view.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from ..store._blocks import ContentBlock
from ..store._compile_records import CompileParts
from ..store._message_ids import MessageIds
from ..store._messages import Message
from ..store._views import MessageView, reader_body
from ..strategies._base import CompiledMessage, Injection, MessageInjection, Selection, SourceEntry
from ..strategies._passthrough import message_forms
from ..strategies._provider_forms import INJECTION_LABEL
from ..strategies._suffix import MessageForms

__all__ = ["AssemblyCache", "CompiledContext", "Provenance", "ViewAssembly", "assemble", "injection_cost"]


@attrs.frozen(slots=True)
class Provenance:
    """Where a compile's messages came from.

    ``entries``: one :class:`SourceEntry` per compiled message, in order. ``raw_bodies``: each raw
    source message id -> the reader's view of its content (no audiences). ``complete``: the same
    ids -> whether the compile holds all of that view (false when truncated, repaired, when the
    reader view left out the message's thinking, or when only some of a body's shards made it in).
    """

    entries: tuple[SourceEntry, ...]
    raw_bodies: Mapping[str, tuple[ContentBlock, ...]] = attrs.field(factory=lambda: MappingProxyType({}), hash=False)
    complete: Mapping[str, bool] = attrs.field(factory=lambda: MappingProxyType({}), hash=False)


@attrs.frozen(slots=True)
class CompiledContext:
    """A compile: the messages to send, the system content injected, provenance, and the
    token estimate of the whole (messages and system injections)."""

    messages: tuple[CompiledMessage, ...]
    system_injections: tuple[ContentBlock, ...]
    provenance: Provenance
    token_estimate: int

    def to_anthropic(self, assistant: str, *, cache: bool = False) -> list[dict[str, Any]]:
        """The Anthropic Messages API ``messages`` for this compile, with ``assistant`` as the
        participant that takes the assistant role; the memories in the compile (recall markers and
        memory texts) speak as the assistant too. System injections are not included: pass them
        as the request's ``system`` (or use :meth:`to_anthropic_request`).

        With ``cache``, ``cache_control`` breakpoints mark the compile's stable boundaries (the
        end of the head window, the end of the memories, the end of the previous turn and the end
        of the request), at most four (see ``actors/_cache_points.py``)."""
        from ..strategies._provider_forms import to_anthropic

        if not cache:
            return to_anthropic(self.messages, assistant, sources=self.provenance.entries)
        from ._cache_points import place_breakpoints

        return place_breakpoints(self.messages, self.provenance.entries, assistant, lambda m, s: to_anthropic(m, assistant, sources=s))

    def to_anthropic_request(
        self, assistant: str, *, system: str | Sequence[ContentBlock] | None = None, cache: bool = False
    ) -> dict[str, Any]:
        """The ``system`` and ``messages`` of an Anthropic Messages API request for this compile:
        ``{"messages": [...]}`` plus ``"system"`` (a list of text blocks: the host's ``system``
        text, then the compile's system injections) when there is any system text. With
        ``cache``, the system's last block takes a breakpoint and the messages get at most three
        more (four in all, Anthropic's limit)."""
        from ..store._blocks import TextBlock

        texts: list[str] = []
        if isinstance(system, str):
            texts.append(system)
        elif system is not None:
            texts.extend(b.text for b in system if isinstance(b, TextBlock))
        texts.extend(b.text for b in self.system_injections if isinstance(b, TextBlock))
        blocks = [{"type": "text", "text": t} for t in texts if t]
        request: dict[str, Any] = {}
        taken = 0
        if blocks:
            if cache:
                from ._cache_points import mark_system

                taken = mark_system(blocks)
            request["system"] = blocks
        if cache:
            from ..strategies._provider_forms import to_anthropic
            from ._cache_points import place_breakpoints

            request["messages"] = place_breakpoints(
                self.messages, self.provenance.entries, assistant, lambda m, s: to_anthropic(m, assistant, sources=s), taken=taken
            )
        else:
            request["messages"] = self.to_anthropic(assistant)
        return request

    def to_openai(self, assistant: str) -> list[dict[str, Any]]:
        """The OpenAI Chat Completions ``messages`` for this compile (system injections first, as a
        ``system`` message), with ``assistant`` and the compile's memories taking the assistant
        role."""
        from ..strategies._provider_forms import to_openai

        return to_openai(self.messages, assistant, self.system_injections, sources=self.provenance.entries)


def injection_cost(
    injections: Sequence[Injection], message_injections: Sequence[MessageInjection], estimator: Callable[[Sequence[ContentBlock]], int]
) -> int:
    """The estimate of everything a compile injects, each priced as a message."""
    return sum(estimator(i.content) for i in injections) + sum(estimator(m.content) for m in message_injections)


def _is_user(participant: str) -> bool:
    return participant.lower() == "user"


@attrs.frozen
class _Sent:
    """What :meth:`AssemblyCache.sent` worked out for the previous compile: its system content,
    messages and sources, where its first memory stands (its length: none), and its tokens by
    part and in all (its messages')."""

    system: tuple[ContentBlock, ...]
    messages: tuple[CompiledMessage, ...]
    entries: tuple[SourceEntry, ...]
    system_cost: int
    first_memory: int
    head: int
    memories: dict[int, int]
    raw: int
    injections: int
    total: int

    def extends_to(
        self,
        system: tuple[ContentBlock, ...],
        messages: tuple[CompiledMessage, ...],
        entries: tuple[SourceEntry, ...],
        *,
        begins: bool = False,
    ) -> bool:
        """Whether a compile of ``messages`` only added messages to this one: the same system
        content, these messages and sources first (``begins``: known already, not compared
        again), and no first memory among the new ones (a memory among them would make head
        messages of the raw ones before it)."""
        count = len(self.messages)
        if system != self.system or not (begins or _begins_with(messages, entries, self.messages, self.entries)):
            return False
        return self.first_memory < count or all(entry.kind != "summary" for entry in entries[count:])


#: A selection's messages and their sources.
_Selected = tuple[tuple[CompiledMessage, ...], tuple[SourceEntry, ...]]


class AssemblyCache:
    """What one manager's compiles worked out: which entries of its last selection were its
    previous compile's (``reused``: their disclosures were recorded then), and that compile's
    tokens by part (:meth:`sent`). The messages' estimates and reader bodies are kept in a
    :class:`ViewAssembly` that every manager whose view sees alike shares (see
    ``MessageView.shared_state``)."""

    def __init__(self) -> None:
        self._view: MessageView | None = None
        self._edits = 0
        self._messages: tuple[CompiledMessage, ...] = ()
        self._sources: tuple[SourceEntry, ...] = ()
        #: Where the estimates are kept: the shared assembly of the last view compiled.
        self._assembly = ViewAssembly()
        #: How many leading entries of the last selection were the previous one's, unchanged.
        self.reused = 0
        self._disclosed_via: str | None = None  # the way of the last compile whose disclosures were taken
        # The previous compile sent (not a preview): its system content and messages.
        self._sent: _Sent | None = None
        # The last selection, when it began with the one before it: ``(the one before, it)``,
        # each as its messages and sources.
        self._grown: tuple[_Selected, _Selected] | None = None

    def undisclosed(self, sources: Sequence[SourceEntry], via: str) -> MessageIds:
        """The ids of the messages the last selection (``sources``) showed through ``via`` that
        are not yet recorded as disclosed: the entries the cache did not reuse from the previous
        compile of the same way (those were recorded then), so a compile after one new message
        looks at one entry."""
        reused = self.reused if self._disclosed_via == via else 0
        self._disclosed_via = via
        return MessageIds.concat(entry.message_ids for entry in sources[reused:])

    def sent(
        self, compiled: CompiledContext, estimator: Callable[[Sequence[ContentBlock]], int], level_of: Callable[[str | None], int]
    ) -> tuple[CompileParts, int]:
        """``compiled``'s tokens by part (``level_of``: a memory's level from its summary id, 0
        when unknown), and the tokens of its leading part (system content first) equal to the
        previous compile given here; ``compiled`` is then the previous one. Costs the compile's
        messages, each estimate reused from the assembly; when the compile only added messages
        to the previous one (same system content, the same messages and sources before them,
        and no first memory among the new ones), it costs the new ones alone."""
        messages, entries = compiled.messages, compiled.provenance.entries
        system = compiled.system_injections
        previous = self._sent
        estimate_of = self._assembly.estimate_of
        memories: dict[int, int]
        # When the compiles are the last two selections as they were, that one began with the
        # other is known (``raw_part`` compared them), so it is not compared again.
        grown = self._grown
        begins = (
            grown is not None
            and previous is not None
            and grown[0][0] is previous.messages
            and grown[0][1] is previous.entries
            and grown[1][0] is messages
            and grown[1][1] is entries
        )
        if previous is not None and previous.extends_to(system, messages, entries, begins=begins):
            start = len(previous.messages)
            # Its first memory, or none among the new messages either (its length).
            first_memory = previous.first_memory if previous.first_memory < start else len(entries)
            head, memories, raw, injections = previous.head, dict(previous.memories), previous.raw, previous.injections
            total = previous.total
            cached = previous.system_cost + previous.total
            system_cost = previous.system_cost
        else:
            start = 0
            first_memory = next((i for i, entry in enumerate(entries) if entry.kind == "summary"), len(entries))
            head = raw = total = 0
            system_cost = estimator(system) if system else 0
            injections = system_cost
            memories = {}
            cached = 0
            if previous is not None and previous.system == system:
                cached = system_cost
                for before, now in zip(previous.messages, messages, strict=False):
                    if before is not now and before != now:
                        break
                    cached += estimate_of(now, estimator)
        for index in range(start, len(messages)):
            entry, cost = entries[index], estimate_of(messages[index], estimator)
            total += cost
            if entry.kind == "injection":
                injections += cost
            elif entry.kind == "summary":
                level = level_of(entry.summary_id)
                memories[level] = memories.get(level, 0) + cost
            elif index < first_memory < len(entries):
                head += cost
            else:
                raw += cost
        self._sent = _Sent(system, messages, entries, system_cost, first_memory, head, memories, raw, injections, total)
        return CompileParts(head, memories, raw, injections), cached

    def raw_part(
        self, selection: Selection, view: MessageView, reader: str | None, estimator: Callable[[Sequence[ContentBlock]], int]
    ) -> tuple[dict[str, tuple[ContentBlock, ...]], Mapping[str, bool], int]:
        """Reader bodies and completeness of the selection's raw sources, and the estimate of
        its messages (from the view's shared :class:`ViewAssembly`); notes how many leading
        entries were this manager's previous selection's (``reused``)."""
        if self._view is not view:  # a new view (a move, an erasure): nothing of the old one holds
            self._view, self._edits = view, view.revision[1]
            self._messages = ()
            self._disclosed_via = None
            self._assembly = ViewAssembly()
        elif view.revision[1] != self._edits:
            self._edits = view.revision[1]
            self._messages = ()  # no growth-only reuse across an edit
        messages, sources = selection.messages, selection.sources
        self.reused = len(self._messages) if _begins_with(messages, sources, self._messages, self._sources) else 0
        self._grown = ((self._messages, self._sources), (messages, sources)) if self.reused else None
        self._messages, self._sources = messages, sources
        if isinstance(estimator, Hashable):  # else the manager's own, made afresh for each view
            forms = message_forms(view, estimator)
            self._assembly = view.shared_state((ViewAssembly, estimator), lambda: ViewAssembly(forms))
            # The reader of the projection the view reads: the same for every manager sharing
            # the assembly, so no body worked out for one of them holds more than another sees
            # (a reader named by none sees what no reader sees).
            reader = view.projection.reader
        return self._assembly.raw_part(selection, view, reader, estimator)


class ViewAssembly:
    """What compiles worked out for the messages of one view (the views that see alike share
    it): the last selection's reader bodies, completeness and estimate, over each compiled
    message's estimate and the reader body of each message every reader sees whole, which
    every view of the branch shares (``forms``; each checked against the object it was worked
    out from, so an edit makes it afresh). A compile whose selection only adds messages to the
    last one works out only the new ones (plus the copy of its output); one whose selection is
    the last one's works out nothing and returns the same output; otherwise it works out the
    bodies again, and the estimates of the messages that are new or changed. Readers who share
    it see alike, so each reader body is the same for all of them. Bounded by what selections
    hold: estimates and bodies of messages no longer compiled are dropped."""

    def __init__(self, forms: MessageForms | None = None) -> None:
        forms = forms if forms is not None else MessageForms(None)
        self._erasures = -1
        self._edits = 0
        self._messages: tuple[CompiledMessage, ...] = ()
        self._sources: tuple[SourceEntry, ...] = ()
        self._incomplete: frozenset[str] = frozenset()
        self._dropped: frozenset[str] = frozenset()
        self._bodies: dict[str, tuple[ContentBlock, ...]] = {}
        self._present: Completeness = Completeness({}, frozenset())
        self._shards: list[str] = []
        self._estimate = 0
        self._estimates = forms.estimates  # id(message) -> (message, estimate), shared by the branch's views
        self._plain = forms.bodies  # message id -> (body, is a shard): bodies every reader sees whole

    def _forget_edits(self, view: MessageView) -> None:
        erasures = view.erasures
        if erasures != self._erasures:  # an erasure: nothing worked out before it holds
            self._erasures, self._edits = erasures, view.revision[1]
            self._messages = ()
            self._estimates.clear()  # in place: the branch's other views share them
            self._plain.clear()
            return
        edits = view.revision[1]
        if edits != self._edits:
            for message_id in view.edited_since(self._edits):
                self._plain.pop(message_id, None)  # the branch's other views pop it too, before they read
            self._edits = edits
            self._messages = ()  # no growth-only reuse across an edit

    def estimate_of(self, message: CompiledMessage, estimator: Callable[[Sequence[ContentBlock]], int]) -> int:
        """``message``'s estimate, worked out once while it is compiled."""
        known = self._estimates.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        cost = estimator(message.content)
        self._estimates[id(message)] = (message, cost)
        return cost

    def _raw_of(self, message_id: str, view: MessageView, reader: str | None) -> tuple[tuple[ContentBlock, ...], bool] | None:
        """The reader body of a raw source and whether it is a shard of a body: kept (for the
        branch's views, until an edit of the message) where every reader sees the message
        whole, else worked out again."""
        plain = self._plain.get(message_id)
        if plain is not None:
            return plain
        stored = view.stored(message_id)
        if stored is None:
            return None
        known = (reader_body(stored, reader), _body_of(stored) is not None)
        if known[0] is stored.content:  # every reader sees it whole: one entry for the branch
            self._plain[message_id] = known
        return known

    def raw_part(
        self, selection: Selection, view: MessageView, reader: str | None, estimator: Callable[[Sequence[ContentBlock]], int]
    ) -> tuple[dict[str, tuple[ContentBlock, ...]], Mapping[str, bool], int]:
        """Reader bodies and completeness of the selection's raw sources, and the estimate of
        its messages."""
        self._forget_edits(view)
        messages, sources = selection.messages, selection.sources
        dropped = view.thinking_dropped_ids()
        kept = len(self._messages)
        grew = (
            _begins_with(messages, sources, self._messages, self._sources)
            and frozenset(i for i in selection.incomplete if i in self._bodies) == self._incomplete
            and dropped == self._dropped
        )
        if grew and len(messages) == kept:
            self._messages, self._sources = messages, sources
            return self._bodies, self._present, self._estimate  # the same selection: the same output
        if grew:
            bodies, not_whole, shards, estimate = dict(self._bodies), set(self._present.not_whole), list(self._shards), self._estimate
        else:
            kept = 0
            bodies, shards, estimate = {}, [], 0
            not_whole = set()
            if len(self._estimates) > 2 * len(messages) + 64:
                self._estimates.clear()  # drop the estimates of messages no longer compiled
        for message, entry in zip(messages[kept:], sources[kept:], strict=True):
            estimate += self.estimate_of(message, estimator)
            if entry.kind != "raw":
                continue
            for message_id in entry.message_ids:
                known = self._raw_of(message_id, view, reader)
                if known is None:
                    continue
                bodies[message_id] = known[0]
                if message_id in selection.incomplete or message_id in dropped:
                    not_whole.add(message_id)
                if known[1]:
                    shards.append(message_id)
        if shards:
            _judge_shards(bodies, not_whole, shards, view)
        present = Completeness(bodies, frozenset(not_whole))
        if len(self._plain) > 2 * len(bodies) + 64:
            held = {i: self._plain[i] for i in bodies if i in self._plain}
            self._plain.clear()  # in place: the branch's other views share them
            self._plain.update(held)
        self._messages, self._sources, self._dropped = messages, sources, dropped
        self._incomplete = frozenset(i for i in selection.incomplete if i in bodies)
        self._bodies, self._present, self._shards, self._estimate = bodies, present, shards, estimate
        return bodies, present, estimate


def assemble(
    selection: Selection,
    *,
    injections: Sequence[Injection],
    message_injections: Sequence[MessageInjection],
    view: MessageView,
    reader: str | None,
    estimator: Callable[[Sequence[ContentBlock]], int],
    cache: AssemblyCache | None = None,
) -> CompiledContext:
    """Turn a strategy's selection into a :class:`CompiledContext`."""
    raw_bodies, present, estimate = (cache or AssemblyCache()).raw_part(selection, view, reader, estimator)
    messages: Sequence[CompiledMessage] = selection.messages
    sources: Sequence[SourceEntry] = selection.sources

    system: list[ContentBlock] = []
    before: list[Injection] = []
    after: list[Injection] = []
    for item in injections:
        if item.position == "system":
            system.extend(item.content)
        elif item.position == "before_user":
            before.append(item)
        else:
            after.append(item)
    made: list[CompiledMessage] = []
    if before or after:
        last_user = max((i for i, m in enumerate(messages) if _is_user(m.participant)), default=None)
        made_after = [(CompiledMessage(f"{INJECTION_LABEL}{i.namespace}", i.content), SourceEntry("injection")) for i in after]
        made_before = [(CompiledMessage(f"{INJECTION_LABEL}{i.namespace}", i.content), SourceEntry("injection")) for i in before]
        pairs = list(zip(messages, sources, strict=True))
        if last_user is None:
            # after-user goes last; before-user is dropped when there is no user message
            placed = pairs + made_after
            made.extend(m for m, _ in made_after)
        else:
            placed = pairs[:last_user] + made_before + [pairs[last_user]] + made_after + pairs[last_user + 1 :]
            made.extend(m for m, _ in made_before + made_after)
        messages = [m for m, _ in placed]
        sources = [s for _, s in placed]
    # Message injections are the newest entries of the compile, after any positioned injection.
    if message_injections:
        messages, sources = list(messages), list(sources)
        for message_injection in message_injections:
            injected = CompiledMessage(message_injection.participant, message_injection.content)
            made.append(injected)
            messages.append(injected)
            sources.append(SourceEntry("injection"))

    total = estimate + sum(estimator(m.content) for m in made) + (estimator(system) if system else 0)
    return CompiledContext(
        messages=tuple(messages),
        system_injections=tuple(system),
        provenance=Provenance(tuple(sources), MappingProxyType(raw_bodies), MappingProxyType(present)),
        token_estimate=total,
    )


class Completeness(Mapping[str, bool]):
    """A compile's raw source ids, each mapped to whether the compile holds all of the reader's
    view of it (``Provenance.complete``): the ids of its reader bodies, each true but those in
    ``not_whole``. Read-only, and held as the bodies' keys and that set, not a second dict."""

    __slots__ = ("_bodies", "not_whole")

    def __init__(self, bodies: Mapping[str, object], not_whole: frozenset[str]) -> None:
        self._bodies = bodies
        self.not_whole = not_whole

    def __getitem__(self, message_id: str) -> bool:
        if message_id not in self._bodies:
            raise KeyError(message_id)
        return message_id not in self.not_whole

    def __iter__(self) -> Iterator[str]:
        return iter(self._bodies)

    def __len__(self) -> int:
        return len(self._bodies)

    def __repr__(self) -> str:
        return f"Completeness({dict(self)!r})"


def _begins_with(
    messages: Sequence[CompiledMessage],
    sources: Sequence[SourceEntry],
    before: Sequence[CompiledMessage],
    before_sources: Sequence[SourceEntry],
) -> bool:
    """Whether a selection (``messages`` and their ``sources``) only added entries to an earlier
    one that held any: the earlier entries first, unchanged."""
    count = len(before)
    return 0 < count <= len(messages) and messages[:count] == before and sources[:count] == before_sources


def _body_of(message: Message) -> str | None:
    body = message.metadata.get("body_id") if message.metadata else None
    return body if isinstance(body, str) else None


def _judge_shards(bodies: Mapping[str, object], not_whole: set[str], shards: list[str], view: MessageView) -> None:
    """A body whose shards did not all make it into the compile (``bodies``: its raw sources) is
    incomplete: its shards there join ``not_whole``. Only shards in the reader's view count: one
    wholly another reader's is no part of the body. ``shards`` are the compile's raw sources
    that are shards of a body."""
    checked: set[str] = set()
    for message_id in shards:
        if message_id in checked:
            continue
        position = view.position_of(message_id)
        if position is None:
            continue
        message = view.at(position)
        body = _body_of(message)
        if body is None:
            continue
        siblings = [message_id]
        for step in (-1, 1):
            cursor = position + step
            while 0 <= cursor < view.length():
                other = view.at(cursor)
                if _body_of(other) != body:
                    break
                siblings.append(other.id)
                cursor += step
        whole = all(s in bodies for s in siblings)
        for sibling in siblings:
            checked.add(sibling)
            if sibling in bodies and not whole:
                not_whole.add(sibling)
