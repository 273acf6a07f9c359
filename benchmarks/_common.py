"""What every benchmark part shares: the message text, sampling, statistics, goals and printing.

Nothing here touches asides or a peer library; the parts import what they measure themselves.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import sys
import time
import timeit
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import attrs

#: Every message in every benchmark holds this many bytes of ASCII text.
MESSAGE_BYTES = 300

_WORDS = (
    "the parser",
    "a cache miss",
    "the deploy",
    "billing",
    "the index",
    "a flaky test",
    "the queue",
    "one retry",
    "the schema",
    "a timeout",
)


def message_text(i: int, size: int = MESSAGE_BYTES) -> str:
    """``size`` bytes of ASCII prose for message ``i``; different for every ``i`` (so nothing is
    shared between messages in memory or compresses to nothing on disk)."""
    parts = [f"Message {i}:"]
    k = i
    length = len(parts[0])
    while length < size:
        k = (k * 1103515245 + 12345) % 2147483648
        word = f"{_WORDS[k % len(_WORDS)]} took {k % 997} ms;"
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[:size]


def participant(i: int) -> str:
    """``user`` and ``assistant`` alternate."""
    return "user" if i % 2 == 0 else "assistant"


# -- sampling ---------------------------------------------------------------------------------


def rounds(count: int, budget_s: float, minimum: int = 3) -> Iterator[int]:
    """Up to ``count`` round numbers; stops early once ``budget_s`` seconds have passed and at
    least ``minimum`` rounds ran (so slow code still finishes a quick run in bounded time)."""
    start = time.perf_counter()
    for i in range(count):
        if i >= minimum and time.perf_counter() - start > budget_s:
            return
        yield i


async def interleave(
    series: Mapping[str, Callable[[int], Awaitable[float]]], count: int, budget_s: float, *, block: int = 10, minimum: int = 3
) -> dict[str, Stats]:
    """Run several timed series in alternation, ``block`` rounds of each in turn, so that a change
    in the machine's load falls on all of them alike. Each callable does round ``i`` and returns
    the seconds it timed. Each series stops after ``count`` rounds; all stop once ``budget_s``
    seconds (for all of them together) have passed and each ran at least ``minimum``."""
    times: dict[str, list[float]] = {name: [] for name in series}
    start = time.perf_counter()
    gc.collect()
    while any(len(t) < count for t in times.values()):
        if all(len(t) >= minimum for t in times.values()) and time.perf_counter() - start > budget_s:
            break
        for name, one_round in series.items():
            done = times[name]
            for _ in range(min(block, count - len(done))):
                done.append(await one_round(len(done)))
    return {name: Stats.of(t) for name, t in times.items()}


@contextmanager
def quiet_heap() -> Iterator[None]:
    """A full collection before a timed series, so garbage left by a build is not collected
    inside the first timed calls. Collection stays enabled during the series."""
    gc.collect()
    yield


@attrs.frozen
class Stats:
    """Median and 90th percentile of a series of durations (seconds)."""

    median: float
    p90: float
    count: int

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Stats:
        if not seconds:
            raise ValueError("no samples")
        ordered = sorted(seconds)
        p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
        return cls(statistics.median(ordered), p90, len(ordered))

    def cell(self) -> str:
        """``median (p90 x, n)`` in readable units."""
        return f"{duration(self.median)} (p90 {duration(self.p90)}, n={self.count})"


def duration(seconds: float) -> str:
    """A duration in µs below 1 ms, in ms below 10 s, else in s."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 10:
        return f"{seconds * 1e3:.1f} ms" if seconds < 0.1 else f"{seconds * 1e3:.0f} ms"
    return f"{seconds:.1f} s"


def count(n: int) -> str:
    """A message count, short: ``300``, ``20k``, ``1M``."""
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return f"{n:,}"


def ratio(numerator: float, denominator: float) -> str:
    """``numerator / denominator`` as ``2.3×``."""
    if denominator <= 0:
        return "n/a"
    value = numerator / denominator
    return f"{value:.2f}×" if value < 10 else f"{value:.0f}×"


# -- goals ------------------------------------------------------------------------------------


@attrs.frozen
class Goal:
    """One goal of the performance issue, with the figure measured against it."""

    goal: str
    measured: str
    met: bool | None  # None: not measured in this run

    def verdict(self) -> str:
        return {True: "met", False: "NOT met", None: "not measured"}[self.met]


def print_goals(title: str, goals: Sequence[Goal]) -> None:
    """A table: goal, measured figure, verdict."""
    print(title)
    width = max(len(g.goal) for g in goals)
    mwidth = max(len(g.measured) for g in goals)
    for g in goals:
        print(f"  {g.goal:<{width}}  {g.measured:<{mwidth}}  {g.verdict()}")
    met = sum(1 for g in goals if g.met)
    measured = sum(1 for g in goals if g.met is not None)
    print(f"  {met} of {measured} measured goals met")
    print()


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A plain-text table, first column left-aligned, the others right-aligned."""
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        first = f"{cells[0]:<{widths[0]}}"
        rest = [f"{c:>{w}}" for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest])

    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


# -- the machine ------------------------------------------------------------------------------


def load() -> str:
    """The load averages, as ``uptime`` prints them."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def machine() -> str:
    """Python, platform and load, for the head of a report."""
    return f"Python {platform.python_version()} on {platform.platform()}; {load()}"


def python_speed() -> float:
    """The machine's ``sum(range(1000))`` time, in seconds (best of 5 repeats): a reference that
    lets readers compare machines."""
    number = 20_000
    return min(timeit.repeat("sum(range(1000))", number=number, repeat=5)) / number


def progress(what: str) -> None:
    """A progress line on stderr (the report itself goes to stdout)."""
    print(f"  [{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)


def section(title: str) -> None:
    """A section title with the load at that moment."""
    print()
    print(title)
    print("=" * len(title))
    print(f"({time.strftime('%H:%M:%S')}; {machine()})")
    sys.stdout.flush()
