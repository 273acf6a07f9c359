"""asides's strategies: what of the history a compile holds, and the models they compress with.

Exports what the specification's section 3 puts here: the strategy protocol, its context and
selection, the bundled strategies, summaries, the model protocol with its request and answer
shapes and the bundled models, injections, and the errors a strategy raises. The other names it
exported before still import from here, with an ``AsidesDeprecationWarning`` naming their one
public home (docs/api.md, "Deprecated names"): they are the names imported ``as`` themselves,
which ``moved`` takes out of this namespace again (type checkers still see them).
"""

from .._deprecate import deprecate_attributes, moved
from ._adapters import AnthropicModel, OpenAIModel
from ._autobiographical import AutobiographicalStrategy
from ._base import (
    CompiledMessage,
    ContextStrategy,
    Injection,
    MessageInjection,
    Selection,
    StrategyContext,
)
from ._base import SelectOptions as SelectOptions
from ._base import SourceEntry as SourceEntry
from ._base import StrategyState as StrategyState
from ._capabilities import DescribesPendingWork as DescribesPendingWork
from ._capabilities import FollowsStoredState as FollowsStoredState
from ._capabilities import HasEstimator as HasEstimator
from ._capabilities import HasHeadWindow as HasHeadWindow
from ._capabilities import ReadsSummaries as ReadsSummaries
from ._capabilities import ReportsFailedUnits as ReportsFailedUnits
from ._capabilities import ShardsMessages as ShardsMessages
from ._capabilities import Summary
from ._errors import ArgumentTypeError as ArgumentTypeError
from ._errors import CompressionError as CompressionError
from ._errors import FloorUnavailableError, OverBudgetError
from ._errors import InvalidArgumentError as InvalidArgumentError
from ._errors import StrategyCapabilityError as StrategyCapabilityError
from ._knowledge import KnowledgeStrategy
from ._models import Completion, CompletionRequest, ExtractiveModel, Model, Usage
from ._models import completion_text as completion_text
from ._passthrough import PassthroughStrategy
from ._provider_input import ProviderMessage as ProviderMessage
from ._provider_input import from_anthropic as from_anthropic
from ._provider_input import from_openai as from_openai
from ._recorded import StrategyRecord as StrategyRecord
from ._tokens import default_estimate as default_estimate
from ._tokens import estimate_text as estimate_text
from ._windowed import WindowedPassthroughStrategy

__all__ = [
    "AnthropicModel",
    "AutobiographicalStrategy",
    "CompiledMessage",
    "Completion",
    "CompletionRequest",
    "ContextStrategy",
    "FloorUnavailableError",
    "Injection",
    "MessageInjection",
    "Model",
    "OpenAIModel",
    "OverBudgetError",
    "PassthroughStrategy",
    "Selection",
    "StrategyContext",
    "Usage",
    "WindowedPassthroughStrategy",
    "ExtractiveModel",
    "KnowledgeStrategy",
    "Summary",
]

deprecate_attributes(
    __name__,
    {
        **moved(
            globals(),
            "asides",
            "0.2.0",
            [
                "ArgumentTypeError",
                "CompressionError",
                "InvalidArgumentError",
                "ProviderMessage",
                "SourceEntry",
                "StrategyCapabilityError",
                "StrategyRecord",
                "completion_text",
                "from_anthropic",
                "from_openai",
            ],
        ),
        **moved(
            globals(),
            "asides.lowlevel",
            "0.2.0",
            [
                "DescribesPendingWork",
                "FollowsStoredState",
                "HasEstimator",
                "HasHeadWindow",
                "ReadsSummaries",
                "ReportsFailedUnits",
                "SelectOptions",
                "ShardsMessages",
                "StrategyState",
                "default_estimate",
                "estimate_text",
            ],
        ),
    },
)
