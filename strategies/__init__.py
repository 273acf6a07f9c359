"""asides's strategies: what of the history a compile holds, and the models they compress with."""

from ._adapters import AnthropicModel, OpenAIModel
from ._autobiographical import AutobiographicalStrategy
from ._base import (
    CompiledMessage,
    ContextStrategy,
    Injection,
    MessageInjection,
    Selection,
    SelectOptions,
    SourceEntry,
    StrategyContext,
    StrategyState,
)
from ._capabilities import (
    DescribesPendingWork,
    FollowsStoredState,
    HasEstimator,
    HasHeadWindow,
    ReadsSummaries,
    ReportsFailedUnits,
    ShardsMessages,
    Summary,
)
from ._errors import (
    ArgumentTypeError,
    CompressionError,
    FloorUnavailableError,
    InvalidArgumentError,
    OverBudgetError,
    StrategyCapabilityError,
)
from ._knowledge import KnowledgeStrategy
from ._models import Completion, CompletionRequest, ExtractiveModel, Model, Usage, completion_text
from ._passthrough import PassthroughStrategy
from ._provider_input import ProviderMessage, from_anthropic, from_openai
from ._recorded import StrategyRecord
from ._tokens import default_estimate, estimate_text
from ._windowed import WindowedPassthroughStrategy

__all__ = [
    "AnthropicModel",
    "ArgumentTypeError",
    "AutobiographicalStrategy",
    "CompiledMessage",
    "Completion",
    "CompletionRequest",
    "CompressionError",
    "ContextStrategy",
    "DescribesPendingWork",
    "FloorUnavailableError",
    "FollowsStoredState",
    "ReportsFailedUnits",
    "HasEstimator",
    "HasHeadWindow",
    "Injection",
    "InvalidArgumentError",
    "MessageInjection",
    "Model",
    "OpenAIModel",
    "OverBudgetError",
    "PassthroughStrategy",
    "ProviderMessage",
    "ReadsSummaries",
    "SelectOptions",
    "Selection",
    "ShardsMessages",
    "SourceEntry",
    "StrategyCapabilityError",
    "StrategyContext",
    "StrategyRecord",
    "StrategyState",
    "Usage",
    "WindowedPassthroughStrategy",
    "ExtractiveModel",
    "KnowledgeStrategy",
    "Summary",
    "completion_text",
    "default_estimate",
    "estimate_text",
    "from_anthropic",
    "from_openai",
]
