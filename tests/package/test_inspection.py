"""The one home of inspection (``asides._inspection``): each built-in strategy describes its own
records (``DescribesRecords``), and what ``asides inspect`` reports of a store a compressing
manager wrote matches what the manager itself says; an erasure counts the summaries it
invalidates by the rule the strategies hand the store. And the import picture: no circle among
module-level imports (nor, within one layer, among any imports), ``_serve``, ``_mcp`` and
``_inspection`` import nothing of ``_cli``, ``_inspection`` nothing of ``_serve`` or ``_mcp``,
``_cli`` the servers only when their commands run, ``store/`` nothing of ``strategies/`` or
``actors/``, and ``strategies/`` nothing of ``actors/``."""

from __future__ import annotations

import ast
import collections
import functools
import os
from collections.abc import Iterable, Iterator

import pytest

from asides import (
    AutobiographicalStrategy,
    ExtractiveModel,
    KnowledgeStrategy,
    PassthroughStrategy,
    Summary,
    WindowedPassthroughStrategy,
    open_runtime,
)
from asides._inspection._records import namespace_records, split_state_key
from asides._inspection._report import describe_store
from asides.store import text
from asides.strategies._capabilities import DescribesRecords
from tests.helpers import writable_store

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = {"target_chunk_tokens": 40, "head_window_tokens": 20, "recent_window_tokens": 60, "merge_threshold": 2}
BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}


def _lines(count: int) -> Iterator[tuple[str, str]]:
    for i in range(count):
        yield ("user", "ann", "bob")[i % 3], f"Line {i} of the shared log, about the plan. It has a second sentence."


def _levels(summaries: Iterable[Summary]) -> dict[str, int]:
    counted = collections.Counter(f"L{s.level}" for s in summaries)
    return {"L1": 0, "L2": 0, "L3": 0} | dict(counted)


def test_the_built_in_strategies_that_keep_records_describe_them():
    assert all(isinstance(s, DescribesRecords) for s in (AutobiographicalStrategy(), KnowledgeStrategy(), WindowedPassthroughStrategy()))
    assert not isinstance(PassthroughStrategy(), DescribesRecords)  # it keeps no records


@pytest.mark.parametrize("strategy", [AutobiographicalStrategy, KnowledgeStrategy], ids=["autobiographical", "knowledge"])
async def test_a_compressing_strategy_describes_the_records_it_wrote(store_path, strategy):
    """A namespace compressed by a manager (summaries at several levels, a topic transition),
    described from the store alone: the summaries are the manager's, level by level, each chunk
    has at most one level-1 summary, the head start is the transition's sequence, and nothing is
    unreadable; ``asides inspect`` reports the same counts."""
    namespace = "agents/ann"  # a namespace holding "/": its keys are cut by the strategy's records
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        manager = await rt.open_manager(namespace, strategy=strategy(**SMALL), view_reader="ann")
        for participant, line in _lines(60):
            await manager.add_message(participant, [text(line)])
        await manager.drain()
        await manager.reset_head_window("On to the venues.")
        head_start = rt.store.messages("main")[-1].sequence  # the [Topic Transition] message
        await manager.add_message("user", [text("And the venues?")])
        await manager.drain()
        summaries = manager.get_summaries_in_range()
    assert {s.level for s in summaries} >= {1, 2}, "the fixture needs merged summaries"

    async with open_runtime(store_path, read_only=True) as rt:
        records = namespace_records(writable_store(rt).model, "main", namespace)
        report = strategy().describe_records({tail: value for tail, value in records.items() if strategy().owns_record(tail)})
        described = describe_store(rt, store_path)
    assert {r.summary for r in report.summaries} == set(summaries) and len(report.summaries) == len(summaries)
    assert report.unreadable == () and report.anchor is None and report.head_start == head_start
    assert report.chunks >= sum(1 for s in summaries if s.level == 1)
    (ns,) = described["branches"][0]["namespaces"]
    assert ns["namespace"] == namespace and ns["reader"] == "ann"
    assert ns["strategy"] == strategy.name and ns["strategy_records"] == [strategy.name]
    assert ns["summaries"] == _levels(summaries)
    assert ns["chunks"] == report.chunks and ns["head_start"] == head_start and ns["unreadable"] == []


