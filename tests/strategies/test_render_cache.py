"""An autobiographical compile that keeps its last render gives exactly what a fresh render gives.

The strategy keeps its rendered items between compiles and only appends what arrived since, while
nothing they derive from changed. Over random conversations (plain lines, tool pairs, private
lines, edits, a topic transition, each step followed by a drain), each step's compile through the manager is compared with
the compile of a strategy that has just loaded the same records (and so renders everything anew):
messages, provenance and token estimate are the same.
"""

from __future__ import annotations

import itertools
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import AutobiographicalStrategy, KnowledgeStrategy, open_runtime, text, tool_result, tool_use
from tests.helpers import sibling_store
from tests.strategies.test_autobiographical import BIG, fake_model, tok

_EXAMPLES = itertools.count()

STEP = st.one_of(
    st.tuples(st.just("text"), st.sampled_from(["user", "assistant", "bob"]), st.integers(1, 30), st.booleans()),
    st.tuples(st.just("tool"), st.just("assistant"), st.integers(1, 20), st.just(False)),
    st.tuples(st.just("edit"), st.just(""), st.integers(0, 40), st.just(False)),
    st.tuples(st.just("reset"), st.just(""), st.just(0), st.just(False)),
)


@st.composite
def scenarios(draw: Any) -> tuple[dict[str, Any], list[tuple[str, str, int, bool]]]:
    options = {
        "cls": draw(st.sampled_from([AutobiographicalStrategy, KnowledgeStrategy])),
        "target_chunk_tokens": draw(st.integers(5, 60)),
        "head_window_tokens": draw(st.sampled_from([0, 10, 40])),
        "recent_window_tokens": draw(st.sampled_from([0, 20, 60])),
        "holdback_chunks": draw(st.integers(0, 1)),
    }
    return options, draw(st.lists(STEP, min_size=1, max_size=20))


def _strategy(options: dict[str, Any]) -> Any:
    cls = options["cls"]
    return cls(estimator=tok, **{k: v for k, v in options.items() if k != "cls"})


async def _scenario(path: str, scenario: Any) -> None:
    options, steps = scenario
    async with open_runtime(path) as rt:
        manager = await rt.open_manager("agents/a", strategy=_strategy(options), model=fake_model(), view_reader="ann")
        written: list[str] = []
        for index, (kind, who, size, private) in enumerate(steps):
            if kind == "text":
                audience = ["ann"] if private and index % 2 else (["bob"] if private else None)
                message = await manager.add_message(who, [text(f"m{index}:" + "x" * size, audience=audience)])
                written.append(message.id)
            elif kind == "tool":
                await manager.add_message("assistant", [tool_use(f"t{index}", "probe", {"cost": size})])
                await manager.add_message("user", [tool_result(f"t{index}", "r" * size)])
            elif kind == "edit" and written:
                await manager.edit_message(written[size % len(written)], [text(f"edited at {index}")])
            elif kind == "reset":
                await manager.reset_head_window("moving on")
            await manager.drain()  # no compression may land between the compiles compared
            kept = await manager.preview_context(**BIG)
            again = await manager.preview_context(**BIG)
            await manager.set_strategy(_strategy(options))  # loads the records: renders anew
            fresh = await manager.preview_context(**BIG)
            for other in (again, fresh):
                assert (kept.messages, kept.provenance.entries, kept.token_estimate) == (
                    other.messages,
                    other.provenance.entries,
                    other.token_estimate,
                ), f"step {index} ({kind})"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(scenarios())
def test_a_kept_render_equals_a_fresh_one(store_path: str, scenario: Any) -> None:
    trio.run(_scenario, sibling_store(store_path, f"r{next(_EXAMPLES)}"), scenario)
