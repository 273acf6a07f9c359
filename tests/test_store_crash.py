"""Durability across a process crash (SPEC S1) and one owner per store file (SPEC S4).

Both tests run ``tests/crash_writer.py`` as a child process: it writes through the store and
prints each acknowledged write; the parent kills it with SIGKILL and then opens the store itself.
No sleeps: the parent waits on the child's output lines. A watchdog kills a child that stops
talking, so a broken child fails the test instead of hanging it (it asserts nothing about time).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from asides.store import StoreLockedError, open_store, text

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHILD = os.path.join(HERE, "crash_writer.py")
PAD = "x" * 200
WATCHDOG_SECONDS = 120  # only ever reached by a hung child


@contextmanager
def child(path: str, *args: str, stderr_path: str) -> Iterator[subprocess.Popen]:
    """Run ``python tests/crash_writer.py PATH ARGS`` from the project root; always reaped."""
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, CHILD, path, *args],
            cwd=ROOT,
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
        proc.stdout.close()


def read_line(proc: subprocess.Popen, stderr_path: str) -> str:
    line = proc.stdout.readline()
    if not line:
        proc.wait()
        with open(stderr_path) as err:
            pytest.fail(f"the child ended (code {proc.returncode}) before it was killed:\n{err.read()}")
    return line.rstrip("\n")


def kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_acknowledged_writes_survive_kill_9(tmp_path, seed):
    """S1, D2: every write the store acknowledged before the process was killed with SIGKILL is
    there after reopening, with its id, sequence, content and metadata (messages from 4 concurrent
    tasks on two branches, some in batches of 3, and state records); the store opens cleanly
    (sequences unique, heads at least the newest acknowledged sequence) and writing continues
    from the head with fresh ids. The kill point (50-300 acknowledgements) is drawn from the
    seed; the store is killed twice, so the second run starts from a recovered file."""
    path = str(tmp_path / "crash.db")
    stderr_path = str(tmp_path / "child.err")
    rng = random.Random(seed)
    messages: dict[str, tuple[str, int, str, str]] = {}  # id -> (branch, sequence, task, n)
    states: dict[tuple[str, str], tuple[int, int]] = {}  # (branch, key) -> (value, sequence)
    parent_ids: set[str] = set()

    for _round in range(2):
        wanted = rng.randint(50, 300)
        acknowledged = 0
        with child(path, stderr_path=stderr_path) as proc:
            while acknowledged < wanted:
                kind, branch, *rest = read_line(proc, stderr_path).split(" ")
                if kind == "M":
                    message_id, sequence, task, n = rest
                    assert message_id not in messages, "a message id was handed out twice"
                    assert message_id not in parent_ids, "a message id was reused after reopen"
                    messages[message_id] = (branch, int(sequence), task, n)
                    acknowledged += 1
                else:
                    assert kind == "S"
                    key, value, sequence = rest
                    states[(branch, key)] = (int(value), int(sequence))
            kill(proc)

        async with open_store(path) as store:
            assert {b.name for b in store.branches()} == {"main", "side"}
            for message_id, (branch, sequence, task, n) in messages.items():
                found = store.get_message(branch, message_id)
                assert found is not None, f"acknowledged message {message_id} on {branch} is gone"
                assert found.sequence == sequence
                assert found.participant == f"task{task}"
                assert found.content == (text(f"task {task} message {n} {PAD}"),)
                assert str(found.metadata["n"]) == n
                assert store.get_message("side" if branch == "main" else "main", message_id) is None
            for (branch, key), (value, sequence) in states.items():
                # the task writes its key with rising values; an unacknowledged later one may
                # have committed too, never an older one
                assert store.get_state(branch, key) >= value
                assert store.head(branch) >= sequence
            for branch in ("main", "side"):
                sequences = [m.sequence for m in store.messages(branch)]
                assert len(set(sequences)) == len(sequences)
                assert sequences == sorted(sequences)
                acked = [s for b, s, _t, _n in messages.values() if b == branch]
                assert store.head(branch) >= max(acked, default=0)
            all_ids = {m.id for b in ("main", "side") for m in store.messages(b)}
            head = store.head("main")
            after = await store.append_message("main", "parent", (text("after the crash"),))
            assert after.sequence == head + 1
            assert after.id not in all_ids
            parent_ids.add(after.id)
        async with open_store(path) as store:
            assert store.get_message("main", after.id) == after


async def test_a_second_process_is_refused_with_store_locked(tmp_path):
    """S4: while another process has the store open, ``open_store`` here is refused with
    ``StoreLockedError`` (naming the file) and touches nothing; once that process is killed, the
    store opens here with what the other process wrote."""
    path = str(tmp_path / "locked.db")
    stderr_path = str(tmp_path / "child.err")
    with child(path, "--hold", stderr_path=stderr_path) as proc:
        ready = read_line(proc, stderr_path)
        assert ready.startswith("READY ")
        held_id = ready.split(" ")[1]
        for _ in range(2):  # a refused open leaves no lock behind in this process either
            with pytest.raises(StoreLockedError) as refused:
                async with open_store(path):
                    pytest.fail("a second process must be refused")  # pragma: no cover
            assert path in str(refused.value)
        assert proc.poll() is None  # the holder is unharmed
        kill(proc)
    async with open_store(path) as store:
        assert [m.id for m in store.messages("main")] == [held_id]
        assert store.messages("main")[0].content == (text("held"),)
        await store.append_message("main", "parent", (text("mine now"),))
    async with open_store(path) as store:
        assert [m.participant for m in store.messages("main")] == ["holder", "parent"]
