"""troupe's runtime: ``open_runtime``, namespace actors, ``ContextManager``, drains and the CLI."""

from strategies.base import CompiledMessage, Injection, MessageInjection, SourceEntry

from .compiled import CompiledContext, Provenance
from .errors import (
    BranchExistsError,
    CompressionError,
    FloorUnavailableError,
    MalformedContentError,
    ManagerClosedError,
    NarrowingRefusedError,
    OverBudgetError,
    ReaderClaimError,
    ReaderRecordError,
    StoreFailedError,
    StoreLockedError,
    StrategyCapabilityError,
    StrategyNotStartedError,
    TroupeError,
    UnknownBranchError,
    UnknownMessageError,
)
from .manager import ContextEntry, ContextManager, Derivation
from .runtime import Runtime, open_runtime
from store.model import BranchInfo

__all__ = [
    "BranchExistsError",
    "BranchInfo",
    "CompiledContext",
    "CompiledMessage",
    "CompressionError",
    "ContextEntry",
    "ContextManager",
    "Derivation",
    "FloorUnavailableError",
    "Injection",
    "MalformedContentError",
    "ManagerClosedError",
    "MessageInjection",
    "NarrowingRefusedError",
    "OverBudgetError",
    "Provenance",
    "ReaderClaimError",
    "ReaderRecordError",
    "Runtime",
    "SourceEntry",
    "StoreFailedError",
    "StoreLockedError",
    "StrategyCapabilityError",
    "StrategyNotStartedError",
    "TroupeError",
    "UnknownBranchError",
    "UnknownMessageError",
    "open_runtime",
]
