"""kill -9 in the middle of an erasure (issue 23): after reopen the erasure is complete or not
started, never half. The child (tests/store/erase_crash_writer.py) erases 3,000 messages in one
erasure; the parent kills it at a drawn point of the commit (no sleeps: it counts the child's
lines), then opens the store and checks."""

from __future__ import annotations

import os
import signal

import pytest
from erasure_checks import files_holding
from helpers import read_child_line, reaped_child

from asides import PassthroughStrategy, open_runtime

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "erase_crash_writer.py")
COUNT = 3_000


@pytest.mark.slow
@pytest.mark.parametrize("point", [0, 30, 300, 3_000, 30_000, None])
async def test_kill_9_mid_erasure_is_all_or_nothing(tmp_path, point):
    """``point``: how many of the child's lines during the erasure the parent reads before it
    kills the child (``None``: once the erasure returned)."""
    path = str(tmp_path / "store.db")
    stderr_path = str(tmp_path / "child.err")
    with reaped_child(CHILD, path, str(COUNT), stderr_path=stderr_path) as proc:
        while read_child_line(proc, stderr_path) != "ERASING":
            pass
        seen = 0
        while point is None or seen < point:
            line = read_child_line(proc, stderr_path)
            if line == "ERASED":
                break
            seen += 1
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
    async with open_runtime(path) as rt:
        erasures = rt.erasures()
        m = await rt.open_manager("ns", strategy=PassthroughStrategy())
        messages = tuple(m.get_all_messages())
        entries = m.get_context_entries()
        if erasures:
            assert len(erasures) == 1 and len(erasures[0].message_ids) == COUNT
            assert messages == () and entries == ()
            assert all(rt.tombstone(i) is not None for i in erasures[0].message_ids)
            assert "SECRET" not in repr(await rt.store.records())
        else:
            assert len(messages) == COUNT and len(entries) == 10
            assert all(rt.tombstone(x.id) is None for x in messages)
    if erasures:
        assert files_holding("SECRET", path) == []
