"""A branch's messages as a sequence that reads them a page at a time.

:class:`MessagePages` is what ``ContextManager.get_all_messages()`` and ``view_messages()``
return. It holds no message: ``len()`` is known when it is made, an index reads one message, and
a slice or an iteration reads pages of :data:`PAGE_SIZE` messages, so nothing materialises the
whole history unless the caller asks for all of it at once (``tuple(pages)``).

What it promises:

* It is the branch as it stood when it was made: its length does not change, and a message
  written after it is not in it.
* A message is read when it is asked for, as it is then: an edit made since shows (a redaction
  is never undone by an old sequence).
* When the positions it stood for have moved since (an erasure, or an edit that changed which
  messages its reader sees), a read raises :class:`ViewChangedError` instead of answering for
  another message: ask again. So no erased line is reachable through a sequence made before the
  erasure.
* Each read makes the check its source makes (a read through a closed manager raises
  ``ManagerClosedError``).

Tuple-only uses (``+``, ``==`` against a tuple, ``hash``) of what used to be a tuple keep
working for ``+`` and ``==``, and warn through :mod:`asides._deprecate`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, overload

from .._deprecate import warn_deprecated
from ._errors import AsidesError
from ._messages import Message

if TYPE_CHECKING:
    from ._model import LogModel

__all__ = ["MessagePages", "PAGE_SIZE", "ViewChangedError", "stored_pages"]

#: How many messages one page read brings (a slice or an iteration reads in pages this long).
PAGE_SIZE: Final = 900

_VERSION = "0.2.0"


class ViewChangedError(AsidesError, LookupError):
    """Raised by a read of a :class:`MessagePages` whose positions moved after it was made (an
    erasure, or an edit that changed which messages its reader sees): it names the call that
    made it; calling that again gives the branch as it is now."""

    def __init__(self, source: str) -> None:
        self.source = source
        super().__init__(
            f"{source}: the messages this sequence was made from moved since (an erasure, or an edit "
            f"that changed what its reader sees); call {source}() again for the branch as it is now"
        )


class MessagePages(Sequence[Message]):
    """A branch's messages, oldest first, read a page at a time (see the module docstring).

    Made by ``ContextManager.get_all_messages()`` and ``view_messages()``, not by hosts. Supports
    ``len()`` (free), indexing (one read), slicing (a tuple of what the slice holds, read in
    pages), iteration (in pages), ``in``, ``index``, ``count`` and ``reversed``; compares equal to
    another ``MessagePages`` or tuple holding the same messages in the same order.
    """

    __slots__ = ("_source", "_length", "_read", "_stamp", "_made_at")

    def __init__(
        self,
        source: str,
        length: int,
        read: Callable[[int, int], tuple[Message, ...]],
        stamp: Callable[[], Hashable],
    ) -> None:
        """``read(start, stop)`` returns the messages at those positions as they are now (each
        read checked as its source requires, and bringing it up to date); ``stamp()``, asked
        after each read, changes whenever a position may have moved since. ``source`` names the
        call that made it, for errors."""
        self._source = source
        self._length = length
        self._read = read
        self._stamp = stamp
        self._made_at = stamp()

    def _checked_read(self, start: int, stop: int) -> tuple[Message, ...]:
        found = self._read(start, stop)  # brings the source up to date, then the stamp says
        if self._stamp() != self._made_at or len(found) != stop - start:  # whether it moved
            raise ViewChangedError(self._source)
        return found

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            if step == 1:
                return self._pages(start, stop) if start < stop else ()
            return tuple(self[i] for i in range(start, stop, step))
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"{self._source}() indices must be integers or slices, not {type(index).__name__}")
        position = index + self._length if index < 0 else index
        if not 0 <= position < self._length:
            raise IndexError(f"{self._source}() index {index} out of range for {self._length} messages")
        return self._checked_read(position, position + 1)[0]

    def _pages(self, start: int, stop: int) -> tuple[Message, ...]:
        out: list[Message] = []
        for first in range(start, stop, PAGE_SIZE):
            out.extend(self._checked_read(first, min(stop, first + PAGE_SIZE)))
        return tuple(out)

    def __iter__(self) -> Iterator[Message]:
        for first in range(0, self._length, PAGE_SIZE):
            yield from self._checked_read(first, min(self._length, first + PAGE_SIZE))

    def __reversed__(self) -> Iterator[Message]:
        for last in range(self._length, 0, -PAGE_SIZE):
            yield from reversed(self._checked_read(max(0, last - PAGE_SIZE), last))

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, Message):
            return False
        return any(m == value for m in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, tuple):
            warn_deprecated(
                f"comparing {self._source}() with a tuple",
                _VERSION,
                instead=f"tuple({self._source}()), or comparing two sequences",
                because=f"{self._source}() returns a MessagePages, not a tuple",
            )
        elif not isinstance(other, MessagePages):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # as a list: it reads what may change

    def __add__(self, other: Any) -> tuple[Message, ...]:
        warn_deprecated(
            f"{self._source}() + ...",
            _VERSION,
            instead=f"tuple({self._source}()) + ...",
            because=f"{self._source}() returns a MessagePages, not a tuple",
        )
        return tuple(self) + tuple(other)

    def __radd__(self, other: Any) -> tuple[Message, ...]:
        warn_deprecated(
            f"... + {self._source}()",
            _VERSION,
            instead=f"... + tuple({self._source}())",
            because=f"{self._source}() returns a MessagePages, not a tuple",
        )
        return tuple(other) + tuple(self)

    def __repr__(self) -> str:
        return f"<MessagePages {self._source}() of {self._length} messages>"


def stored_pages(model: LogModel, branch: str, source: str, check: Callable[[], None]) -> MessagePages:
    """Every message of ``branch`` as stored, erased ones left out, as a :class:`MessagePages`;
    ``check`` runs before each read. Costs the erasures to make, never the branch's length."""
    erased = model.erased_positions(branch)
    gaps = [position - k for k, position in enumerate(erased)]  # as SparseProjection's

    def read(start: int, stop: int) -> tuple[Message, ...]:
        check()
        position = start + bisect_right(gaps, start)
        k = bisect_right(erased, position)
        out: list[Message] = []
        while len(out) < stop - start:
            end = position + (stop - start - len(out))
            if k < len(erased) and erased[k] < end:
                end = erased[k]
            found = model.slice(branch, position, end)
            if not found:
                break  # the branch is shorter than asked: the caller says it moved
            out.extend(found)
            position = end
            while k < len(erased) and erased[k] == position:
                position += 1
                k += 1
        return tuple(out)

    def stamp() -> int:
        return model.erasure_count

    check()
    return MessagePages(source, model.length(branch) - len(erased), read, stamp)
