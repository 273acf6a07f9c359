"""asides's runtime: ``open_runtime``, namespace actors, ``ContextManager``, drains and the CLI."""

from ..store._disclosure import Disclosure
from ..store._erasure import Erasure, MessageErasedError, Tombstone, UnknownMessagesError
from ..store._model import BranchInfo
from ..strategies._base import CompiledMessage, Injection, MessageInjection, SourceEntry
from ..strategies._errors import AnswerRejectedError, ModelError
from ._compiled import CompiledContext, Provenance
from ._errors import (
    ArgumentTypeError,
    AsidesError,
    BranchExistsError,
    CompressionError,
    FloorUnavailableError,
    InvalidArgumentError,
    InvalidNameError,
    MalformedContentError,
    ManagerClosedError,
    NameTypeError,
    NarrowingRefusedError,
    OverBudgetError,
    ReaderClaimError,
    ReaderRecordError,
    StoreCorruptError,
    StoreFailedError,
    StoreLockedError,
    StoreNotEmptyError,
    StoreReadOnlyError,
    StrategyCapabilityError,
    StrategyInUseError,
    StrategyNotStartedError,
    UnknownBranchError,
    UnknownMessageError,
)
from ._gate import ModelPolicy
from ._manager import ContextEntry, ContextManager, Derivation
from ._runtime import Runtime, open_runtime

__all__ = [
    "ModelPolicy",
    "StrategyInUseError",
    "ModelError",
    "AnswerRejectedError",
    "ArgumentTypeError",
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
    "InvalidArgumentError",
    "InvalidNameError",
    "NameTypeError",
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
    "StoreCorruptError",
    "StoreFailedError",
    "StoreLockedError",
    "StoreNotEmptyError",
    "StoreReadOnlyError",
    "StrategyCapabilityError",
    "StrategyNotStartedError",
    "AsidesError",
    "UnknownBranchError",
    "UnknownMessageError",
    "open_runtime",
    # privacy (issue 23)
    "Disclosure",
    "Erasure",
    "MessageErasedError",
    "Tombstone",
    "UnknownMessagesError",
]
