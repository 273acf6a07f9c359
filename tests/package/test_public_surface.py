"""The public surface (docs/api.md): every public name has one public home, which its
``__module__`` names; the layer packages keep the names SPEC section 3 gives them, as the same
objects; ``Runtime`` and ``ContextManager`` carry only their documented API; the runtime knows no
integration; ``NoBackgroundWork`` is a capability the runtime asks, not a base class."""

from __future__ import annotations

import importlib
import inspect
import pickle
import sys
import types

import pytest
import trio
import trio.testing

import asides
import asides.lowlevel
from asides import ExtractiveModel, Message, open_runtime, text
from asides.lowlevel import NoBackgroundWork, Selection, SelectOptions, StrategyContext

SUBPACKAGES = ("asides.actors", "asides.store", "asides.strategies")

#: Every public home, and the modules that only re-export names whose home is elsewhere.
HOMES = (
    "asides",
    "asides.lowlevel",
    "asides.testing",
    "asides.integrations",
    "asides.integrations.openai_agents",
    "asides.integrations.langchain",
    "asides.integrations.pydantic_ai",
    "asides.integrations.adk",
)

#: The documented API of the two handles (SPEC 3.2, README, docs/api.md), and nothing else.
RUNTIME_API = {
    "attachment",
    "compile_records",
    "disclosures",
    "disclosures_to",
    "enforce_retention",
    "erase",
    "erase_participant",
    "erasures",
    "integration_records",
    "lease_holder",
    "list_branches",
    "manager",
    "model",
    "model_policy",
    "open_manager",
    "openai_session",
    "recorded_strategy",
    "records_disclosures",
    "reopen_derived",
    "running_actors",
    "start_soon",
    "statistics",
    "store",
    "tombstone",
}
MANAGER_API = {
    "aclose",
    "add_message",
    "append_context_entry",
    "branch",
    "closed",
    "compile",
    "derivation",
    "derive",
    "drain",
    "edit_message",
    "fork",
    "get_all_messages",
    "get_context_entries",
    "get_message",
    "get_summaries_in_range",
    "get_summary",
    "is_ready",
    "model",
    "namespace",
    "pending_work",
    "preview_context",
    "reset_head_window",
    "search",
    "search_summaries",
    "set_strategy",
    "strategy",
    "strategy_name",
    "switch_branch",
    "tick",
    "view_message",
    "view_messages",
    "view_reader",
}


def _homed(module_name: str) -> list[tuple[str, object]]:
    module = importlib.import_module(module_name)
    return [(name, getattr(module, name)) for name in module.__all__]


def _defined_by_asides(obj: object) -> bool:
    return (isinstance(obj, type) or inspect.isfunction(obj)) and str(getattr(obj, "__module__", "")).startswith("asides")


@pytest.mark.parametrize("home", HOMES)
def test_every_public_name_names_its_public_home(home):
    for name, obj in _homed(home):
        if _defined_by_asides(obj):
            assert obj.__module__ == home, f"{home}.{name}.__module__ is {obj.__module__}"  # type: ignore[attr-defined]
            assert getattr(sys.modules[home], obj.__name__) is obj  # type: ignore[attr-defined]


def test_no_name_has_two_homes():
    seen: dict[int, str] = {}
    for home in HOMES:
        for name, obj in _homed(home):
            if _defined_by_asides(obj):
                assert id(obj) not in seen, f"{home}.{name} is also exported by {seen[id(obj)]}"
                seen[id(obj)] = home
    assert not set(asides.__all__) & set(asides.lowlevel.__all__)


def test_reprs_and_pickles_name_the_public_home():
    assert repr(asides.ContextManager) == "<class 'asides.ContextManager'>"
    assert repr(asides.lowlevel.StrategyContext) == "<class 'asides.lowlevel.StrategyContext'>"
    assert asides.ReaderClaimError.__module__ == "asides"
    block = text("hello", ["ann"])
    assert pickle.loads(pickle.dumps(block)) == block
    for cls in (asides.InvalidArgumentError, asides.ContextManager, asides.lowlevel.MessageView):
        assert pickle.loads(pickle.dumps(cls)) is cls  # found by reference, at its home


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_exports_only_names_with_a_public_home(name):
    module = importlib.import_module(name)
    for exported in module.__all__:
        obj = getattr(module, exported)
        if exported in asides.__all__:
            assert getattr(asides, exported) is obj
        else:
            assert exported in asides.lowlevel.__all__, f"{name}.{exported} has no public home"
            assert getattr(asides.lowlevel, exported) is obj


def test_every_exported_name_exists_and_none_is_private():
    for home in ("asides", "asides.lowlevel"):
        module = importlib.import_module(home)
        for exported in module.__all__:
            assert hasattr(module, exported), exported
            assert not exported.startswith("_") or exported == "__version__"


