"""Compile latency while many tasks write: one manager open against many, in alternation.

Two stores of the same history: in one, a single passthrough manager is open; in the other,
``managers`` are (one namespace each). In each, ``writers`` tasks write (task k through manager
k mod the number open) at ``rate`` writes per second in total, and the first manager compiles
the whole history. The two arms take turns: while one arm's phase runs, the other's writers
wait. So the arms differ only in the number of managers open, and a change in the machine's
load falls on both.
"""

from __future__ import annotations

import os
import time

import anyio
import attrs

from asides import ContextManager, PassthroughStrategy, open_runtime

from ._asides_cases import WHOLE, content, grow
from ._common import Stats, participant

#: Before each timed compile the compiling task sleeps this long (an agent's turn elsewhere).
PAUSE = 0.05
#: A writer further behind its schedule than this drops its backlog instead of bursting.
BACKLOG_S = 1.0
#: Timed compiles per phase of an arm.
PHASE = 2
#: Writers run this long in a phase before the first timed compile.
SETTLE = 0.1


@attrs.frozen
class CompileUnderWrites:
    compile: Stats
    managers: int
    writers: int
    writes_per_s: float  # achieved during the arm's phases, in total


class _Arm:
    """One store's managers, and whether its writers may write now."""

    def __init__(self, managers: list[ContextManager]) -> None:
        self.managers = managers
        self.active = False
        self.resumed = anyio.Event()
        self.written = 0
        self.timed_writes = 0  # during the timed part of its phases
        self.active_s = 0.0
        self.times: list[float] = []

    def activate(self) -> None:
        self.active = True
        self.resumed.set()

    def pause(self) -> None:
        self.active = False
        self.resumed = anyio.Event()


async def _write(arm: _Arm, manager: ContextManager, interval: float, offset: float) -> None:
    """Writes due every ``interval`` seconds while the arm is active; after a pause the
    schedule starts again at ``offset``; after a compile held the loop, the writes owed are
    caught up (at most ``BACKLOG_S`` of them)."""
    due: float | None = None
    i = 0
    while True:
        if not arm.active:
            await arm.resumed.wait()
            due = None
            continue
        now = time.perf_counter()
        if due is None:
            due = now + offset
        if due > now:
            await anyio.sleep(due - now)
            continue
        if due < now - BACKLOG_S:
            due = now
        await manager.add_message(participant(i), content(i))
        arm.written += 1
        i += 1
        due += interval


async def measure_compile_under_writes(
    directory: str, size: int, managers: int, writers: int, rate: float, compiles: int, budget_s: float
) -> tuple[CompileUnderWrites, CompileUnderWrites]:
    """(1 manager open, ``managers`` open): compiles of the whole history after ``PAUSE``, while
    ``writers`` tasks write ``rate`` per second in total; arms alternate in phases of ``PHASE``
    compiles (one, many, many, one, ...), each phase after ``SETTLE`` seconds of writes; up to
    ``compiles`` per arm, fewer once ``budget_s`` has passed (at least ``PHASE`` each)."""
    interval = writers / rate
    async with (
        open_runtime(os.path.join(directory, "under-writes-one.db")) as one_runtime,
        open_runtime(os.path.join(directory, "under-writes-many.db")) as many_runtime,
    ):
        arms = []
        for runtime, count in ((one_runtime, 1), (many_runtime, managers)):
            await grow(runtime, size)
            opened = [await runtime.open_manager(f"agent-{k:03d}", strategy=PassthroughStrategy()) for k in range(count)]
            arms.append(_Arm(opened))
        started = time.perf_counter()
        async with anyio.create_task_group() as tasks:
            for arm in arms:
                for k in range(writers):
                    tasks.start_soon(_write, arm, arm.managers[k % len(arm.managers)], interval, interval * k / writers)
            while any(len(arm.times) < compiles for arm in arms):
                if all(len(arm.times) >= PHASE for arm in arms) and time.perf_counter() - started > budget_s:
                    break
                for arm in arms:
                    await _phase(arm, min(PHASE, compiles - len(arm.times)))
                arms.reverse()  # one, many, many, one, ...: neither arm always goes first
            tasks.cancel_scope.cancel()
        for arm in arms:
            for m in arm.managers:
                await m.aclose()
    one, many = sorted(arms, key=lambda arm: len(arm.managers))
    return (
        CompileUnderWrites(Stats.of(one.times), 1, writers, one.timed_writes / one.active_s),
        CompileUnderWrites(Stats.of(many.times), managers, writers, many.timed_writes / many.active_s),
    )


async def _phase(arm: _Arm, count: int) -> None:
    """Let the arm's writers run for ``SETTLE`` seconds, then time ``count`` compiles; count
    the writes made meanwhile."""
    if count <= 0:
        return
    arm.activate()
    await anyio.sleep(SETTLE)
    written, t_start = arm.written, time.perf_counter()
    for _ in range(count):
        await anyio.sleep(PAUSE)
        t0 = time.perf_counter()
        await arm.managers[0].compile(**WHOLE)
        arm.times.append(time.perf_counter() - t0)
    arm.pause()
    arm.timed_writes += arm.written - written
    arm.active_s += time.perf_counter() - t_start
