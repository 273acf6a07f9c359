"""The running async library's own scheduling and cancel points, looked up once.

anyio's ``cancel_shielded_checkpoint`` and ``checkpoint_if_cancelled`` look the running library up
on every call (about 0.4 to 0.8 µs, a few percent of a lone write); a hot path takes the function
once, where it starts, from these. Each keeps anyio's contract: :func:`scheduling_point` lets
other tasks run and is never a cancel point; :func:`cancel_point` raises the pending cancellation,
if any, and otherwise does not yield.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio.lowlevel
import sniffio

__all__ = ["cancel_point", "scheduling_point"]


def scheduling_point() -> Callable[[], Awaitable[None]]:
    """A scheduling point that is never a cancel point: under Trio its own, else anyio's."""
    if sniffio.current_async_library() == "trio":
        import trio.lowlevel

        return trio.lowlevel.cancel_shielded_checkpoint
    return anyio.lowlevel.cancel_shielded_checkpoint


def cancel_point() -> Callable[[], Awaitable[None]]:
    """A cancel point that yields only when cancelled: under Trio its own, else anyio's."""
    if sniffio.current_async_library() == "trio":
        import trio.lowlevel

        return trio.lowlevel.checkpoint_if_cancelled
    return anyio.lowlevel.checkpoint_if_cancelled
