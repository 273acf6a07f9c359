"""asides for Google ADK (``pip install 'asides[adk]'``).

:class:`AsidesSessionService` is ADK's ``BaseSessionService`` over an asides store: each session
a branch of the shared log, each event a line said by its author, ``app:``, ``user:`` and
session state kept as ADK keeps them. ``service.plugin()`` (:class:`AsidesPlugin`) gives each
agent's model its own reader's view; :class:`AsidesMemoryService` answers ``search_memory`` for
the agent that asks. See ``docs/adk.md``. :class:`ScriptedAdkModel` is an offline ADK model for
examples and tests.
"""

try:
    import google.adk  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"asides.integrations.adk needs Google ADK: pip install 'asides[adk]' ({exc})") from exc

from ..._public import home_names
from .. import ReservedReaderError  # noqa: F401  (importable here too; its home is asides.integrations)
from ._memory import AsidesMemoryService, UnknownAgentError
from ._plugin import AsidesPlugin
from ._scripted import ScriptedAdkModel
from ._service import AsidesSessionService, ServiceClosedError

__all__ = [
    "AsidesMemoryService",
    "AsidesPlugin",
    "AsidesSessionService",
    "ScriptedAdkModel",
    "ServiceClosedError",
    "UnknownAgentError",
]

home_names(__name__, __all__, globals())
