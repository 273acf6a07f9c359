"""asides's runtime: ``open_runtime``, namespace actors, ``ContextManager``, drains and the CLI.

Exports what the specification's section 3 puts here: the runtime and its managers, compiles
and their provenance, injections, ``BranchInfo``, and every error class. The other names it
exported before still import from here, with an ``AsidesDeprecationWarning`` naming their one
public home (docs/api.md, "Deprecated names"): they are the names imported ``as`` themselves,
which ``moved`` takes out of this namespace again (type checkers still see them).
"""

from .._deprecate import deprecate_attributes, moved
from ..store._disclosure import Disclosure as Disclosure
from ..store._erasure import Erasure as Erasure
from ..store._erasure import MessageErasedError, UnknownMessagesError
from ..store._erasure import Tombstone as Tombstone
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
from ._gate import ModelPolicy as ModelPolicy
from ._manager import ContextEntry as ContextEntry
from ._manager import ContextManager
from ._manager import Derivation as Derivation
from ._runtime import Runtime, open_runtime

__all__ = [
    "StrategyInUseError",
    "ModelError",
    "AnswerRejectedError",
    "ArgumentTypeError",
    "BranchExistsError",
    "BranchInfo",
    "CompiledContext",
    "CompiledMessage",
    "CompressionError",
    "ContextManager",
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
    "MessageErasedError",
    "UnknownMessagesError",
]

deprecate_attributes(
    __name__, moved(globals(), "asides", "0.2.0", ["ContextEntry", "Derivation", "Disclosure", "Erasure", "ModelPolicy", "Tombstone"])
)
