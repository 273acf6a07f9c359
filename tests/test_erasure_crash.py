"""kill -9 in the middle of an erasure (issue 23): after reopen the erasure is complete or not
started, never half. The child (tests/erase_crash_writer.py) erases 3,000 messages in one
erasure; the parent kills it at a drawn point of the commit (no sleeps: it counts the child's
lines), then opens the store and checks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from erasure_checks import files_holding

from asides import PassthroughStrategy, open_runtime

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "erase_crash_writer.py")
COUNT = 3_000
WATCHDOG_SECONDS = 120  # only ever reached by a hung child


@contextmanager
def child(path: str, stderr_path: str) -> Iterator[subprocess.Popen[str]]:
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, CHILD, path, str(COUNT)],
            cwd=os.path.dirname(HERE),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            bufsize=1,
        )
    watchdog = threading.Timer(WATCHDOG_SECONDS, proc.kill)
    watchdog.start()
    try:
        yield proc
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def read_line(proc: subprocess.Popen[str], stderr_path: str) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait()
        with open(stderr_path) as err:
            pytest.fail(f"the child ended (code {proc.returncode}) before it was killed:\n{err.read()}")
    return line.rstrip("\n")


@pytest.mark.slow
@pytest.mark.parametrize("point", [0, 30, 300, 3_000, 30_000, None])
async def test_kill_9_mid_erasure_is_all_or_nothing(tmp_path, point):
    """``point``: how many of the child's lines during the erasure the parent reads before it
    kills the child (``None``: once the erasure returned)."""
    path = str(tmp_path / "store.db")
    stderr_path = str(tmp_path / "child.err")
    with child(path, stderr_path) as proc:
        while read_line(proc, stderr_path) != "ERASING":
            pass
        seen = 0
        while point is None or seen < point:
            line = read_line(proc, stderr_path)
            if line == "ERASED":
                break
            seen += 1
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
    async with open_runtime(path) as rt:
        erasures = rt.erasures()
        m = await rt.open_manager("ns", strategy=PassthroughStrategy())
        messages = m.get_all_messages()
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
