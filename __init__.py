"""asides: the context of LLM agents that share one durable message log.

Several agents share one log; a content block may name the readers it is for (``audience``), and
each agent's manager compiles only what its reader may see: raw blocks, the summaries written from
them, provenance and logs. ``import asides`` gives everything a host needs; the subpackages
``asides.actors`` (the runtime), ``asides.store`` (content and the durable log) and
``asides.strategies`` (what a compile holds, and the models compression uses) export what the
specification puts in each layer, and ``asides.lowlevel`` the names for strategy authors and
store-level code.

Every public name has one public home, which its ``__module__`` names: ``asides`` for what a host
uses, ``asides.lowlevel``, ``asides.testing``, or an integration's package
(docs/api.md). Modules whose names start with an underscore are not API. A name that still
imports from a place that is not its home (an ``asides.lowlevel`` name from ``asides``, a name
a layer package exported before) warns with an :class:`AsidesDeprecationWarning` naming the home.
"""

from . import lowlevel as lowlevel
from ._deprecate import AsidesDeprecationWarning, deprecate_attributes, moved
from ._public import home_names
from ._version import __version__
from .actors import (
    AnswerRejectedError,
    ArgumentTypeError,
    AsidesError,
    BranchExistsError,
    BranchInfo,
    CompiledContext,
    CompiledMessage,
    CompressionError,
    ContextManager,
    FloorUnavailableError,
    Injection,
    InvalidArgumentError,
    InvalidNameError,
    MalformedContentError,
    ManagerClosedError,
    MessageErasedError,
    MessageInjection,
    ModelError,
    NameTypeError,
    NarrowingRefusedError,
    OverBudgetError,
    Provenance,
    ReaderClaimError,
    ReaderRecordError,
    Runtime,
    SourceEntry,
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
    UnknownMessagesError,
    open_runtime,
)
from .actors._gate import ModelPolicy
from .actors._manager import ContextEntry, Derivation

# Importable from ``asides`` as before, with a warning: their home is asides.lowlevel (``moved``
# below takes them out of this namespace again; type checkers still see them).
from .lowlevel import DescribesPendingWork as DescribesPendingWork
from .lowlevel import FollowsStoredState as FollowsStoredState
from .lowlevel import HasEstimator as HasEstimator
from .lowlevel import HasHeadWindow as HasHeadWindow
from .lowlevel import MessageView as MessageView
from .lowlevel import ReadsSummaries as ReadsSummaries
from .lowlevel import ReportsFailedUnits as ReportsFailedUnits
from .lowlevel import Selection as Selection
from .lowlevel import SelectOptions as SelectOptions
from .lowlevel import ShardsMessages as ShardsMessages
from .lowlevel import SqliteStore as SqliteStore
from .lowlevel import StrategyContext as StrategyContext
from .lowlevel import StrategyState as StrategyState
from .lowlevel import UnreadableBlock as UnreadableBlock
from .lowlevel import block_from_json as block_from_json
from .lowlevel import block_to_json as block_to_json
from .lowlevel import check_content as check_content
from .lowlevel import coerce_content as coerce_content
from .lowlevel import content_from_json as content_from_json
from .lowlevel import content_to_json as content_to_json
from .lowlevel import default_estimate as default_estimate
from .lowlevel import estimate_text as estimate_text
from .lowlevel import has_audience as has_audience
from .lowlevel import open_store as open_store
from .lowlevel import reader_body as reader_body
from .lowlevel import reader_view as reader_view
from .store import (
    ContentBlock,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    content_for_reader,
    text,
    thinking,
    tool_result,
    tool_use,
)
from .store._blocks import Audience, image, redacted_thinking, system_change
from .store._compile_records import CompileParts, CompileRecord
from .store._disclosure import Disclosure
from .store._erasure import Erasure, Tombstone
from .store._message_ids import MessageIds
from .store._pages import MessagePages, ViewChangedError
from .store._search import SearchHit
from .store._views import ViewFilter
from .strategies import (
    AnthropicModel,
    AutobiographicalStrategy,
    Completion,
    CompletionRequest,
    ContextStrategy,
    ExtractiveModel,
    KnowledgeStrategy,
    Model,
    OpenAIModel,
    PassthroughStrategy,
    Summary,
    Usage,
    WindowedPassthroughStrategy,
)
from .strategies._models import completion_text
from .strategies._provider_input import ProviderMessage, from_anthropic, from_openai
from .strategies._recorded import StrategyRecord

__all__ = [
    "AnswerRejectedError",
    "AnthropicModel",
    "ArgumentTypeError",
    "AsidesDeprecationWarning",
    "AsidesError",
    "Audience",
    "AutobiographicalStrategy",
    "BranchExistsError",
    "BranchInfo",
    "CompiledContext",
    "CompiledMessage",
    "Completion",
    "CompletionRequest",
    "CompressionError",
    "ContentBlock",
    "ContextEntry",
    "ContextManager",
    "ContextStrategy",
    "Derivation",
    "ExtractiveModel",
    "FloorUnavailableError",
    "ImageBlock",
    "Injection",
    "InvalidArgumentError",
    "InvalidNameError",
    "NameTypeError",
    "KnowledgeStrategy",
    "MalformedContentError",
    "ManagerClosedError",
    "Message",
    "MessageIds",
    "MessagePages",
    "MessageInjection",
    "Model",
    "ModelError",
    "ModelPolicy",
    "NarrowingRefusedError",
    "OpenAIModel",
    "OverBudgetError",
    "PassthroughStrategy",
    "Provenance",
    "ProviderMessage",
    "ReaderClaimError",
    "ReaderRecordError",
    "RedactedThinkingBlock",
    "Runtime",
    "SearchHit",
    "SourceEntry",
    "StoreCorruptError",
    "StoreFailedError",
    "StoreLockedError",
    "StoreNotEmptyError",
    "StoreReadOnlyError",
    "StrategyCapabilityError",
    "StrategyInUseError",
    "StrategyNotStartedError",
    "StrategyRecord",
    "Summary",
    "SystemChangeBlock",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "UnknownBranchError",
    "UnknownMessageError",
    "ViewChangedError",
    "Usage",
    "ViewFilter",
    "WindowedPassthroughStrategy",
    "__version__",
    "completion_text",
    "content_for_reader",
    "from_anthropic",
    "from_openai",
    "image",
    "open_runtime",
    "redacted_thinking",
    "system_change",
    "text",
    "thinking",
    "tool_result",
    "tool_use",
    # privacy
    "CompileParts",
    "CompileRecord",
    "Disclosure",
    "Erasure",
    "MessageErasedError",
    "Tombstone",
    "UnknownMessagesError",
]

home_names(__name__, __all__, globals())

# The asides.lowlevel names imported above as themselves, for old code: given with a warning.
deprecate_attributes(__name__, moved(globals(), "asides.lowlevel", "0.2.0", [n for n in lowlevel.__all__ if n in globals()]))
