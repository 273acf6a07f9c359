"""A long-running host: three agents take turns in one shared conversation, compressing as they go.

The host writes each incoming line once, through its own manager (namespace ``host``, no
reader); every agent's strategy hears of it (SPEC 3.3.1). Three agents, ann, bob and cleo, each
have a manager in a namespace of their own (``agents/<name>``), compiling for their own reader
with an ``AutobiographicalStrategy`` whose windows are small, so older stretches become memories.
Some incoming lines are meant for one or two agents only (a block with an ``audience``).

Each turn the host writes a line, then the agent whose turn it is compiles its context and
answers; the answer goes into the shared log. Compression runs in the background: the runtime
starts a drain whenever an agent's strategy has work, and the loop never waits for one. The host
prints a line per turn (who spoke, the compile's size, each agent's pending work). At the end
it waits for every drain, prints each agent's memories by level and checks that no private line
reached a compile, a memory or a model request of an agent it was not for.

Answers: with ``ANTHROPIC_API_KEY`` set, ``AnthropicModel`` answers from the compile and writes
the memories (needs ``pip install 'asides[anthropic]'``). Without it, everything is offline and
deterministic: the agent's answer quotes the newest line of its compile, and the
``ExtractiveModel`` writes the memories. The conversation and the final counts are the same on
every run; the per-turn compile sizes and pending work show how far the background drains had
got at that moment, which can differ by a unit or so between runs.

A host policy worth copying: an answer to a line meant for some readers only is itself meant for
those readers only (the host looks the line up through the compile's provenance).

Run it from the repository root: ``python examples/multi_agent_host.py [--turns N] [--store
PATH]``. By default it uses a temporary store file; ``--store PATH`` keeps the store, for
``asides inspect PATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

# Run from a checkout without installing: put the repository root on the path.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import trio  # noqa: E402

from asides.actors import CompiledMessage, OverBudgetError, open_runtime  # noqa: E402
from asides.store import TextBlock, content_for_reader, content_to_json, text  # noqa: E402
from asides.strategies import (  # noqa: E402
    AutobiographicalStrategy,
    CompletionRequest,
    ExtractiveModel,
    PassthroughStrategy,
    completion_text,
)

AGENTS = ("ann", "bob", "cleo")

# What the user says at turn t: LINES[t % len(LINES)], addressed to the agent whose turn it is.
# An audience makes the line private to those agents; its text then starts with a unique marker.
LINES = [
    (None, "Ann, where do we stand on the venue for the Lisbon workshop?"),
    (None, "Bob, how does the budget look with sixty people?"),
    (("cleo",), "Cleo, keep it quiet: the keynote from Oslo may cancel, so keep a reserve talk ready."),
    (("ann",), "Ann, the hotel gives us a discount if you ask for Rita; do not quote the rate."),
    (None, "Bob, can we afford recording the talks in the main room?"),
    (("bob", "cleo"), "Bob and Cleo: one grant speaker needs her train ticket paid in advance."),
    (None, "Ann, is the venue step-free, with a lift and a hearing loop?"),
    (("bob",), "Bob, between us: the hard ceiling for the whole event is 48,000 euros."),
    (None, "Cleo, how many talks came in through the call for papers?"),
    (("ann", "cleo"), "Ann and Cleo: the projector in the main room is flaky until the 10th."),
    (None, "Bob, what ticket price do you suggest for students?"),
    (None, "Cleo, please draft the schedule for both days, with long breaks."),
]

COMPILE = {"max_tokens": 2_000, "reserve_for_response": 300}


def strategy(name: str) -> AutobiographicalStrategy:
    # Small windows, so that a conversation of this size is compressed (SPEC C3); memories are
    # written in the agent's own voice.
    return AutobiographicalStrategy(
        target_chunk_tokens=150,
        head_window_tokens=150,
        recent_window_tokens=300,
        summary_target_tokens=40,
        summary_participant=name,
    )


def line_for(turn: int) -> tuple[tuple[str, ...] | None, str]:
    audience, words = LINES[turn % len(LINES)]
    if audience is None:
        return None, words
    return audience, f"PRIVATE[{'+'.join(audience)}#{turn}] {words}"


def plain(content) -> str:
    return " ".join(b.text for b in content if isinstance(b, TextBlock))


def first_sentence(words: str, limit: int = 70) -> str:
    words = " ".join(words.split())
    cut = min((i for i in (words.find(". "), words.find("? "), words.find("; ")) if i > 0), default=len(words))
    words = words[: cut + 1].strip()
    return words if len(words) <= limit else words[: limit - 1] + "…"


class Recording:
    """A model that remembers every request it was sent (for the leak check)."""

    def __init__(self, model) -> None:
        self.model = model
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest):
        self.requests.append(request)
        return await self.model.complete(request)


async def answer(name: str, compiled, online) -> str:
    """The agent's answer to its compile."""
    if online is None:
        newest = compiled.messages[-1]
        quote = first_sentence(plain(newest.content))
        return f"{name.capitalize()} here. On {newest.participant}'s “{quote}”: noted, I am on it."
    messages = [CompiledMessage("assistant" if m.participant == name else m.participant, m.content) for m in compiled.messages]
    messages.append(CompiledMessage("user", (TextBlock(f"(It is your turn, {name}.)"),)))
    request = CompletionRequest(
        messages,
        system=(
            f"You are {name}, one of three agents (ann: venue, bob: budget, cleo: programme) helping a user plan "
            "a workshop. Answer in one or two short sentences. Never repeat a line marked PRIVATE."
        ),
        max_tokens=200,
    )
    return completion_text(await online.complete(request)) or "(no answer)"


