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
    """A model's answer that may not be stored (not a ``Completion``, empty, not valid Unicode, or
    too long). Counted like an unfinished answer, logged, and retried with back-off."""