async def test_the_windowed_strategy_describes_its_anchor(store_path):
    """The anchor a windowed compile wrote is where its window starts: the first message it
    compiles."""
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("host", strategy=WindowedPassthroughStrategy())
        for participant, line in _lines(40):
            await manager.add_message(participant, [text(line)])
        compiled = await manager.compile(max_tokens=300, reserve_for_response=0)  # over budget: re-anchors
        first = rt.store.get_message("main", compiled.provenance.entries[0].message_ids[0]).sequence
    async with open_runtime(store_path, read_only=True) as rt:
        records = namespace_records(writable_store(rt).model, "main", "host")
        described = describe_store(rt, store_path)
    report = WindowedPassthroughStrategy().describe_records(records)
    assert report.anchor == first > 1 and report.unreadable == () and report.summaries == ()
    (ns,) = described["branches"][0]["namespaces"]
    assert ns["windowed_anchor"] == first and ns["strategy_records"] == ["windowed-passthrough"] and ns["unreadable"] == []


def test_a_strategy_reports_the_records_it_cannot_read_and_owns_only_its_own():
    auto, windowed = AutobiographicalStrategy(), WindowedPassthroughStrategy()
    report = auto.describe_records(
        {
            "autobiographical/summary/L1-1": {"id": "L1-1"},
            "autobiographical/chunk/5": "five",
            "autobiographical/head-start": -1,
            "autobiographical/surprise": 1,
        }
    )
    assert report.summaries == () and report.chunks == 0 and report.head_start is None
    assert report.unreadable == (
        ("autobiographical/chunk/5", "not a well-formed chunk record"),
        ("autobiographical/head-start", "not a sequence number"),
        ("autobiographical/summary/L1-1", "not a well-formed summary record"),
        ("autobiographical/surprise", "a autobiographical record asides does not know"),
    )
    assert windowed.describe_records({"windowed-passthrough/anchor": -2}).unreadable == (
        ("windowed-passthrough/anchor", "not a windowed anchor (a non-negative integer under windowed-passthrough/anchor)"),
    )
    assert auto.owns_record("autobiographical/chunk/5") and not auto.owns_record("knowledge/chunk/5")
    assert not auto.owns_record("autobiographical/a/b/c") and not auto.owns_record("autobiographical")
    assert KnowledgeStrategy().owns_record("knowledge/summary/L1-1") and windowed.owns_record("windowed-passthrough/anchor")
    # where a key could be cut more than one way, the namespace is the longest that leaves a strategy's record
    assert split_state_key("a/b/autobiographical/knowledge/x") == ("a/b/autobiographical", "knowledge/x")
    assert split_state_key("agents/ann/reader") == ("agents/ann", "reader")
    assert split_state_key("stray-key") is None and split_state_key("autobiographical/chunk/1") is None


async def test_an_erasure_counts_the_summaries_made_from_what_it_erased(store_path):
    """The store counts an erasure's invalidated summaries by the rule the strategies hand it:
    exactly the summaries (of any level) whose messages include an erased one."""
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        manager = await rt.open_manager("agents/ann", strategy=AutobiographicalStrategy(**SMALL), view_reader="ann")
        ids = [(await manager.add_message(participant, [text(line)])).id for participant, line in _lines(60)]
        await manager.drain()
        made_from = [s for s in manager.get_summaries_in_range() if ids[4] in s.message_ids]
        assert len({s.level for s in made_from}) >= 2, "the fixture needs a merged summary of the line"
        erasure = await rt.erase([ids[4]], reason="asked")
    assert erasure.summaries_invalidated == len(made_from)
    assert erasure.records_invalidated > erasure.summaries_invalidated  # its chunk record too


# -- the import picture ----------------------------------------------------------------------------

_SKIP = {"tests", "examples", "benchmarks", "docs", "build", "dist"}


