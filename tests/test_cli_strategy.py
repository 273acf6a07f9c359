"""``asides inspect`` and ``asides compile`` tell the truth about a namespace's strategy (issue 21,
item 2): what set_strategy and derive record (the strategy's name and options) is what they show
and rebuild; a strategy that was not recorded (an open records nothing: SPEC 3.3) is shown as
inferred, and compile warns that its preview may differ; a budget the live compile refuses is
refused. Stores are files, built with ``trio.run``; ``main`` runs its own ``trio.run``."""

from __future__ import annotations

import json

import pytest
import trio

from asides import (
    AutobiographicalStrategy,
    KnowledgeStrategy,
    OverBudgetError,
    PassthroughStrategy,
    default_estimate,
    open_runtime,
    text,
)
from asides._cli._main import main


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


def test_an_open_records_nothing_and_the_cli_says_the_strategy_is_inferred(capsys, tmp_path):
    """An open writes its claim and nothing else (SPEC 3.3, seed row 70), so the strategy of a
    namespace that was only opened is inferred: inspect says so, and compile warns that the live
    compile may differ and how to choose."""
    path = str(tmp_path / "room.db")
    trio.run(lambda: _room(path, then="open"))
    ann = _inspected(capsys, path)["agents/ann"]
    assert (ann["strategy"], ann["strategy_known"], ann["strategy_options"]) == ("passthrough", "inferred", None)
    code, out, _err = run(capsys, "inspect", path)
    assert code == 0 and "passthrough (inferred)" in out
    code, out, err = run(capsys, "compile", path, "-n", "agents/ann", "--max-tokens", "5000", "--reserve", "4900")
    assert code == 0
    assert "records no strategy" in err and "the live compile may differ: pass --strategy" in err
    # Choosing the strategy gives the live compile's answer.
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
            await rt.store.set_state("main", "agents/ann/strategy", "knowledge")  # as older versions wrote it

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
