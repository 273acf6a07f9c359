"""Three agents of the OpenAI Agents SDK in one conversation, each with its own asides session.

ann (venue), bob (budget) and cleo (programme) are SDK ``Agent`` s run by ``Runner``. Each has an
``AsidesSession`` on the same conversation ("workshop") of one store file, with its own reader:
they share the conversation's log, and each sees only what its reader may see. The host slips
each agent a private line (``add_items(..., audience=[name])``), bob calls a function tool, and
every agent's session compresses older history into memories written in its own voice
(``AutobiographicalStrategy`` with the offline ``ExtractiveModel``).

It runs offline: each agent's model is a ``ScriptedAgentModel`` that answers from its input. At
the end it checks that no private line reached an agent it was not for: not its model's inputs,
not its session's items. Exit status 1 if one did.

    python examples/openai_agents_room.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled

from asides import AutobiographicalStrategy, ExtractiveModel
from asides.integrations.openai_agents import AsidesSession, ScriptedAgentModel

set_tracing_disabled(True)  # offline: no trace export

PRIVATE = {
    "ann": "Ann only: the hotel contact is Rita, extension 0101.",
    "bob": "Bob only: the sponsor pledged 4,000 euros, not yet announced.",
    "cleo": "Cleo only: the keynote speaker has not confirmed yet.",
}
MARKERS = {"ann": "0101", "bob": "4,000", "cleo": "not confirmed"}
ROLES = {"ann": "venue", "bob": "budget", "cleo": "programme"}
REQUESTS = [
    ("ann", "Ann, we need a venue in Lisbon for sixty people on 14 and 15 May."),
    ("bob", "Bob, what can we spend per person, catering included?"),
    ("cleo", "Cleo, draft two days of talks and workshops, please."),
    ("ann", "Ann, does the venue have a room for the workshops in parallel?"),
    ("bob", "Bob, can the budget cover a dinner on the first evening?"),
    ("cleo", "Cleo, put the keynote first thing on day one."),
    ("ann", "Ann, is there step-free access and a quiet room?"),
    ("bob", "Bob, how much margin is left for travel grants?"),
    ("cleo", "Cleo, leave the last afternoon open for unconference sessions."),
    ("ann", "Ann, please book it and send the contract to the team."),
    ("bob", "Bob, summarise the budget for the steering group."),
    ("cleo", "Cleo, share the draft programme with ann and bob."),
]


def last_user_text(items: list[Any]) -> str:
    for item in reversed(items):
        if item.get("role") == "user" and isinstance(item.get("content"), str):
            return str(item["content"])
    return ""


def replier(name: str) -> Callable[[list[Any]], str]:
    """What an agent's scripted model says: a short answer about its own topic."""
    turns = iter(range(1, 1000))

    def reply(items: list[Any]) -> str:
        asked = last_user_text(items).split(":", 1)[-1].strip()
        return f"{ROLES[name].capitalize()} update {next(turns)} from {name}: on '{asked[:48]}', done and noted."

    return reply


@function_tool
def budget_left(item: str) -> str:
    """How much of the workshop budget is left for an item."""
    return f"1,250 euros left for {item}"


def build(db: Path) -> tuple[dict[str, Agent[Any]], dict[str, ScriptedAgentModel], dict[str, AsidesSession]]:
    agents: dict[str, Agent[Any]] = {}
    models: dict[str, ScriptedAgentModel] = {}
    sessions: dict[str, AsidesSession] = {}
    for name in ROLES:
        script: list[Any] = []
        if name == "bob":  # bob's first turn calls a function tool, then answers
            script = [[ScriptedAgentModel.call("budget_left", {"item": "catering"})], "Catering: 1,250 euros left, enough for lunches."]
        models[name] = ScriptedAgentModel(replies=script, default=replier(name))
        agents[name] = Agent(name=name, instructions=f"You look after the {ROLES[name]}.", model=models[name], tools=[budget_left])
        strategy = AutobiographicalStrategy(target_chunk_tokens=80, head_window_tokens=0, recent_window_tokens=160, holdback_chunks=0)
        sessions[name] = AsidesSession("workshop", db, reader=name, strategy=strategy, model=ExtractiveModel())
    return agents, models, sessions


async def main(db: Path) -> int:
    agents, models, sessions = build(db)
    print("asides + the OpenAI Agents SDK: three agents, one conversation, private lines, memories")
    print(f"store: {db}; conversation branch: {sessions['ann'].branch}")
    for name, line in PRIVATE.items():
        await sessions[name].add_items([{"role": "user", "content": line}], audience=[name])
    for turn, (name, request) in enumerate(REQUESTS, 1):
        result = await Runner.run(agents[name], request, session=sessions[name])
        seen = len(models[name].inputs[-1])
        print(f"turn {turn:2}: {name:<4} model saw {seen:2} items -> {str(result.final_output)[:60]}")

    print()
    for name, session in sessions.items():
        await session.drain()
        items = await session.get_items()
        memories = [i for i in items if i.get("role") == "assistant" and str(i.get("content", "")).startswith("[Recall")]
        others = sum(1 for i in items if i.get("role") == "user" and str(i.get("content", "")).split(":")[0] in ROLES)
        print(
            f"{name}: {len(items)} items in view: {len(memories)} memories (assistant), then {len(items) - len(memories)} "
            f"recent items; {others} of them other agents' lines"
        )
    print()
    leaks = []
    for name, session in sessions.items():
        seen = json.dumps(models[name].inputs) + json.dumps(await session.get_items(), ensure_ascii=False)
        for owner, marker in MARKERS.items():
            if owner != name and marker in seen:
                leaks.append(f"{owner}'s private line reached {name}")
    for session in sessions.values():
        session.close()
    if leaks:
        print("LEAK: " + "; ".join(leaks))
        return 1
    print("no private line reached an agent it was not for")
    return 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        sys.exit(asyncio.run(main(Path(folder) / "room.db")))
