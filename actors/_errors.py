"""Errors the runtime raises, and every other asides error (all importable from ``actors``).

Each message says, in one sentence a host operator can act on, what was refused and why, and
names the namespace, branch and readers involved.
"""

from __future__ import annotations

from ..store._errors import (
    ArgumentTypeError,
    AsidesError,
    BranchExistsError,
    InvalidArgumentError,
    InvalidNameError,
    MalformedContentError,
    NameTypeError,
    StoreCorruptError,
    StoreFailedError,
    StoreLockedError,
    StoreNotEmptyError,
    StoreReadOnlyError,
    UnknownBranchError,
    UnknownMessageError,
)
from ..strategies._errors import CompressionError, FloorUnavailableError, OverBudgetError, StrategyCapabilityError

__all__ = [
    "AsidesError",
    "StrategyInUseError",
    "MalformedContentError",
    "InvalidArgumentError",
    "ArgumentTypeError",
    "InvalidNameError",
    "NameTypeError",
    "ReaderClaimError",
    "ReaderRecordError",
    "NarrowingRefusedError",
    "StrategyCapabilityError",
    "ManagerClosedError",
    "StrategyNotStartedError",
    "OverBudgetError",
    "StoreLockedError",
    "StoreNotEmptyError",
    "StoreReadOnlyError",
    "StoreFailedError",
    "StoreCorruptError",
    "FloorUnavailableError",
    "CompressionError",
    "UnknownBranchError",
    "BranchExistsError",
    "UnknownMessageError",
]

_WHY = (
    "its summaries and context log hold that reader's view, so another reader's would read them; "
    "give each reader a namespace of its own"
)


class ReaderClaimError(AsidesError):
    """Another reader holds the namespace (or the manager compiles for no reader where one is
    recorded, or it went stale when another reader claimed the namespace)."""

    def __init__(self, *, namespace: str, branch: str, recorded: str, requested: str | None, action: str) -> None:
        self.namespace = namespace
        self.branch = branch
        self.recorded = recorded
        self.requested = requested
        self.action = action
        if requested is None:
            detail = (
                f"{action} was refused: namespace {namespace!r} on branch {branch!r} records reader {recorded!r}, "
                f"and this manager compiles for no reader; {_WHY}, and reopen the manager "
                f"(with no view_reader it compiles for {recorded!r})"
            )
        else:
            detail = (
                f"{action} for reader {requested!r} was refused: namespace {namespace!r} on branch {branch!r} "
                f"records reader {recorded!r}; {_WHY}"
            )
        super().__init__(detail)


class ReaderRecordError(AsidesError):
    """A namespace's reader record that is not a reader's name (corrupt or foreign data)."""

    def __init__(self, *, namespace: str, branch: str, record: object, action: str) -> None:
        self.namespace = namespace
        self.branch = branch
        self.record = record
        self.action = action
        super().__init__(
            f"{action} was refused: the reader record of namespace {namespace!r} on branch {branch!r} is "
            f"{record!r}, which is not a reader's name; nothing can tell whose view its summaries hold, "
            "so repair the record or use another namespace"
        )


class NarrowingRefusedError(AsidesError):
    """An edit that would hide a block from a reader who could see it, where that is refused."""

    def __init__(self, *, message_id: str, namespace: str, branch: str, readers: tuple[str, ...], reason: str) -> None:
        self.message_id = message_id
        self.namespace = namespace
        self.branch = branch
        self.readers = readers
        self.reason = reason
        hidden = ", ".join(repr(r) for r in readers) if readers else "readers it does not name"
        super().__init__(
            f"the edit of message {message_id!r} on branch {branch!r} (namespace {namespace!r}) would hide a block "
            f"from {hidden} and was refused: {reason}; nothing removes a block from a summary already written or a "
            "request already sent, so the message is unchanged"
        )


class ManagerClosedError(AsidesError):
    """A call on a manager after ``aclose()`` (or after its runtime closed)."""

    def __init__(self, action: str, namespace: str) -> None:
        super().__init__(f"{action} was refused: the manager of namespace {namespace!r} is closed; open a new one")


class StrategyNotStartedError(AsidesError):
    """A call on a manager whose strategy failed to start; recover with ``set_strategy`` or
    ``switch_branch``."""

    def __init__(self, action: str, namespace: str, branch: str, cause: BaseException | None) -> None:
        self.cause = cause
        super().__init__(
            f"{action} was refused: the strategy of namespace {namespace!r} on branch {branch!r} failed to start "
            f"({cause!r}); call set_strategy() or switch_branch() to recover"
        )


class StrategyInUseError(AsidesError):
    """A strategy object given to a manager while another open manager holds it. Its in-memory
    state would carry one reader's view into another's compiles and memories; give each manager
    its own strategy object (the same object may be reused once its manager closed or moved to
    another strategy). Nothing was written."""

    def __init__(self, *, strategy: object, holder: str) -> None:
        name = getattr(strategy, "name", type(strategy).__name__)
        super().__init__(
            f"strategy object {name!r} ({type(strategy).__name__} at {id(strategy):#x}) is held by {holder}, which is "
            "open; give each manager a strategy object of its own"
        )
        self.holder = holder
