"""The seed's sequence rules, on both backends.

SPEC 3.3 and the seed: "an open that claims nothing writes nothing", "a claim is exactly one
write", and for a host that sets no reader the branch's sequence numbers are the ones it would see
without asides' own records. Whatever strategy a manager opens with, the record of that strategy
takes no sequence of the branch (a strategy note); ``Runtime.recorded_strategy``, ``asides
inspect`` and ``asides compile`` still name the strategy from the open, across reopens, forks,
derives and ``set_strategy``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from asides import (
    AutobiographicalStrategy,
    KnowledgeStrategy,
    PassthroughStrategy,
    StrategyRecord,
    UnknownBranchError,
    WindowedPassthroughStrategy,
    open_runtime,
    text,
)
from asides._cli import main

KINDS = {
    "passthrough": PassthroughStrategy,
    "windowed-passthrough": WindowedPassthroughStrategy,
    "autobiographical": AutobiographicalStrategy,
    "knowledge": KnowledgeStrategy,
}


async def branch_rows(rt: Any, branch: str = "main") -> list[tuple[Any, ...]]:
    """The records a branch's sequence counts."""
    return [row for row in await rt.store.records() if row[1] == branch]


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_an_open_that_claims_nothing_writes_nothing_the_branch_counts(store_path, kind):
    """A manager with no reader opens with each built-in strategy: the branch's head and records
    are as they were, and the next message takes the sequence it would without the open. The
    strategy is still recorded (``recorded_strategy``), once, and a reopen writes nothing more."""
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("room", strategy=PassthroughStrategy())
        await host.add_message("user", [text("one")])
        head, before = rt.store.head("main"), await branch_rows(rt)
        await rt.open_manager("agents/a", strategy=KINDS[kind]())  # no model: no drain writes anything
        assert rt.store.head("main") == head and await branch_rows(rt) == before
        message = await host.add_message("user", [text("two")])
        assert message.sequence == head + 1, "the host sees the sequence it would without asides' open"
        recorded = rt.recorded_strategy("agents/a")
        if kind == "passthrough":
            assert recorded is None, "the default strategy needs no record"
        else:
            assert isinstance(recorded, StrategyRecord) and recorded.name == kind and recorded.options is not None
    async with open_runtime(store_path) as again:
        head, before, everything = again.store.head("main"), await branch_rows(again), await again.store.records()
        await again.open_manager("agents/a", strategy=KINDS[kind]())
        assert again.store.head("main") == head and await again.store.records() == everything, "the same strategy: nothing new"
        assert (again.recorded_strategy("agents/a") is None) == (kind == "passthrough")


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_a_readers_open_writes_exactly_its_claim(store_path, kind):
    """A reader's open takes one sequence: its claim, the reader record, and nothing else on the
    branch, whatever its strategy; the strategy is named all the same."""
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("room", strategy=PassthroughStrategy())
        await host.add_message("user", [text("one")])
        head, before = rt.store.head("main"), await branch_rows(rt)
        await rt.open_manager("agents/ann", strategy=KINDS[kind](), view_reader="ann")
        written = (await branch_rows(rt))[len(before) :]
        assert rt.store.head("main") == head + 1
        assert [(row[3], row[4], json.loads(row[5])) for row in written] == [("state", "agents/ann/reader", "ann")]
        message = await host.add_message("user", [text("two")])
        assert message.sequence == head + 2
        assert (rt.recorded_strategy("agents/ann") is None) == (kind == "passthrough")


async def test_set_strategy_forks_and_derives_see_the_strategy_in_force_where_they_are(store_path):
    """What ``recorded_strategy`` names follows the branches: a fork sees its parent's strategy
    from before the fork (not a later ``set_strategy`` on the parent), ``set_strategy`` on the
    child is the child's own, and a derived branch names the strategy it was derived with. None of
    these writes took a sequence for the strategy."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=AutobiographicalStrategy(recent_window_tokens=300))
        await ann.add_message("user", [text("one")])
        head = rt.store.head("main")
        forked = await rt.open_manager("agents/ann", strategy=AutobiographicalStrategy(recent_window_tokens=300), branch="main")
        assert rt.store.head("main") == head, "reopening the same strategy writes nothing"
        await forked.fork("side")
        await ann.set_strategy(KnowledgeStrategy())
        assert rt.store.head("main") == head, "set_strategy takes no sequence"
        main_record, side_record = rt.recorded_strategy("agents/ann"), rt.recorded_strategy("agents/ann", branch="side")
        assert main_record is not None and main_record.name == "knowledge"
        assert side_record is not None and side_record.name == "autobiographical" and side_record.options["recent_window_tokens"] == 300
        await forked.set_strategy(WindowedPassthroughStrategy())
        assert rt.recorded_strategy("agents/ann", branch="side").name == "windowed-passthrough"
        assert rt.recorded_strategy("agents/ann").name == "knowledge", "the child's change is its own"
        child = await ann.derive(branch="derived", strategy=PassthroughStrategy())
        assert rt.recorded_strategy(child.namespace, branch="derived").name == "passthrough"
        with pytest.raises(UnknownBranchError):
            rt.recorded_strategy("agents/ann", branch="nowhere")
    async with open_runtime(store_path) as again:
        assert again.recorded_strategy("agents/ann").name == "knowledge"
        assert again.recorded_strategy("agents/ann", branch="side").name == "windowed-passthrough"


def test_inspect_and_compile_name_the_strategy_of_an_open_that_claimed_nothing(store_path, capsys):
    """``asides inspect`` and ``asides compile`` name the strategy an open with no reader
    recorded, with its options, though the namespace has no record a sequence counts."""

    async def build() -> None:
        async with open_runtime(store_path) as rt:
            host = await rt.open_manager("room", strategy=PassthroughStrategy())
            await host.add_message("user", [text("Hello there.")])
            await rt.open_manager("agents/a", strategy=AutobiographicalStrategy(recent_window_tokens=300))
            assert rt.store.state_items("main", "agents/a/") == {}

    trio.run(build)
    code = main(["inspect", store_path, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (branch,) = [b for b in json.loads(out)["branches"] if b["name"] == "main"]
    found = {ns["namespace"]: ns for ns in branch["namespaces"]}
    assert (found["agents/a"]["strategy"], found["agents/a"]["strategy_known"]) == ("autobiographical", "recorded")
    assert found["agents/a"]["strategy_options"]["recent_window_tokens"] == 300
    code = main(["compile", store_path, "-n", "agents/a", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    compiled = json.loads(out)
    assert (compiled["strategy"], compiled["strategy_known"]) == ("autobiographical", "recorded")
