"""asides for Pydantic AI agents (``pip install 'asides[pydantic-ai]'``).

:class:`AsidesHistory` is a capability (``Agent(model, capabilities=[AsidesHistory(...)])``):
the agent becomes a reader of the runtime's shared log. Before each model request the run's new
messages go to the log, and the model gets the agent's compile for its reader as its message
history: its own turns and memories as responses, other speakers' lines as requests naming them.
The agent's tool calls and results are private to it by default; its answers are public. See
``docs/pydantic-ai.md``.
"""

try:
    import pydantic_ai.capabilities  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"asides.integrations.pydantic_ai needs Pydantic AI: pip install 'asides[pydantic-ai]' ({exc})") from exc

from ..._public import home_names
from .. import ReservedReaderError  # noqa: F401  (importable here too; its home is asides.integrations)
from ._history import AsidesHistory, LoopError

__all__ = ["AsidesHistory", "LoopError"]

home_names(__name__, __all__, globals())
