"""``asides demo``: three agents share one conversation with private lines; each compiles and
compresses only what it may read, and a closing check searches every agent's compile, memories
and model requests for the lines that were not for it (exit 3 if it finds one).

The conversation is package data (``demo_conversation.txt``): one ``speaker: text`` per line;
``[[ann,bob]] text`` starts a block for those readers only.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import tempfile
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

import trio

from .._inspection._preview import block_line, compile_as_json
from ..actors._runtime import Runtime, internal_store
from ..store._blocks import ContentBlock, TextBlock, text
from ..store._views import reader_view
from ..store._words import counted
from ..strategies import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy
from ..testing import LeakCheck
from ._common import EXIT_LEAK, EXIT_OK, CliError, console, dumps, one_line, writing_runtime

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["AGENTS", "PrivateNote", "cmd_demo", "demo_conversation", "demo_script"]


def demo_conversation() -> str:
    """The demo's conversation, as shipped in the package."""
    return resources.files(__package__).joinpath("demo_conversation.txt").read_text(encoding="utf-8")


AGENTS = ("ann", "bob", "cleo")
_MARKER = re.compile(r"PRIVATE\[[a-z+]+#\d+\]")
_PRIVATE = re.compile(r"\[\[([a-z,]+)\]\]\s*")


class PrivateNote:
    """A block of the demo script meant for some agents only; ``marker`` is unique to it."""

    def __init__(self, marker: str, audience: tuple[str, ...]) -> None:
        self.marker = marker
        self.audience = audience


def demo_script() -> tuple[list[tuple[str, list[Any]]], list[PrivateNote]]:
    """The demo's conversation as ``(participant, blocks)`` items, and its private notes.

    Each line of the conversation is ``speaker: text``; ``[[ann,bob]] text`` starts a
    block for those readers only, whose text begins with a unique ``PRIVATE[ann+bob#n]`` marker.
    """
    messages: list[tuple[str, list[Any]]] = []
    notes: list[PrivateNote] = []
    for line in demo_conversation().split("\n"):
        if not line.strip() or line.startswith("#"):
            continue
        speaker, body = line.split(":", 1)
        parts = _PRIVATE.split(body.strip())
        blocks: list[Any] = [text(parts[0].strip())] if parts[0].strip() else []
        for names, note in zip(parts[1::2], parts[2::2], strict=True):
            audience = tuple(names.split(","))
            marker = f"PRIVATE[{'+'.join(audience)}#{len(notes) + 1}]"
            notes.append(PrivateNote(marker, audience))
            blocks.append(text(f"{marker} {note.strip()}", list(audience)))
        messages.append((speaker.strip(), blocks))
    return messages, notes


def _demo_strategy() -> AutobiographicalStrategy:
    # Small windows, so that a conversation of this size is compressed at all.
    return AutobiographicalStrategy(target_chunk_tokens=300, head_window_tokens=300, recent_window_tokens=600)


def _memory_counts(summaries: Iterable[Any]) -> dict[str, int]:
    counts = {"L1": 0, "L2": 0, "L3": 0}
    for summary in summaries:
        counts[f"L{summary.level}"] = counts.get(f"L{summary.level}", 0) + 1  # levels go on past 3
    return counts


def _message_text(content: Sequence[ContentBlock]) -> str:
    return " ".join(b.text if isinstance(b, TextBlock) else block_line(b) for b in content)


def _haystack(*parts: Any) -> str:
    return "\n".join(dumps(p, compact=True) if not isinstance(p, str) else p for p in parts)


