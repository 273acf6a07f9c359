"""A long-running host: three agents take turns in one shared conversation, compressing as they go.

The host writes each incoming line once, through its own manager (namespace ``host``, no
reader); every agent's strategy hears of it. Three agents, ann, bob and cleo, each
have a manager in a namespace of their own (``agents/<name>``), compiling for their own reader
with an ``AutobiographicalStrategy`` whose windows are small, so older stretches become memories.
Some incoming lines are meant for one or two agents only (a block with an ``audience``).

Each turn the host writes a line, then the agent whose turn it is compiles its context and
answers; the answer goes into the shared log. Compression runs in the background: the runtime
starts a drain whenever an agent's strategy has work, and the loop never waits for one. The host
prints a line per turn (who spoke, the compile's size, each agent's pending work). At the end
it waits for every drain, prints each agent's memories by level and checks, with
``asides.testing.LeakCheck``, that no private line reached a compile, a memory, the provenance,
the context log or a model request of an agent it was not for, nor the host's compile.

Answers: with ``ANTHROPIC_API_KEY`` set, ``AnthropicModel`` answers from the compile and writes
the memories (needs ``pip install 'asides[anthropic]'``); if the API cannot be reached (no
network, a bad key), the host stops with one line saying so. With ``--offline``, or without the
key, everything is offline and
deterministic: the agent's answer quotes the newest line of its compile, and the
``ExtractiveModel`` writes the memories. The conversation and the final counts are the same on
every run; the per-turn compile sizes and pending work show how far the background drains had
got at that moment, which can differ by a unit or so between runs.

A host policy worth copying: an answer to a line meant for some readers only is itself meant for
those readers only (the host looks the line up through the compile's provenance).

Run it: ``python examples/multi_agent_host.py [--turns N] [--store PATH] [--offline]``. By
default it uses a temporary store file; ``--store PATH`` keeps the store, for
``asides inspect PATH``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import trio

from asides import (
    AutobiographicalStrategy,
    CompiledMessage,
    CompletionRequest,
    ExtractiveModel,
    Model,
    OverBudgetError,
    PassthroughStrategy,
    TextBlock,
    completion_text,
    content_for_reader,
    open_runtime,
    text,
)
from asides.testing import LeakCheck, RecordingModel

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
    # Small windows, so that a conversation of this size is compressed; memories are
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


class ModelUnavailable(Exception):
    """The online model could not answer; the host stops with one line."""


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
    try:
        completion = await online.complete(request)
    except Exception as error:  # the provider's own errors: no network, a bad key, an outage
        reason = str(error).splitlines()[0] if str(error) else ""
        raise ModelUnavailable(f"{type(error).__name__}{': ' + reason if reason else ''}") from error
    return completion_text(completion) or "(no answer)"


def reply_audience(name: str, agent, compiled) -> tuple[str, ...] | None:
    """The host policy: an answer to a private line is for that line's readers only. The newest
    compiled message's provenance names the stored message; its blocks carry the audiences."""
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


def online_model() -> Model | None:
    """``AnthropicModel`` when ``ANTHROPIC_API_KEY`` is set, else ``None`` (offline)."""
    if not os.environ.get("ANTHROPIC_API_KEY"):
        return None
    from asides import AnthropicModel

    return AnthropicModel()


async def main(path: str, turns: int, online: Model | None) -> int:
    if online is not None:
        print("answers and memories: AnthropicModel (ANTHROPIC_API_KEY is set)")
    else:
        print("answers: offline, quoting the newest line of each compile; memories: ExtractiveModel")
    # Each agent's model records what it is asked, so the leak check can search its requests.
    models = {name: RecordingModel(online or ExtractiveModel(), name=name) for name in AGENTS}
    check = LeakCheck()  # every private line's marker, and the agents it is for
    private_lines = 0

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
                check.add(words.split(" ", 1)[0], audience)
                private_lines += 1
            await host.add_message("user", [text(words, audience)])

            agent = agents[speaker]
            try:
                compiled = await agent.compile(**COMPILE)
            except OverBudgetError as error:  # compression fell behind: let it catch up once
                print(f"turn {turn:2}: {speaker} waits for compression ({error.needed} tokens > {error.budget})")
                await agent.drain()
                compiled = await agent.compile(**COMPILE)
            check.record(speaker, compiled, where=f"compile at turn {turn}")
            said = await answer(speaker, compiled, None if online is None else models[speaker])
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
            check.record(name, compiled, where="final compile")
            summaries = agent.get_summaries_in_range()
            levels = ", ".join(f"L{k} ×{sum(1 for s in summaries if s.level == k)}" for k in (1, 2, 3))
            visible = sum(1 for m in host.get_all_messages() if content_for_reader(m.content, name))
            print(
                f"{name}: sees {visible}/{len(host.get_all_messages())} messages; memories {levels}; "
                f"{len(models[name].requests)} model requests; final compile {len(compiled.messages)} msgs "
                f"~{compiled.token_estimate} tok"
            )
        # The check: each private marker, in everything given to an agent it was not for (its
        # compiles, memories, provenance, context log and model requests), and in the host's
        # compile (no reader).
        leaks = await check.scan(host, *agents.values())

    if online is not None:
        await online.aclose()  # type: ignore[attr-defined]
    for leak in leaks:
        print(f"LEAK: {leak}")
    if leaks:
        return 1
    print(
        f"no leak: none of the {private_lines} private lines reached the compiles, memories or model requests "
        "of an agent it was not for, nor the host's compile"
    )
    return 0


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=60, help="how many turns the agents take (default 60)")
    parser.add_argument("--store", metavar="PATH", help="write the store here and keep it (default: a temporary file)")
    parser.add_argument(
        "--offline", action="store_true", help="answer and compress offline even when ANTHROPIC_API_KEY is set"
    )
    args = parser.parse_args()
    if args.store is not None and os.path.exists(args.store):
        parser.error(f"{args.store!r} already exists; give a path for a new store")
    try:
        online = None if args.offline else online_model()
    except ImportError as error:
        print(f"multi_agent_host: {error}; or run with --offline", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as directory:
        path = args.store or os.path.join(directory, "host.db")
        print(f"store: {path}{' (kept)' if args.store else ' (temporary)'}")
        try:
            return trio.run(main, path, args.turns, online)
        except (ModelUnavailable, BaseExceptionGroup) as error:
            stopped = unavailable(error)
            if stopped is None:
                raise
            print(
                f"multi_agent_host: the Anthropic API did not answer ({stopped}); check the network and "
                "ANTHROPIC_API_KEY, or run with --offline",
                file=sys.stderr,
            )
            return 1


def unavailable(error: BaseException) -> ModelUnavailable | None:
    """The ``ModelUnavailable`` that stopped the host, also from inside an exception group."""
    if isinstance(error, ModelUnavailable):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = unavailable(inner)
            if found is not None:
                return found
    return None

if __name__ == "__main__":
    sys.exit(run())
