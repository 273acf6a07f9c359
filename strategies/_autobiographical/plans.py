"""The units' sans-IO core: what a unit asks for, and what its answer makes, as values.

A unit is planned from the tracker and the reader's view (:func:`plan_unit`), and its answer is
judged against the tracker as it stands then (:func:`judge_answer`). Neither awaits, writes,
reads the store or asks a model: each returns a value saying what to do, and the caller performs
it (the runtime, through the unit protocol of ``strategies/_units.py``; a test with no runtime
at all), as hypercorn's protocol core takes events and returns effects. What a plan or an outcome asks:

- :class:`Close`: raise the narrowing floor to ``floor``, then write ``records`` (the chunk
  records the frontier walk cut);
- :class:`Ask`: raise the floor to ``floor`` before ``request`` leaves for the model (the newest
  sequence the request shows), then judge the model's answer with :func:`judge_answer`;
- :class:`Accepted`: write ``records`` (the new summary);
- :class:`Rejected`: write ``records`` (the unit's attempts, counted toward its limit), then
  raise ``error``, which names the unit and the reason;
- :class:`Superseded`: write nothing (another manager did the work meanwhile, or merged a source
  away); a rejected answer's ``error`` is still raised, uncounted.

Once the records are written, :func:`take_written` brings the tracker up to them. The one rule
for answers is ``accepted_text`` (strategies/_models.py), the same for Autobiographical and
Knowledge.

Requests hold only ``user`` and ``assistant`` messages: the head (when it lies before the
target), the newest prior middle items within ``compression_context_tokens``, the memory-point
marker, the target, and the instruction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from ...store._blocks import TextBlock
from ...store._message_ids import MessageIds
from ...store._messages import Message
from ...store._views import MessageView
from .._base import CompiledMessage
from .._errors import AnswerRejectedError
from .._models import CompletionRequest, accepted_text
from .._tokens import Estimator
from .._units import NO_EARLIER_CONTEXT, judge_transition
from .._windowed import first_position_at_or_after
from .compression import MARKER, TRANSITION_REQUEST, TRANSITION_SYSTEM, recall_pair, reduce_message, system_text
from .records import Attempts, Chunk, Summary, SummaryRecord
from .regions import Regions
from .rendering import SummaryItem, middle_items
from .scheduling import CloseChunks, CloseTrailing, CompressChunk, MergeSummaries, Unit, where
from .tracking import Tracker


class Planner(Protocol):
    """What a plan reads of its strategy: its settings and its tracker (the Autobiographical and
    Knowledge strategies are planners; a plan never changes one)."""

    kind: str
    tracker: Tracker
    estimator: Estimator
    summary_participant: str
    summary_target_tokens: int
    compression_model: str | None
    compression_max_tokens: int
    compression_context_tokens: int
    request_message_tokens: int
    merge_attempt_limit: int
    l1_attempt_limit: int
    l1_instruction: str
    merge_instruction: str


__all__ = [
    "NO_EARLIER_CONTEXT",
    "Accepted",
    "Ask",
    "Close",
    "Outcome",
    "Planner",
    "Rejected",
    "Superseded",
    "TransitionPlan",
    "judge_answer",
    "judge_transition",
    "plan_transition",
    "plan_unit",
    "take_written",
]


@attrs.frozen(eq=False)
class Close:
    """Raise the floor to ``floor``, then write ``records``: the chunks the walk cut."""

    unit: CloseChunks | CloseTrailing
    floor: int
    chunks: tuple[Chunk, ...]
    records: Mapping[str, Any]
    #: The walk's list the chunks came from (emptied once they are written, if it still is that list).
    source: list[list[Message]]


@attrs.frozen(eq=False)
class Ask:
    """Raise the floor to ``floor``, send ``request``, judge the answer (:func:`judge_answer`).
    ``describe`` is what the unit does, in words (``compressing messages 470–476``): what
    ``pending_work()`` says while the request is out, and what an error about it names."""

    unit: CompressChunk | MergeSummaries
    floor: int
    request: CompletionRequest
    describe: str
    #: The key of the unit's attempts record, and the number of rejections at which it has failed.
    key: str
    limit: int


@attrs.frozen(eq=False)
class Accepted:
    """Write ``records``: the summary the answer made."""

    records: Mapping[str, Any]
    summary: SummaryRecord


@attrs.frozen(eq=False)
class Rejected:
    """Write ``records`` (the unit's attempts, one more rejection counted), then raise ``error``."""

    records: Mapping[str, Any]
    key: str
    attempts: Attempts
    error: AnswerRejectedError


@attrs.frozen(eq=False)
class Superseded:
    """Write nothing: the unit's work was done (or made moot) meanwhile. ``error``: the rejection
    to raise uncounted, when the answer was rejected too."""

    error: AnswerRejectedError | None = None


Outcome = Accepted | Rejected | Superseded


@attrs.frozen(eq=False)
class TransitionPlan:
    """A topic transition note: raise the floor to ``floor``, send ``request``; the accepted
    answer is the note."""

    floor: int
    request: CompletionRequest
    describe: str = "writing a topic transition note"


# -- planning ----------------------------------------------------------------------------------


def plan_unit(strategy: Planner, view: MessageView, unit: Unit) -> Close | Ask:
    """What ``unit`` asks for, from the tracker and ``view`` as they stand (writes nothing)."""
    tracker = strategy.tracker
    if isinstance(unit, CloseChunks):
        return _close(strategy, unit, tracker.walk.closable)
    if isinstance(unit, CloseTrailing):
        return _close(strategy, unit, [tracker.walk.running])
    regions = tracker.regions or tracker.regions_of(view)
    if isinstance(unit, CompressChunk):
        return _compress_chunk(strategy, view, regions, unit)
    return _merge(strategy, view, regions, unit)


def _close(strategy: Planner, unit: CloseChunks | CloseTrailing, source: list[list[Message]]) -> Close:
    made = tuple(Chunk(c[0].id, tuple(m.id for m in c), c[0].sequence, c[-1].sequence) for c in source)
    newest = max(m.sequence for chunk in source for m in chunk)
    records = {f"{strategy.kind}/chunk/{c.id}": c.to_json() for c in made}
    return Close(unit, newest, made, records, source)


def _reduce(strategy: Planner, message: Message) -> CompiledMessage | None:
    return reduce_message(
        message,
        summary_participant=strategy.summary_participant,
        cap=strategy.request_message_tokens,
        estimator=strategy.estimator,
    )


def _prior(strategy: Planner, view: MessageView, regions: Regions, before: int) -> tuple[list[CompiledMessage], int, list[Sequence[str]]]:
    """Prior context of a target starting at ``before``: the newest middle items before it
    within ``compression_context_tokens``, the newest sequence they show, and the ids of the
    messages they show (a summary's through it), item by item."""
    chosen: list[list[CompiledMessage]] = []
    ids: list[Sequence[str]] = []
    newest = 0
    total = 0
    for item in reversed(middle_items(strategy.tracker, view, regions)):
        if item.position >= before:
            continue
        if isinstance(item, SummaryItem):
            shown = list(recall_pair(item.summary))
            sequence = item.summary.last_sequence
            sources: Sequence[str] = item.summary.message_ids
        else:
            reduced = _reduce(strategy, item.message)
            shown = [reduced] if reduced is not None else []
            sequence = item.message.sequence
            sources = (item.message.id,) if shown else ()
        cost = sum(strategy.estimator(m.content) for m in shown)
        if total + cost > strategy.compression_context_tokens:
            break
        total += cost
        chosen.append(shown)
        ids.append(sources)
        newest = max(newest, sequence)
    return [m for shown in reversed(chosen) for m in shown], newest, ids


def _head(strategy: Planner, view: MessageView, regions: Regions, before: int) -> tuple[list[CompiledMessage], int, list[str]]:
    """The head, reduced, when it lies before ``before``; the newest sequence it shows; the ids
    of the messages it shows."""
    if regions.he > before or regions.he <= regions.hs:
        return [], 0, []
    shown: list[CompiledMessage] = []
    ids: list[str] = []
    newest = 0
    for p in range(regions.hs, regions.he):
        message = view.at(p)
        reduced = _reduce(strategy, message)
        if reduced is not None:
            shown.append(reduced)
            ids.append(message.id)
        newest = max(newest, message.sequence)
    return shown, newest, ids


def _request(strategy: Planner, messages: list[CompiledMessage], sources: Sequence[Sequence[str]]) -> CompletionRequest:
    """The request of ``messages``; ``sources``: the ids of what it shows, in parts (a
    memory's ids are joined by their runs)."""
    return CompletionRequest(
        tuple(messages),
        system=system_text(strategy.summary_participant),
        max_tokens=strategy.compression_max_tokens,
        model=strategy.compression_model,
        source_ids=MessageIds.union(sources),
    )


def _instruction(text: str) -> CompiledMessage:
    return CompiledMessage("user", (TextBlock(text),))


def _compress_chunk(strategy: Planner, view: MessageView, regions: Regions, unit: CompressChunk) -> Ask:
    """A level-1 unit: the chunk's messages, after the head and the prior context."""
    chunk = strategy.tracker.memory.chunks[unit.chunk_id]
    present = [m for m in (view.get(i) for i in chunk.message_ids) if m is not None]
    positions = [p for p in (view.position_of(m.id) for m in present) if p is not None]
    first = min(positions) if positions else first_position_at_or_after(view, chunk.first_sequence)
    head, head_newest, head_ids = _head(strategy, view, regions, first)
    prior, prior_newest, prior_ids = _prior(strategy, view, regions, first)
    target_newest = max((m.sequence for m in present), default=0)
    reduced = [r for r in (_reduce(strategy, m) for m in present) if r is not None]
    instruction = _instruction(strategy.l1_instruction.format(target=strategy.summary_target_tokens))
    target_ids = [m.id for m in present]
    request = _request(strategy, head + prior + [_instruction(MARKER)] + reduced + [instruction], [head_ids, *prior_ids, target_ids])
    describe = f"compressing {where(view, chunk.message_ids)}"
    return Ask(unit, max(head_newest, prior_newest, target_newest), request, describe, unit.chunk_id, strategy.l1_attempt_limit)


def _chunk_messages(tracker: Tracker, view: MessageView, members: list[SummaryRecord]) -> list[Message]:
    memory = tracker.memory
    ids = (i for record in members if record.chunk is not None for i in memory.chunks[record.chunk].message_ids)
    return [m for m in (view.get(i) for i in ids) if m is not None]


def _merge(strategy: Planner, view: MessageView, regions: Regions, unit: MergeSummaries) -> Ask:
    """A merge unit: level-``level`` summaries into one of the next level. The target is the group
    one level below its members: the raw messages of each member's chunk for a level-1 group,
    else each member's children as recall pairs."""
    tracker = strategy.tracker
    memory = tracker.memory
    level, group = unit.level, list(unit.group)
    members = [memory.summaries[s] for s in group]
    new_level = level + 1
    first_ids = members[0].message_ids
    found = next((p for p in (view.position_of(i) for i in first_ids) if p is not None), None)
    first = found if found is not None else first_position_at_or_after(view, members[0].first_sequence)
    head, head_newest, head_ids = _head(strategy, view, regions, first)
    prior, prior_newest, prior_ids = _prior(strategy, view, regions, first)
    if level == 1:
        chunk_messages = _chunk_messages(tracker, view, members)
        target_newest = max((m.sequence for m in chunk_messages), default=0)
        target = [r for r in (_reduce(strategy, m) for m in chunk_messages) if r is not None]
        target_ids: list[Sequence[str]] = [[m.id for m in chunk_messages]]
        what = "the conversation"
    else:
        merged = [c for s in members for c in s.children]
        read = memory.read_summaries(merged)  # held: the members are roots, these of the frontier
        children = [read[c] for c in merged]
        target_newest = max((c.last_sequence for c in children), default=0)
        target = [m for c in children for m in recall_pair(c)]
        target_ids = [c.message_ids for c in children]
        what = "your earlier memories"
    instruction = _instruction(strategy.merge_instruction.format(what=what, k=new_level, target=strategy.summary_target_tokens))
    request = _request(strategy, head + prior + [_instruction(MARKER)] + target + [instruction], [head_ids, *prior_ids, *target_ids])
    span = where(view, MessageIds.concat((members[0].message_ids, members[-1].message_ids)))
    key = f"merge:{new_level}:{group[0]}:{group[-1]}"
    describe = f"merging {len(group)} memories of {span}"
    return Ask(unit, max(head_newest, prior_newest, target_newest), request, describe, key, strategy.merge_attempt_limit)


# -- judging an answer -------------------------------------------------------------------------


def _superseded(tracker: Tracker, unit: CompressChunk | MergeSummaries) -> bool:
    """Whether the unit's work was done, or made moot, since it was planned."""
    memory = tracker.memory
    if isinstance(unit, CompressChunk):
        return unit.chunk_id in memory.l1_of or unit.chunk_id not in memory.chunks
    return any(s in memory.parent or s not in memory.summaries for s in unit.group)


def judge_answer(strategy: Planner, ask: Ask, answer: object) -> Outcome:
    """What ``answer`` makes, against the tracker as it stands now (caught up with what other
    managers wrote meanwhile). ``answer`` is the model's return value for ``ask.request``, or the
    ``AnswerRejectedError`` a layer between raised for it (the model gate's size limit). A
    rejected answer of a unit still due is counted: at its limit the unit has failed, renders raw
    and is never asked again. Writes nothing."""
    tracker = strategy.tracker
    try:
        if isinstance(answer, AnswerRejectedError):
            raise answer
        text = accepted_text(answer)
    except AnswerRejectedError as exc:
        rejected = AnswerRejectedError(f"{ask.describe}: {exc}", reason=exc.reason)  # the log names the unit
        if _superseded(tracker, ask.unit):
            return Superseded(rejected)
        return _count_rejection(strategy, ask, rejected)
    if _superseded(tracker, ask.unit):
        return Superseded()
    memory = tracker.memory
    unit = ask.unit
    if isinstance(unit, CompressChunk):
        chunk = memory.chunks[unit.chunk_id]
        summary = Summary(f"L1-{memory.next_n}", 1, text, chunk.message_ids, chunk.first_sequence, chunk.last_sequence)
        record = SummaryRecord.of(summary, chunk=unit.chunk_id)
    else:
        members = [memory.summaries[s] for s in unit.group]
        summary = Summary(
            f"L{unit.level + 1}-{memory.next_n}",
            unit.level + 1,
            text,
            MessageIds.concat(s.message_ids for s in members),
            min(s.first_sequence for s in members),
            max(s.last_sequence for s in members),
        )
        record = SummaryRecord.of(summary, children=tuple(unit.group))
    return Accepted({f"{strategy.kind}/summary/{record.id}": record.to_json()}, record)


def _count_rejection(strategy: Planner, ask: Ask, rejected: AnswerRejectedError) -> Rejected:
    before = strategy.tracker.memory.attempts.get(ask.key, Attempts())
    rejections = before.rejections + 1
    members = tuple(ask.unit.group) if isinstance(ask.unit, MergeSummaries) else ()
    after = Attempts(rejections, rejections >= ask.limit, members, rejected.reason)
    if after.failed:
        note = f"answer {rejections} of {ask.limit} rejected; the unit has failed: it renders raw and is never asked again"
    else:
        note = f"answer {rejections} of {ask.limit} rejected"
    error = AnswerRejectedError(f"{rejected} ({note})", reason=rejected.reason, unit_failed=after.failed)
    return Rejected({f"{strategy.kind}/attempts/{ask.key}": after.to_json()}, ask.key, after, error)


# -- after the write ---------------------------------------------------------------------------


def take_written(strategy: Planner, written: Close | Accepted | Rejected, view: MessageView) -> None:
    """Bring the tracker up to records just written for a close or an outcome (in memory only)."""
    tracker = strategy.tracker
    if isinstance(written, Close):
        tracker.take_chunks(list(written.chunks))
        if isinstance(written.unit, CloseTrailing):
            tracker.walk.running, tracker.walk.running_cost = [], 0
        elif written.source is tracker.walk.closable:
            tracker.walk.closable = []
        tracker.advance_scan(view)
    elif isinstance(written, Accepted):
        tracker.take_summary(written.summary)
    else:
        tracker.memory.attempts[written.key] = written.attempts
        if written.attempts.failed:
            tracker.derive()


# -- the transition note -----------------------------------------------------------------------


def _transition_reads(tracker: Tracker, regions: Regions, view: MessageView) -> tuple[list[Message], list[Summary]]:
    """The head, and up to three summaries: the newest of level 2 and above, filled up with the
    newest of level 1, in order of events."""
    memory = tracker.memory
    head = [view.at(p) for p in range(regions.hs, regions.he)]
    high = sorted(
        (memory.summaries[s].summary for level in tracker.levels() if level >= 2 for s in tracker.roots[level]),
        key=lambda s: s.last_sequence,
        reverse=True,
    )[:3]
    low = sorted((memory.summaries[s].summary for s in tracker.roots.get(1, ())), key=lambda s: s.last_sequence, reverse=True)
    chosen = (high + low[: 3 - len(high)])[:3]
    chosen.sort(key=lambda s: s.first_sequence)
    return head, chosen


def plan_transition(strategy: Planner, view: MessageView, regions: Regions) -> TransitionPlan | None:
    """The request for a topic transition note, written from the head and up to three summaries;
    ``None`` when there is nothing to read (the note is then ``No earlier context.``)."""
    head, chosen = _transition_reads(strategy.tracker, regions, view)
    if not head and not chosen:
        return None
    newest = max([m.sequence for m in head] + [s.last_sequence for s in chosen])
    parts = [TRANSITION_REQUEST]
    lines = []
    for message in head:
        reduced = _reduce(strategy, message)
        if reduced is None:
            continue
        text = " ".join(b.text for b in reduced.content if isinstance(b, TextBlock))
        speaker = message.participant
        lines.append(text if text.startswith(f"{speaker}: ") else f"{speaker}: {text}")
    if lines:
        opening = "\n".join(lines)
        if len(opening) > 8000:
            opening = opening[:8000] + "\n[...truncated...]"
        parts.append("Opening of the conversation:\n\n" + opening)
    if chosen:
        parts.append("Your recent memories:\n\n" + "\n\n---\n\n".join(s.text for s in chosen))
    parts.append("Write only the note.")
    request = CompletionRequest(
        (CompiledMessage("user", (TextBlock("\n\n".join(parts)),)),),
        system=TRANSITION_SYSTEM,
        max_tokens=1500,
        model=strategy.compression_model,
        source_ids=MessageIds.union([[m.id for m in head], *(s.message_ids for s in chosen)]),
    )
    return TransitionPlan(newest, request)
