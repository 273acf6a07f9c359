"""Durability across a process crash (SPEC S1) and one owner per store file (SPEC S4).

The tests run ``tests/crash_writer.py`` as a child process: it writes through the store (or a
runtime) and prints each acknowledged write; the parent kills it with SIGKILL and then opens the
store itself. No sleeps: the parent waits on the child's output lines. A watchdog kills a child
that stops talking, so a broken child fails the test instead of hanging it (it asserts nothing
about time). All are marked ``slow``; CI runs them.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import attrs
import pytest

from asides import PassthroughStrategy, content_for_reader, open_runtime
from asides.lowlevel import open_store
from asides.store import StoreLockedError, text
from tests.crash_writer import digest
from tests.helpers import CHILD_WATCHDOG_SECONDS, read_child_line, reaped_child

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)
CHILD = os.path.join(TESTS, "crash_writer.py")
PAD = "x" * 200


def kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL


@pytest.mark.slow
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
        with reaped_child(CHILD, path, stderr_path=stderr_path) as proc:
            while acknowledged < wanted:
                kind, branch, *rest = read_child_line(proc, stderr_path).split(" ")
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


@pytest.mark.slow
async def test_a_second_process_is_refused_with_store_locked(tmp_path):
    """S4: while another process has the store open, ``open_store`` here is refused with
    ``StoreLockedError`` (naming the file) and touches nothing; once that process is killed, the
    store opens here with what the other process wrote."""
    path = str(tmp_path / "locked.db")
    stderr_path = str(tmp_path / "child.err")
    with reaped_child(CHILD, path, "--hold", stderr_path=stderr_path) as proc:
        ready = read_child_line(proc, stderr_path)
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


# -- many writers through a runtime, killed at 24 points ---------------------------------------------


class Writers:
    """``python tests/crash_writer.py --serve``: the writers of one test, one after another, each
    a forked copy of one interpreter that imported asides once, so 24 rounds do not import it 24
    times. A writer is killed with SIGKILL as a child of its own would be; the server reaps it and
    says how it ended."""

    def __init__(self, proc: subprocess.Popen, stderr_path: str) -> None:
        self.proc = proc
        self.stderr_path = stderr_path
        self.pid: int | None = None  # the running writer's
        self.watchdog: threading.Timer | None = None

    def start(self, path: str, *args: str) -> None:
        """Start a writer with ``crash_writer.py PATH ARGS``'s arguments."""
        assert self.pid is None, "one writer at a time"
        self.proc.stdin.write(json.dumps([path, *args]) + "\n")
        self.proc.stdin.flush()
        first = self.read_line()
        assert first.startswith("PID "), first
        self.pid = int(first.split(" ")[1])
        self.watchdog = threading.Timer(CHILD_WATCHDOG_SECONDS, self._kill_writer)
        self.watchdog.start()

    def read_line(self) -> str:
        """The running writer's next line; the test fails if the writer (or the server) ended."""
        line = self.proc.stdout.readline()
        if not line or line.startswith("EXIT "):
            self.pid = None
            with open(self.stderr_path) as err:
                ended = f"code {line.split(' ')[1].strip()}" if line else "the server ended"
                pytest.fail(f"the child ended ({ended}) before it was killed:\n{err.read()}")
        return line.rstrip("\n")

    def kill(self) -> None:
        """SIGKILL the running writer; it must end by that signal."""
        assert self.pid is not None
        self._kill_writer()
        if self.watchdog is not None:
            self.watchdog.cancel()
        while not (line := self.proc.stdout.readline()).startswith("EXIT "):
            assert line, "the server ended"  # the lines the writer printed after the last one read
        self.pid = None
        assert int(line.split(" ")[1]) == -signal.SIGKILL, line

    def _kill_writer(self) -> None:
        if self.pid is not None:
            os.kill(self.pid, signal.SIGKILL)


@contextmanager
def writers(stderr_path: str) -> Iterator[Writers]:
    """The writer server, run from the project root; its writer and it always reaped."""
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, CHILD, "--serve"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            bufsize=1,
        )
    served = Writers(proc, stderr_path)
    try:
        yield served
    finally:
        if served.pid is not None:
            served.kill()
        proc.stdin.close()  # the server ends at the end of its input
        try:
            proc.wait(timeout=CHILD_WATCHDOG_SECONDS)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()


