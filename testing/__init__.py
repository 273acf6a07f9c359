"""asides.testing: what a test of a multi-agent host needs, under Trio or asyncio.

- Test models, each with ``requests``, the record of every request it received:
  :class:`ScriptedModel` answers from a queue or from a function of the request;
  :class:`GatedModel` holds each request until the test releases it, so a test decides what
  happens while a request is out; :class:`FailingModel` fails on a schedule, or hangs until
  cancelled; :class:`RecordingModel` records what another model is asked.
- :class:`LeakCheck` searches everything a reader was given (compiles, previews, memories,
  provenance, context-log entries, model requests) for markers meant for other readers, and
  reports each hit with where it was found.
- :func:`open_test_runtime` opens a runtime on a temporary store; under a Trio ``MockClock``
  its back-off and timeouts take no real time.
- A pytest plugin, ``asides.testing.pytest_plugin``, with the fixtures ``asides_store_path``,
  ``asides_runtime`` and ``scripted_model``. It is active only when a project asks for it (see
  ``docs/testing.md``).
"""

from .._public import home_names
from ._answers import Answer, Respond
from ._errors import AnswerTypeError, HarnessError, LeaksFound, NothingHeldError, ScriptExhaustedError
from ._failing import FailingModel
from ._gated import GatedModel
from ._leaks import Leak, LeakCheck
from ._runtime import open_test_runtime
from ._scripted import RecordingModel, ScriptedModel

__all__ = [
    "Answer",
    "AnswerTypeError",
    "FailingModel",
    "GatedModel",
    "HarnessError",
    "Leak",
    "LeakCheck",
    "LeaksFound",
    "NothingHeldError",
    "RecordingModel",
    "Respond",
    "ScriptExhaustedError",
    "ScriptedModel",
    "open_test_runtime",
]

home_names(__name__, __all__, globals())
