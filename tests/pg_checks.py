"""Checks on a PostgreSQL store's rows, read straight from the database (helpers, not fixtures),
and a child process whose printed lines a test reads with a timeout."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from typing import Any

__all__ = ["Child", "WORKER", "check_sequences", "execute", "rows"]

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pg_worker.py")


def rows(url: str) -> list[tuple[Any, ...]]:
    """Every record, ``(id, branch, seq, kind, ref, body)``, in id order."""
    import psycopg  # here, so that without it the tests skip (saying why) rather than fail to import

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT id, branch, seq, kind, ref, body FROM asides_log ORDER BY id").fetchall()


def execute(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def check_sequences(found: list[tuple[Any, ...]]) -> None:
    """Record ids 1..n with no gap; on each branch, sequences from its fork point up, no gap.
    Audit records (erasures, disclosures: branch ``""``) take their record id as sequence."""
    assert [row[0] for row in found] == list(range(1, len(found) + 1))
    forks = {row[1]: row[2] for row in found if row[3] == "branch"}
    seqs: dict[str, list[int]] = {}
    for _id, branch, seq, kind, _ref, _body in found:
        if kind != "branch" and branch != "":
            seqs.setdefault(branch, []).append(seq)
    for branch, numbers in seqs.items():
        start = forks.get(branch, 0) + 1
        assert numbers == list(range(start, start + len(numbers))), branch


class Child:
    """``python tests/pg_worker.py ARGS...``, its output lines read by a thread into a queue."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, WORKER, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, timeout: float = 60.0) -> str:
        """The next line; fails if the child ends or says nothing for ``timeout`` seconds."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the child {self.process.args[2:]} said nothing for {timeout} s") from None
        if line is None:
            raise AssertionError(f"the child {self.process.args[2:]} ended (exit {self.process.wait()})")
        return line

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self._reader.join(timeout=10)

    def close(self, timeout: float = 60.0) -> None:
        if self.process.poll() is None and self.process.stdin is not None:
            try:
                self.send("quit")
                self.process.stdin.close()
            except (BrokenPipeError, OSError):
                pass
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=10)

    def remaining(self) -> list[str]:
        """Every line printed and not read yet (after the child ended)."""
        found = []
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return found
            if line is not None:
                found.append(line)
