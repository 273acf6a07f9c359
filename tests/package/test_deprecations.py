"""What asides deprecates still works, and says so once per use (docs/api.md, "Deprecated names").

Every deprecated thing warns with an ``asides.AsidesDeprecationWarning`` (a ``DeprecationWarning``)
naming it, the version and its replacement, at the line of the code that used it, and gives what
it gave before; what the specification's section 3 puts in a layer package imports without one,
and so does the library itself.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import asides
from asides import AsidesDeprecationWarning, ModelPolicy, PassthroughStrategy, open_runtime, text

API_MD = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def documented() -> tuple[int, list[tuple[str, str, str]]]:
    """docs/api.md's "Deprecated names": how many things it says are deprecated, and each
    (module, name, home) of its lists of names a module still gives, whose home is ``home``."""
    section = API_MD.read_text().split("\n## Deprecated names\n", 1)[1].split("\n## ", 1)[0]
    total = re.search(r"Since asides 0\.2\.0, (\d+) things", section)
    assert total is not None
    names: list[tuple[str, str, str]] = []
    for bullet in section.split("\n- ")[1:]:
        listed = re.match(r"(\d+) names imported from `([\w.]+)`[^:]*: (.*)", " ".join(bullet.split()))
        if listed is None:
            continue
        count, module, rest = int(listed[1]), listed[2], listed[3]
        found = [
            (module, name, home)
            for run, home in re.findall(r"((?:`\w+`(?:, )?)+): use `([\w.]+)\.<name>`", rest)
            for name in re.findall(r"`(\w+)`", run)
        ]
        assert len(found) == count, f"{module}: docs/api.md says {count} names and lists {len(found)}"
        names += found
    return int(total[1]), names


TOTAL, DEPRECATED = documented()

LAYERS = ("asides", "asides.actors", "asides.store", "asides.strategies")


@contextmanager
def caught() -> Iterator[list[warnings.WarningMessage]]:
    """Every warning raised in the block, each one recorded however often it repeats."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield seen


def the_one_deprecation(seen: list[warnings.WarningMessage]) -> str:
    """The message of the one warning in ``seen``, which must be an ``AsidesDeprecationWarning``
    pointing at a line of this file."""
    assert [w.category for w in seen] == [AsidesDeprecationWarning], [str(w.message) for w in seen]
    assert seen[0].filename == __file__, f"the warning points at {seen[0].filename}, not the caller"
    return str(seen[0].message)


def test_docs_api_counts_what_it_lists():
    """The names a module still gives, ``Runtime.openai_session``,
    ``ModelPolicy(compression_lease=)`` (tested below), the store's four old counters
    (tests/test_statistics.py) and the two tuple uses of a ``MessagePages``
    (tests/actors/test_message_pages.py)."""
    assert len({(module, name) for module, name, _ in DEPRECATED}) == len(DEPRECATED) == TOTAL - 9
    assert {module for module, _, _ in DEPRECATED} == set(LAYERS)


@pytest.mark.parametrize(("module", "name", "home"), DEPRECATED, ids=[f"{m}.{n}" for m, n, _ in DEPRECATED])
def test_a_deprecated_name_still_gives_the_same_object_and_warns_once_naming_its_home(module, name, home):
    layer = importlib.import_module(module)
    expected = getattr(importlib.import_module(home), name)
    with caught() as seen:
        value = getattr(layer, name)
    message = the_one_deprecation(seen)
    assert value is expected
    assert message.startswith(f"{module}.{name} is deprecated since asides 0.2.0; use {home}.{name} instead"), message
    assert name not in layer.__all__, f"{module}.__all__ still lists {name}"
    assert name in importlib.import_module(home).__all__


@pytest.mark.parametrize(("module", "name", "home"), DEPRECATED, ids=[f"{m}.{n}" for m, n, _ in DEPRECATED])
def test_an_import_statement_of_a_deprecated_name_warns_once_at_its_own_line(module, name, home):
    namespace: dict[str, object] = {}
    with caught() as seen:
        exec(compile(f"from {module} import {name}", __file__, "exec"), namespace)
    message = the_one_deprecation(seen)
    assert f"use {home}.{name} instead" in message
    assert namespace[name] is getattr(importlib.import_module(home), name)


