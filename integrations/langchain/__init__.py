"""asides for LangChain v1 agents (``pip install 'asides[langchain]'``).

:class:`AsidesMiddleware` is an ``AgentMiddleware`` for ``langchain.agents.create_agent``: the
agent becomes a reader of the runtime's shared log. Each model call writes what the log does not
hold yet of the agent's state and sends the model the agent's compile for its reader, its own
turns and memories as ``AIMessage`` s, other speakers' lines as ``HumanMessage`` s naming them.
The agent's tool calls and results are private to it by default; its answers are public. See
``docs/langchain.md``. :class:`ScriptedChatModel` is an offline chat model for examples and tests.
"""

try:
    import langchain.agents  # noqa: F401
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"asides.integrations.langchain needs LangChain v1: pip install 'asides[langchain]' ({exc})") from exc

from ..._public import home_names
from .. import ReservedReaderError  # noqa: F401  (importable here too; its home is asides.integrations)
from ._middleware import AsidesMiddleware, LoopError
from ._scripted import ScriptedChatModel

__all__ = ["AsidesMiddleware", "LoopError", "ScriptedChatModel"]

home_names(__name__, __all__, globals())
