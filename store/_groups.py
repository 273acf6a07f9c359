"""Exceptions out of a context manager that runs a task group.

A task group wraps what its body raises in an ``ExceptionGroup`` (Trio's strict groups, anyio's
task groups). For a host, ``async with open_runtime(): ...`` should raise what the body raised:
a ``ReaderClaimError`` comes out as itself. :func:`collapse` unwraps a group holding exactly one
exception (recursively); a group of several stays a group.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["collapse", "collapsing"]


def collapse(group: BaseExceptionGroup) -> BaseException:
    """The single exception a chain of one-exception groups holds, else the group itself."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return inner


@asynccontextmanager
async def collapsing() -> AsyncIterator[None]:
    """Raise what the body raised, not the task groups' wrapping of it: a group of exactly one
    exception is unwrapped (:func:`collapse`); a group of several is raised as it is."""
    try:
        yield
    except BaseExceptionGroup as group:
        inner = collapse(group)
        if inner is group:
            raise
        raise inner from inner.__cause__
