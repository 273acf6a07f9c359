"""Where agents live: asides plugged into the agent frameworks hosts already use.

* :mod:`asides.integrations.openai_agents`: :class:`~asides.integrations.openai_agents.AsidesSession`,
  a session for the OpenAI Agents SDK (``pip install 'asides[openai-agents]'``).
* :mod:`asides.integrations.langchain`: :class:`~asides.integrations.langchain.AsidesMiddleware`,
  an ``AgentMiddleware`` for LangChain v1's ``create_agent`` (``pip install 'asides[langchain]'``).
* :mod:`asides.integrations.pydantic_ai`: :class:`~asides.integrations.pydantic_ai.AsidesHistory`,
  a capability for Pydantic AI agents (``pip install 'asides[pydantic-ai]'``).

The LangChain and Pydantic AI integrations share one way to turn framework messages into asides
messages and a compile back (``integrations/_shared.py``, ``integrations/_log_agent.py``) and
the way into the runtime's event loop from another thread (``integrations/_loop.py``).

Each integration imports its framework only when it is imported itself, so ``import asides``
never needs one.

Every integration keeps the same rules, decided in one place (``integrations/_rules.py``):
a reader named like a role every agent shares is refused when the integration object is made
(:class:`ReservedReaderError`, the one name this package exports: each integration's package
exports it too); ``private_tool_calls`` (default ``True``) keeps an agent's tool calls and their
results for its reader alone; what an agent gets back of its own lines comes from what its reader
may see now (a host's redaction wins over any copy the integration kept); a batch of writes is
checked whole first and never left half done by a cancelled caller.
"""

from .._public import home_names
from ._rules import ReservedReaderError

__all__ = ["ReservedReaderError"]

home_names(__name__, __all__, globals())
