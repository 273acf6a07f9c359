"""``python -m benchmarks [--quick] [part ...]``: run benchmark parts, each in turn, never two at once.

Parts: ``peers`` (asides next to the OpenAI Agents SDK and LangGraph, with the issue's goals),
``memory`` (resident memory and open time at 200k and 1M messages), ``drivers`` (one commit
through each SQLite driver under Trio), ``postgres`` (asides on PostgreSQL next to SQLite, with 1
and 4 writer processes, and LangGraph's AsyncPostgresSaver on the same server; skipped, in one
line saying why, where no PostgreSQL server can be had), ``limits`` (asides against a bare
SQLite or psycopg INSERT and a passthrough compile of the same output, issue 22's ratios), ``writes``
(store-level write cost and open time), ``compression`` (the autobiographical strategy in detail),
``serve`` (``asides serve``'s log page and reader's view over HTTP at 200,000 messages; needs the
``serve`` extra), ``cache`` (how much of each request a prompt cache could serve, asides next to
LangChain's ``SummarizationMiddleware``; needs ``asides[langchain]``), ``readers`` (the memory of
50 reader managers against one reader's, issue 19), ``disclosures`` (what recording who was
shown what costs a compile, issue 23), ``history`` (open, first compile, writes and memory at
100,000 to 10,000,000 messages next to the Agents SDK's ``SQLiteSession``, issue 33) and ``search``
(``ContextManager.search`` against a scan of the reader's view, the index's background build
under writes, and what the index costs a write; --quick at 50,000 and 500,000 messages, about a
minute and a half, the full part at 100,000 and 1,000,000). With no part: peers, memory,
drivers, postgres, limits and history. ``all``: every part. ``--quick`` makes each part smaller
(the default parts together take about four minutes on an idle 2-core machine, history about
one and a half of them); without it the peers part adds the autobiographical compile at 200,000
messages, memory adds 1,000,000 messages and history measures 100,000, 1,000,000 and 10,000,000
(the last takes minutes to build).
"""

from __future__ import annotations

import argparse
import time

from ._common import machine

DEFAULT = ("peers", "memory", "drivers", "postgres", "limits", "history")
PARTS = (
    "peers",
    "memory",
    "drivers",
    "postgres",
    "limits",
    "writes",
    "compression",
    "serve",
    "cache",
    "readers",
    "disclosures",
    "history",
    "search",
)


def run_part(part: str, quick: bool, backend: str) -> None:
    if part == "peers":
        from . import peers

        peers.run(quick, backend)
    elif part == "memory":
        from . import memory

        memory.run(quick)
    elif part == "drivers":
        from . import drivers

        drivers.run(quick)
    elif part == "postgres":
        from . import postgres

        postgres.run(quick, backend)
    elif part == "limits":
        from . import limits

        limits.run(quick)
    elif part == "writes":
        from . import store_writes

        print("\nStore writes\n============")
        store_writes.main(["--sizes", "2000,20000", "--sequential", "200", "--repeat", "1"] if quick else [])
    elif part == "disclosures":
        from . import disclosures

        disclosures.run(quick)
    elif part == "compression":
        from . import compression

        print("\nCompression\n===========")
        compression.run(["--sizes", "2000,20000", "--writes", "100", "--compiles", "10"] if quick else [])
    elif part == "serve":
        from . import serve

        serve.run(quick)
    elif part == "cache":
        from . import prompt_cache

        prompt_cache.run(quick)
    elif part == "readers":
        from . import readers

        readers.run(quick)
    elif part == "history":
        from . import history

        history.run(quick)
    elif part == "search":
        from . import search

        search.run(quick)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument("parts", nargs="*", help=f"parts to run, of {', '.join(PARTS)}, all (default: {' '.join(DEFAULT)})")
    parser.add_argument("--quick", action="store_true", help="smaller runs: the default parts take about three and a half minutes")
    parser.add_argument("--backend", choices=("trio", "asyncio"), default="trio", help="asides' event loop in peers and postgres")
    args = parser.parse_args(argv)
    for part in args.parts:
        if part not in (*PARTS, "all"):
            parser.error(f"unknown part {part!r}; choose from {', '.join(PARTS)}, all")
    parts = list(PARTS) if "all" in args.parts else (args.parts or list(DEFAULT))
    started = time.perf_counter()
    print(f"asides benchmarks ({'quick' if args.quick else 'full'}): {', '.join(parts)}")
    print(machine())
    for part in dict.fromkeys(parts):
        run_part(part, args.quick, args.backend)
    print(f"\nDone in {time.perf_counter() - started:.0f} s; {machine()}")


if __name__ == "__main__":
    main()
