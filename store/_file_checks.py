"""What a store file must be before the store reads it, and how SQLite's errors at an open are told.

An open inspects the file and reads its records before it changes anything in it (the journal
mode, the schema, the format number): a file that is not an asides store of this build's format,
or holds a record of the wrong types, is refused with :class:`StoreCorruptError` naming the path,
and left exactly as it was. SQLite's own errors at an
open never reach the caller raw: a damaged file is a :class:`StoreCorruptError`, anything else
(a full disk, no permission) a :class:`StoreFailedError`.
"""

from __future__ import annotations

import os

from ._drivers import Driver
from ._errors import AsidesError, StoreCorruptError, StoreFailedError, StoreLockedError

__all__ = ["FORMAT_VERSION", "LOG_COLUMNS", "check_store_file", "lock_store_file", "open_error", "unlock_store_file"]

#: The store format this build reads and writes (SQLite's ``user_version``).
FORMAT_VERSION = 1
#: The ``log`` table's columns, in order.
LOG_COLUMNS = ("id", "branch", "seq", "kind", "ref", "body")

# SQLite errors that say something about the machine rather than the file.
_ENVIRONMENT = (
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_IOERR",
    "SQLITE_CANTOPEN",
    "SQLITE_READONLY",
    "SQLITE_PERM",
    "SQLITE_FULL",
    "SQLITE_NOMEM",
    "SQLITE_AUTH",
)


async def check_store_file(driver: Driver, path: str) -> tuple[int, bool]:
    """The file's format number and whether it holds the ``log`` table, once it is known to be
    an asides store this build reads, or a new empty database (format 0, no table). Reads only.

    Refuses with :class:`StoreCorruptError` a newer format, a database with tables but no
    ``log`` table (a foreign database), and a ``log`` table of another shape."""
    version = (await driver.execute("PRAGMA user_version"))[0][0]
    if not isinstance(version, int) or not 0 <= version <= FORMAT_VERSION:
        raise StoreCorruptError(path, f"it is of format {version}; this build reads format {FORMAT_VERSION} (a newer asides wrote it?)")
    tables = {row[0] for row in await driver.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    tables = {name for name in tables if not str(name).startswith("sqlite_")}
    if tables and "log" not in tables:
        shown = ", ".join(sorted(map(str, tables))[:5])
        raise StoreCorruptError(path, f"it is an SQLite database of something else (its tables: {shown}; no log table)")
    if "log" not in tables:
        return version, False
    columns = tuple(str(row[1]) for row in await driver.execute("PRAGMA table_info(log)"))
    if columns != LOG_COLUMNS:
        raise StoreCorruptError(path, f"its log table has the columns {', '.join(columns)}, not {', '.join(LOG_COLUMNS)}")
    return version, True


def open_error(path: str, error: BaseException) -> AsidesError:
    """What an SQLite error met while opening or reading the store file at ``path`` means: a
    :class:`StoreCorruptError` when it says the file is damaged (or text in it is not UTF-8), a
    :class:`StoreFailedError` naming the path otherwise."""
    name = str(getattr(error, "sqlite_errorname", "") or "")
    if name.startswith(_ENVIRONMENT):
        return StoreFailedError(f"the store {path!r} could not be opened: {error}")
    return StoreCorruptError(path, str(error) or type(error).__name__)


def lock_store_file(path: str) -> int | None:
    """Hold ``path`` for this open (``flock``, released by :func:`unlock_store_file` or by the
    process's exit); ``None`` for an in-memory store. Refuses with ``StoreLockedError`` when
    another open holds it, and ``StoreFailedError`` when the file cannot be opened."""
    if path == ":memory:" or path.startswith("file::memory:"):
        return None
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a directory, no permission, a missing folder
        raise StoreFailedError(f"the store {path!r} could not be opened: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise StoreLockedError(path) from None
    return fd


def unlock_store_file(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock
