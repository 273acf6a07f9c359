"""Prompt caching: how much of each request a provider's cache could serve, asides next to a
LangChain agent with ``SummarizationMiddleware`` (issue 24, item 3).

One conversation of 600 turns (200 with ``--quick``) among three agents,
ann, bob and cleo: each turn the user says a line to the agent whose turn it is (every fourth
line private to that agent), and that agent answers. Everything is offline and deterministic.

Both sides keep the newest 12,000 tokens verbatim and summarise 12,000 tokens at a time
(:data:`ASIDES`, :data:`LANGCHAIN`).

**asides.** Each agent compiles for its reader with the autobiographical strategy (memories in
its own voice, written by ``ExtractiveModel``; drains run to the end after every turn) and sends ``to_anthropic_request(system=...,
cache=True)``: breakpoints on the system prompt, the end of the head window, the end of the
memories, the end of the previous turn and the end of the request, at most four. A request's
**cached** tokens are the longest prefix of it that equals a prefix of the same agent's previous
request ending at one of that request's breakpoints (what Anthropic's cache would serve, within
its five-minute lifetime); the tokens after that up to the request's own last breakpoint are
**written** to the cache; the rest (none, as the request's end is a breakpoint) is plain input.

**LangChain.** Three ``create_agent`` agents, each with ``SummarizationMiddleware`` (a fake chat
model that summarises offline), share one message list as LangChain's multi-agent setups do
(each agent's turn runs on the shared state and hands the state on). Each agent's model request
is compared with its previous one: the messages they share from the start are an **upper bound**
on what any cache could serve (LangChain puts no breakpoints; the bound assumes one at the end of
every request).

Tokens are estimated one way for both: a quarter of the characters of each block's (or
message's) text, tool calls included. Input cost is relative to sending every token uncached,
at Anthropic's multipliers: a cache write costs 1.25, a cache read 0.1, plain input 1.

Run: ``python -m benchmarks cache [--quick]`` (needs ``asides[langchain]``; skipped, saying so,
without it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

import attrs

WRITE, READ = 1.25, 0.1
AGENTS = ("ann", "bob", "cleo")
SYSTEM = {name: f"You are {name}, one of three planners of the Lisbon workshop. Answer briefly, in your own voice." for name in AGENTS}
GOAL = 0.90

_TOPICS = ("the venue", "the budget", "the keynote", "the schedule", "catering", "travel grants", "the recordings", "the hotel")


def user_line(turn: int) -> tuple[str, bool]:
    """The user's line at ``turn`` and whether it is private to the agent it is addressed to."""
    name = AGENTS[turn % 3]
    topic = _TOPICS[(turn * 7) % len(_TOPICS)]
    private = turn % 4 == 3
    words = (
        f"{name.capitalize()}, turn {turn}: what is new on {topic}? Keep the numbers from step {turn * 13 % 97} in mind, "
        f"check them against the sheet from {_TOPICS[(turn * 3) % len(_TOPICS)]}, and tell me what you would change first, "
        f"what it would cost, who has to agree, and by when we would know whether it worked."
    )
    return (f"(for {name} only) {words}" if private else words), private


def answer_line(name: str, turn: int) -> str:
    topic = _TOPICS[(turn * 7) % len(_TOPICS)]
    return (
        f"{name.capitalize()} on {topic}, turn {turn}: I settled the open point and checked {turn * 31 % 89} items against the sheet. "
        f"What I would change first is the order of the sessions on day {turn % 2 + 1}; it costs about {turn * 17 % 900} euros, "
        f"the organisers have to agree, and we will know within {turn % 5 + 2} days whether it worked. Next step noted."
    )


def tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)) // 4)


@attrs.define
class Tally:
    """Per side: requests, input tokens, tokens served from cache, tokens written to it."""

    requests: int = 0
    total: int = 0
    cached: int = 0
    written: int = 0
    plain: int = 0

    def add(self, total: int, cached: int, written: int) -> None:
        self.requests += 1
        self.total += total
        self.cached += cached
        self.written += written
        self.plain += total - cached - written

    @property
    def share(self) -> float:
        return self.cached / self.total if self.total else 0.0

    @property
    def cost(self) -> float:
        return (self.cached * READ + self.written * WRITE + self.plain) / self.total if self.total else 1.0


# -- asides -------------------------------------------------------------------------------------


def _blocks(request: dict[str, Any]) -> list[tuple[Any, bool]]:
    """A request's blocks in cache order (system, then messages), each with whether it is a
    breakpoint; the ``cache_control`` key itself is left out of the block's identity."""
    out: list[tuple[Any, bool]] = []
    for block in request.get("system", []):
        out.append((("system", {k: v for k, v in block.items() if k != "cache_control"}), "cache_control" in block))
    for message in request["messages"]:
        for block in message["content"]:
            out.append(((message["role"], {k: v for k, v in block.items() if k != "cache_control"}), "cache_control" in block))
    return out


def cache_use(previous: list[tuple[Any, bool]] | None, current: list[tuple[Any, bool]]) -> tuple[int, int, int]:
    """(total, cached, written) tokens of ``current`` after ``previous`` (see the module docstring)."""
    sizes = [tokens(b) for b, _ in current]
    total = sum(sizes)
    cached_blocks = 0
    if previous is not None:
        same = 0
        for (a, _), (b, _) in zip(previous, current, strict=False):
            if a != b:
                break
            same += 1
        marks = [n + 1 for n, (_, mark) in enumerate(previous) if mark and n < same]
        cached_blocks = max(marks, default=0)
    last_mark = max((n + 1 for n, (_, mark) in enumerate(current) if mark), default=0)
    cached = sum(sizes[:cached_blocks])
    written = sum(sizes[cached_blocks:last_mark]) if last_mark > cached_blocks else 0
    return total, cached, written


#: Both sides keep the newest 12,000 tokens verbatim and summarise 12,000 tokens at a time: asides
#: in chunks of that size (the strategy's other settings are its defaults), LangChain when the
#: history reaches 24,000 tokens, keeping 12,000.
ASIDES: dict[str, Any] = {"target_chunk_tokens": 12_000, "recent_window_tokens": 12_000}
LANGCHAIN: dict[str, Any] = {"trigger": ("tokens", 24_000), "keep": ("tokens", 12_000)}


async def run_asides(turns: int, config: dict[str, Any] | None = None) -> Tally:
    from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, open_runtime, text

    tally = Tally()
    async with open_runtime(model=ExtractiveModel()) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        managers = {}
        for name in AGENTS:
            strategy = AutobiographicalStrategy(**(config or ASIDES), summary_participant=name)
            managers[name] = await rt.open_manager(f"agents/{name}", strategy=strategy, view_reader=name)
        previous: dict[str, list[tuple[Any, bool]]] = {}
        for turn in range(turns):
            name = AGENTS[turn % 3]
            line, private = user_line(turn)
            await host.add_message("user", [text(line, audience=[name] if private else None)])
            manager = managers[name]
            ctx = await manager.compile(max_tokens=2**40, reserve_for_response=0)
            request = ctx.to_anthropic_request(name, system=SYSTEM[name], cache=True)
            current = _blocks(request)
            tally.add(*cache_use(previous.get(name), current))
            previous[name] = current
            await manager.add_message(name, [text(answer_line(name, turn))])
            for each in managers.values():
                await each.drain()
    return tally


# -- LangChain ----------------------------------------------------------------------------------


def _message_key(message: Any) -> Any:
    return (type(message).__name__, message.content, [(c["name"], c["args"]) for c in getattr(message, "tool_calls", []) or []])


async def run_langchain(turns: int, config: dict[str, Any] | None = None) -> Tally:
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

    from asides.integrations.langchain import ScriptedChatModel

    def summarise(messages: list[BaseMessage]) -> str:
        prompt = str(messages[-1].content)
        return "Summary of the conversation so far: " + " ".join(prompt[-6000:].split())[:1600]

    tally = Tally()
    models: dict[str, ScriptedChatModel] = {}
    agents = {}
    turn_of: dict[str, int] = {}
    for name in AGENTS:

        def reply(messages: list[BaseMessage], name: str = name) -> AIMessage:
            return AIMessage(answer_line(name, turn_of[name]), name=name)

        models[name] = ScriptedChatModel(answer=reply)
        summary = SummarizationMiddleware(ScriptedChatModel(answer=summarise), **(config or LANGCHAIN))
        agents[name] = create_agent(models[name], system_prompt=SYSTEM[name], middleware=[summary])
    shared: list[BaseMessage] = []
    previous: dict[str, list[Any]] = {}
    for turn in range(turns):
        name = AGENTS[turn % 3]
        turn_of[name] = turn
        line, _ = user_line(turn)
        shared = [*shared, HumanMessage(line)]
        result = await agents[name].ainvoke({"messages": shared})
        shared = list(result["messages"])
        request = models[name].requests[-1]
        current = [_message_key(m) for m in request]
        sizes = [tokens(k) for k in current]
        same = 0
        for a, b in zip(previous.get(name, []), current, strict=False):
            if a != b:
                break
            same += 1
        cached = sum(sizes[:same])
        tally.add(sum(sizes), cached, sum(sizes) - cached)
        previous[name] = current
    return tally


# -- the part -----------------------------------------------------------------------------------


def _row(label: str, tally: Tally) -> str:
    per = tally.total // max(1, tally.requests)
    return f"  {label:<52} {tally.requests:>5} {per:>9} {tally.share:>9.1%} {tally.cost:>9.2f}"


def report(turns: int, asides: Tally, langchain: Tally, seconds: Sequence[float]) -> list[str]:
    lines = [
        f"  {turns} turns, three agents; tokens ~ characters / 4; cost relative to no caching (write {WRITE}x, read {READ}x)",
        f"  {'':<52} {'reqs':>5} {'tokens/req':>9} {'cached':>9} {'cost':>9}",
        _row("asides autobiographical, to_anthropic(cache=True)", asides),
        _row("LangChain create_agent + SummarizationMiddleware *", langchain),
        "  * upper bound: the prefix each request shares with the agent's previous one, as if cached",
        f"  (asides {seconds[0]:.1f} s, LangChain {seconds[1]:.1f} s)",
    ]
    met = asides.share > GOAL and asides.share > langchain.share
    lines.append(
        f"  goal: over {GOAL:.0%} of input tokens from cache with asides, and more than LangChain: "
        f"{'met' if met else 'NOT met'} ({asides.share:.1%} vs {langchain.share:.1%})"
    )
    return lines


def run(quick: bool) -> None:
    turns = 200 if quick else 600
    print("\nPrompt cache\n============")
    try:
        import langchain.agents  # noqa: F401
    except ImportError:
        print("  skipped: LangChain is not installed (pip install 'asides[langchain]')")
        return
    started = time.perf_counter()
    asides = asyncio.run(run_asides(turns))
    middle = time.perf_counter()
    langchain = asyncio.run(run_langchain(turns))
    done = time.perf_counter()
    for line in report(turns, asides, langchain, (middle - started, done - middle)):
        print(line)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.prompt_cache")
    parser.add_argument("--quick", action="store_true")
    run(parser.parse_args(argv).quick)


if __name__ == "__main__":
    main()
