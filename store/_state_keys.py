"""How the state keys of a namespace are spelled, and the one rule that keeps a namespace's own
records apart from every strategy's records (pure logic).

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

from typing import Final

from ._errors import InvalidArgumentError

__all__ = [
    "CONTEXT",
    "FLOOR_KEY",
    "LEASE_KEY",
    "NAMESPACE_KEYS",
    "READER_KEY",
    "STRATEGY_KEY",
    "context_index",
    "context_key",
    "context_prefix",
    "key_number",
    "namespace_key",
    "own_record",
    "strategy_state_key",
]

READER_KEY: Final = "reader"  # the reader the namespace is claimed for
FLOOR_KEY: Final = "narrowing-floor"  # the newest sequence compression may have read
STRATEGY_KEY: Final = "strategy"  # the name of the strategy the namespace runs
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


def context_key(namespace: str, index: int) -> str:
    """The key of entry ``index`` of ``namespace``'s context log."""
    return f"{context_prefix(namespace)}{index:d}"


def key_number(text: str) -> int | None:
    """``text`` as the number a key spells, when it is one: ASCII decimal digits in canonical
    form (no leading zero but in ``0`` itself), as ``str(n)`` writes it; else ``None``. This is
    the rule for every number read out of a key (``str.isdigit`` also takes ``²`` and ``٣``,
    and ``int`` then fails or reads another number)."""
    if not text or not (text.isascii() and text.isdigit()) or (text[0] == "0" and text != "0"):
        return None
    return int(text)


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