async def _demo_room(rt: Runtime, out: Console) -> dict[str, Any]:
    """Write the room's log once, let each agent compress its own view, and compile."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    script, notes = demo_script()
    models = {name: ExtractiveModel(name=f"extractive-{name}") for name in AGENTS}
    room = await rt.open_manager("room", strategy=PassthroughStrategy())
    agents = {
        name: await rt.open_manager(f"agents/{name}", strategy=_demo_strategy(), view_reader=name, model=models[name])
        for name in AGENTS
    }
    chunk_prefix = {name: f"agents/{name}/autobiographical/chunk/" for name in AGENTS}

    def memory_progress(name: str) -> tuple[int, int, str]:
        manager = agents[name]
        counts = _memory_counts(manager.get_summaries_in_range())
        closed = len(internal_store(rt).model.state_keys("main", chunk_prefix[name]))
        strategy = manager.strategy
        holdback = strategy.holdback_chunks if isinstance(strategy, AutobiographicalStrategy) else 0
        due = max(closed - holdback, counts["L1"], 1)
        pending = manager.pending_work()
        status = f"L1 ×{counts['L1']}  L2 ×{counts['L2']}  L3 ×{counts['L3']}"
        status += f"  · {pending}" if pending else "  · ready"
        return counts["L1"], due, status

    columns = (TextColumn("{task.description:<16}"), BarColumn(bar_width=24), MofNCompleteColumn(), TextColumn("{task.fields[status]}"))
    with Progress(*columns, console=out, transient=False) as progress:
        log_task = progress.add_task("room log", total=len(script), status="messages written once, by the host")
        memory_tasks = {name: progress.add_task(f"{name}'s memory", total=1, status="") for name in AGENTS}

        def refresh() -> None:
            for name, task in memory_tasks.items():
                done, due, status = memory_progress(name)
                progress.update(task, completed=done, total=due, status=status)

        for participant, blocks in script:
            if participant in agents:  # an agent takes its turn: it is sent its context first
                await agents[participant].compile()
            await room.add_message(participant, blocks)
            progress.advance(log_task)
            refresh()
        finished: set[str] = set()

        async def drain(name: str) -> None:
            await agents[name].drain()
            finished.add(name)

        async with trio.open_nursery() as nursery:
            for name in AGENTS:
                nursery.start_soon(drain, name)
            while len(finished) < len(AGENTS):
                refresh()
                await trio.sleep(0.05)
        refresh()

    compiles = {name: await manager.compile() for name, manager in agents.items()}
    host_compile = await room.compile()
    summaries = {name: manager.get_summaries_in_range() for name, manager in agents.items()}
    views = {name: sum(1 for m in room.get_all_messages() if reader_view(m, name)[0] is not None) for name in AGENTS}
    # The check: every private marker, searched for in everything given to a reader it is not for.
    check = LeakCheck()
    for note in notes:
        check.add(note.marker, note.audience)
    for name in AGENTS:
        check.record(name, compiles[name], where="compile")
        for number, request in enumerate(models[name].requests, start=1):
            check.record(name, request, where=f"model request #{number}")
    check.record(None, host_compile, where="compile")
    await check.scan(room, *agents.values())
    return {
        "leaks": [str(leak) for leak in check.leaks()],
        "notes": notes,
        "compiles": compiles,
        "host_compile": host_compile,
        "summaries": summaries,
        "requests": {name: list(models[name].requests) for name in AGENTS},
        "views": views,
        "total": len(room.get_all_messages()),
    }


def _display_text(content: Sequence[ContentBlock]) -> str:
    """A compiled message's text for the side-by-side view, private notes (marked) first."""
    texts = [b.text if isinstance(b, TextBlock) else block_line(b) for b in content]
    return one_line(" ".join(sorted(texts, key=lambda t: not _MARKER.search(t))))


def _compile_lines(compiled: Any, *, head: int = 3, tail: int = 6) -> list[tuple[str, str]]:
    """A compile as ``(kind, line)`` rows for the side-by-side table: one row per memory (with
    the private markers it holds), raw messages trimmed to the ends of each run, private ones
    always kept."""
    items: list[tuple[str, str]] = []
    seen: set[str] = set()
    pairs = list(zip(compiled.messages, compiled.provenance.entries, strict=True))
    for message, source in pairs:
        if source.kind != "summary":
            items.append(("raw", f"{message.participant}: {_display_text(message.content)}"))
            continue
        if source.summary_id in seen:
            continue
        seen.add(source.summary_id)
        recalled = [m for m, s in pairs if s.summary_id == source.summary_id][-1]
        lines = _message_text(recalled.content).splitlines()
        body = " · ".join(line.strip().removeprefix("- ") for line in lines if line.strip())
        markers = " ".join(dict.fromkeys(_MARKER.findall(body)))
        items.append(("summary", f"≡ {source.summary_id}{' ' + markers if markers else ''}: {body}"))
    keep: set[int] = set()
    runs: list[tuple[int, int]] = []
    index = 0
    while index < len(items):
        if items[index][0] != "raw":
            keep.add(index)
            index += 1
            continue
        end = index
        while end < len(items) and items[end][0] == "raw":
            end += 1
        runs.append((index, end))
        index = end
    for start, end in runs:
        keep.update(range(start, min(end, start + (head if start == 0 else 1))))
        keep.update(range(max(start, end - (tail if end == len(items) else 1)), end))
        keep.update(i for i in range(start, end) if _MARKER.search(items[i][1]))
    rows: list[tuple[str, str]] = []
    skipped = 0
    for index, item in enumerate(items):
        if index not in keep:
            skipped += 1
            continue
        if skipped:
            rows.append(("more", f"… {skipped} more") if skipped > 1 else items[index - 1])
            skipped = 0
        rows.append(item)
    return rows


def _find_leaks(result: dict[str, Any]) -> list[str]:
    """Every private marker found where a reader it was not for could read it (asides.testing's
    LeakCheck searched compiles, previews, memories, provenance, context logs and model requests)."""
    leaks: list[str] = result["leaks"]
    return leaks