def reply_audience(name: str, agent, compiled) -> tuple[str, ...] | None:
    """The host policy: an answer to a private line is for that line's readers only. The newest
    compiled message's provenance names the stored message; its blocks carry the audiences (A5)."""
    source = compiled.provenance.entries[-1]
    if source.kind != "raw":
        return None
    readers = None
    for message_id in source.message_ids:
        for block in agent.get_message(message_id).content:
            audience = getattr(block, "audience", None)
            if audience is not None and name in audience:
                readers = set(audience) if readers is None else readers & set(audience)
    return None if readers is None else tuple(sorted(readers))


async def main(path: str, turns: int) -> int:
    online = None
    if os.environ.get("ANTHROPIC_API_KEY"):
        from asides.strategies._models import AnthropicModel

        online = AnthropicModel()
        print("answers and memories: AnthropicModel (ANTHROPIC_API_KEY is set)")
    else:
        print("answers: offline, quoting the newest line of each compile; memories: ExtractiveModel")
    models = {name: Recording(online or ExtractiveModel()) for name in AGENTS}
    seen: dict[str, list[str]] = {name: [] for name in AGENTS}  # everything each agent was given
    notes: list[tuple[str, tuple[str, ...]]] = []  # (marker, audience) of every private line

    async with open_runtime(path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        agents = {
            name: await rt.open_manager(f"agents/{name}", strategy=strategy(name), view_reader=name, model=models[name])
            for name in AGENTS
        }

        for turn in range(turns):
            speaker = AGENTS[turn % len(AGENTS)]
            audience, words = line_for(turn)
            if audience is not None:
                notes.append((words.split(" ", 1)[0], audience))
            await host.add_message("user", [text(words, audience)])

            agent = agents[speaker]
            try:
                compiled = await agent.compile(**COMPILE)
            except OverBudgetError as error:  # compression fell behind: let it catch up once
                print(f"turn {turn:2}: {speaker} waits for compression ({error.needed} tokens > {error.budget})")
                await agent.drain()
                compiled = await agent.compile(**COMPILE)
            seen[speaker].append(json.dumps([content_to_json(m.content) for m in compiled.messages]))
            said = await answer(speaker, compiled, online)
            private = reply_audience(speaker, agent, compiled)
            await agent.add_message(speaker, [text(said, private)])

            pending = "; ".join(f"{n} {agents[n].pending_work() or 'ready'}" for n in AGENTS)
            to = f"to {'+'.join(private)} only" if private else "to all"
            print(
                f"turn {turn:2}: {speaker:<4} compiled {len(compiled.messages):2} msgs ~{compiled.token_estimate:4} tok,"
                f" answered {to:<16} | pending: {pending}"
            )

        print(f"{turns} turns written; waiting for the background drains to finish")
        for name, agent in agents.items():
            await agent.drain()
            compiled = await agent.compile(**COMPILE)
            seen[name].append(json.dumps([content_to_json(m.content) for m in compiled.messages]))
            summaries = agent.get_summaries_in_range()
            levels = ", ".join(f"L{k} ×{sum(1 for s in summaries if s.level == k)}" for k in (1, 2, 3))
            visible = sum(1 for m in host.get_all_messages() if content_for_reader(m.content, name))
            print(
                f"{name}: sees {visible}/{len(host.get_all_messages())} messages; memories {levels}; "
                f"{len(models[name].requests)} model requests; final compile {len(compiled.messages)} msgs "
                f"~{compiled.token_estimate} tok"
            )
            seen[name].extend(s.text for s in summaries)
        host_compile = await host.compile(max_tokens=1_000_000, reserve_for_response=0)

    # The check: each private marker, in everything given to an agent it was not for.
    for name in AGENTS:
        for request in models[name].requests:
            seen[name].append(request.system or "")
            seen[name].extend(json.dumps(content_to_json(m.content)) for m in request.messages)
    seen["the host (no reader)"] = [json.dumps([content_to_json(m.content) for m in host_compile.messages])]
    leaks = [
        f"LEAK: {marker} (for {', '.join(audience)}) reached {reader}"
        for marker, audience in notes
        for reader, haystack in seen.items()
        if reader not in audience and any(marker in hay for hay in haystack)
    ]
    for leak in leaks:
        print(leak)
    if online is not None:
        await online.aclose()
    if leaks:
        return 1
    print(
        f"no leak: none of the {len(notes)} private lines reached the compiles, memories or model requests "
        "of an agent it was not for, nor the host's compile"
    )
    return 0


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=60, help="how many turns the agents take (default 60)")
    parser.add_argument("--store", metavar="PATH", help="write the store here and keep it (default: a temporary file)")
    args = parser.parse_args()
    if args.store is not None and os.path.exists(args.store):
        parser.error(f"{args.store!r} already exists; give a path for a new store")
    with tempfile.TemporaryDirectory() as directory:
        path = args.store or os.path.join(directory, "host.db")
        print(f"store: {path}{' (kept)' if args.store else ' (temporary)'}")
        return trio.run(main, path, args.turns)


if __name__ == "__main__":
    sys.exit(run())
