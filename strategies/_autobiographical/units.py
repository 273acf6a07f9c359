"""Units of work: closing chunks, level-1 summaries, merges, and the transition note.

A unit that asks the model runs in three steps: *prepare* (in the namespace actor's turn: raise
the narrowing floor to the newest message the request will show, then build the request from the
reader's view as it stands after the raise), *request* (``await model.complete``, the actor's
turn released by the model gate), and *commit* (back in the turn: write the summary, or count a
rejection, unless another manager did the work meanwhile). A close raises the floor first and
writes its chunk records only once the floor rose.

Every answer follows one rule (``accepted_text``, the same for Autobiographical and Knowledge).
A rejection is counted toward its unit's attempt limit, with its reason (a unit at its limit has
failed: it renders raw and is never asked again), and raised as ``AnswerRejectedError`` naming
the unit and the reason, so the drain logs it and retries with back-off.

Requests hold only ``user`` and ``assistant`` messages: the head (when it lies before the
target), the newest prior middle items within ``compression_context_tokens``, the memory-point
marker, the target, and the instruction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...store._blocks import TextBlock
from ...store._messages import Message
from ...store._views import MessageView
from .._base import CompiledMessage, StrategyContext
from .._errors import AnswerRejectedError, CompressionError, ModelError
from .._models import CompletionRequest, accepted_text
from .._windowed import first_position_at_or_after
from .compression import MARKER, TRANSITION_REQUEST, TRANSITION_SYSTEM, recall_pair, reduce_message, system_text
from .records import Attempts, Chunk, Summary, SummaryRecord
from .regions import Regions
from .rendering import SummaryItem, middle_items
from .scheduling import CloseChunks, CloseTrailing, CompressChunk, Unit, where

if TYPE_CHECKING:
    from .strategy import AutobiographicalStrategy

__all__ = ["run_unit", "transition_text"]


async def run_unit(strategy: AutobiographicalStrategy, ctx: StrategyContext, unit: Unit) -> None:
    """Run one unit to its end."""
    walk = strategy.tracker.walk
    if isinstance(unit, CloseChunks):
        await _close(strategy, ctx, walk.closable)
    elif isinstance(unit, CloseTrailing):
        await _close(strategy, ctx, [walk.running])
        walk.running, walk.running_cost = [], 0
    elif isinstance(unit, CompressChunk):
        await _compress_chunk(strategy, ctx, unit.chunk_id)
    else:
        await _merge(strategy, ctx, unit.level, list(unit.group))


# -- closing -------------------------------------------------------------------------------------


async def _close(strategy: AutobiographicalStrategy, ctx: StrategyContext, chunks: list[list[Message]]) -> None:
    """Close chunks: raise the floor first; write the records only once it rose."""
    tracker = strategy.tracker
    newest = max(m.sequence for chunk in chunks for m in chunk)
    await ctx.mark_compression_read(newest)
    made = [Chunk(c[0].id, tuple(m.id for m in c), c[0].sequence, c[-1].sequence) for c in chunks]
    await ctx.state.set_many({f"{strategy.kind}/chunk/{c.id}": c.to_json() for c in made})
    tracker.take_chunks(made)
    if chunks is tracker.walk.closable:
        tracker.walk.closable = []
    tracker.advance_scan(ctx.view)


# -- what a request shows ------------------------------------------------------------------------


def _reduce(strategy: AutobiographicalStrategy, message: Message) -> CompiledMessage | None:
    return reduce_message(
        message,
        summary_participant=strategy.summary_participant,
        cap=strategy.request_message_tokens,
        estimator=strategy.estimator,
    )


def _prior(
    strategy: AutobiographicalStrategy, view: MessageView, regions: Regions, before: int
) -> tuple[list[CompiledMessage], int, list[str]]:
    """Prior context of a target starting at ``before``: the newest middle items before it
    within ``compression_context_tokens``, the newest sequence they show, and the ids of the
    messages they show (a summary's through it)."""
    chosen: list[list[CompiledMessage]] = []
    ids: list[str] = []
    newest = 0
    total = 0
    for item in reversed(middle_items(strategy.tracker, view, regions)):
        if item.position >= before:
            continue
        if isinstance(item, SummaryItem):
            shown = list(recall_pair(item.summary))
            sequence = item.summary.last_sequence
            sources: tuple[str, ...] = item.summary.message_ids
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
        ids.extend(sources)
        newest = max(newest, sequence)
    return [m for shown in reversed(chosen) for m in shown], newest, ids


def _head(
    strategy: AutobiographicalStrategy, view: MessageView, regions: Regions, before: int
) -> tuple[list[CompiledMessage], int, list[str]]:
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


def _request(strategy: AutobiographicalStrategy, messages: list[CompiledMessage], source_ids: list[str]) -> CompletionRequest:
    return CompletionRequest(
        tuple(messages),
        system=system_text(strategy.summary_participant),
        max_tokens=strategy.compression_max_tokens,
        model=strategy.compression_model,
        source_ids=tuple(dict.fromkeys(source_ids)),
    )


def _instruction(text: str) -> CompiledMessage:
    return CompiledMessage("user", (TextBlock(text),))


async def _ask(strategy: AutobiographicalStrategy, ctx: StrategyContext, request: CompletionRequest, describe: str) -> str:
    """Send ``request`` and return the answer's text, accepted by the one rule every answer
    follows (``accepted_text``; a rejection raises ``AnswerRejectedError`` naming ``describe``,
    the unit, and the reason). ``describe`` is what ``pending_work()`` says while it is out."""
    model = ctx.model
    if model is None:
        raise CompressionError(f"no compression model is configured for {ctx.namespace} on {ctx.branch}")
    tracker = strategy.tracker
    tracker.in_flight = describe
    try:
        return accepted_text(await model.complete(request))
    except AnswerRejectedError as exc:
        raise AnswerRejectedError(f"{describe}: {exc}", reason=exc.reason) from exc  # the log names the unit
    except ModelError as exc:
        raise ModelError(f"{describe}: {exc}") from exc
    finally:
        tracker.in_flight = None


async def _reject(
    strategy: AutobiographicalStrategy,
    ctx: StrategyContext,
    key: str,
    limit: int,
    rejected: AnswerRejectedError,
    members: tuple[str, ...] = (),
) -> AnswerRejectedError:
    """Count a rejected answer for the unit ``key`` (keeping its reason); at ``limit`` the unit
    has failed. The error to raise: the rejection, saying how many answers of the limit were
    rejected and, at the limit, that the unit has failed."""
    tracker = strategy.tracker
    before = tracker.memory.attempts.get(key, Attempts())
    rejections = before.rejections + 1
    after = Attempts(rejections, rejections >= limit, members, rejected.reason)
    await ctx.state.set(f"{strategy.kind}/attempts/{key}", after.to_json())
    tracker.memory.attempts[key] = after
    if after.failed:
        tracker.derive()
        note = f"answer {rejections} of {limit} rejected; the unit has failed: it renders raw and is never asked again"
    else:
        note = f"answer {rejections} of {limit} rejected"
    return AnswerRejectedError(f"{rejected} ({note})", reason=rejected.reason, unit_failed=after.failed)


async def _store(strategy: AutobiographicalStrategy, ctx: StrategyContext, record: SummaryRecord) -> None:
    await ctx.state.set(f"{strategy.kind}/summary/{record.id}", record.to_json())
    strategy.tracker.take_summary(record)


# -- level 1 -------------------------------------------------------------------------------------


async def _compress_chunk(strategy: AutobiographicalStrategy, ctx: StrategyContext, chunk_id: str) -> None:
    """A level-1 unit: prepare (floor, request) in the turn, ask outside it, commit."""
    tracker = strategy.tracker
    view = ctx.view
    regions = tracker.regions or tracker.sync(ctx)
    chunk = tracker.memory.chunks[chunk_id]
    present = [m for m in (view.get(i) for i in chunk.message_ids) if m is not None]
    positions = [p for p in (view.position_of(m.id) for m in present) if p is not None]
    first = min(positions) if positions else first_position_at_or_after(view, chunk.first_sequence)
    head, head_newest, head_ids = _head(strategy, view, regions, first)
    prior, prior_newest, prior_ids = _prior(strategy, view, regions, first)
    target_newest = max((m.sequence for m in present), default=0)
    await ctx.mark_compression_read(max(head_newest, prior_newest, target_newest))
    # Build the target from the view as it stands after the raise.
    present = [m for m in (view.get(i) for i in chunk.message_ids) if m is not None]
    reduced = [r for r in (_reduce(strategy, m) for m in present) if r is not None]
    instruction = _instruction(strategy.l1_instruction.format(target=strategy.summary_target_tokens))
    target_ids = [m.id for m in present]
    request = _request(strategy, head + prior + [_instruction(MARKER)] + reduced + [instruction], head_ids + prior_ids + target_ids)
    try:
        text = await _ask(strategy, ctx, request, f"compressing {where(view, chunk.message_ids)}")
    except AnswerRejectedError as exc:
        # Counted toward the chunk's attempt limit, then raised: the drain logs it and retries
        # with back-off (a failed chunk is never queued again).
        tracker.catch_up(ctx.state)
        if chunk_id not in tracker.memory.l1_of and chunk_id in tracker.memory.chunks:
            raise await _reject(strategy, ctx, chunk_id, strategy.l1_attempt_limit, exc) from exc
        raise
    tracker.catch_up(ctx.state)
    memory = tracker.memory
    if chunk_id in memory.l1_of or chunk_id not in memory.chunks:
        return  # another manager summarised it meanwhile
    summary_id = f"L1-{memory.next_n}"
    summary = Summary(summary_id, 1, text, chunk.message_ids, chunk.first_sequence, chunk.last_sequence)
    await _store(strategy, ctx, SummaryRecord(summary, chunk=chunk_id))


# -- merges --------------------------------------------------------------------------------------


def _chunk_messages(strategy: AutobiographicalStrategy, view: MessageView, members: list[SummaryRecord]) -> list[Message]:
    memory = strategy.tracker.memory
    ids = (i for record in members if record.chunk is not None for i in memory.chunks[record.chunk].message_ids)
    return [m for m in (view.get(i) for i in ids) if m is not None]


async def _merge(strategy: AutobiographicalStrategy, ctx: StrategyContext, level: int, group: list[str]) -> None:
    """A merge unit: level-``level`` summaries into one of the next level. The target is the group
    one level below its members: the raw messages of each member's chunk for a level-1 group,
    else each member's children as recall pairs."""
    tracker = strategy.tracker
    view = ctx.view
    regions = tracker.regions or tracker.sync(ctx)
    memory = tracker.memory
    members = [memory.summaries[s] for s in group]
    new_level = level + 1
    first_ids = members[0].summary.message_ids
    found = next((p for p in (view.position_of(i) for i in first_ids) if p is not None), None)
    first = found if found is not None else first_position_at_or_after(view, members[0].summary.first_sequence)
    head, head_newest, head_ids = _head(strategy, view, regions, first)
    prior, prior_newest, prior_ids = _prior(strategy, view, regions, first)
    children: list[Summary] = []
    if level == 1:
        target_newest = max((m.sequence for m in _chunk_messages(strategy, view, members)), default=0)
    else:
        children = [memory.summaries[c].summary for s in members for c in s.children]
        target_newest = max((c.last_sequence for c in children), default=0)
    # A raise that fails counts as no attempt: it propagates before anything is counted.
    await ctx.mark_compression_read(max(head_newest, prior_newest, target_newest))
    if level == 1:
        chunk_messages = _chunk_messages(strategy, view, members)
        target = [r for r in (_reduce(strategy, m) for m in chunk_messages) if r is not None]
        target_ids = [m.id for m in chunk_messages]
        what = "the conversation"
    else:
        target = [m for c in children for m in recall_pair(c)]
        target_ids = [i for c in children for i in c.message_ids]
        what = "your earlier memories"
    instruction = _instruction(strategy.merge_instruction.format(what=what, k=new_level, target=strategy.summary_target_tokens))
    request = _request(strategy, head + prior + [_instruction(MARKER)] + target + [instruction], head_ids + prior_ids + target_ids)
    span = where(view, members[0].summary.message_ids + members[-1].summary.message_ids)
    key = f"merge:{new_level}:{group[0]}:{group[-1]}"
    try:
        text = await _ask(strategy, ctx, request, f"merging {len(group)} memories of {span}")
    except AnswerRejectedError as exc:
        tracker.catch_up(ctx.state)
        if not any(s in memory.parent or s not in memory.summaries for s in group):
            raise await _reject(strategy, ctx, key, strategy.merge_attempt_limit, exc, tuple(group)) from exc
        raise
    tracker.catch_up(ctx.state)
    if any(s in memory.parent or s not in memory.summaries for s in group):
        return  # a source was merged away meanwhile
    message_ids = tuple(i for s in members for i in s.summary.message_ids)
    summary = Summary(
        f"L{new_level}-{memory.next_n}",
        new_level,
        text,
        message_ids,
        min(s.summary.first_sequence for s in members),
        max(s.summary.last_sequence for s in members),
    )
    await _store(strategy, ctx, SummaryRecord(summary, children=tuple(group)))


# -- the transition note -------------------------------------------------------------------------


def _transition_reads(strategy: AutobiographicalStrategy, regions: Regions, view: MessageView) -> tuple[list[Message], list[Summary]]:
    """The head, and up to three summaries: the newest of level 2 and above, filled up with the
    newest of level 1, in order of events."""
    tracker = strategy.tracker
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


async def transition_text(strategy: AutobiographicalStrategy, ctx: StrategyContext) -> str:
    """A transition note written by the model from the head and up to three summaries (raising
    the floor first); ``No earlier context.`` when there is nothing to read. Writes nothing."""
    regions = strategy.tracker.sync(ctx)
    head, chosen = _transition_reads(strategy, regions, ctx.view)
    if not head and not chosen:
        return "No earlier context."
    if ctx.model is None:
        raise CompressionError(
            f"reset_head_window() with no text needs a compression model to write the transition note "
            f"(namespace {ctx.namespace} on {ctx.branch}); pass text or configure a model"
        )
    newest = max([m.sequence for m in head] + [s.last_sequence for s in chosen])
    await ctx.mark_compression_read(newest)
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
        source_ids=tuple(dict.fromkeys([m.id for m in head] + [i for s in chosen for i in s.message_ids])),
    )
    try:
        return await _ask(strategy, ctx, request, "writing a topic transition note")
    except AnswerRejectedError as exc:
        raise CompressionError(f"the model did not write a transition note ({exc.reason}); nothing was written") from exc
