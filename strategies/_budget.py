"""The one place that words a compile's refusal to fit its budget (``OverBudgetError``).

The budget a strategy is handed is ``max_tokens`` less ``reserve_for_response`` less what the
compile's injections cost (never below 0). The text says where the budget went when a reserve or
injections took part, names the reserve when the reserve alone leaves no room, and offers only
remedies that can work.
"""

from __future__ import annotations

from ._base import SelectOptions
from ._errors import OverBudgetError

__all__ = ["over_budget", "words_or"]


def words_or(items: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def _room(options: SelectOptions) -> int:
    return options.max_tokens - options.reserve_for_response


def _budget_sources(budget: int, options: SelectOptions) -> str | None:
    """How the budget came about, when a reserve or injections took part; ``None`` when the
    budget is not derived from these options (a strategy called directly with its own)."""
    room = _room(options)
    if budget > max(0, room):
        return None
    injected = room - budget
    if options.reserve_for_response == 0 and injected == 0:
        return None
    words = f"max_tokens {options.max_tokens} less reserve_for_response {options.reserve_for_response}"
    if injected > 0:
        words += f" and {'at least ' if budget == 0 else ''}{injected} for injections"
    return words


def over_budget(
    what: str,
    *,
    needed: int,
    budget: int,
    options: SelectOptions,
    remedies: list[str],
    details: str | None = None,
    needed_for: str = "",
    **fields: int,
) -> OverBudgetError:
    """The error for a compile (``what``: ``compile for <namespace> on <branch>``) that needs
    ``needed`` tokens against ``budget``. ``remedies`` are the strategy's own ways out, most
    useful first; ``details`` what the strategy says of where the tokens went; ``fields`` extra
    attributes for the error."""
    needs = f"{what} needs {needed} tokens{needed_for}"
    if budget <= 0 and options.max_tokens <= options.reserve_for_response:
        message = (
            f"{needs} but the budget is 0: reserve_for_response ({options.reserve_for_response}) takes all of "
            f"max_tokens ({options.max_tokens}), so nothing is left for the context: lower reserve_for_response "
            "or raise max_tokens."
        )
        return OverBudgetError(message, budget=budget, needed=needed, **fields)
    inside = "; ".join(part for part in (_budget_sources(budget, options), details) if part)
    ways = list(remedies)
    sources = _budget_sources(budget, options)
    if sources is not None and options.reserve_for_response > 0 and needed <= budget + options.reserve_for_response:
        ways.insert(0, "lower reserve_for_response")  # the reserve alone is what does not fit
    message = f"{needs} but the budget is {budget}{f' ({inside})' if inside else ''}: {words_or(ways)}."
    return OverBudgetError(message, budget=budget, needed=needed, **fields)
