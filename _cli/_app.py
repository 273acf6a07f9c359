"""The ``asides`` command: look into a store, compile for an agent, move messages, and a demo.

Commands (``asides COMMAND --help`` for each)::

    asides demo [--store PATH]
    asides inspect PATH [--json]
    asides compile PATH --namespace NS [--reader R] [--branch B] [--max-tokens N] [--reserve N]
                        [--format text|json|anthropic|openai] [--assistant NAME] [--strategy S]
    asides export PATH [--branch B] [--with-ids] > messages.jsonl
    asides import PATH messages.jsonl [--branch B]

``inspect``, ``compile`` and ``export`` never write to the store: ``compile`` shows what the
agent would be sent now (a ``preview_context``, which writes nothing), and refuses to claim an
unclaimed namespace for a reader. ``import`` validates every line before it writes anything, then
appends all messages in one atomic commit.

Exit codes: 0 done; 1 refused (bad input, unknown store/branch/namespace, a reader refusal, a
leak found by the demo); 2 the store is open in another process, or the command line is wrong.
Expected errors print one line, ``asides: <what and why>``, on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sqlite3
import sys
import tempfile
from collections.abc import Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..actors._namespace import normalise_namespace
from ..actors._runtime import Runtime
from ..actors._runtime import open_runtime as _open_runtime
from ..store._blocks import (
    ContentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnreadableBlock,
    check_content,
    content_from_json,
    content_to_json,
    decode_stored_content,
    has_audience,
    text,
)
from ..store._errors import AsidesError, MalformedContentError, StoreLockedError
from ..store._messages import freeze_metadata
from ..store._model import MISSING, UNREADABLE
from ..store._views import reader_view
from ..strategies import (
    AutobiographicalStrategy,
    ExtractiveModel,
    KnowledgeStrategy,
    PassthroughStrategy,
    WindowedPassthroughStrategy,
)
from ..strategies._autobiographical.records import decode_attempts, decode_chunk, decode_summary

__all__ = ["main"]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_BUSY = 2  # the store is locked by another process (or a usage error, as argparse does)

FORMATS = ("text", "json", "anthropic", "openai")
STRATEGIES = {
    "passthrough": PassthroughStrategy,
    "windowed-passthrough": WindowedPassthroughStrategy,
    "autobiographical": AutobiographicalStrategy,
    "knowledge": KnowledgeStrategy,
}
_SQLITE_HEADER = b"SQLite format 3\x00"


class CliError(Exception):
    """An expected failure: one line for the user and an exit code."""

    def __init__(self, message: str, code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.code = code


# -- shared helpers ----------------------------------------------------------------------------


def _check_store_file(path: str) -> None:
    """Refuse, with one clear line, a PATH that is not an existing asides store file (so that
    reading commands never create one)."""
    if path == ":memory:":
        raise CliError("':memory:' holds nothing to read here; give the path of a store file")
    if not os.path.exists(path):
        raise CliError(f"no store at {path!r}: the file does not exist (nothing was created)")
    if os.path.isdir(path):
        raise CliError(f"{path!r} is a directory, not a store file")
    with open(path, "rb") as handle:
        header = handle.read(len(_SQLITE_HEADER))
    if header and header != _SQLITE_HEADER:
        raise CliError(f"{path!r} is not an asides store (not an SQLite database)")
    if header:
        # A foreign SQLite database: refuse it rather than add asides's table to it. (immutable=1
        # reads without creating -wal/-shm files; a store's main file holds either nothing yet or
        # the log table.)
        try:
            probe = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
            try:
                tables = {row[0] for row in probe.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            finally:
                probe.close()
        except sqlite3.Error:
            return  # let the store's own open report what is wrong
        if tables and "log" not in tables:
            raise CliError(f"{path!r} is an SQLite database but not an asides store (it has no log table)")


@asynccontextmanager
async def open_runtime(path: str, *, model: Any = None, must_exist: bool = True):
    """The runtime over the store at ``path``. With ``must_exist``, a missing PATH is refused
    instead of created. A store another process holds is refused with exit code 2. (The
    library's ``open_runtime`` raises what the block raised, not its task groups' wrapping.)"""
    if must_exist:
        _check_store_file(path)
    try:
        async with _open_runtime(path, model=model) as rt:
            yield rt
    except StoreLockedError as exc:
        raise CliError(str(exc), EXIT_BUSY) from None
    except sqlite3.DatabaseError as exc:
        raise CliError(f"{path!r} could not be opened as an asides store: {exc}") from None


def _single_expected(group: BaseExceptionGroup) -> BaseException | None:
    """The first leaf of ``group`` when every leaf is an expected error, else ``None``."""
    leaves = _leaves(group)
    if leaves and all(_expected(exc) for exc in leaves):
        first = leaves[0]
        if isinstance(first, StoreLockedError):
            return CliError(str(first), EXIT_BUSY)
        if isinstance(first, sqlite3.DatabaseError):
            return CliError(f"the store could not be opened: {first}")
        return first
    return None


def _require_branch(rt: Runtime, branch: str) -> None:
    if not rt.store.has_branch(branch):
        names = ", ".join(info.name for info in rt.list_branches())
        raise CliError(f"the store has no branch {branch!r} (its branches: {names})")


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


def _report(exc: BaseException) -> int:
    code = exc.code if isinstance(exc, CliError) else EXIT_BUSY if isinstance(exc, StoreLockedError) else EXIT_REFUSED
    print(f"asides: {_one_line(str(exc))}", file=sys.stderr)
    return code


def _expected(exc: BaseException) -> bool:
    return isinstance(exc, (CliError, AsidesError, ValueError, OSError, sqlite3.Error))


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out


def _dumps(value: Any, *, compact: bool = False) -> str:
    if compact:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return json.dumps(value, ensure_ascii=False, indent=2)


def _console(**kwargs: Any):
    from rich.console import Console

    return Console(highlight=False, **kwargs)


# -- inspect -----------------------------------------------------------------------------------

_KINDS = ("autobiographical", "knowledge", "windowed-passthrough")
_KIND_KEY = re.compile(r"^(?P<ns>.+)/(?P<kind>autobiographical|knowledge|windowed-passthrough)/(?P<rest>[^/]+(?:/[^/]+)?)$")
_CONTEXT_KEY = re.compile(r"^(?P<ns>.+)/(?P<tail>context/\d+)$")


def split_state_key(key: str) -> tuple[str, str] | None:
    """``(namespace, tail)`` of a state key, or ``None`` for a key no namespace owns."""
    for suffix in ("/reader", "/narrowing-floor"):
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)], suffix[1:]
    found = _CONTEXT_KEY.match(key)
    if found:
        return found["ns"], found["tail"]
    found = _KIND_KEY.match(key)
    if found:
        return found["ns"], f"{found['kind']}/{found['rest']}"
    return None


def _json_safe(value: Any) -> Any:
    return None if value is UNREADABLE else value


def _non_negative_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def detect_strategy(tails: Iterable[str]) -> str:
    """The strategy a namespace's records say it runs: ``autobiographical`` or ``knowledge`` by
    their records, ``windowed-passthrough`` for an anchor, else ``passthrough``."""
    kinds = {tail.split("/", 1)[0] for tail in tails}
    for kind in _KINDS:
        if kind in kinds:
            return kind
    return "passthrough"


def _describe_namespace(store: Any, branch: str, namespace: str, records: dict[str, Any]) -> dict[str, Any]:
    unreadable: list[dict[str, Any]] = []

    def bad(tail: str, problem: str) -> None:
        unreadable.append({"key": f"{namespace}/{tail}", "problem": problem, "value": _json_safe(records[tail])})

    reader: str | None = None
    reader_status = "unclaimed"
    if "reader" in records:
        value = records["reader"]
        if isinstance(value, str) and value:
            reader, reader_status = value, "claimed"
        else:
            reader_status = "unreadable"
            bad("reader", "not a reader's name" if value is not UNREADABLE else "not JSON")
    floor: int | None = None
    if "narrowing-floor" in records:
        value = records["narrowing-floor"]
        if _non_negative_int(value):
            floor = value
        else:
            bad("narrowing-floor", "not a non-negative integer" if value is not UNREADABLE else "not JSON")

    summaries = {"L1": 0, "L2": 0, "L3": 0}
    chunks = 0
    context_entries = 0
    anchor: int | None = None
    head_start: int | None = None
    for tail in sorted(records):
        value = records[tail]
        if tail in ("reader", "narrowing-floor"):
            continue
        if value is UNREADABLE:
            bad(tail, "not JSON")
            continue
        if tail.startswith("context/"):
            if value is None:
                continue  # an entry dropped by an edit (SPEC P2)
            if not isinstance(value, dict):
                bad(tail, "a context entry must be a JSON object")
                continue
            _content, problems = decode_stored_content(value.get("content"))
            if problems:
                bad(tail, "; ".join(problems))
            context_entries += 1
            continue
        kind, rest = tail.split("/", 1)
        if kind == "windowed-passthrough":
            if rest == "anchor" and _non_negative_int(value):
                anchor = value
            else:
                bad(tail, "not a windowed anchor (a non-negative integer under windowed-passthrough/anchor)")
            continue
        section, _, item = rest.partition("/")
        if section == "summary" and item:
            record = decode_summary(item, value)
            if record is None:
                bad(tail, "not a well-formed summary record")
            else:
                summaries[f"L{record.level}"] += 1
        elif section == "chunk" and item:
            if decode_chunk(item, value) is None:
                bad(tail, "not a well-formed chunk record")
            else:
                chunks += 1
        elif section == "attempts" and item:
            if decode_attempts(value) is None:
                bad(tail, "not a well-formed attempts record")
        elif rest == "head-start":
            if _non_negative_int(value):
                head_start = value
            else:
                bad(tail, "not a sequence number")
        else:
            bad(tail, f"a {kind} record asides does not know")

    if reader_status == "unreadable":
        visible: int | None = None  # nothing can tell whose view it holds (read fail-closed)
    else:
        visible = sum(1 for message in store.messages(branch) if reader_view(message, reader)[0] is not None)
    return {
        "namespace": namespace,
        "reader": reader,
        "reader_status": reader_status,
        "narrowing_floor": floor,
        "strategy": detect_strategy(records),
        "strategy_records": sorted({t.split("/", 1)[0] for t in records if t.split("/", 1)[0] in _KINDS}),
        "visible_messages": visible,
        "summaries": summaries,
        "chunks": chunks,
        "context_entries": context_entries,
        "windowed_anchor": anchor,
        "head_start": head_start,
        "unreadable": unreadable,
    }


def describe_store(rt: Runtime, path: str) -> dict[str, Any]:
    """Everything ``asides inspect`` reports, as JSON-ready data."""
    store = rt.store
    model = store.model
    branches = []
    for info in rt.list_branches():
        grouped: dict[str, dict[str, Any]] = {}
        other: list[dict[str, Any]] = []
        for key in model.state_keys(info.name):
            value = model.get_state(info.name, key)
            split = split_state_key(key)
            if split is None:
                other.append({"key": key, "value": _json_safe(value)})
                continue
            namespace, tail = split
            grouped.setdefault(namespace, {})[tail] = value
        messages = store.messages(info.name)
        meta = model.branch_meta(info.name)
        derivation = meta.get("derivation") if isinstance(meta, dict) else None
        branches.append(
            {
                "name": info.name,
                "parent": info.parent,
                "fork_sequence": info.fork_sequence if info.parent is not None else None,
                "head": info.head,
                "messages": len(messages),
                "messages_with_audience": sum(1 for m in messages if has_audience(m.content)),
                "derivation": derivation if isinstance(derivation, dict) else None,
                "namespaces": [
                    _describe_namespace(store, info.name, ns, records) for ns, records in sorted(grouped.items())
                ],
                "other_records": other,
            }
        )
    return {"store": os.path.abspath(path), "branches": branches}


def _print_inspection(report: dict[str, Any]) -> None:
    from rich import box
    from rich.table import Table

    console = _console()
    console.print(f"[bold]asides store[/bold] {report['store']}")
    table = Table(title="Branches", box=box.SIMPLE_HEAD, title_justify="left")
    for column in ("branch", "parent", "fork point", "head", "messages", "with audience"):
        table.add_column(column, justify="right" if column not in ("branch", "parent") else "left")
    for branch in report["branches"]:
        table.add_row(
            branch["name"],
            branch["parent"] or "-",
            "-" if branch["fork_sequence"] is None else str(branch["fork_sequence"]),
            str(branch["head"]),
            str(branch["messages"]),
            str(branch["messages_with_audience"]),
        )
    console.print(table)
    for branch in report["branches"]:
        table = Table(title=f"Namespaces on {branch['name']}", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
        any_unreadable = any(ns["unreadable"] for ns in branch["namespaces"])
        for column in ("namespace", "reader", "floor", "strategy", "sees", "L1/L2/L3") + (
            ("bad",) if any_unreadable else ()
        ):
            left = column in ("namespace", "reader", "strategy")
            table.add_column(column, justify="left" if left else "right", no_wrap=True)
        for ns in branch["namespaces"]:
            reader = {"claimed": ns["reader"], "unclaimed": "-", "unreadable": "[red]UNREADABLE[/red]"}[ns["reader_status"]]
            row = [
                ns["namespace"],
                reader,
                "-" if ns["narrowing_floor"] is None else str(ns["narrowing_floor"]),
                ns["strategy"],
                "?" if ns["visible_messages"] is None else str(ns["visible_messages"]),
                "/".join(str(ns["summaries"][level]) for level in ("L1", "L2", "L3")),
            ]
            if any_unreadable:
                row.append(f"[red]{len(ns['unreadable'])}[/red]" if ns["unreadable"] else "0")
            table.add_row(*row)
        if not branch["namespaces"]:
            table.add_row("(none recorded)", *[""] * (len(table.columns) - 1))
        console.print(table)
        for ns in branch["namespaces"]:
            for problem in ns["unreadable"]:
                shown = "" if problem["value"] is None else f" ({problem['value']!r})"
                console.print(f"  [red]unreadable[/red] {problem['key']}: {problem['problem']}{shown}")
        for record in branch["other_records"]:
            console.print(f"  [yellow]record no namespace owns[/yellow] {record['key']}: {record['value']!r}")
    console.print(
        "[dim]sees: messages the namespace's reader sees anything of; L1/L2/L3: summary records per level "
        "(merged-away included); floor: the narrowing floor (SPEC N2); bad: records asides cannot read, listed "
        "by key (read fail-closed).[/dim]"
    )


def cmd_inspect(args: argparse.Namespace) -> int:
    async def run() -> dict[str, Any]:
        async with open_runtime(args.path) as rt:
            return describe_store(rt, args.path)

    report = trio.run(run)
    if args.json:
        print(_dumps(report))
    else:
        _print_inspection(report)
    return EXIT_OK


# -- compile -----------------------------------------------------------------------------------


def _block_line(block: ContentBlock) -> str:
    """One line for a block that is not text (text format)."""
    if isinstance(block, ToolUseBlock):
        return f"[tool_use {block.name} id={block.id}] {_dumps(block.input, compact=True)}"
    if isinstance(block, ToolResultBlock):
        body = block.content if isinstance(block.content, str) else " ".join(
            b.text if isinstance(b, TextBlock) else f"[{b.type}]" for b in block.content
        )
        return f"[tool_result{' error' if block.is_error else ''} for {block.tool_use_id}] {_one_line(body)}"
    if isinstance(block, ThinkingBlock):
        return f"[thinking] {_one_line(block.thinking)}"
    if isinstance(block, RedactedThinkingBlock):
        return "[redacted_thinking]"
    if isinstance(block, ImageBlock):
        return f"[image {block.media_type}]"
    if isinstance(block, SystemChangeBlock):
        return f"[system_change] {block.text}"
    return f"[{getattr(block, 'type', 'block')}]"


def _compile_as_text(compiled: Any, header: str) -> str:
    lines = [header]
    if compiled.system_injections:
        lines += ["", "── system ──"]
        lines += [b.text if isinstance(b, TextBlock) else _block_line(b) for b in compiled.system_injections]
    for message, source in zip(compiled.messages, compiled.provenance.entries):
        label = message.participant
        if source.kind == "summary":
            label += f"  (memory {source.summary_id})"
        elif source.kind != "raw":
            label += f"  ({source.kind})"
        lines += ["", f"── {label} ──"]
        lines += [b.text if isinstance(b, TextBlock) else _block_line(b) for b in message.content]
    return "\n".join(lines)


def _compile_as_json(compiled: Any, about: dict[str, Any]) -> dict[str, Any]:
    provenance = compiled.provenance
    return {
        **about,
        "messages": [{"participant": m.participant, "content": content_to_json(m.content)} for m in compiled.messages],
        "system_injections": content_to_json(compiled.system_injections),
        "token_estimate": compiled.token_estimate,
        "provenance": {
            "entries": [
                {"kind": e.kind, "message_ids": list(e.message_ids), "summary_id": e.summary_id} for e in provenance.entries
            ],
            "complete": dict(provenance.complete),
        },
    }


async def _compile(rt: Runtime, args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    branch, namespace = args.branch, normalise_namespace(args.namespace)
    _require_branch(rt, branch)
    tails = [split[1] for key in rt.store.model.state_keys(branch) if (split := split_state_key(key)) and split[0] == namespace]
    if not tails and args.strategy is None:
        known = sorted({s[0] for key in rt.store.model.state_keys(branch) if (s := split_state_key(key))})
        raise CliError(
            f"namespace {namespace!r} has no records on branch {branch!r} (namespaces there: "
            f"{', '.join(known) or 'none'}); a namespace that never wrote anything compiles as passthrough for no "
            "reader: pass --strategy passthrough to compile it anyway"
        )
    record = rt.store.model.get_state(branch, f"{namespace}/reader")
    if args.reader is not None and record is MISSING:
        raise CliError(
            f"compile for reader {args.reader!r} was refused: namespace {namespace!r} on branch {branch!r} records no "
            f"reader, and opening it for {args.reader!r} would claim it (a write); asides compile never writes, so "
            "omit --reader or pick a namespace that records that reader"
        )
    strategy_name = args.strategy or detect_strategy(tails)
    manager = await rt.open_manager(namespace, strategy=STRATEGIES[strategy_name](), view_reader=args.reader, branch=branch)
    try:
        compiled = await manager.preview_context(max_tokens=args.max_tokens, reserve_for_response=args.reserve)
    finally:
        await manager.aclose()
    budget = max(0, args.max_tokens - args.reserve)
    if compiled.token_estimate > budget:
        print(
            f"asides: warning: this context needs ~{compiled.token_estimate} tokens, over the budget of {budget} "
            "(--max-tokens minus --reserve); a live compile would refuse it (OverBudgetError)",
            file=sys.stderr,
        )
    about = {"namespace": manager.namespace, "branch": branch, "reader": manager.view_reader, "strategy": strategy_name}
    return compiled, about


def cmd_compile(args: argparse.Namespace) -> int:
    if args.max_tokens < 0 or args.reserve < 0:
        raise CliError("--max-tokens and --reserve must not be negative")
    if args.reader == "":
        raise CliError("--reader must name a reader (a non-empty string)")

    async def run() -> tuple[Any, dict[str, Any]]:
        async with open_runtime(args.path) as rt:
            return await _compile(rt, args)

    compiled, about = trio.run(run)
    if args.format == "json":
        print(_dumps(_compile_as_json(compiled, about)))
    elif args.format == "anthropic":
        print(_dumps(compiled.to_anthropic(args.assistant)))
    elif args.format == "openai":
        print(_dumps(compiled.to_openai(args.assistant)))
    else:
        reader = "no reader" if about["reader"] is None else f"reader {about['reader']!r}"
        header = (
            f"# {about['namespace']} on {about['branch']}, for {reader} ({about['strategy']}): "
            f"{len(compiled.messages)} messages, ~{compiled.token_estimate} tokens"
        )
        print(_compile_as_text(compiled, header))
    return EXIT_OK


# -- export / import ---------------------------------------------------------------------------


def _message_line(message: Any, *, with_ids: bool) -> dict[str, Any]:
    line = {
        "participant": message.participant,
        "content": content_to_json(message.content),
        "metadata": dict(message.metadata),
        "timestamp": message.timestamp,
    }
    if with_ids:
        line["id"] = message.id
        line["sequence"] = message.sequence
    return line


def cmd_export(args: argparse.Namespace) -> int:
    async def run() -> list[Any]:
        async with open_runtime(args.path) as rt:
            _require_branch(rt, args.branch)
            return rt.store.messages(args.branch)

    messages = trio.run(run)
    refused: list[int] = []
    out = sys.stdout
    for number, message in enumerate(messages, start=1):
        line = _message_line(message, with_ids=args.with_ids)
        out.write(_dumps(line, compact=True) + "\n")
        if any(isinstance(b, UnreadableBlock) for b in message.content) or _problem_of(line["content"], "content"):
            refused.append(number)
    out.flush()
    if refused:
        shown = ", ".join(map(str, refused[:20])) + (" …" if len(refused) > 20 else "")
        print(
            f"asides: note: {len(refused)} exported message(s) hold data a write would refuse (lines {shown}); "
            "they are exported as stored, and an import will name them",
            file=sys.stderr,
        )
    return EXIT_OK


def _problem_of(content: Any, path: str) -> str | None:
    try:
        check_content(content_from_json(content, path=path), path=path, allow_audience=True)
    except MalformedContentError as exc:
        return str(exc)
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_LINE_KEYS = {"participant", "content", "metadata", "timestamp"}
_IGNORED_KEYS = {"id", "sequence"}  # what --with-ids adds; the store assigns its own


def parse_message_line(raw: str, number: int) -> tuple[str, tuple[ContentBlock, ...], Any, float | None]:
    """One line of a messages file, validated as a write would be; ``MalformedContentError``
    whose path starts with ``line N:`` otherwise."""
    where = f"line {number}"
    try:
        obj = json.loads(raw, parse_constant=_reject_constant)
    except ValueError as exc:
        raise MalformedContentError(where, f"not JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise MalformedContentError(where, f"a message must be a JSON object, not {type(obj).__name__}")
    unknown = sorted(set(obj) - _LINE_KEYS - _IGNORED_KEYS)
    if unknown:
        raise MalformedContentError(f"{where}: {unknown[0]}", "a message line has no such field")
    participant = obj.get("participant")
    if not isinstance(participant, str) or not participant:
        raise MalformedContentError(f"{where}: participant", "must be a non-empty string")
    if "content" not in obj:
        raise MalformedContentError(f"{where}: content", "missing")
    blocks = content_from_json(obj["content"], path=f"{where}: content")
    check_content(blocks, path=f"{where}: content", allow_audience=True)
    metadata = freeze_metadata(obj.get("metadata"), path=f"{where}: metadata")
    timestamp = obj.get("timestamp")
    if timestamp is not None:
        if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)) or not math.isfinite(timestamp):
            raise MalformedContentError(f"{where}: timestamp", "must be a number (seconds since the epoch)")
        timestamp = float(timestamp)
    return participant, blocks, dict(metadata), timestamp


def _read_lines(source: str) -> list[str]:
    if source == "-":
        return sys.stdin.read().splitlines()
    if not os.path.exists(source):
        raise CliError(f"no messages file at {source!r}")
    if os.path.isdir(source):
        raise CliError(f"{source!r} is a directory, not a messages file")
    with open(source, encoding="utf-8") as handle:
        return handle.read().splitlines()


def cmd_import(args: argparse.Namespace) -> int:
    try:
        lines = _read_lines(args.messages)
    except UnicodeDecodeError as exc:
        raise CliError(f"{args.messages!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    items: list[tuple[Any, ...]] = []
    problems: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue  # blank lines are allowed (and skipped)
        try:
            items.append(parse_message_line(raw, number))
        except MalformedContentError as exc:
            problems.append(str(exc))
    if problems:
        print(
            f"asides: import refused, nothing was written: {len(problems)} malformed line(s) in {args.messages!r}",
            file=sys.stderr,
        )
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_REFUSED
    creating = not os.path.exists(args.path)
    if creating and args.branch != "main":
        raise CliError(f"no store at {args.path!r}, so it has no branch {args.branch!r}; a new store has only main")
    if not creating:
        _check_store_file(args.path)

    async def run() -> int:
        async with open_runtime(args.path, must_exist=False) as rt:
            _require_branch(rt, args.branch)
            if items:
                await rt.store.append_messages(args.branch, items)
            return rt.store.length(args.branch)

    total = trio.run(run)
    made = "a new store" if creating else "the store"
    print(f"imported {len(items)} message(s) into {made} {args.path} (branch {args.branch}, now {total} messages)")
    return EXIT_OK


# -- demo --------------------------------------------------------------------------------------

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

    Each line of :data:`DEMO_CONVERSATION` is ``speaker: text``; ``[[ann,bob]] text`` starts a
    block for those readers only, whose text begins with a unique ``PRIVATE[ann+bob#n]`` marker.
    """
    messages: list[tuple[str, list[Any]]] = []
    notes: list[PrivateNote] = []
    for line in DEMO_CONVERSATION.strip().splitlines():
        speaker, body = line.split(":", 1)
        parts = _PRIVATE.split(body.strip())
        blocks: list[Any] = [text(parts[0].strip())] if parts[0].strip() else []
        for names, note in zip(parts[1::2], parts[2::2]):
            audience = tuple(names.split(","))
            marker = f"PRIVATE[{'+'.join(audience)}#{len(notes) + 1}]"
            notes.append(PrivateNote(marker, audience))
            blocks.append(text(f"{marker} {note.strip()}", list(audience)))
        messages.append((speaker.strip(), blocks))
    return messages, notes


