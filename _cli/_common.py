"""What every command shares: exit codes, the one-line error, opening a store, JSON output.

Exit codes (also in ``asides --help`` and docs/cli.md):

- 0: done;
- 1: refused (bad input, a missing, damaged, foreign or locked store, an unknown branch or
  namespace, a reader refusal) or an I/O error; the reason is one line on stderr;
- 2: bad usage (the command line is wrong, e.g. a negative ``--max-tokens``);
- 3: the demo found a private line where a reader it was not for could read it (``demo`` alone
  exits with it, so only its ``--help`` lists it);
- 130: interrupted (Ctrl-C);
- 141: the output pipe closed (``asides demo | head -1``): the command stops quietly, with the
  code a shell reports for a Unix tool stopped by a closed pipe (128 + SIGPIPE).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from .._inspection._text import compact_json, one_line
from ..actors._runtime import Runtime, open_runtime
from ..store._errors import AsidesError, StoreLockedError
from ..strategies._models import Model

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "EXIT_LEAK",
    "EXIT_INTERRUPTED",
    "EXIT_CLOSED_PIPE",
    "EXIT_CODES_TEXT",
    "exit_codes_text",
    "CliError",
    "UsageError",
    "check_store_file",
    "is_new_store_file",
    "is_shared",
    "console",
    "dumps",
    "one_line",
    "reading_runtime",
    "require_branch",
    "writing_runtime",
    "write_out",
]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_LEAK = 3
EXIT_INTERRUPTED = 130
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE


def exit_codes_text(*, demo: bool = False) -> str:
    """The exit codes as ``--help`` lists them; 3 only for ``demo``, the one command that uses it."""
    leak = "3 the demo found a leak; " if demo else ""
    return (
        "Exit codes: 0 done; 1 refused or an I/O error (the reason is printed on one line, 'asides: ...'); "
        f"2 bad usage; {leak}130 interrupted; 141 the output pipe closed (the command stops quietly)."
    )


EXIT_CODES_TEXT = exit_codes_text()

_SQLITE_HEADER = b"SQLite format 3\x00"


class CliError(Exception):
    """An expected failure: one line for the user, an exit code, and (for a file refused line by
    line) the problems, one per line under it."""

    def __init__(self, message: str, code: int = EXIT_REFUSED, *, details: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


class UsageError(CliError):
    """The command line is wrong (exit 2), found after argparse accepted it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


def dumps(value: Any, *, compact: bool = False) -> str:
    """JSON for output: indented, or compact with sorted keys (one line); never NaN."""
    if compact:
        return compact_json(value)
    return json.dumps(value, ensure_ascii=False, indent=2)