ROUNDS = 24


@attrs.define
class Acknowledged:
    """Everything the children acknowledged, over every round."""

    #: message id -> (branch, audience or None, text); text None: only its presence is promised
    messages: dict[str, tuple[str, tuple[str, ...] | None, str | None]] = attrs.field(factory=dict)
    claims: dict[tuple[str, str], str] = attrs.field(factory=dict)  # (branch, namespace) -> reader
    edits: dict[str, int] = attrs.field(factory=dict)  # message id -> newest acknowledged version
    copies: dict[tuple[str, int], str] = attrs.field(factory=dict)  # (namespace, index) -> source id
    floors: dict[tuple[str, str], int] = attrs.field(factory=dict)  # (branch, namespace) -> floor
    summaries: dict[tuple[str, str], str] = attrs.field(factory=dict)  # (namespace, key) -> digest
    bulk_started: set[int] = attrs.field(factory=set)
    bulk_done: set[int] = attrs.field(factory=set)

    def every_kind(self) -> bool:
        """Whether a summary, a floor, a context-log copy and an edit were acknowledged yet."""
        return bool(self.summaries and self.floors and self.copies and self.edits)

    def take(self, line: str) -> None:
        kind, *rest = line.split(" ")
        if kind == "A":
            branch, message_id, audience, body = rest
            assert message_id not in self.messages, "a message id was handed out twice"
            known = None if body in ("to-edit", "memory") else body
            self.messages[message_id] = (branch, None if audience == "-" else tuple(audience.split(",")), known)
        elif kind == "C":
            branch, namespace, reader = rest
            self.claims[(branch, namespace)] = reader
        elif kind == "E":
            _branch, message_id, version = rest
            self.edits[message_id] = max(self.edits.get(message_id, -1), int(version))
        elif kind == "X":
            _branch, namespace, index, source = rest
            self.copies[(namespace, int(index))] = source
        elif kind == "F":
            branch, namespace, floor = rest
            self.floors[(branch, namespace)] = max(self.floors.get((branch, namespace), 0), int(floor))
        elif kind == "S":
            _branch, namespace, key, sha = rest
            self.summaries[(namespace, key)] = sha
        elif kind == "B":
            (self.bulk_started if rest[0] == "start" else self.bulk_done).add(int(rest[1]))
        else:
            assert kind == "T", line  # progress while a batch commits