def _print_demo(result: dict[str, Any], out: Console) -> list[str]:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    out.print()
    out.rule("[bold]What each agent would be sent now[/bold]")
    out.print(
        "Each column is one agent's compile: the head of the conversation verbatim, older stretches as "
        "[cyan]memories[/cyan] written from that agent's own view, then the recent messages verbatim. "
        "[magenta]PRIVATE[…][/magenta] markers are lines meant for that agent only.",
    )
    table = Table(box=box.SIMPLE_HEAD, expand=True, show_lines=False)
    for name in AGENTS:
        compiled = result["compiles"][name]
        table.add_column(
            f"[bold]{name}[/bold]\n{len(compiled.messages)} msgs, ~{compiled.token_estimate} tokens",
            no_wrap=True,
            overflow="ellipsis",
            ratio=1,
        )
    styles = {"summary": "cyan", "more": "dim", "raw": ""}
    columns = []
    for name in AGENTS:
        cell = Text(no_wrap=True, overflow="ellipsis")
        for number, (kind, line) in enumerate(_compile_lines(result["compiles"][name])):
            if number:
                cell.append("\n")
            cell.append(line, style=styles[kind])
        cell.highlight_regex(_MARKER.pattern, "bold magenta")
        columns.append(cell)
    table.add_row(*columns)
    out.print(table)

    out.rule("[bold]Who remembers what[/bold]")
    counts = Table(box=box.SIMPLE_HEAD)
    for column in ("agent", "sees", "private notes", "in context", "L1", "L2", "L3", "requests"):
        counts.add_column(column, justify="left" if column == "agent" else "right")
    for name in AGENTS:
        levels = _memory_counts(result["summaries"][name])
        own = [note for note in result["notes"] if name in note.audience]
        context = _haystack(
            compile_as_json(result["compiles"][name], {}), *(s.text for s in result["summaries"][name])
        )
        counts.add_row(
            name,
            f"{result['views'][name]}/{result['total']}",
            str(len(own)),
            str(sum(1 for note in own if note.marker in context)),
            str(levels["L1"]),
            str(levels["L2"]),
            str(levels["L3"]),
            str(len(result["requests"][name])),
        )
    out.print(counts)
    out.print(
        "[dim]sees: messages of the room it may read; private notes: lines meant for it; in context: of those, "
        "how many its compile or memories still hold. L1: a memory of one chunk of the conversation; L2/L3: merged "
        "from six of the level below. The offline ExtractiveModel writes each memory from lines of its request, "
        "and each request is built from that agent's view only.[/dim]"
    )

    out.rule("[bold]The check[/bold]")
    leaks = _find_leaks(result)
    out.print(
        f"Each of the {len(result['notes'])} private notes was searched for, by its marker, in the compile, the "
        "memories, provenance, previews and every model request of each agent it was not for, and in the host's "
        "compile (no reader), with asides.testing.LeakCheck."
    )
    return leaks


def cmd_demo(args: argparse.Namespace) -> int:
    from rich.markup import escape

    out = console()
    if args.store is not None and os.path.exists(args.store):
        raise CliError(f"{args.store!r} already exists; the demo writes a fresh store, so give a path that does not exist")
    out.rule("[bold]asides demo[/bold]: three agents, one shared conversation, private lines")
    out.print(
        "A host writes one message log for a room: a user planning a workshop with three agents, "
        "[bold]ann[/bold] (venue), [bold]bob[/bold] (budget) and [bold]cleo[/bold] (programme). Some lines are "
        "meant for one or two of them only (a block with an [italic]audience[/italic]). Each agent has its own "
        "namespace and compiles, and compresses, only what it may read."
    )
    with tempfile.TemporaryDirectory(prefix="asides-demo-") as directory:
        path = args.store if args.store is not None else os.path.join(directory, "demo.db")
        where = "kept" if args.store is not None else "temporary, removed at exit"
        out.print(f"store: [bold]{escape(path)}[/bold] ({where}); compression model: offline ExtractiveModel\n")

        async def run() -> dict[str, Any]:
            async with writing_runtime(path) as rt:
                if any(info.head for info in rt.list_branches()):  # a shared store (a URL) that holds records
                    raise CliError(
                        f"the store {rt.store.path!r} already holds records; the demo writes a fresh store, so name "
                        "another schema in the URL (?options=-csearch_path%3Ddemo2 creates it) (nothing was written)"
                    )
                return await _demo_room(rt, out)

        result = trio.run(run)
        leaks = _print_demo(result, out)
    if leaks:
        for leak in leaks:
            out.print(f"[red]LEAK[/red] {leak}")
        reached = "reached a reader it was not for" if len(leaks) == 1 else "reached a reader they were not for"
        out.print(f"[bold red]{counted(len(leaks), 'private line')} {reached}[/bold red]")
        return EXIT_LEAK
    out.print("[bold green]no private line reached a reader it was not for[/bold green]")
    if args.store is not None:
        shown = escape(shlex.quote(args.store))
        out.print(f"[dim]Look around: asides inspect {shown}; asides compile {shown} --namespace agents/ann[/dim]")
    return EXIT_OK
