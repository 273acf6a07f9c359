"""The pytest plugin of ``asides.testing``: fixtures for testing a host.

Load it in one of three ways (installing asides alone changes no test run):

- ``pytest -p asides.testing.pytest_plugin`` on the command line (or in ``addopts``);
- ``pytest_plugins = ["asides.testing.pytest_plugin"]`` in the root ``conftest.py``;
- ``asides_fixtures = true`` in the pytest configuration (``[tool.pytest.ini_options]`` in
  ``pyproject.toml``, or ``pytest.ini``), which the ``asides`` entry point reads.

Fixtures:

- ``asides_store_path``: a path for a new store file in the test's ``tmp_path``;
- ``asides_runtime``: a runtime (:func:`~asides.testing.open_test_runtime`) on that path, closed
  when the test ends;
- ``scripted_model``: a factory of :class:`~asides.testing.ScriptedModel`; when the test ends,
  it fails the test if a model it made was asked for an answer it did not have.

``asides_runtime`` is an async fixture: it runs under pytest-trio (Trio tests) and under anyio's
pytest plugin (tests marked ``anyio``, on the backend of the ``anyio_backend`` fixture, asyncio
included). For simulated time under pytest-trio, also take pytest-trio's ``autojump_clock``
fixture in the test.

Both loops in one project (docs/testing.md): with ``trio_mode = true`` pytest-trio marks every
async test ``trio``, those marked ``anyio`` too, so such a test's body would run under Trio
while anyio set its ``asides_runtime`` up on asyncio (``RuntimeError: no running event loop``).
On a test that uses these fixtures, an explicit ``anyio`` mark therefore wins over trio mode's
automatic one: the plugin takes the automatic ``trio`` mark off, and anyio runs the test and its
fixtures on the test's ``anyio_backend``. A test marked both ``trio`` and ``anyio`` by hand is
refused, in one line saying which mark to keep.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ..actors._runtime import Runtime
from ._answers import Answer, Respond
from ._runtime import open_test_runtime
from ._scripted import ScriptedModel

__all__ = ["ScriptedModelFactory", "asides_runtime", "asides_store_path", "scripted_model", "pytest_collection_modifyitems"]

#: The fixtures this plugin gives; a test that takes one of them is this plugin's concern.
FIXTURES = ("asides_runtime", "asides_store_path", "scripted_model")


def _automatic_trio_mark(mark: pytest.Mark) -> bool:
    """Whether ``mark`` is the ``trio`` mark pytest-trio's trio mode adds to every async test
    (``pytest.mark.trio(run=...)``), not one written by hand."""
    return mark.name == "trio" and not mark.args and set(mark.kwargs) == {"run"}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``trio_mode = true``, let an explicit ``anyio`` mark win over trio mode's automatic
    ``trio`` mark on the tests that use these fixtures (see the module docstring); refuse a test
    marked both by hand. Runs after pytest-trio's own hook, which adds the automatic marks."""
    try:
        trio_mode = bool(config.getini("trio_mode"))
    except ValueError:  # pytest-trio is not installed: no automatic marks
        trio_mode = False
    for item in items:
        if item.get_closest_marker("anyio") is None or not any(name in getattr(item, "fixturenames", ()) for name in FIXTURES):
            continue
        automatic = [m for m in item.own_markers if trio_mode and _automatic_trio_mark(m)]
        by_hand = [m for m in item.iter_markers("trio") if all(m is not a for a in automatic)]
        if by_hand:
            raise pytest.UsageError(
                f"{item.nodeid} is marked both trio and anyio: keep pytest.mark.trio to run it on Trio, or "
                "pytest.mark.anyio (with an anyio_backend fixture) to run it on that backend"
            )
        if automatic:
            item.own_markers[:] = [m for m in item.own_markers if all(m is not a for a in automatic)]


class ScriptedModelFactory:
    """Makes :class:`~asides.testing.ScriptedModel` s for one test (the ``scripted_model``
    fixture) and checks, when the test ends, that none ran dry."""

    def __init__(self) -> None:
        self.made: list[ScriptedModel] = []

    def __call__(self, *answers: Answer, respond: Respond | None = None, name: str | None = None) -> ScriptedModel:
        """A new ``ScriptedModel(*answers, respond=respond)``, named ``scripted-<n>`` unless named."""
        model = ScriptedModel(*answers, respond=respond, name=name or f"scripted-{len(self.made) + 1}")
        self.made.append(model)
        return model

    def check(self) -> None:
        """Raise the first ``ScriptExhaustedError`` any model made here raised."""
        for model in self.made:
            model.check()


@pytest.fixture
def asides_store_path(tmp_path: Path) -> str:
    """A path for a new store file (it does not exist yet) in the test's temporary folder."""
    return str(tmp_path / "asides.db")


@pytest.fixture
async def asides_runtime(asides_store_path: str) -> AsyncIterator[Runtime]:
    """A runtime on ``asides_store_path``, open for the test and closed after it."""
    async with open_test_runtime(asides_store_path) as runtime:
        yield runtime


@pytest.fixture
def scripted_model() -> Iterator[ScriptedModelFactory]:
    """A factory: ``scripted_model("answer 1", "answer 2", respond=...)`` makes a ScriptedModel;
    the test fails at teardown if any of them was asked for an answer it did not have."""
    factory = ScriptedModelFactory()
    yield factory
    factory.check()
