"""Writer processes for the ``postgres`` part: several processes writing to one store at once.

``python -m benchmarks._pg_writer STORE INDEX SECONDS BACKEND`` (run from the repository root) is
one writer: it opens a runtime on ``STORE`` (a path or a ``postgresql://`` URL) under ``BACKEND``
(``trio`` or ``asyncio``), opens a passthrough manager ``writer-<INDEX>`` of its own, writes a few
untimed messages, prints ``READY`` and waits for a line on stdin. Then it awaits
``ContextManager.add_message`` in a loop for ``SECONDS`` seconds, one message at a time, and
prints one JSON line: how many writes were acknowledged, over how long, and each call's latency.

:func:`measure_processes` starts ``processes`` writers on one store, lets them all go at once and
adds up what they acknowledged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from functools import partial

import attrs

from ._common import Stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@attrs.frozen
class ProcessWrites:
    """``processes`` writer processes on one store, each awaiting one ``add_message`` at a time."""

    processes: int
    writes: int  # acknowledged, all processes together
    seconds: float  # the longest of the processes' writing times
    call: Stats  # each call's latency, all processes together

    @property
    def per_second(self) -> float:
        """Messages acknowledged per second, all processes together."""
        return self.writes / self.seconds

    @property
    def per_message(self) -> float:
        """Wall time per acknowledged message (seconds): the inverse of :attr:`per_second`."""
        return self.seconds / self.writes


def measure_processes(store: str, processes: int, seconds: float, backend: str) -> ProcessWrites:
    """Start ``processes`` writers on ``store``, wait until each has opened it, let them all
    write for ``seconds``, and add up what they acknowledged. Raises ``RuntimeError`` when a
    writer fails (its error goes to stderr)."""
    argv = [sys.executable, "-m", "benchmarks._pg_writer", store]
    children = [
        subprocess.Popen([*argv, str(i), str(seconds), backend], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        for i in range(processes)
    ]
    try:
        for i, child in enumerate(children):
            assert child.stdout is not None
            if child.stdout.readline().strip() != "READY":
                raise RuntimeError(f"writer process {i} failed to open {store} (exit code {child.wait()})")
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        reports = []
        for i, child in enumerate(children):
            assert child.stdout is not None
            line = child.stdout.readline()
            if not line:
                raise RuntimeError(f"writer process {i} failed while writing (exit code {child.wait()})")
            reports.append(json.loads(line))
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            child.wait()
    latencies = [t for report in reports for t in report["latencies"]]
    return ProcessWrites(processes, len(latencies), max(report["seconds"] for report in reports), Stats.of(latencies))


async def _write(store: str, index: int, seconds: float) -> None:
    import anyio

    from asides import PassthroughStrategy, open_runtime

    from ._asides_cases import content, warm
    from ._common import participant

    async with open_runtime(store) as runtime:
        manager = await runtime.open_manager(f"writer-{index}", strategy=PassthroughStrategy())
        await warm(manager)
        print("READY", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        latencies: list[float] = []
        started = time.perf_counter()
        i = 0
        while time.perf_counter() - started < seconds:
            blocks = content(i)
            t0 = time.perf_counter()
            await manager.add_message(participant(i), blocks)
            latencies.append(time.perf_counter() - t0)
            i += 1
        elapsed = time.perf_counter() - started
        await manager.aclose()
    print(json.dumps({"seconds": elapsed, "latencies": latencies}), flush=True)


def main(argv: list[str]) -> None:
    if len(argv) != 4 or argv[3] not in ("trio", "asyncio"):
        sys.exit(__doc__)
    import anyio

    store, index, seconds, backend = argv[0], int(argv[1]), float(argv[2]), argv[3]
    anyio.run(partial(_write, store, index, seconds), backend=backend)


if __name__ == "__main__":
    main(sys.argv[1:])