def _modules() -> dict[str, tuple[str, bool]]:
    """Every module of the package ``asides`` (the repository root): name -> (file, is a package)."""
    found = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP and os.path.isfile(os.path.join(folder, d, "__init__.py")))
        for name in files:
            if name.endswith(".py"):
                parts = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].split(os.sep)
                package = parts[-1] == "__init__"
                found[".".join(["asides", *(parts[:-1] if package else parts)])] = (os.path.join(folder, name), package)
    return found


_RANK = {"module": 0, "lazy": 1, "typing": 2}


@functools.cache
def _imports() -> dict[str, dict[str, str]]:
    """module -> {imported asides module: how} where ``how`` is ``module`` (at import time),
    ``typing`` (under ``TYPE_CHECKING``) or ``lazy`` (inside a function)."""
    modules = _modules()
    out: dict[str, dict[str, str]] = {}
    for name, (path, package) in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        found: dict[str, str] = {}

        def visit(node: ast.AST, how: str, name: str = name, package: bool = package, found: dict[str, str] = found) -> None:
            for child in ast.iter_child_nodes(node):
                inner = how
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    inner = "lazy" if how == "module" else how
                elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    inner = "typing"
                if isinstance(child, ast.ImportFrom):
                    base = name.split(".") if package else name.split(".")[:-1]
                    if child.level:
                        target = ".".join([*base[: len(base) - child.level + 1], child.module or ""]).rstrip(".")
                    else:
                        target = child.module or ""
                    subs = [f"{target}.{a.name}" for a in child.names if f"{target}.{a.name}" in modules]
                    own_package = name.startswith(target + ".") and len(subs) == len(child.names)
                    targets = subs if own_package else [target, *subs]
                elif isinstance(child, ast.Import):
                    targets = [a.name for a in child.names]
                else:
                    targets = []
                for target in targets:
                    while target not in modules and "." in target:
                        target = target.rsplit(".", 1)[0]
                    if target in modules and target != name and (target not in found or _RANK[inner] < _RANK[found[target]]):
                        found[target] = inner
                visit(child, inner)

        visit(tree, "module")
        out[name] = found
    return out


def _layer(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


@pytest.mark.parametrize(
    ("kinds", "within_a_layer"),
    [({"module"}, False), ({"module", "lazy", "typing"}, True)],
    ids=["module-level-imports", "every-import-within-a-layer"],
)
def test_no_import_circle(kinds, within_a_layer):
    """No circle among the imports made when a module is imported; and within one layer
    (``strategies``, ``store``, ...) none either when imports inside functions and under
    ``TYPE_CHECKING`` count too."""
    graph = {
        name: {t for t, how in found.items() if how in kinds and (not within_a_layer or _layer(t) == _layer(name))}
        for name, found in _imports().items()
    }
    done: set[str] = set()

    def circle_from(start: str, path: list[str]) -> list[str] | None:
        for target in sorted(graph[start]):
            if target in path:
                return [*path[path.index(target) :], target]
            if target not in done:
                found = circle_from(target, [*path, target])
                if found:
                    return found
        done.add(start)
        return None

    for name in sorted(graph):
        circle = None if name in done else circle_from(name, [name])
        assert circle is None, f"an import circle: {' -> '.join(circle or [])}"


@pytest.mark.parametrize(
    ("layer", "never", "unless"),
    [
        ("_serve", {"_cli", "_mcp"}, set()),
        ("_mcp", {"_cli"}, set()),
        ("_inspection", {"_cli", "_serve", "_mcp"}, set()),
        ("_cli", {"_serve", "_mcp"}, {"lazy"}),  # the serve and mcp commands start their servers when they run
        ("store", {"strategies", "actors", "integrations", "_inspection", "_cli", "_serve", "_mcp"}, set()),
        ("strategies", {"actors", "integrations", "_inspection", "_cli", "_serve", "_mcp"}, set()),
        ("actors", {"integrations", "_inspection", "_cli", "_serve", "_mcp"}, set()),
        ("integrations", {"_inspection", "_cli", "_serve", "_mcp"}, set()),
    ],
)
def test_no_arrow_back_between_layers(layer, never, unless):
    wrong = sorted(
        f"{name} imports {target} ({how})"
        for name, found in _imports().items()
        if _layer(name) == layer
        for target, how in found.items()
        if _layer(target) in never and how not in unless
    )
    assert wrong == []