def check_after_kill(store, acked: Acknowledged) -> None:
    """Everything ``acked`` holds is in the reopened ``store``, and the store is consistent."""
    for message_id, (branch, audience, body) in acked.messages.items():
        found = store.get_message(branch, message_id)
        assert found is not None, f"acknowledged message {message_id} on {branch} is gone"
        if body is not None:
            assert found.content == (text(f"{body} {PAD}", audience),)
    for (branch, namespace), reader in acked.claims.items():
        assert store.get_state(branch, f"{namespace}/reader") == reader, f"the claim of {namespace} on {branch} is gone"
    for message_id, version in acked.edits.items():
        found = store.get_message("main", message_id)
        stored = int(found.content[0].text.rsplit(" v", 1)[1])
        # a later, unacknowledged edit may have committed too; never an older one
        assert stored >= version, f"edit {version} of {message_id} is gone (the store holds {stored})"
        assert [b.audience for b in found.content] == [None, ("ann",), ("bob",)]
    for (namespace, index), source in acked.copies.items():
        entry = store.get_state("main", f"{namespace}/context/{index}")
        assert entry is not None and entry["source_message_id"] == source, f"context entry {namespace}/{index} is gone"
        message = store.get_message("main", source)
        # the copy was rewritten in the same commit as the edit the store holds: ann's view of it
        expected = [b.text for b in content_for_reader(message.content, "ann")]
        assert [b["text"] for b in entry["content"]] == expected
    for (branch, namespace), floor in acked.floors.items():
        assert store.get_state(branch, f"{namespace}/narrowing-floor") >= floor, f"the floor of {namespace} lowered"
    for (namespace, key), sha in acked.summaries.items():
        value = store.get_state("memory", key)
        assert value is not None and digest(value) == sha, f"summary {key} of {namespace} is gone or changed"
    # Each branch is listed once per check (decoding every message of it): the batches' branch
    # grows by 3,000 rows a batch, and listing it again for each batch made this check most of
    # the test's time.
    listed = {info.name: store.messages(info.name) for info in store.branches()}
    rows_of_round = Counter(m.metadata.get("bulk") for m in listed.get("bulk", ()))
    for round_ in acked.bulk_started:
        count = rows_of_round[round_]
        assert count in (0, 3_000), f"a batch of 3,000 was torn: {count} rows of round {round_} survived"
        if round_ in acked.bulk_done:
            assert count == 3_000
    for name, messages in listed.items():
        sequences = [m.sequence for m in messages]
        assert sequences == sorted(set(sequences)), f"sequences on {name} repeat or run backwards"
    for branch in ("main", "side", "memory"):
        for key, value in store.state_items(branch).items():
            if key.startswith(("memory/", "copies/")):
                assert "BOB-ONLY" not in json.dumps(value), f"{key} (ann's) holds bob's block"


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_runtime_writes_survive_kill_9_at_24_points(tmp_path):
    """S1, D2, R1, N2, P2, C7: many writers through a runtime, killed with SIGKILL at 24 points
    (the same file reopened by each next child); after each kill, everything acknowledged is
    there: messages (4 tasks on two branches, random audiences), claims (managers opened with
    readers on fresh namespaces), edits (never older than acknowledged) and the context-log
    copies they rewrite (always ann's view of the stored version: same commit), ann's floor
    (never lower) and summaries (byte for byte, holding none of bob's blocks), and batches of
    3,000 messages written as one multi-statement transaction (all or none; all once returned).
    Every fourth round kills while a batch commits (the child prints progress lines while it
    does; the kill comes 0-800 of them after the batch was handed to the store); the others at
    40-400 acknowledgements (the last one, also not before every kind of write was acknowledged
    once). The kill points come from a fixed seed."""
    path = str(tmp_path / "crash.db")
    stderr_path = str(tmp_path / "child.err")
    rng = random.Random(20260101)
    acked = Acknowledged()
    killed_in_batch = 0
    with writers(stderr_path) as served:
        for round_ in range(ROUNDS):
            mid_batch = round_ % 4 == 1
            with_batch = round_ % 2 == 1
            bulk_after = rng.randint(20, 80) if with_batch else -1
            wanted = rng.randint(40, 400)
            ticks = rng.randint(0, 800)  # progress lines of the batch's commit to let pass
            served.start(path, "--runtime", str(round_), str(bulk_after))
            seen = 0
            started_at = None
            while True:
                line = served.read_line()
                acked.take(line)
                seen += 1 if mid_batch or not line.startswith("T ") else 0
                if line == f"B start {round_}":
                    started_at = seen
                if mid_batch and started_at is not None and seen - started_at >= ticks:
                    break
                # The last round is killed only once every kind of write was acknowledged at least
                # once over the run (on a loaded machine the compressor may not have written a
                # summary by then): its kill then tests them too. 20,000 lines at most.
                if not mid_batch and seen >= wanted and (round_ < ROUNDS - 1 or acked.every_kind() or seen >= 20_000):
                    break
            served.kill()
            if mid_batch and round_ not in acked.bulk_done:
                killed_in_batch += 1
            async with open_store(path) as store:
                check_after_kill(store, acked)
    assert killed_in_batch >= 1, "the premise: some kill landed while a batch was being written"
    assert acked.every_kind(), "the premise: every kind of write was acknowledged"
    async with open_runtime(path) as rt:
        ann = await rt.open_manager(f"memory/{ROUNDS - 1}", strategy=PassthroughStrategy(), view_reader="ann")
        compiled = await ann.compile(max_tokens=10_000_000, reserve_for_response=0)
        assert compiled.messages and "BOB-ONLY" not in json.dumps([str(m.content) for m in compiled.messages])
