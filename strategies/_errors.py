"""Errors strategies raise. ``actors`` re-exports every one of them."""

from __future__ import annotations

from ..store._errors import ArgumentTypeError, AsidesError, InvalidArgumentError

__all__ = [
    "OverBudgetError",
    "CompressionError",
    "FloorUnavailableError",
    "StrategyCapabilityError",
    "InvalidArgumentError",
    "ArgumentTypeError",
    "ModelError",
    "AnswerRejectedError",
]


class OverBudgetError(AsidesError):
    """A compile that cannot fit its budget without dropping what the strategy must keep.

    ``budget`` and ``needed`` are token estimates; compressing strategies add ``head_tokens``,
    ``middle_tokens``, ``recent_tokens`` and ``pending_chunks``. Nothing was written.
    """

    def __init__(self, message: str, *, budget: int, needed: int, **details: int) -> None:
        super().__init__(message)
        self.budget = budget
        self.needed = needed
        for key, value in details.items():
            setattr(self, key, value)


class CompressionError(AsidesError):
    """A summary that had to be made could not be (no model, or the model would not finish)."""


class FloorUnavailableError(AsidesError):
    """The narrowing floor could not be raised (or read), so no compression read may happen."""


class StrategyCapabilityError(AsidesError):
    """A strategy lacks what the call needs: under a reader, one that does not mark its
    compression reads; or a head-window reset on a strategy without a head window."""


class ModelError(AsidesError):
    """A compression request failed: the model raised, or gave no answer in time. Only that unit
    of work fails; it is retried with back-off."""


class AnswerRejectedError(AsidesError):
    """A model's answer that may not be stored (:func:`~asides.strategies._models.accepted_text`
    says which: a stop reason other than ``end_turn``, no text left, not a ``Completion``, not
    valid Unicode, or too long). Logged at WARNING, counted toward its unit's attempt limit and
    retried with back-off; a unit at its limit has failed for good.

    ``reason`` is the rule that refused it, in words (``stop_reason 'stop' is not 'end_turn'``);
    ``unit_failed`` is true when this rejection brought its unit to the attempt limit."""

    def __init__(self, message: str, *, reason: str | None = None, unit_failed: bool = False) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason
        self.unit_failed = unit_failed