def _demo_strategy() -> AutobiographicalStrategy:
    # Small windows so that a conversation of this size is compressed (SPEC C3).
    return AutobiographicalStrategy(target_chunk_tokens=300, head_window_tokens=300, recent_window_tokens=600)


def _memory_counts(summaries: Iterable[Any]) -> dict[str, int]:
    counts = {"L1": 0, "L2": 0, "L3": 0}
    for summary in summaries:
        counts[f"L{summary.level}"] += 1
    return counts


def _message_text(content: Sequence[ContentBlock]) -> str:
    return " ".join(b.text if isinstance(b, TextBlock) else _block_line(b) for b in content)


def _haystack(*parts: Any) -> str:
    return "\n".join(_dumps(p, compact=True) if not isinstance(p, str) else p for p in parts)


async def _demo_room(rt: Runtime, console: Any) -> dict[str, Any]:
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
        closed = len(rt.store.model.state_keys("main", chunk_prefix[name]))
        due = max(closed - manager.strategy.holdback_chunks, counts["L1"], 1)
        pending = manager.pending_work()
        status = f"L1 ×{counts['L1']}  L2 ×{counts['L2']}  L3 ×{counts['L3']}"
        status += f"  · {pending}" if pending else "  · ready"
        return counts["L1"], due, status

    columns = (TextColumn("{task.description:<16}"), BarColumn(bar_width=24), MofNCompleteColumn(), TextColumn("{task.fields[status]}"))
    with Progress(*columns, console=console, transient=False) as progress:
        log_task = progress.add_task("room log", total=len(script), status="messages written once, by the host")
        memory_tasks = {name: progress.add_task(f"{name}'s memory", total=1, status="") for name in AGENTS}

        def refresh() -> None:
            for name, task in memory_tasks.items():
                done, due, status = memory_progress(name)
                progress.update(task, completed=done, total=due, status=status)

        for participant, blocks in script:
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
    return {
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
    texts = [b.text if isinstance(b, TextBlock) else _block_line(b) for b in content]
    return _one_line(" ".join(sorted(texts, key=lambda t: not _MARKER.search(t))))


def _compile_lines(compiled: Any, *, head: int = 3, tail: int = 6) -> list[tuple[str, str]]:
    """A compile as ``(kind, line)`` rows for the side-by-side table: one row per memory (with
    the private markers it holds), raw messages trimmed to the ends of each run, private ones
    always kept."""
    items: list[tuple[str, str]] = []
    seen: set[str] = set()
    pairs = list(zip(compiled.messages, compiled.provenance.entries))
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
    """Every private marker found where a reader it was not for could read it."""
    places: dict[str, list[tuple[str, str]]] = {}
    for name in AGENTS:
        compiled = result["compiles"][name]
        places[name] = [
            ("compile", _haystack(_compile_as_json(compiled, {}))),
            ("summaries", _haystack(*(s.text for s in result["summaries"][name]))),
            (
                "model requests",
                _haystack(
                    *(r.system or "" for r in result["requests"][name]),
                    *(content_to_json(m.content) for r in result["requests"][name] for m in r.messages),
                ),
            ),
        ]
    places["the host (no reader)"] = [("compile", _haystack(_compile_as_json(result["host_compile"], {})))]
    leaks = []
    for note in result["notes"]:
        for reader, haystacks in places.items():
            if reader in note.audience:
                continue
            for where, haystack in haystacks:
                if note.marker in haystack:
                    leaks.append(f"{note.marker} (for {', '.join(note.audience)}) reached {reader}'s {where}")
    return leaks


def _print_demo(result: dict[str, Any], console: Any) -> list[str]:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    console.print()
    console.rule("[bold]What each agent would be sent now[/bold]")
    console.print(
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
    console.print(table)

    console.rule("[bold]Who remembers what[/bold]")
    counts = Table(box=box.SIMPLE_HEAD)
    for column in ("agent", "sees", "private notes", "in context", "L1", "L2", "L3", "requests"):
        counts.add_column(column, justify="left" if column == "agent" else "right")
    for name in AGENTS:
        levels = _memory_counts(result["summaries"][name])
        own = [note for note in result["notes"] if name in note.audience]
        context = _haystack(
            _compile_as_json(result["compiles"][name], {}), *(s.text for s in result["summaries"][name])
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
    console.print(counts)
    console.print(
        "[dim]sees: messages of the room it may read; private notes: lines meant for it; in context: of those, "
        "how many its compile or memories still hold. L1: a memory of one chunk of the conversation; L2/L3: merged "
        "from six of the level below. The offline ExtractiveModel writes each memory from lines of its request, "
        "and each request is built from that agent's view only.[/dim]"
    )

    console.rule("[bold]The check[/bold]")
    leaks = _find_leaks(result)
    console.print(
        f"Each of the {len(result['notes'])} private notes was searched for, by its marker, in the compile, the "
        "memories and every model request of each agent it was not for, and in the host's compile (no reader)."
    )
    return leaks


def cmd_demo(args: argparse.Namespace) -> int:
    console = _console()
    if args.store is not None and os.path.exists(args.store):
        raise CliError(f"{args.store!r} already exists; the demo writes a fresh store, so give a path that does not exist")
    console.rule("[bold]asides demo[/bold]: three agents, one shared conversation, private lines")
    console.print(
        "A host writes one message log for a room: a user planning a workshop with three agents, "
        "[bold]ann[/bold] (venue), [bold]bob[/bold] (budget) and [bold]cleo[/bold] (programme). Some lines are "
        "meant for one or two of them only (a block with an [italic]audience[/italic]). Each agent has its own "
        "namespace and compiles, and compresses, only what it may read."
    )
    with tempfile.TemporaryDirectory(prefix="asides-demo-") as directory:
        path = args.store if args.store is not None else os.path.join(directory, "demo.db")
        where = "kept" if args.store is not None else "temporary, removed at exit"
        console.print(f"store: [bold]{path}[/bold] ({where}); compression model: offline ExtractiveModel\n")

        async def run() -> dict[str, Any]:
            async with open_runtime(path, must_exist=False) as rt:
                return await _demo_room(rt, console)

        result = trio.run(run)
        leaks = _print_demo(result, console)
    if leaks:
        for leak in leaks:
            console.print(f"[red]LEAK[/red] {leak}")
        console.print(f"[bold red]{len(leaks)} private line(s) reached a reader they were not for[/bold red]")
        return EXIT_REFUSED
    console.print("[bold green]no private line reached a reader it was not for[/bold green]")
    if args.store is not None:
        console.print(f"[dim]Look around: asides inspect {args.store}; asides compile {args.store} --namespace agents/ann[/dim]")
    return EXIT_OK


# -- the command line --------------------------------------------------------------------------


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="asides",
        description="Look into an asides store, compile for an agent, move messages between stores, or run a demo.",
        epilog="Exit codes: 0 done, 1 refused (the reason is printed on one line), 2 store locked or usage error.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser(
        "demo",
        help="three agents sharing one conversation, with private lines and compression (offline)",
        description="Run a room of three agents (ann, bob, cleo) sharing one message log on an embedded SQLite store "
        "with the offline ExtractiveModel; show each agent's compile side by side and check that no private line "
        "reached a reader it was not for (exit 1 if one did).",
    )
    demo.add_argument("--store", metavar="PATH", help="write the demo's store here and keep it (default: a temporary file)")
    demo.set_defaults(run=cmd_demo)

    inspect = commands.add_parser(
        "inspect",
        help="branches, namespaces, readers, floors, strategies and summary counts",
        description="Show a store's branches (with fork points), its namespaces with their reader records, narrowing "
        "floors, strategy, and message and summary counts per level. Unreadable records are shown, never dropped. "
        "Writes nothing.",
    )
    inspect.add_argument("path", metavar="PATH", help="the store file")
    inspect.add_argument("--json", action="store_true", help="print JSON for scripts")
    inspect.set_defaults(run=cmd_inspect)

    compile_ = commands.add_parser(
        "compile",
        help="what an agent would be sent now",
        description="Show what a namespace's agent would be sent now, in the chosen shape. The strategy is detected "
        "from the namespace's records (override with --strategy); no model is needed. Writes nothing: a namespace "
        "that records no reader is not claimed for --reader.",
    )
    compile_.add_argument("path", metavar="PATH", help="the store file")
    compile_.add_argument("--namespace", "-n", required=True, metavar="NS", help="the agent's namespace, e.g. agents/ann")
    compile_.add_argument("--reader", "-r", metavar="R", help="compile for this reader (default: the one the namespace records)")
    compile_.add_argument("--branch", "-b", default="main", metavar="B", help="the branch (default: main)")
    compile_.add_argument("--max-tokens", type=int, default=100_000, metavar="N", help="the context size (default: 100000)")
    compile_.add_argument("--reserve", type=int, default=4_000, metavar="N", help="tokens kept for the response (default: 4000)")
    compile_.add_argument("--format", "-f", choices=FORMATS, default="text", help="output shape (default: text)")
    compile_.add_argument(
        "--assistant", default="assistant", metavar="NAME", help="the participant that takes the assistant role (anthropic/openai)"
    )
    compile_.add_argument("--strategy", choices=sorted(STRATEGIES), help="override the detected strategy")
    compile_.set_defaults(run=cmd_compile)

    export = commands.add_parser(
        "export",
        help="a branch's messages as JSON lines",
        description="Write every message on a branch (its parent's up to the fork point included) to stdout, one "
        "compact, key-sorted JSON object per line: participant, content (the blocks' wire form, audiences included), "
        "metadata, timestamp. Writes nothing to the store.",
    )
    export.add_argument("path", metavar="PATH", help="the store file")
    export.add_argument("--branch", "-b", default="main", metavar="B", help="the branch (default: main)")
    export.add_argument("--with-ids", action="store_true", help="add each message's id and sequence (import ignores them)")
    export.set_defaults(run=cmd_export)

    import_ = commands.add_parser(
        "import",
        help="append messages from a JSON-lines file",
        description="Append the messages of a JSON-lines file (as export writes it; '-' reads stdin) to a branch, in "
        "one atomic commit, keeping their timestamps. Every line is validated first: if any is malformed, each one is "
        "named and nothing is written. A missing store is created.",
    )
    import_.add_argument("path", metavar="PATH", help="the store file (created if missing)")
    import_.add_argument("messages", metavar="MESSAGES", help="the JSON-lines file, or - for stdin")
    import_.add_argument("--branch", "-b", default="main", metavar="B", help="the branch to append to (must exist; default: main)")
    import_.set_defaults(run=cmd_import)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``asides`` command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error (argparse printed it)
        return exc.code if isinstance(exc.code, int) else EXIT_OK if exc.code is None else EXIT_BUSY
    reports = logging.StreamHandler(sys.stderr)  # the library's reports of malformed data (SPEC E)
    reports.setFormatter(logging.Formatter("asides: warning: %(message)s"))
    reports.setLevel(logging.WARNING)
    library_log = logging.getLogger("asides")
    library_log.addHandler(reports)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("asides: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _silence_stdout()  # the reader of our output went away (e.g. `| head`): stop quietly
        return EXIT_REFUSED
    except BaseExceptionGroup as group:
        found = _single_expected(group)
        if found is None:
            raise
        return _report(found)
    except Exception as exc:
        if _expected(exc):
            return _report(exc)
        raise
    finally:
        library_log.removeHandler(reports)


# -- the demo's conversation -------------------------------------------------------------------

DEMO_CONVERSATION = """
user: Morning, all. We are organising Quiet Systems, a two-day workshop in Lisbon on 14 and 15 May, for about sixty people.
user: Ann, you have the venue and logistics. Bob, the budget and sponsors. Cleo, the programme and the speakers.
ann: Understood. I will start with a shortlist of three venues within walking distance of a metro station.
bob: Happy to. I will draft a budget with a ticket price and a sponsorship target by Wednesday.
cleo: Great. I will sketch a programme of two tracks, with a keynote on each morning.
user: One ground rule: we decide things in this room, and each of you keeps to yourself the notes I send only to you.
user: Dates first. Does mid-May clash with anything we know of?
cleo: It overlaps with a database conference in Porto on the 16th, so some speakers could come on to us from there.
ann: Hotels near the river fill up in May, so I would book a room block this week.
bob: Booking early also gets the better rate, which helps the budget.
user: Agreed, book the block. [[ann]] The hotel in Cais do Sodre owes me a favour: ask for Rita and mention my name.
ann: I will call the hotel this afternoon and hold thirty rooms for three nights.
user: [[bob]] Between us, Bob: the hard ceiling for the whole event is 48,000 euros, whatever the others say.
bob: Noted. I will plan for a comfortable margin under the ceiling we talked about.
cleo: Do we want a call for papers, or invited talks only?
user: Half and half. Invited keynotes, and a short call for papers for the afternoon sessions.
cleo: Then the call should open next Monday and close in four weeks, with decisions a week later.
ann: I can put the call on the website as soon as Cleo sends the text.
bob: Should the call mention travel support for speakers? It changes the budget quite a bit.
user: Yes, for up to six speakers who would not come otherwise.
bob: Six grants of 600 euros each, then. I will put 3,600 euros in the speakers line.
cleo: [[cleo,bob]] Bob, the keynote from Oslo asked for a fee on top of travel. I said I would check with you first.
bob: [[bob,cleo]] Cleo, we can pay her 1,500 euros if it stays quiet; the others are speaking for free.
cleo: I have a first draft of the call. It asks for talks on reliability, observability and calm on-call rotations.
user: Good themes. Add one on the people side: handovers, runbooks, and how teams learn from incidents.
cleo: Added. I will send the text to Ann tonight.
ann: Venues now. The three candidates are Harbour Hall, the old printing works in Marvila, and the university aula.
ann: Harbour Hall has the best rooms, the printing works has character, and the aula is cheapest but only free on the 15th.
user: The aula is out then. Ann, what do the other two cost for two days?
ann: Harbour Hall asks 9,800 euros, the printing works 7,200 euros, both with tables, screens and a sound system.
user: [[ann]] Harbour Hall's manager told me off the record they would drop to 8,500 euros if we sign by Friday.
ann: Let me go and see both on Thursday and report back before we decide.
bob: From the budget side, either fits, but the cheaper one leaves more for catering.
cleo: For the programme we need one room for sixty and a second for about twenty-five.
ann: Both have that. The printing works' second room is loud when trams pass, though.
user: Noise matters for the talks. Ann, please check it during your visit.
ann: I will record a minute of sound in each room so we can all hear it.
bob: Sponsors next? I have a list of eleven companies who sponsored similar events last year.
user: Go ahead, but no more than four sponsors, and no sponsored talks.
bob: Understood: four tiers would be too many, so two tiers of two sponsors each, at 5,000 and 2,500 euros.
cleo: A sponsor table in the hall is fine, but their logos stay off the slides, please.
bob: [[bob]] Note to self: Northwind said yes by phone at 5,000 euros, but the contract is not signed yet.
bob: I have had one positive answer by phone. I will not count it until it is signed.
user: Sensible. What does the ticket price look like with two sponsors at the top tier?
bob: At 180 euros a ticket for sixty people we cover the venue and the catering, with a margin for surprises.
user: 180 is steep for students. Can we have a reduced ticket?
bob: Ten student tickets at 60 euros cost us 1,200 euros of income. The margin absorbs that.
cleo: I like that. Students are often the best people in the hallway track.
user: Then it is decided: 180 euros standard, 60 euros for ten students.
ann: Catering. The printing works has a kitchen; Harbour Hall requires its own caterer.
ann: Harbour Hall's caterer charges 38 euros a head per day, lunch and two coffee breaks included.
user: [[ann,bob]] Ann and Bob: the caterer has a cancellation penalty of 40 percent after 1 May. Keep it in mind.
bob: The catering line would be about 4,600 euros for two days then, if we take Harbour Hall.
ann: For the printing works, I have quotes from two local caterers, both around 30 euros a head.
cleo: Please make sure there are good vegetarian and vegan options; several speakers asked.
ann: Both caterers do a vegetarian menu by default, and vegan on request.
user: Let us also have water and fruit in the rooms, not only at the breaks.
ann: Noted. I will put it in the catering brief.
user: Now travel. Most people will fly into Lisbon. Anything we should tell them?
ann: The metro runs from the airport to the centre in about thirty minutes. I will write a short travel page.
cleo: Speakers coming from Porto can take the train, which is faster door to door than flying.
bob: For travel grants, I would reimburse against receipts after the event, capped at 600 euros.
user: [[bob,cleo]] Bob, Cleo: one of the grant speakers cannot front the cost. Pay her train ticket in advance.
cleo: I will ask the grant speakers what they need once the call closes.
ann: Back from the visits. Harbour Hall is quiet; in the printing works you hear every tram.
ann: I have posted both recordings in the shared folder, one minute from each room.
user: I listened. The trams are too much for the talks. Let us go with Harbour Hall.
bob: Agreed. The extra cost is covered if both top-tier sponsors sign.
ann: I will ask Harbour Hall for the contract and check the cancellation terms.
ann: [[ann]] Rita at the hotel confirmed the room block at 95 euros a night; I should not quote that rate publicly.
ann: The hotel room block is confirmed. Attendees get a code when they register.
cleo: Programme update: four invited speakers have confirmed, and the keynote from Oslo is close to a yes.
user: Who are the four?
cleo: A site reliability lead from a bank, a researcher on incident reviews, an on-call coach, and a database engineer.
user: That is a good mix. What are they speaking about?
cleo: Error budgets in practice, learning from near misses, sustainable rotations, and upgrades without downtime.
user: [[cleo]] Cleo, keep this quiet: the database engineer might have to cancel for a product launch in May.
cleo: Understood. I will keep a reserve talk ready for the second afternoon.
ann: The call for papers is live on the website. I have shared the link on the usual lists.
bob: The ticket page is ready too. Registration opens on Monday, together with the call.
user: Let us open both at ten in the morning and post about it together.
cleo: I will write the announcement, and Ann can schedule it.
ann: Scheduled for Monday at ten. I will watch the registration numbers during the day.
bob: The budget draft is in the shared folder. The venue, catering and grants are the big lines.
user: Thank you. Cleo, how many submissions are you hoping for?
cleo: Thirty would let us pick eight good talks. Fewer than fifteen and I would extend the call.
user: Let us meet again when the call closes. Anything else for today?
ann: One question: do we record the talks?
user: Yes, with the speakers' consent. Ann, can the venue handle it?
ann: Harbour Hall has cameras in the main room. Recording costs 900 euros for both days.
bob: That fits, but only just. I would skip recording the second room.
cleo: The second room will hold workshops mostly, so recording matters less there.
user: Fine. Record the main room only.
user: Three weeks later. The call for papers has closed. Cleo, how did it go?
cleo: We received thirty-four submissions. I have a shortlist of twelve for the committee.
user: Who is on the committee?
cleo: The three of us and two volunteers from the Lisbon meetup. Each talk gets three reviews.
cleo: [[cleo]] Between us: two of the submissions are from the sponsor Northwind; I will review them blind like the rest.
bob: Speaking of sponsors, both top-tier sponsors have now signed. The second tier has one so far.
user: Good news. Registration numbers?
ann: Forty-one registered, including seven students. The hotel block is half taken.
bob: At this rate we reach sixty two weeks before the event.
user: [[bob]] Bob, if we are over budget anywhere, cut the printed badges before anything else.
bob: Noted. I will track spending weekly from now on.
cleo: The review scores are in. Eight talks stand out clearly, and there is a tie for the ninth place.
user: Eight is what we planned. Keep the ninth as a reserve.
cleo: I will write to the accepted speakers today and to the others tomorrow, with feedback.
ann: I need the speakers' travel dates for the hotel list.
cleo: I will ask for them in the acceptance email.
user: Let us draft the schedule. Two keynotes, eight talks, two workshops, and long breaks.
cleo: Day one: keynote at nine thirty, two talks, lunch, a workshop in the small room, two talks, closing panel.
cleo: Day two: keynote, two talks, lunch, the second workshop, two talks, and a lightning talk hour.
ann: Lunch runs from twelve thirty to two, so the caterer can serve everyone without queues.
user: I like the lightning talks. Who can sign up?
cleo: Anyone attending, on a board at the registration desk, first come first served.
bob: The lightning hour costs nothing, which the budget appreciates.
ann: [[ann,cleo]] Cleo, the main room's projector is flaky; the venue is replacing it but not before the 10th.
cleo: [[ann,cleo]] Ann, thanks. I will ask speakers to send slides early so we can test them on the new projector.
user: What about accessibility? We should say clearly what the venue offers.
ann: Harbour Hall has step-free access, a lift, accessible toilets and a hearing loop in the main room.
ann: I will put all of that on the venue page, with photos of the entrance.
cleo: Captions for the recordings would help too. I can ask volunteers to correct automatic captions.
bob: Professional captioning would cost about 1,100 euros. Volunteers are cheaper but slower.
user: Volunteers first, and we pay for professional captions if they are not done in two weeks.
user: Last topic for today: risks. What could go wrong?
ann: A transport strike. There was one last May. I would plan for taxis and a shuttle from the hotel.
bob: A sponsor pulling out. We would still break even with one top-tier sponsor, but only just.
cleo: A keynote cancelling. I have the reserve talk and a reserve keynote candidate in Lisbon itself.
user: [[ann,bob,cleo]] All three of you: the board may move the event to June if the venue contract slips. Not public yet.
ann: I will make sure the venue contract is signed this week, then.
bob: And I will hold back payments that cannot be refunded until it is.
cleo: I will tell speakers the dates are final only after the contract is signed.
user: Good. Let us write down what we decided today.
ann: Venue: Harbour Hall, both days, main room recorded. Hotel block confirmed, code sent on registration.
bob: Budget: tickets at 180 and 60 euros, two top-tier sponsors signed, travel grants capped at 600 euros.
cleo: Programme: two keynotes, eight talks, two workshops, a lightning talk hour, one reserve talk.
user: Thank you, all. Next check-in on Friday. Ann, please send the venue contract as soon as it arrives.
ann: Will do. I will send it to all of you the moment I have it. [[ann,cleo]] Cleo, I have the new projector's model number for your slide tests.
bob: I will have the spending report ready for Friday. [[bob]] Remember: Northwind's second payment is due on 2 May.
cleo: And I will have the final schedule, with speaker names, for Friday too.
user: Perfect. Have a good week. [[cleo]] Cleo, please call me tonight about the keynote from Oslo.
"""


if __name__ == "__main__":
    sys.exit(main())