@pytest.mark.parametrize(
    ("name", "names"),
    [
        ("asides.actors", ["open_runtime", "Runtime", "ContextManager", "CompiledContext", "Provenance", "ReaderClaimError"]),
        ("asides.store", ["TextBlock", "text", "Message", "block_from_json", "content_for_reader", "MalformedContentError"]),
        ("asides.strategies", ["ContextStrategy", "PassthroughStrategy", "AutobiographicalStrategy", "ExtractiveModel", "Model"]),
    ],
)
def test_the_contract_names_stay_where_the_spec_puts_them(name, names):
    module = importlib.import_module(name)
    for contract in names:
        assert contract in module.__all__, f"{contract} missing from {name}"


def test_every_error_the_api_raises_on_purpose_is_an_asides_error():
    errors = [getattr(asides, n) for n in asides.__all__ if n.endswith("Error") and isinstance(getattr(asides, n), type)]
    assert errors
    for error in errors:
        assert issubclass(error, asides.AsidesError), error


def _public_members(cls: type) -> dict[str, object]:
    return {name: inspect.getattr_static(cls, name) for name in dir(cls) if not name.startswith("_")}


def _doc(member: object) -> str | None:
    if isinstance(member, (staticmethod, classmethod)):
        member = member.__func__
    return inspect.getdoc(member) if isinstance(member, (property, types.FunctionType)) else None


@pytest.mark.parametrize(("cls", "api"), [(asides.Runtime, RUNTIME_API), (asides.ContextManager, MANAGER_API)])
def test_the_handles_carry_only_their_documented_api(cls, api):
    members = _public_members(cls)
    assert set(members) == api, f"undocumented: {sorted(set(members) - api)}; missing: {sorted(api - set(members))}"
    for name, member in members.items():
        assert _doc(member), f"{cls.__name__}.{name} has no docstring"


def test_the_manager_is_one_class_with_no_base_to_share_private_parts_with():
    """Issue 20, item 3: a thin handle over part objects, not one class spread over mixins."""
    assert asides.ContextManager.__mro__ == (asides.ContextManager, object)


async def test_open_handles_hold_no_public_attribute_beyond_their_api(store_path):
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/ann", strategy=asides.PassthroughStrategy(), view_reader="ann")
        assert not [k for k in vars(rt) if not k.startswith("_")]
        assert not [k for k in vars(manager) if not k.startswith("_")] if hasattr(manager, "__dict__") else True
        assert not hasattr(rt, "integrations"), "the runtime knows no integration"
        assert not hasattr(rt, "spawn") and not hasattr(rt, "actor")


async def test_an_attachment_is_one_object_per_runtime_made_on_first_ask(store_path):
    class Table:
        def __init__(self) -> None:
            self.rows: list[str] = []

    async with open_runtime(store_path) as rt, open_runtime(":memory:") as other:
        first = rt.attachment(Table)
        first.rows.append("kept")
        assert rt.attachment(Table) is first and first.rows == ["kept"]
        assert other.attachment(Table) is not first
        with pytest.raises(asides.ArgumentTypeError, match="cls"):
            rt.attachment("Table")  # type: ignore[arg-type]


def test_the_runtime_module_does_not_import_an_integration():
    code = (
        "import sys; import asides; "
        "assert not [m for m in sys.modules if m.startswith('asides.integrations.openai_agents')], 'imported at asides import'"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


class _Counting:
    """A strategy whose ``tick`` counts the calls and that is never ready: a drain would call it."""

    name = "counting"
    marks_compression_reads = True

    def __init__(self) -> None:
        self.ticks = 0
        self.ticked = trio.Event()

    async def initialize(self, ctx: StrategyContext) -> None:
        return None

    async def on_new_message(self, message: Message, ctx: StrategyContext) -> None:
        return None

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        return Selection()

    async def tick(self, ctx: StrategyContext) -> bool:
        self.ticks += 1
        self.ticked.set()
        await trio.sleep_forever()  # one unit is enough to see: it never ends
        return False

    def is_ready(self) -> bool:
        return False


class _SaysNone(_Counting):
    has_background_work = False


class _Subclassed(NoBackgroundWork, _Counting):
    """A user's strategy written the old way: it subclasses NoBackgroundWork."""

    def is_ready(self) -> bool:
        return False


@pytest.mark.parametrize("strategy_class", [_SaysNone, _Subclassed])
async def test_no_drain_runs_for_a_strategy_that_says_it_has_no_background_work(store_path, strategy_class):
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        quiet = strategy_class()
        manager = await rt.open_manager("agents/quiet", strategy=quiet)
        # A strategy that says nothing of it gets a drain: once that drain has called its tick,
        # the quiet one's drain, had it one, would have been started too (it was opened first).
        busy = _Counting()
        other = await rt.open_manager("agents/busy", strategy=busy)
        await manager.add_message("user", [text("hello")])
        with trio.fail_after(30):
            await busy.ticked.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert quiet.ticks == 0 and busy.ticks == 1
        await other.aclose()
        await manager.aclose()


def test_summary_has_one_home_and_its_old_imports_work():
    from asides.strategies._autobiographical import Summary as old
    from asides.strategies._autobiographical.records import Summary as older

    assert asides.Summary is old is older
    assert asides.Summary.__module__ == "asides"
