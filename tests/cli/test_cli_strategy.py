"""``asides inspect`` and ``asides compile`` tell the truth about a namespace's strategy (issue 21,
item 2): what an open, set_strategy and derive record (the strategy's name and options) is what
they show and rebuild; a strategy that was not recorded (an older store; the default passthrough,
which an open does not record) is shown as inferred, and compile warns that its preview may
differ; a budget the live compile refuses is refused. Stores are files, built with ``trio.run``; ``main`` runs its own ``trio.run``."""

from __future__ import annotations

import json

import pytest
import trio

from asides import AutobiographicalStrategy, KnowledgeStrategy, OverBudgetError, PassthroughStrategy, open_runtime, text
from asides._cli._main import main
from asides.lowlevel import default_estimate
from tests.helpers import writable_store


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _inspected(capsys, path: str, branch: str = "main") -> dict[str, dict]:
    code, out, err = run(capsys, "inspect", path, "--json")
    assert code == 0, err
    (found,) = [b for b in json.loads(out)["branches"] if b["name"] == branch]
    return {ns["namespace"]: ns for ns in found["namespaces"]}


async def _room(path: str, *, then: str) -> None:
    """Five messages in ``room``; ann opened with a passthrough strategy and then moved to an
    autobiographical one with a 300-token recent window (``then``: "set_strategy", or "derive"
    onto branch ``alt`` with a knowledge strategy, or "open" only, with the autobiographical
    strategy from the start)."""
    small = {"recent_window_tokens": 300, "head_window_tokens": 4000}
    async with open_runtime(path) as rt:
        host = await rt.open_manager("room", strategy=PassthroughStrategy())
        first = AutobiographicalStrategy(**small) if then == "open" else PassthroughStrategy()
        ann = await rt.open_manager("agents/ann", strategy=first, view_reader="ann")
        for number in range(5):
            await host.add_message("user", [text(f"Line {number} of the room, long enough to count. " * 4)])
        if then == "set_strategy":
            await ann.set_strategy(AutobiographicalStrategy(**small))
        elif then == "derive":
            await ann.derive(branch="alt", strategy=KnowledgeStrategy(**small))
        live = ann if then != "derive" else None
        if live is not None:
            with pytest.raises(OverBudgetError):  # the premise: the live compile refuses this budget
                await live.compile(max_tokens=5000, reserve_for_response=4900)


@pytest.fixture
def moved(tmp_path) -> str:
    path = str(tmp_path / "room.db")
    trio.run(lambda: _room(path, then="set_strategy"))
    return path


def test_set_strategy_records_the_strategy_with_its_options_and_compile_rebuilds_it(capsys, moved):
    ann = _inspected(capsys, moved)["agents/ann"]
    assert (ann["strategy"], ann["strategy_known"]) == ("autobiographical", "recorded")
    assert ann["strategy_options"]["recent_window_tokens"] == 300
    assert ann["strategy_options"]["estimator"] is None

    # The live compile raised OverBudgetError for this budget: so does the preview, in one line.
    code, out, err = run(capsys, "compile", moved, "-n", "agents/ann", "--max-tokens", "5000", "--reserve", "4900")
    assert (code, out) == (1, "")
    assert "would refuse this budget (OverBudgetError)" in err and "--max-tokens 5000 less --reserve 4900" in err

    # Built with the recorded options (a 300-token recent window), a roomy compile says so, warning nothing.
    code, out, err = run(capsys, "compile", moved, "-n", "agents/ann", "--format", "json")
    assert code == 0 and err == ""
    compiled = json.loads(out)
    assert (compiled["strategy"], compiled["strategy_known"], compiled["warnings"]) == ("autobiographical", "recorded", [])


def test_derive_records_the_childs_strategy_in_the_branch_it_makes(capsys, tmp_path):
    path = str(tmp_path / "room.db")
    trio.run(lambda: _room(path, then="derive"))
    child = _inspected(capsys, path, "alt")["agents/ann"]
    assert (child["strategy"], child["strategy_known"]) == ("knowledge", "recorded")
    assert child["strategy_options"]["recent_window_tokens"] == 300
    parent = _inspected(capsys, path, "main")["agents/ann"]
    assert (parent["strategy"], parent["strategy_known"]) == ("passthrough", "inferred")


def test_an_open_records_its_strategy_and_the_preview_refuses_what_the_live_compile_refuses(capsys, tmp_path):
    """The issue's case: a namespace only opened with an autobiographical strategy (through a
    manager) shows as autobiographical, with its options, before any compression, and the
    preview of a budget the live compile refuses is refused too."""
    path = str(tmp_path / "room.db")
    trio.run(lambda: _room(path, then="open"))
    ann = _inspected(capsys, path)["agents/ann"]
    assert (ann["strategy"], ann["strategy_known"]) == ("autobiographical", "recorded")
    assert ann["strategy_options"]["recent_window_tokens"] == 300
    code, out, err = run(capsys, "compile", path, "-n", "agents/ann", "--max-tokens", "5000", "--reserve", "4900")
    assert (code, out) == (1, "")
    assert "would refuse this budget (OverBudgetError)" in err


