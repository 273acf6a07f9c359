"""A namespace's own records, which the actors layer owns: how their keys are spelled, the one
rule that keeps them apart from every strategy's records, and how the reader record is read
(pure logic).

Every state key of a namespace is ``<namespace>/<tail>``. A namespace may hold ``/``
(``agents/ann``) and so may a strategy's own key (``autobiographical/chunk/12``), so where the
namespace ends cannot be told from a key. What can always be told is whether a key is a
namespace's *own* record, by its ending alone (:func:`own_record`):

* ``<namespace>/reader``, ``/narrowing-floor``, ``/strategy``, ``/compression-lease``
  (:data:`NAMESPACE_KEYS`), for any non-empty namespace;
* ``<namespace>/context/<n>``: entry ``n`` of its context log, ``n`` a context index
  (:func:`context_index`): ASCII decimal digits in their canonical form (``0``, ``17``; not
  ``017``, not ``²`` or ``٣``, which ``str.isdigit`` accepts).

The rule: a strategy's key, joined to its namespace, must never be a namespace's own record,
whichever way the namespace and the key are cut (``agents/context`` + ``5`` is entry 5 of
``agents``; ``a`` + ``/reader`` is the reader of ``a/``). :func:`strategy_state_key` is the one
place a strategy's key is joined to its namespace, and it refuses such a key. Every reader of a
namespace's own records asks :func:`own_record` or :func:`context_index`; a key ending like a
context entry but with another index (``context/²``, ``context/07``) is no entry of anyone's,
read fail-closed: skipped and reported by the reader that finds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, TypeGuard

from ..store._errors import InvalidArgumentError
from ..store._key_numbers import key_number
from ..store._model import MISSING, count_context_copies_by
from ..strategies._base import STRATEGY_KEY

if TYPE_CHECKING:
    from ..store._model import LogModel

__all__ = [
    "CONTEXT",
    "is_context_key",
    "FLOOR_KEY",
    "LEASE_KEY",
    "NAMESPACE_KEYS",
    "READER_KEY",
    "STRATEGY_KEY",
    "context_index",
    "context_key",
    "NAMESPACE_RECORDS",
    "NamespaceRecords",
    "context_prefix",
    "is_floor_record",
    "is_reader_record",
    "namespace_key",
    "own_record",
    "reader_keys",
    "reader_of",
    "strategy_state_key",
]

READER_KEY: Final = "reader"  # the reader the namespace is claimed for
FLOOR_KEY: Final = "narrowing-floor"  # the newest sequence compression may have read
LEASE_KEY: Final = "compression-lease"  # reserved: the lease record of earlier versions (now a session lock), ignored
#: The one-segment tails of a namespace's own records.
NAMESPACE_KEYS: Final = (READER_KEY, FLOOR_KEY, STRATEGY_KEY, LEASE_KEY)
#: The segment before a context entry's index.
CONTEXT: Final = "context"


def namespace_key(namespace: str, tail: str) -> str:
    """The key of ``namespace``'s own record ``tail`` (one of :data:`NAMESPACE_KEYS`)."""
    return f"{namespace}/{tail}"


def context_prefix(namespace: str) -> str:
    """What every context-log key of ``namespace`` starts with."""
    return f"{namespace}/{CONTEXT}/"


def is_context_key(key: str) -> bool:
    """Whether ``key`` is an entry of some namespace's context log."""
    parts = key.rsplit("/", 2)
    return len(parts) == 3 and parts[1] == CONTEXT and parts[2].isdigit()


count_context_copies_by(is_context_key)  # an erasure's receipt counts the copies it removes


def context_key(namespace: str, index: int) -> str:
    """The key of entry ``index`` of ``namespace``'s context log."""
    return f"{context_prefix(namespace)}{index:d}"


def context_index(text: str) -> int | None:
    """``text`` as a context index when it is one (:func:`key_number`), else ``None``."""
    return key_number(text)


def own_record(key: str) -> tuple[str, str] | None:
    """``(namespace, tail)`` when ``key`` is a namespace's own record (a tail of
    :data:`NAMESPACE_KEYS`, or ``context/<n>``), else ``None``."""
    namespace, _, last = key.rpartition("/")
    if not namespace:
        return None
    if last in NAMESPACE_KEYS:
        return namespace, last
    if context_index(last) is not None:
        owner, _, segment = namespace.rpartition("/")
        if segment == CONTEXT and owner:
            return owner, f"{CONTEXT}/{last}"
    return None


def strategy_state_key(namespace: str, key: object) -> str:
    """The full key of a strategy's record ``key`` in ``namespace``. Refuses, with
    :class:`InvalidArgumentError` at ``key`` (a ``ValueError``), a key that is not a non-empty
    string and one whose full key would be a namespace's own record, of this namespace or any
    other."""
    if not isinstance(key, str) or not key:
        raise InvalidArgumentError("key", f"a state key must be a non-empty string, not {key!r}")
    full = f"{namespace}/{key}"
    found = own_record(full)
    if found is not None:
        owner, tail = found
        raise InvalidArgumentError(
            "key",
            f"the state key {key!r} of namespace {namespace!r} spells {tail!r} of namespace {owner!r}, one of a namespace's own "
            f"records ({', '.join(NAMESPACE_KEYS)}, {CONTEXT}/<n>); choose another",
        )
    return full


def reader_keys(model: LogModel, branch: str) -> list[tuple[str, object]]:
    """``(namespace, record)`` for every namespace with a reader record visible on ``branch``,
    sorted by namespace (the record as stored: a reader's name, or anything else)."""
    tail = f"/{READER_KEY}"
    return [(key[: -len(tail)], model.get_state(branch, key)) for key in model.state_keys_ending(branch, tail)]


def is_reader_record(value: object) -> TypeGuard[str]:
    """The rule for a namespace's reader record: a reader's name is a non-empty string; anything
    else stored there is unreadable, and read fail-closed by everyone who reads it."""
    return isinstance(value, str) and bool(value)


def is_floor_record(value: object) -> bool:
    """The rule for a namespace's narrowing floor: a non-negative integer (not a bool); anything
    else stored there is unreadable, and no compression read may be recorded past it."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def reader_of(model: LogModel, branch: str, namespace: str) -> tuple[bool, str | None]:
    """``(readable, reader)``: the reader ``namespace`` records on ``branch`` (``None`` when it
    records none); ``readable`` is false for a record that is not a reader's name, which every
    caller reads fail-closed."""
    record = model.get_state(branch, namespace_key(namespace, READER_KEY))
    if record is MISSING:
        return True, None
    if is_reader_record(record):
        return True, record
    return False, None


class NamespaceRecords:
    """The rule above as the strategies layer is handed it (``StrategyState(keys=...)``)."""

    def strategy_key(self, namespace: str, key: object) -> str:
        """:func:`strategy_state_key`."""
        return strategy_state_key(namespace, key)

    def is_own_record(self, key: str) -> bool:
        """Whether ``key`` is a namespace's own record (:func:`own_record`)."""
        return own_record(key) is not None


#: The one :class:`NamespaceRecords` (it holds nothing).
NAMESPACE_RECORDS: Final = NamespaceRecords()
