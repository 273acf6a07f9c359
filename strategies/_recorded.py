"""The record of the strategy a namespace runs, for readers of a store without its host.

Where it is kept: an open, ``set_strategy`` and a move to another branch write a strategy note
for the namespace on the manager's branch (store/_notes.py), in the same turn of the namespace
actor as the open's claim, when :func:`record_to_write` says so: when the record in force differs
from the manager's strategy, except that a namespace with no record that opens the default
``PassthroughStrategy()`` writes none (readers infer passthrough where nothing is recorded, so
the record would say nothing new). A note takes no sequence of its branch, so an open that claims
nothing writes nothing any branch's sequence counts, and a reader's open writes exactly its claim
there (SPEC 3.3, and the seed: a host that sets no reader sees the sequence numbers it would
without asides' records). Stores written by earlier versions hold the record as the state record
``<namespace>/strategy``; it is still read, and the newer of the two is in force. ``derive`` puts the child's
strategy in the branch it makes (its ``meta``, beside the derivation), writing nothing more. A
read-only runtime writes nothing. :func:`recorded_strategy` is the one rule for which record is
in force (docs/cli.md, "Which strategy a preview uses").

Its value is::

    {"name": "autobiographical", "options": {"recent_window_tokens": 30000, ...}}

``name`` is the strategy's ``name`` (its class name when it has none); ``options`` are what its
``recorded_options()`` returns, when it has that method (every built-in strategy does: the JSON
values of its constructor options, with ``"estimator": "custom"`` for an estimator of its own,
which cannot be recorded), else ``null``. Stores written before this record had options hold the
name alone, as a string; :func:`read_strategy_record` reads both.

It is informative only: a manager always runs the strategy object it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..store._model import MISSING
from ._base import STRATEGY_KEY

if TYPE_CHECKING:
    from ..store._model import LogModel

__all__ = ["CUSTOM_ESTIMATOR", "StrategyRecord", "read_strategy_record", "record_to_write", "recorded_strategy", "strategy_record"]

#: The recorded value of the ``estimator`` option when a strategy counts with one of its own.
CUSTOM_ESTIMATOR = "custom"


@attrs.frozen
class StrategyRecord:
    """A namespace's strategy as recorded: its name, and its options (``None`` when the record
    holds the name alone: an older store, or a strategy with no ``recorded_options``)."""

    name: str
    options: Mapping[str, Any] | None = None


def strategy_record(strategy: object) -> dict[str, Any]:
    """The record's value for ``strategy`` (see the module docstring)."""
    name = getattr(strategy, "name", None)
    if not isinstance(name, str) or not name:
        name = type(strategy).__name__
    describe = getattr(strategy, "recorded_options", None)
    options = describe() if callable(describe) else None
    return {"name": name, "options": dict(options) if isinstance(options, Mapping) else None}


def recorded_strategy(model: LogModel, branch: str, namespace: str) -> Any:
    """The strategy record in force for ``namespace`` on ``branch`` (a raw value, as stored, or
    ``MISSING``): walking up from ``branch`` through the branches it was made from, the newest
    of what each branch recorded after it was made (a strategy note, or an earlier version's
    ``strategy`` state record) as ``branch`` sees it, else the strategy a ``derive`` of that
    namespace recorded in the branch it made."""
    key = f"{namespace}/{STRATEGY_KEY}"
    name: str | None = branch
    limit: float = float("inf")
    before: float = float("inf")  # a note of an ancestor counts when written before the fork
    while name is not None:
        info = model.branch_info(name)
        sequence = model.state_sequence_at(name, key, limit)
        fork = info.fork_sequence if info.parent is not None else -1
        noted = model.strategy_note_at(name, namespace, limit, before)  # the branch's own, always after it was made
        if sequence is not None and sequence > fork and (noted is None or noted[0] < sequence):
            return model.get_state_at(name, key, sequence)  # a state record, written on this branch after it was made
        if noted is not None:
            return noted[1]
        meta = model.branch_meta(name)
        derivation = meta.get("derivation")
        if isinstance(derivation, dict) and derivation.get("namespace") == namespace and STRATEGY_KEY in meta:
            return meta[STRATEGY_KEY]
        name, limit, before = info.parent, fork, model.branch_record_id(info.name)
    return MISSING


def record_to_write(model: LogModel, branch: str, namespace: str, strategy: object) -> dict[str, Any] | None:
    """The strategy record a manager running ``strategy`` on ``branch`` writes for ``namespace``
    (see the module docstring), or ``None`` when it writes none."""
    record = strategy_record(strategy)
    in_force = recorded_strategy(model, branch, namespace)
    if in_force == record:
        return None
    if in_force is MISSING and record == _default_record():
        return None
    return record


def _default_record() -> dict[str, Any]:
    from ._passthrough import PassthroughStrategy

    return strategy_record(PassthroughStrategy())


def read_strategy_record(value: object) -> StrategyRecord | None:
    """The record ``value`` holds, or ``None`` when it is not a strategy record (a name, or an
    object with a non-empty ``name`` and ``options`` that are an object or ``null``)."""
    if isinstance(value, str):
        return StrategyRecord(value) if value else None
    if not isinstance(value, dict):
        return None
    name, options = value.get("name"), value.get("options")
    if not isinstance(name, str) or not name or not (options is None or isinstance(options, dict)):
        return None
    return StrategyRecord(name, options)