def write_out(lines: list[str]) -> None:
    """Write ``lines`` (each without its newline) to stdout as UTF-8, whatever the locale says,
    so that exported and dumped files are the same bytes everywhere."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stdout (some embedding): best effort
        for line in lines:
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
        return
    for line in lines:
        buffer.write(line.encode("utf-8") + b"\n")
    buffer.flush()


def console(*, fit_content: bool = False) -> Console:
    """A rich console on stdout. With ``fit_content``, output that is not a terminal (a pipe, a
    file) is as wide as its content needs, unless ``COLUMNS`` says otherwise, so that nothing is
    folded or cut for a script reading it. With ``NO_COLOR`` set (not empty) it writes no
    escape codes: no colour, bold or dim."""
    from rich.console import Console

    width: int | None = None
    if fit_content and "COLUMNS" not in os.environ and not sys.stdout.isatty():
        width = 100_000
    # NO_COLOR (https://no-color.org), set and not empty: no escape codes at all, so bold and dim
    # go too (rich's own reading of it drops colours only).
    plain = os.environ.get("NO_COLOR", "") != ""
    made = Console(highlight=False, width=width, soft_wrap=False, color_system=None if plain else "auto")
    made.on_broken_pipe = _closed_pipe  # type: ignore[method-assign]  # (rich's own exits with 1)
    return made


def _closed_pipe() -> None:
    """Hand a closed output pipe to ``main``, which ends the command quietly."""
    raise BrokenPipeError


def is_shared(path: str) -> bool:
    """Whether ``path`` names a shared (PostgreSQL) store rather than a store file
    (``store._postgres.is_postgres_url``, the one rule)."""
    from ..store._postgres import is_postgres_url

    return is_postgres_url(path)


def is_new_store_file(path: str) -> bool:
    """Whether a writing command would make the store at ``path`` (a file that does not exist)."""
    return not is_shared(path) and not os.path.exists(path)


def check_store_file(path: str) -> None:
    """Refuse, with one clear line, a PATH that is not an existing, non-empty asides store file
    (so that reading commands never create one)."""
    if is_shared(path):
        return  # a shared store: its read-only open refuses a schema that holds none (docs/postgres.md)
    if path == ":memory:":
        raise CliError("':memory:' holds nothing to read here; give the path of a store file")
    if not os.path.exists(path):
        raise CliError(f"no store at {path!r}: the file does not exist (nothing was created)")
    if os.path.isdir(path):
        raise CliError(f"{path!r} is a directory, not a store file")
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise CliError(f"{path!r} cannot be read: {exc.strerror or exc}") from None
    if not header:
        raise CliError(f"{path!r} is an empty file, not an asides store (nothing to read)")
    if header != _SQLITE_HEADER:
        raise CliError(f"{path!r} is not an asides store (not an SQLite database)")
    # A foreign SQLite database: refuse it rather than read (or add asides's table to) it.
    # immutable=1 reads without creating -wal/-shm files; a store's main file holds either
    # nothing yet or the log table.
    try:
        probe = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        try:
            tables = {row[0] for row in probe.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            probe.close()
    except sqlite3.Error:
        return  # let the store's own open report what is wrong
    if tables and "log" not in tables:
        raise CliError(f"{path!r} is an SQLite database but not an asides store (it has no log table)")


@asynccontextmanager
async def reading_runtime(path: str, *, message_cache: int | None = None) -> AsyncIterator[Runtime]:
    """The runtime over the existing store at ``path``, opened read-only: nothing is created or
    changed, and it works while a host (another process, or this one) holds the store.
    ``message_cache``: as ``open_runtime`` takes it (a command reading each message once needs
    few)."""
    check_store_file(path)
    async with _expected_errors(path), open_runtime(path, read_only=True, message_cache=message_cache) as rt:
        yield rt


def remove_store_files(path: str) -> None:
    """Remove a store file a command created and could not fill (and its -wal/-shm files)."""
    for name in (path, path + "-wal", path + "-shm"):
        try:
            os.remove(name)
        except FileNotFoundError:
            pass


@asynccontextmanager
async def writing_runtime(path: str, *, model: Model | None = None, message_cache: int | None = None) -> AsyncIterator[Runtime]:
    """The runtime over the store at ``path`` for writing (creating it when missing). A store
    another process holds is refused in one line. ``message_cache``: as ``open_runtime`` takes
    it."""
    async with _expected_errors(path), open_runtime(path, model=model, message_cache=message_cache) as rt:
        yield rt


@asynccontextmanager
async def _expected_errors(path: str) -> AsyncIterator[None]:
    try:
        yield
    except StoreLockedError as exc:
        raise CliError(str(exc)) from None
    except sqlite3.DatabaseError as exc:
        raise CliError(f"{path!r} could not be opened as an asides store: {exc}") from None


def require_branch(rt: Runtime, branch: str) -> None:
    """Refuse a branch the store does not hold, naming the ones it does."""
    if not rt.store.has_branch(branch):
        names = ", ".join(info.name for info in rt.list_branches())
        raise CliError(f"the store has no branch {branch!r} (its branches: {names})")


def is_expected(exc: BaseException) -> bool:
    """An error the CLI reports in one line (never a traceback)."""
    return isinstance(exc, (CliError, AsidesError, ValueError, OSError, sqlite3.Error))
