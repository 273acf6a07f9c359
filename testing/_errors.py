"""The errors ``asides.testing`` raises."""

from __future__ import annotations

from ..store._errors import ArgumentTypeError, AsidesError

__all__ = ["AnswerTypeError", "HarnessError", "ScriptExhaustedError", "NothingHeldError", "LeaksFound"]


class HarnessError(AsidesError, ValueError):
    """A test double or the leak check was given something it cannot use (a bad schedule, a
    marker that is not a string, a model whose requests cannot be told apart). Nothing was
    recorded or changed."""


class AnswerTypeError(HarnessError, ArgumentTypeError):
    """A test model was given what is not an answer: a list of answers where they go one by one
    (``ScriptedModel(["a", "b"])`` for ``ScriptedModel("a", "b")``), a number, ... It is a
    :class:`HarnessError` and an :class:`~asides.ArgumentTypeError` (so a ``TypeError``);
    ``path`` names the answer (``ScriptedModel 'scripted', answer 2``). Nothing was queued."""


class ScriptExhaustedError(AsidesError, LookupError):
    """A :class:`~asides.testing.ScriptedModel` was asked for more answers than it was given.

    ``number`` is the request's number (1 for the first the model received), ``request`` the
    request itself. The message names both, so a test that scripted too few answers says which
    request found the queue empty.
    """

    def __init__(self, model: str, number: int, request: object, detail: str) -> None:
        self.model = model
        self.number = number
        self.request = request
        super().__init__(
            f"ScriptedModel {model!r} ran dry: request #{number} found no answer queued ({detail}); "
            "queue more answers with add(), or give respond= to answer from the request"
        )


class NothingHeldError(AsidesError, LookupError):
    """``GatedModel.release()`` was called while no request was held."""


class LeaksFound(AssertionError):
    """:meth:`~asides.testing.LeakCheck.assert_no_leaks` found markers where they do not belong.

    ``leaks`` holds each hit; the message lists them one a line.
    """

    def __init__(self, leaks: tuple[object, ...]) -> None:
        self.leaks = leaks
        lines = "\n".join(f"  {leak}" for leak in leaks)
        super().__init__(f"{len(leaks)} leak(s): a marker reached a reader it is not for\n{lines}")
