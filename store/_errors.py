"""Errors raised by the store layer.

Every asides error derives from :class:`AsidesError`. Each message says, in one sentence a host
operator can act on, what was refused and why. Errors raised by the runtime (claims, narrowing,
closed managers, ...) live in ``actors.errors``; ``actors`` re-exports these as well.
"""

from __future__ import annotations

__all__ = [
    "AsidesError",
    "MalformedContentError",
    "InvalidArgumentError",
    "ArgumentTypeError",
    "InvalidNameError",
    "NameTypeError",
    "StoreLockedError",
    "StoreFailedError",
    "StoreCorruptError",
    "StoreReadOnlyError",
    "StoreNotEmptyError",
    "UnknownBranchError",
    "BranchExistsError",
    "UnknownMessageError",
]


class AsidesError(Exception):
    """Base class of every error asides raises on purpose."""


class MalformedContentError(AsidesError, ValueError):
    """Content that is not well formed, or an audience where none may be put.

    ``path`` names the exact place, for example ``content[2].content[0].audience``.
    Nothing is written when this is raised.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class InvalidArgumentError(AsidesError, ValueError):
    """An argument outside what the call accepts: a negative budget, an unknown injection
    position, a sequence past a branch's head, ...

    ``path`` names the argument (``max_tokens``, ``injections[1].position``). Nothing is written
    when this is raised.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong type (also a ``TypeError``), for example a ``view_filter`` that
    is not callable. ``path`` names the argument."""


class InvalidNameError(MalformedContentError, InvalidArgumentError):
    """A name that cannot be stored or shown safely: a namespace, branch, reader, participant,
    or metadata key that is not a string, is empty, is too long, or holds a control character or
    a lone surrogate.

    ``path`` names the field (``namespace``, ``branch``, ``view_reader``, ``participant``,
    ``metadata.tags``). It is a :class:`MalformedContentError` and an
    :class:`InvalidArgumentError` (so a ``ValueError``) too. Nothing is written when this is
    raised.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        AsidesError.__init__(self, f"{path}: {problem}")  # both bases take (path, problem)


class NameTypeError(InvalidNameError, ArgumentTypeError):
    """A name of the wrong type (a namespace, branch, reader, participant or metadata key that is
    not a string): an :class:`ArgumentTypeError` (so a ``TypeError``), as every wrong type is,
    and an :class:`InvalidNameError`, as every bad name is. ``path`` names the field."""


class StoreLockedError(AsidesError):
    """Another process (or another runtime in this process) has the store file open. ``hint``,
    when given, is a sentence added to the message: what the opener that was refused should do
    instead (an ``AsidesSession`` names ``AsidesSession.bound_to``)."""

    def __init__(self, path: str, *, hint: str | None = None) -> None:
        self.path = path
        self.hint = hint
        super().__init__(
            f"the store {path!r} is open in another process or runtime; "
            "one process owns a store file at a time, so close the other one first" + (f". {hint}" if hint else "")
        )


class StoreFailedError(AsidesError):
    """A commit failed; the store stopped so memory and disk never disagree.

    Every call on a failed store raises this. Reopen the store to continue from what was
    durably committed.
    """


class StoreCorruptError(StoreFailedError):
    """A file that cannot be read as an asides store: not an SQLite database, damaged (a torn or
    truncated file), a foreign database, a ``log`` table of another shape, records of the wrong
    types, or a store of a newer format than this build reads.

    ``path`` names the file and ``problem`` what is wrong. Nothing was written to the file. It is
    a :class:`StoreFailedError` too (the store cannot be used), but reopening will not help:
    repair the file or restore a backup.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path!r} cannot be read as an asides store: {problem}")


class StoreReadOnlyError(AsidesError):
    """A write to a store opened read-only (``read_only=True``), which never writes."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"the store {path!r} was opened read-only, so it takes no writes; open it without read_only to write")


class StoreNotEmptyError(AsidesError, ValueError):
    """A restore into a store that already holds records (a restore only fills an empty store)."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"the store {path!r} already holds records; a restore writes only into an empty store")


class UnknownBranchError(AsidesError, LookupError):
    """A branch name that the store does not hold."""

    def __init__(self, branch: str) -> None:
        self.branch = branch
        super().__init__(f"the store has no branch named {branch!r}; list_branches() shows the ones it has")


class BranchExistsError(AsidesError, ValueError):
    """A new branch was asked for under a name already taken."""

    def __init__(self, branch: str) -> None:
        self.branch = branch
        super().__init__(f"a branch named {branch!r} already exists; choose another name")


class UnknownMessageError(AsidesError, LookupError):
    """A message id that is not on the branch in question."""

    def __init__(self, message_id: str, branch: str) -> None:
        self.message_id = message_id
        self.branch = branch
        super().__init__(f"no message {message_id!r} is visible on branch {branch!r}")
