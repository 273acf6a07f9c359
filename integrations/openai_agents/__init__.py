"""asides as a session of the OpenAI Agents SDK (``pip install 'asides[openai-agents]'``).

:class:`AsidesSession` implements the SDK's ``Session`` protocol, so it plugs into
``Runner.run(agent, input, session=...)`` where ``SQLiteSession`` would, and adds what the SDK's
sessions cannot express: several agents on one conversation, each with its own reader, private
items (``add_items(items, audience=[...])``) and memories written in the agent's own voice. See
``docs/openai-agents.md`` for how conversations, agents and removals are stored.
:class:`ScriptedAgentModel` is an offline SDK model for examples and tests.
"""

from ..._public import home_names
from .. import ReservedReaderError  # noqa: F401  (importable here too; its home is asides.integrations)
from ._errors import AsyncioRequiredError, ConversationMismatchError
from ._loop import SessionClosedError
from ._scripted import ScriptedAgentModel
from ._session import AsidesSession

__all__ = [
    "AsidesSession",
    "AsyncioRequiredError",
    "ConversationMismatchError",
    "ScriptedAgentModel",
    "SessionClosedError",
]

home_names(__name__, __all__, globals())
