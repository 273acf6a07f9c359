"""What an autobiographical strategy knows of its namespace on one branch, kept in step.

:class:`Tracker` holds the namespace's records in memory (:class:`~.records.Memory`) and what
derives from them: the chunks still without a summary, the summaries nobody merged (the *roots*,
by level), the members of failed merges, the regions of the view, the frontier walk that cuts new
chunks and the recent window. :meth:`Tracker.sync` brings all of it up to date with the records
another manager of the namespace wrote and with the view, at a cost bounded by what changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...store._key_numbers import key_number
from ...store._messages import Message
from ...store._views import MessageView
from .._base import StrategyContext, StrategyState
from .._windowed import first_position_at_or_after
from .chunking import FrontierWalk, frontier_start
from .records import Chunk, Memory, Outline, SummaryRecord, decode_summary, load_order
from .regions import RecentWindow, Regions, head_end

__all__ = ["OUTLINE_EVERY", "Tracker"]

#: A unit's write carries an outline of the memory (``records.Outline``) once the memory has
#: taken in this many chunk and summary records since the outline it was loaded from (or since
#: a load of every record): an open then reads at most about this many records past the
#: frontier.
OUTLINE_EVERY = 64


class Tracker:
    """The in-memory side of one strategy's records and of the view it compresses (see the module
    docstring). ``price`` is what a raw message costs as shown."""

    def __init__(
        self,
        kind: str,
        *,
        price: Callable[[Message], int],
        head_window_tokens: int,
        recent_window_tokens: int,
        target_chunk_tokens: int,
        holdback_chunks: int = 0,
    ) -> None:
        self.kind = kind
        self.holdback_chunks = holdback_chunks
        self.price = price
        self.head_window_tokens = head_window_tokens
        self.recent_window_tokens = recent_window_tokens
        self.target_chunk_tokens = target_chunk_tokens
        self.memory = Memory(kind)
        self.revision = 0
        self.view_edits: int | None = None
        self.recent = RecentWindow(recent_window_tokens)
        self.walk = FrontierWalk()
        self.scan_start = 0
        self.unsummarised: set[str] = set()
        self.roots: dict[int, set[str]] = {}
        self.failed_members: dict[int, set[str]] = {}
        #: What the unit whose request is out is doing, in words (``None``: no request out).
        self.in_flight: str | None = None
        self.state: StrategyState | None = None
        self.view: MessageView | None = None
        self.regions: Regions | None = None
        self._head_cache: tuple[tuple[int, int | None, int], int, int] | None = None
        #: The erasure count of the store when the memory was loaded (``None``: not known).
        self.erasures: int | None = None
        #: ``memory.taken`` as of the newest outline (written, or loaded from).
        self.outlined = 0

    # -- the records -------------------------------------------------------------------------------

    def load(self, ctx: StrategyContext) -> None:
        """Load this namespace's records on this branch and catch up with the view; writes
        nothing. Reads the frontier's records and those written after the newest outline when
        the outline can be trusted, every record otherwise."""
        state = ctx.state
        self.state = state
        if not self._load_outline(state):
            self._load_whole(state)
        self.revision = state.revision
        self.derive()
        self.sync(ctx)

    def _new_memory(self, state: StrategyState) -> Memory:
        memory = Memory(self.kind)
        memory.reporter = state.report
        summaries = self.kind + "/summary/"

        def read_records(summary_ids: Sequence[str]) -> dict[str, SummaryRecord]:
            values = state.get_many([summaries + sid for sid in summary_ids])
            records = ((sid, decode_summary(sid, values.get(summaries + sid))) for sid in summary_ids)
            return {sid: record for sid, record in records if record is not None}

        def read_texts(summary_ids: Sequence[str]) -> dict[str, str]:
            return {sid: record.summary.text for sid, record in read_records(summary_ids).items()}

        def narrow(summary_ids: Sequence[str], words: Sequence[str]) -> list[str]:
            return [key[len(summaries) :] for key in state.keys_holding([summaries + sid for sid in summary_ids], words)]

        def find(words: Sequence[str]) -> list[str] | None:
            found = state.keys_matching(summaries, words)
            return None if found is None else [key[len(summaries) :] for key in found]

        memory.text_reader = read_texts
        memory.text_filter = narrow
        memory.text_finder = find
        memory.record_reader = read_records
        memory.summary_ids = lambda: [key[len(summaries) :] for key in state.keys(summaries)]
        return memory

    def _load_whole(self, state: StrategyState) -> None:
        self.erasures = state.erasure_count
        memory = self._new_memory(state)
        memory.load_from(state.keys(self.kind + "/"), state.get_many)
        self.memory = memory
        self.outlined = 0

    def _load_outline(self, state: StrategyState) -> bool:
        """Load from the newest outline and the records written after it; ``False`` (nothing
        kept) when there is none, or it cannot be trusted: a chunk or summary record before it
        that it does not account for, fewer of the newest chunks than this strategy holds back,
        or a record it names that does not read as it says. An erasure since it was made is no
        reason by itself: one that erased a message a chunk owns erased that chunk's record and
        every memory covering the message (store/_erasure.py), up to a root, which the outline
        names, so it does not read as the outline says; one that erased none of them left
        every record as the outline describes it."""
        prefix = self.kind + "/"
        found, erasures = state.sequences(prefix + "outline"), state.erasure_count
        if found is None or erasures is None or prefix + "outline" not in found:
            return False
        outline = Outline.from_json(state.get(prefix + "outline"))
        if outline is None:
            return False
        at = found[prefix + "outline"]
        before = 0
        after: list[str] = []
        for section in ("chunk/", "summary/"):  # counted where the store can, not listed
            split = state.sequences_after(prefix + section, at)
            if split is None:
                return False
            before += split[0]
            after.extend(split[1])
        after.extend(state.keys(prefix + "attempts/"))
        after.append(prefix + "head-start")
        if before != outline.taken or len(outline.newest) < min(self.holdback_chunks, outline.chunk_count):
            return False
        named = [f"{prefix}chunk/{c}" for c, _l1 in outline.chunks] + [f"{prefix}summary/{s}" for s in outline.summaries]
        after.sort(key=load_order)
        values = state.get_many(named + after)
        memory = self._new_memory(state)
        if not memory.restore(outline, values):
            return False
        for key in after:
            if key in values:
                memory.apply(key, values[key])
        self.memory = memory
        self.erasures = erasures
        self.outlined = outline.taken
        return True

    def ensure_whole(self) -> None:
        """Make the memory hold every record (a load of every one), for a read that needs more
        than the frontier: a no-op when it does."""
        if not self.memory.partial or self.state is None:
            return
        self._load_whole(self.state)
        self.revision = self.state.revision
        self.derive()

    def with_outline(self, records: Mapping[str, Any]) -> Mapping[str, Any]:
        """``records``, with an outline of the memory first when one is due (``OUTLINE_EVERY``).
        In a view in the order written, the runs of ids the chunks own are bridged first where
        their messages stand side by side (:meth:`Memory.bridge`), so an outline names a run
        each stretch the chunks own, however many chunks."""
        if self.erasures is None or self.memory.taken - self.outlined < OUTLINE_EVERY:
            return records
        view = self.view
        if view is not None and self._resumable(view):

            def adjacent(last: int, first: int) -> bool:
                before, after = view.position_of(str(last)), view.position_of(str(first))
                return before is not None and after == before + 1

            self.memory.bridge(adjacent)
        outline = self.memory.outline(self.erasures, max(self.holdback_chunks, 1))
        return {f"{self.kind}/outline": outline.to_json(), **records}

    def took_outline(self, records: Mapping[str, Any]) -> None:
        """``records`` were written: an outline among them is now the newest, and the memory
        lets go of what an outline of it would not name (:meth:`Memory.compact`), so that what
        a manager running for months holds follows its frontier, not what it wrote. Not after
        an erasure since the memory was loaded (what it holds may no longer be as stored)."""
        written = records.get(f"{self.kind}/outline")
        if written is None:
            return
        self.outlined = written["taken"]
        if self.state is not None and self.erasures is not None and self.state.erasure_count == self.erasures:
            self.memory.compact(max(self.holdback_chunks, 1))
            self.derive()

    def derive(self) -> None:
        """Recompute the unsummarised chunks, the roots and the failed merge members from memory."""
        memory = self.memory
        self.unsummarised = {c for c in memory.chunks if c not in memory.l1_of}
        self.roots = {}
        for record in memory.roots():
            self.roots.setdefault(record.level, set()).add(record.id)
        self.failed_members = {}
        for key, attempts in memory.attempts.items():
            if attempts.failed and key.startswith("merge:"):
                number = key_number(key.split(":")[1])
                if number is None:
                    continue  # not a merge this strategy wrote (foreign data): nothing to retry
                self.failed_members.setdefault(number - 1, set()).update(attempts.members)

    def frontier_in_order(self) -> list[tuple[str, bool]]:
        """The summaries nobody merged and the chunks without a summary, by their first message:
        every closed chunk is one of these chunks or under one of these summaries, which each
        cover a run of adjacent chunks, so two of them are adjacent exactly when they stand
        side by side here. Each is ``(id, whether it is a summary)``."""
        memory = self.memory
        items = [(memory.summaries[s].first_sequence, s, True) for ids in self.roots.values() for s in ids]
        items.extend((memory.chunks[c].first_sequence, c, False) for c in self.unsummarised)
        items.sort()
        return [(item, is_summary) for _first, item, is_summary in items]

    def levels(self) -> list[int]:
        """The levels that hold at least one root, lowest first."""
        return sorted(level for level, ids in self.roots.items() if ids)

    def take_summary(self, record: SummaryRecord) -> None:
        """Take a summary this strategy (or another manager) just wrote."""
        memory = self.memory
        memory.add_summary(record)
        if record.id not in memory.summaries:
            return
        if record.chunk is not None:
            self.unsummarised.discard(record.chunk)
        for child in record.children:
            self.roots.get(memory.summaries[child].level, set()).discard(child)
        self.roots.setdefault(record.level, set()).add(record.id)

    def take_chunks(self, chunks: list[Chunk]) -> None:
        """Take chunks this strategy just wrote (another manager of the namespace may have
        written, and summarised, the same chunk first)."""
        memory = self.memory
        for chunk in chunks:
            memory.add_chunk(chunk)
            if chunk.id in memory.chunks and chunk.id not in memory.l1_of:
                self.unsummarised.add(chunk.id)

    def catch_up(self, state: StrategyState) -> bool:
        """Apply records another manager of this namespace wrote; whether chunks changed."""
        revision = state.revision
        if revision == self.revision:
            return False
        memory = self.memory
        chunks_before = len(memory.chunks)
        for key in state.written_since(self.revision):
            if not key.startswith(self.kind + "/"):
                continue
            value = state.get(key)
            rest = key[len(self.kind) + 1 :]
            if rest.startswith("summary/"):
                before = set(memory.summaries)
                memory.apply(key, value)
                for sid in set(memory.summaries) - before:
                    self.take_summary(memory.summaries[sid])
            else:
                memory.apply(key, value)
                if rest.startswith("chunk/"):
                    chunk_id = rest[len("chunk/") :]
                    if chunk_id in memory.chunks and chunk_id not in memory.l1_of:
                        self.unsummarised.add(chunk_id)
                elif rest.startswith("attempts/"):
                    self.derive()
        self.revision = revision
        return len(memory.chunks) != chunks_before

    def catch_up_for_read(self) -> None:
        """Before a summary read: apply what other managers wrote since the last call."""
        if self.state is not None:
            self.catch_up(self.state)

    def owned(self, message_id: str) -> bool:
        """Whether a closed chunk holds this message."""
        return self.memory.owns(message_id)

    # -- the view ----------------------------------------------------------------------------------

    def regions_of(self, view: MessageView) -> Regions:
        """Head, middle and recent window of the view as it stands."""
        head_start = self.memory.head_start
        hs = 0 if head_start is None else first_position_at_or_after(view, head_start)
        n = view.length()
        key = (hs, self.view_edits, len(self.memory.chunks))
        cached = self._head_cache
        if cached is not None and cached[0] == key and cached[1] < cached[2] <= n:
            he = cached[1]  # a full head does not change while nothing before its end does
        else:
            he = head_end(view, hs, self.head_window_tokens, self.price, self.owned)
            self._head_cache = (key, he, n)
        rs = self.recent.rs(view, self.owned)
        return Regions(n, hs, he, rs)

    def _resumable(self, view: MessageView) -> bool:
        """Whether what the memory holds of the chunks answers for ``view`` as it would loaded
        whole: a view in the order written, and a memory loaded after the store's every erasure
        (an erasure erased the record of every chunk owning a message it erased)."""
        return view.in_written_order and view.erasures == self.erasures

    def reset_walk(self, view: MessageView) -> None:
        """Walk the frontier again from its first unowned compressible message."""
        if not self._resumable(view):
            self.ensure_whole()  # a partial memory's runs of owned ids hold for such a view alone
        self.recent.reset(view, self.price, self.owned)
        regions = self.regions_of(view)
        start = self._after_the_chunks(view, regions)
        if start is None:
            self.ensure_whole()  # the walk's start is found chunk by chunk
            memory = self.memory
            chunks = (memory.chunks[c] for c in memory.order)
            spans = [(chunk.message_ids[0], chunk.message_ids[-1], len(chunk.message_ids)) for chunk in chunks]
            start = frontier_start(view, regions, spans, view.position_of)
        self.walk = FrontierWalk(position=start)
        self.scan_start = start

    def _after_the_chunks(self, view: MessageView, regions: Regions) -> int | None:
        """The position after the newest chunk, when every compressible position before it is
        owned, found from the chunks' total (``None``: look chunk by chunk). Only for a view in
        the order written and a memory loaded after the store's every erasure: an erasure
        erases the chunk records that own a message it erases (store/_erasure.py), so every
        chunk the memory holds has its messages still in the view, side by side, as they were
        when it closed (an erasure only takes messages out), and the chunks own every
        compressible position up to the newest one's end exactly when they own as many
        messages as there are such positions."""
        memory = self.memory
        if not memory.order or not self._resumable(view):
            return None
        end = view.position_of(memory.chunks[memory.order[-1]].message_ids[-1])
        if end is None or end >= regions.rs:
            return None
        head = max(0, min(regions.he, end + 1) - regions.hs)
        return end + 1 if memory.owned_count == end + 1 - head else None

    def forget_view(self) -> None:
        """Make the next :meth:`sync` walk the frontier again (the head moved)."""
        self.view_edits = None

    def sync(self, ctx: StrategyContext) -> Regions:
        """Catch up with other managers' records and with the view; advance the frontier."""
        self.state = ctx.state
        view = ctx.view
        self.view = view
        chunks_changed = self.catch_up(ctx.state)
        edits = view.revision[1]
        if edits != self.view_edits or chunks_changed:
            self.view_edits = edits
            self.reset_walk(view)
        else:
            self.recent.advance(view, self.price)
        regions = self.regions_of(view)
        if self.regions is not None and regions.he < self.regions.he and regions.hs == self.regions.hs:
            # The head shrank (a call at its end got its result and the pair no longer fits):
            # messages the walk passed as head are middle now, so walk again.
            self.reset_walk(view)
            regions = self.regions_of(view)
        self.walk.advance(view, regions, owned=self.owned, cost=self.price, target=self.target_chunk_tokens)
        self.regions = regions
        return regions

    def advance_scan(self, view: MessageView) -> None:
        """Move the first possibly-unowned middle position past messages chunks now own."""
        regions = self.regions
        if regions is None:
            return
        p = self.scan_start
        while p < regions.rs and (regions.in_head(p) or self.owned(view.id_at(p))):
            p += 1
        self.scan_start = p
