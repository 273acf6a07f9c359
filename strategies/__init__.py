"""troupe's strategies: what of the history a compile holds, and the models they compress with."""

from .base import (
    CompiledMessage,
    ContextStrategy,
    Injection,
    MessageInjection,
    SelectOptions,
    Selection,
    SourceEntry,
    StrategyContext,
    StrategyState,
)
from .errors import CompressionError, FloorUnavailableError, OverBudgetError, StrategyCapabilityError
from .models import Completion, CompletionRequest, Model, Usage
from .autobiographical import AutobiographicalStrategy, Summary
from .knowledge import KnowledgeStrategy
from .adapters import AnthropicModel, OpenAIModel
from .models import ExtractiveModel, completion_text
from .passthrough import PassthroughStrategy
from .tokens import default_estimate, estimate_text
from .windowed import WindowedPassthroughStrategy

__all__ = [
    "AnthropicModel",
    "AutobiographicalStrategy",
    "CompiledMessage",
    "Completion",
    "CompletionRequest",
    "CompressionError",
    "ContextStrategy",
    "FloorUnavailableError",
    "Injection",
    "MessageInjection",
    "Model",
    "OpenAIModel",
    "OverBudgetError",
    "PassthroughStrategy",
    "SelectOptions",
    "Selection",
    "SourceEntry",
    "StrategyCapabilityError",
    "StrategyContext",
    "StrategyState",
    "Usage",
    "WindowedPassthroughStrategy",
    "ExtractiveModel",
    "KnowledgeStrategy",
    "Summary",
    "completion_text",
    "default_estimate",
    "estimate_text",
]