@pytest.mark.parametrize("module", LAYERS)
def test_what_a_module_still_exports_imports_without_a_warning(module):
    layer = importlib.import_module(module)
    with caught() as seen:
        for name in layer.__all__:
            getattr(layer, name)
        exec(f"from {module} import *", {})
    assert not seen, [str(w.message) for w in seen]


@pytest.mark.parametrize("module", LAYERS)
def test_a_name_no_module_ever_had_is_still_an_attribute_error(module):
    layer = importlib.import_module(module)
    with caught() as seen:
        assert not hasattr(layer, "NoSuchName")
        with pytest.raises(AttributeError, match="NoSuchName"):
            layer.NoSuchName  # noqa: B018
        with pytest.raises(ImportError, match="NoSuchName"):
            exec(f"from {module} import NoSuchName", {})
    assert not seen


def test_the_specifications_layer_names_stay_without_a_warning():
    """A sample of what SPEC section 3 puts in each layer: the API is a contract."""
    kept = {
        "asides.store": ["TextBlock", "ContentBlock", "text", "tool_result", "block_from_json", "content_to_json", "Message"],
        "asides.actors": ["open_runtime", "Runtime", "ContextManager", "BranchInfo", "Injection", "StoreLockedError", "ModelError"],
        "asides.strategies": ["ContextStrategy", "StrategyContext", "Selection", "Summary", "Usage", "ExtractiveModel"],
    }
    with caught() as seen:
        for module, names in kept.items():
            for name in names:
                assert name in importlib.import_module(module).__all__, f"{module}.{name}"
    assert not seen


def test_the_warning_is_a_deprecation_warning_at_home_in_asides():
    assert issubclass(AsidesDeprecationWarning, DeprecationWarning)
    assert "AsidesDeprecationWarning" in asides.__all__
    assert AsidesDeprecationWarning.__module__ == "asides"


def test_the_library_imports_without_a_deprecation_warning():
    code = "import asides; import asides.actors, asides.store, asides.strategies, asides.lowlevel, asides.testing, asides.integrations"
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_deprecated_import_is_an_error_where_deprecations_are():
    """``-W error::DeprecationWarning`` turns an old import into an error that names its home."""
    code = "from asides.store import open_store"
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "asides.store.open_store is deprecated since asides 0.2.0; use asides.lowlevel.open_store instead" in done.stderr


def test_the_compression_lease_option_is_accepted_and_warns_that_it_has_no_effect():
    with caught() as seen:
        policy = ModelPolicy(compression_lease=90.0)
    message = the_one_deprecation(seen)
    assert message.startswith("asides.ModelPolicy.compression_lease is deprecated since asides 0.2.0 with no replacement")
    assert "no effect" in message
    assert policy.compression_lease == 90.0 and policy.lease_retry == ModelPolicy().lease_retry
    with caught() as seen:
        ModelPolicy(request_timeout=5.0)
    assert not seen


async def test_runtime_openai_session_still_works_and_warns_once(store_path):
    """``Runtime.openai_session`` gives what ``AsidesSession.bound_to`` gives, and names it."""
    pytest.importorskip("agents")
    from asides.integrations.openai_agents import AsidesSession

    async with open_runtime(store_path) as rt:
        with caught() as seen:
            old = await rt.openai_session("room", reader="ann", private_tool_calls=False)
        message = the_one_deprecation(seen)
        assert message.startswith("asides.Runtime.openai_session is deprecated since asides 0.2.0; ")
        assert "use asides.integrations.openai_agents.AsidesSession.bound_to(runtime, session_id, ...) instead" in message
        assert isinstance(old, AsidesSession) and old.private_tool_calls is False
        new = await AsidesSession.bound_to(rt, "room", reader="bob")
        await old.add_items([{"role": "user", "content": "Hello from the old entry point."}])
        assert await new.get_items() == [{"role": "user", "content": "Hello from the old entry point."}]
        assert old.branch == new.branch
        host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=old.branch)
        await host.add_message("user", [text("And from the host.")])
        assert len(await old.get_items()) == 2
        old.close()
        new.close()