def test_an_asides_session_records_its_strategy_at_open(capsys, tmp_path):
    pytest.importorskip("agents")
    from asides import ExtractiveModel
    from asides.integrations.openai_agents import AsidesSession

    path = str(tmp_path / "room.db")
    session = AsidesSession("workshop", path, reader="ann", strategy=KnowledgeStrategy(), model=ExtractiveModel())
    session.close()
    code, out, err = run(capsys, "inspect", path, "--json")
    assert code == 0, err
    found = [
        (ns["strategy"], ns["strategy_known"])
        for branch in json.loads(out)["branches"]
        for ns in branch["namespaces"]
        if ns.get("reader") == "ann"
    ]
    assert found == [("knowledge", "recorded")]


def test_an_open_of_the_default_passthrough_writes_nothing_but_its_claim(tmp_path):
    """SPEC 3.3 and seed row 70 for the default strategy: an open that claims nothing writes
    nothing, and a claim is one write (readers infer passthrough where nothing is recorded)."""
    path = str(tmp_path / "room.db")

    async def build() -> tuple[int, int, int]:
        async with open_runtime(path) as rt:
            start = rt.store.head("main")
            await rt.open_manager("agents/ann", strategy=PassthroughStrategy())
            unclaimed = rt.store.head("main")
            await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
            return start, unclaimed, rt.store.head("main")

    start, unclaimed, claimed = trio.run(build)
    assert (unclaimed, claimed) == (start, start + 1)


def test_a_store_with_no_strategy_record_is_shown_as_inferred_and_compile_warns(capsys, tmp_path):
    """A namespace whose strategy nothing recorded (a store written before this record, or opened
    read-only) is shown as inferred, and compile warns that the live compile may differ."""
    path = str(tmp_path / "room.db")

    async def build() -> None:
        async with open_runtime(path) as rt:
            host = await rt.open_manager("room", strategy=PassthroughStrategy())
            for number in range(5):
                await host.add_message("user", [text(f"Line {number} of the room, long enough to count. " * 4)])
            await writable_store(rt).set_state("main", "agents/ann/reader", "ann")  # a claim, as an older asides wrote it

    trio.run(build)
    ann = _inspected(capsys, path)["agents/ann"]
    assert (ann["strategy"], ann["strategy_known"], ann["strategy_options"]) == ("passthrough", "inferred", None)
    code, out, _err = run(capsys, "inspect", path)
    assert code == 0 and "passthrough (inferred)" in out
    code, out, err = run(capsys, "compile", path, "-n", "agents/ann", "--max-tokens", "5000", "--reserve", "4900")
    assert code == 0
    assert "records no strategy" in err and "the live compile may differ: pass --strategy" in err
    code, out, err = run(
        capsys, "compile", path, "-n", "agents/ann", "--max-tokens", "5000", "--reserve", "4900", "--strategy", "autobiographical"
    )
    assert code == 1 and "OverBudgetError" in err


def test_a_strategy_other_than_the_recorded_one_is_a_warned_preview(capsys, moved):
    code, out, err = run(capsys, "compile", moved, "-n", "agents/ann", "--strategy", "passthrough")
    assert code == 0 and out.startswith("# agents/ann on main, for reader 'ann' (passthrough): 5 messages")
    assert "records strategy 'autobiographical'; this preview compiles as 'passthrough' (--strategy)" in err


def test_a_recorded_custom_estimator_is_warned_about(capsys, tmp_path):
    path = str(tmp_path / "room.db")

    async def build() -> None:
        async with open_runtime(path) as rt:
            ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
            await ann.add_message("user", [text("Hello.")])
            await ann.set_strategy(AutobiographicalStrategy(estimator=lambda content: 2 * default_estimate(content)))

    trio.run(build)
    assert _inspected(capsys, path)["agents/ann"]["strategy_options"]["estimator"] == "custom"
    code, _out, err = run(capsys, "compile", path, "-n", "agents/ann")
    assert code == 0 and "counts tokens with an estimator of its own" in err


def test_a_name_only_record_of_an_older_store_is_read_with_default_options(capsys, tmp_path):
    path = str(tmp_path / "room.db")

    async def build() -> None:
        async with open_runtime(path) as rt:
            ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
            await ann.add_message("user", [text("Hello.")])
            await writable_store(rt).set_state("main", "agents/ann/strategy", "knowledge")  # as older versions wrote it

    trio.run(build)
    ann = _inspected(capsys, path)["agents/ann"]
    assert (ann["strategy"], ann["strategy_known"], ann["unreadable"]) == ("knowledge", "name only", [])
    code, _out, err = run(capsys, "compile", path, "-n", "agents/ann")
    assert code == 0 and "without its options, so this preview uses its default options" in err


def test_a_budget_that_leaves_no_room_is_refused(capsys, moved):
    """--max-tokens 500 with the default reserve of 4,000 leaves nothing for the context: refused
    as bad usage (it used to print 0 messages and exit 0)."""
    code, out, err = run(capsys, "compile", moved, "-n", "agents/ann", "--max-tokens", "500")
    assert (code, out) == (2, "")
    assert "--reserve 4000 takes all of --max-tokens 500" in err and "lower --reserve or raise --max-tokens" in err
