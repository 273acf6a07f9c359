"""``open_test_runtime``: a runtime on a store made for one test."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ..actors._runtime import Runtime, open_runtime
from ..strategies._models import Model
from ._errors import HarnessError

__all__ = ["open_test_runtime"]


@asynccontextmanager
async def open_test_runtime(store: str | os.PathLike[str] | None = None, *, model: Model | None = None) -> AsyncIterator[Runtime]:
    """A runtime for a test, as ``async with open_test_runtime() as runtime:``.

    With no ``store``, the store is a new SQLite file in a temporary folder that is removed when
    the block ends. A path opens (creating) that file instead, so a test can reopen what an
    earlier block wrote; a database URL (``postgresql://...``) is handed to
    :func:`~asides.open_runtime` as it is. ``model`` is the runtime's default model.

    The runtime is the one :func:`~asides.open_runtime` makes, under Trio or asyncio. Under a
    Trio ``MockClock`` with autojump (pytest-trio's ``autojump_clock`` fixture, or
    ``trio.run(..., clock=trio.testing.MockClock(autojump_threshold=0))``) every wait it makes
    (a drain's back-off between retries, a request timeout) takes no real time, since time jumps
    as soon as every task waits; nothing in it waits on the wall clock.
    """
    if store is None:
        with tempfile.TemporaryDirectory(prefix="asides-test-") as directory:
            async with open_runtime(os.path.join(directory, "store.db"), model=model) as runtime:
                yield runtime
        return
    if not isinstance(store, str | os.PathLike):
        raise HarnessError(f"open_test_runtime: store is a path, a database URL or None, not {store!r}")
    async with open_runtime(os.fspath(store), model=model) as runtime:
        yield runtime
