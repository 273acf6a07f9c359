"""The ``asides`` command line: the argument parser and ``main``.

Commands (``asides COMMAND --help`` for each)::

    asides demo [--store PATH]
    asides inspect PATH [--json]
    asides compile PATH --namespace NS [--reader R] [--branch B] [--max-tokens N] [--reserve N]
                        [--format text|json|anthropic|openai] [--assistant NAME] [--strategy S]
    asides export PATH [--branch B] [--with-ids] > messages.jsonl
    asides import PATH messages.jsonl [--branch B] [--append]
    asides dump PATH > backup.jsonl
    asides restore NEWPATH backup.jsonl
    asides serve STORE [--host 127.0.0.1] [--port 8077] [--token TOKEN]
    asides mcp PATH --namespace NS --reader R [--http [--host 127.0.0.1] [--port 8078] [--token TOKEN]]
    asides erase PATH (--message ID... | --participant NAME) --reason TEXT [--yes] [--json]
    asides audit PATH (MESSAGE_ID | --reader NAME) [--json]

``inspect``, ``compile``, ``export`` and ``dump`` open the store read-only: they never create or
change a file, and they work while a host holds the store. Expected errors print one line,
``asides: <what and why>``, on stderr, never a traceback; exit codes are in ``_common``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from .._inspection._preview import STRATEGIES
from .._version import __version__
from ..store._groups import collapse
from ._audit import add_audit_parser
from ._backup import cmd_dump, cmd_restore
from ._common import (
    EXIT_CLOSED_PIPE,
    EXIT_CODES_TEXT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    exit_codes_text,
    is_expected,
    one_line,
)
from ._compile import FORMATS, cmd_compile
from ._demo import cmd_demo
from ._erase import add_erase_parser
from ._export import cmd_export, cmd_import
from ._inspect import cmd_inspect
from ._mcp import add_mcp_command
from ._search import add_search_command
from ._serve import add_serve_command

__all__ = ["build_parser", "main"]


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative; give 0 or more")
    return value


def _store_help(file: str = "the store file") -> str:
    """What PATH may be, in every command's help: a file, or a shared store's URL."""
    return f"{file}, or a postgresql:// URL of a shared store (e.g. postgresql://app@db/asides?options=-csearch_path%%3Dmy_store)"


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; each sets ``run`` to its function."""
    parser = argparse.ArgumentParser(
        prog="asides",
        description="Look into an asides store, compile for an agent, move messages between stores, back a store up, "
        "or run a demo. Commands that read (inspect, compile, export, dump) open the store read-only: they never "
        "change a file and work while a host holds the store.",
        epilog=exit_codes_text(demo=True),  # the program as a whole: demo may exit 3
    )
    parser.add_argument("--version", action="version", version=f"asides {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser(
        "demo",
        help="three agents sharing one conversation, with private lines and compression (offline)",
        description="Run a room of three agents (ann, bob, cleo) sharing one message log on an embedded SQLite store "
        "with the offline ExtractiveModel; show each agent's compile side by side and check that no private line "
        "reached a reader it was not for (exit 3 if one did).",
        epilog=exit_codes_text(demo=True),
    )
    demo.add_argument("--store", metavar="PATH", help="write the demo's store here and keep it (default: a temporary file)")
    demo.set_defaults(run=cmd_demo)

    inspect = commands.add_parser(
        "inspect",
        help="branches, namespaces, readers, floors, strategies and summary counts",
        description="Show a store's branches (with fork points), its namespaces with their reader records, narrowing "
        "floors, strategy, and message and summary counts per level. Unreadable records are shown, never dropped. "
        "Opens the store read-only.",
        epilog=EXIT_CODES_TEXT,
    )
    inspect.add_argument("path", metavar="PATH", help=_store_help())
    inspect.add_argument("--json", action="store_true", help="print JSON for scripts")
    inspect.set_defaults(run=cmd_inspect)

    compile_ = commands.add_parser(
        "compile",
        help="what an agent would be sent now",
        description="Show what a namespace's agent would be sent now, in the chosen shape. The strategy is detected "
        "from the namespace's records (override with --strategy); no model is needed. Opens the store read-only: "
        "this is a preview, so --reader on a namespace that records no reader shows that reader's view without "
        "claiming the namespace.",
        epilog=EXIT_CODES_TEXT,
    )
    compile_.add_argument("path", metavar="PATH", help=_store_help())
    compile_.add_argument("--namespace", "-n", required=True, metavar="NS", help="the agent's namespace, e.g. agents/ann")
    compile_.add_argument("--reader", "-r", metavar="R", help="compile for this reader (default: the one the namespace records)")
    compile_.add_argument("--branch", "-b", default="main", metavar="B", help="the branch (default: main)")
    compile_.add_argument(
        "--max-tokens", type=_non_negative_int, default=100_000, metavar="N", help="the context size (default: 100000)"
    )
    compile_.add_argument(
        "--reserve", type=_non_negative_int, default=4_000, metavar="N", help="tokens kept for the response (default: 4000)"
    )
    compile_.add_argument("--format", "-f", choices=FORMATS, default="text", help="output shape (default: text)")
    compile_.add_argument(
        "--assistant",
        default=None,
        metavar="NAME",
        help="the participant that takes the assistant role (anthropic/openai); default: the namespace's reader, else 'assistant'",
    )
    compile_.add_argument("--strategy", choices=sorted(STRATEGIES), help="override the detected strategy")
    compile_.set_defaults(run=cmd_compile)

    add_search_command(commands, _store_help(), EXIT_CODES_TEXT)

    export = commands.add_parser(
        "export",
        help="a branch's messages as JSON lines",
        description="Write every message on a branch (its parent's up to the fork point included) to stdout, one "
        "compact, key-sorted JSON object per line: participant, content (the blocks' wire form, audiences included), "
        "metadata, timestamp. Opens the store read-only.",
        epilog=EXIT_CODES_TEXT,
    )
    export.add_argument("path", metavar="PATH", help=_store_help())
    export.add_argument("--branch", "-b", default="main", metavar="B", help="the branch (default: main)")
    export.add_argument("--with-ids", action="store_true", help="add each message's id and sequence (import ignores them)")
    export.set_defaults(run=cmd_export)

    import_ = commands.add_parser(
        "import",
        help="append messages from a JSON-lines file",
        description="Append the messages of a JSON-lines file (as export writes it; '-' reads stdin) to a branch, in "
        "one atomic commit, keeping their timestamps. Lines are split on newlines only. Every line is validated "
        "first: if any is malformed, each one is named and nothing is written. A missing store is created; a store "
        "that already holds messages is refused unless --append is given. An empty file is refused.",
        epilog=EXIT_CODES_TEXT,
    )
    import_.add_argument("path", metavar="PATH", help=_store_help("the store file (created if missing)"))
    import_.add_argument("messages", metavar="MESSAGES", help="the JSON-lines file, or - for stdin")
    import_.add_argument("--branch", "-b", default="main", metavar="B", help="the branch to append to (must exist; default: main)")
    import_.add_argument("--append", action="store_true", help="add to a store that already holds messages")
    import_.set_defaults(run=cmd_import)

    dump = commands.add_parser(
        "dump",
        help="every record of a store as JSON lines (a backup)",
        description="Write every record of the store to stdout, in record order, one JSON object per line: messages "
        "(in export's form), edits, branches, reader records, narrowing floors, strategy state, memories and "
        "context logs, then a line counting them. asides restore makes an identical store from it. Opens the store "
        "read-only, so it can back up a store a host is using; reads one snapshot, a page at a time.",
        epilog=EXIT_CODES_TEXT,
    )
    dump.add_argument("path", metavar="PATH", help=_store_help())
    dump.set_defaults(run=cmd_dump)

    restore = commands.add_parser(
        "restore",
        help="make a store from a dump",
        description="Write every record of a dump (as asides dump writes it; '-' reads stdin) into a new or empty "
        "store, in one atomic commit, reading and writing a page at a time. If any line is malformed, or the dump "
        "was cut short, each problem is named and nothing is written. A store that already holds records is "
        "refused; an empty file is refused.",
        epilog=EXIT_CODES_TEXT,
    )
    restore.add_argument("path", metavar="NEWPATH", help=_store_help("the store file to make (missing or empty)"))
    restore.add_argument("dump", metavar="DUMP", help="the dump file, or - for stdin")
    restore.set_defaults(run=cmd_restore)
    add_serve_command(commands, EXIT_CODES_TEXT)
    add_mcp_command(commands, EXIT_CODES_TEXT)
    add_erase_parser(commands, EXIT_CODES_TEXT)
    add_audit_parser(commands, EXIT_CODES_TEXT)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``asides`` command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (argparse printed it)
        return exc.code if isinstance(exc.code, int) else EXIT_OK if exc.code is None else EXIT_USAGE
    reports = logging.StreamHandler(sys.stderr)  # the library's reports of malformed stored data
    reports.setFormatter(logging.Formatter("asides: warning: %(message)s"))
    reports.setLevel(logging.WARNING)
    library_log = logging.getLogger("asides")
    library_log.addHandler(reports)
    try:
        code: int = args.run(args)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print("asides: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _closed_pipe()
    except BaseExceptionGroup as group:
        inner = collapse(group)
        if isinstance(inner, BrokenPipeError):
            return _closed_pipe()
        if inner is group or not is_expected(inner):
            raise
        return _report(inner)
    except Exception as exc:
        if is_expected(exc):
            return _report(exc)
        raise
    finally:
        library_log.removeHandler(reports)


def _report(exc: BaseException) -> int:
    """Print an expected error as one line (and a refused file's problems under it)."""
    print(f"asides: {one_line(exc)}", file=sys.stderr)
    if isinstance(exc, CliError):
        for detail in exc.details:
            print(f"  {one_line(detail)}", file=sys.stderr)
        return exc.code
    return 1


def _closed_pipe() -> int:
    """The reader of our output went away (``| head``): stop quietly, as Unix tools do. Point
    stdout at /dev/null so that the interpreter's last flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    return EXIT_CLOSED_PIPE
