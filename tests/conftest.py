"""Shared fixtures. Async tests run under Trio (pytest-trio, ``trio_mode = true``).

The project's own tests use the fixtures of ``asides.testing.pytest_plugin`` (loaded by
``asides_fixtures = true`` in pyproject.toml): ``asides_store_path``, ``asides_runtime``,
``scripted_model``.

``store_path`` is the store a test runs on, once per backend: every test that takes it (directly
or through another fixture) runs twice, ``[sqlite]`` on a fresh file in ``tmp_path`` (the
plugin's ``asides_store_path``) and ``[postgres]`` on a fresh schema of the session's throwaway
PostgreSQL cluster (``pg_cluster``, tests/pg_cluster.py). A test that cannot mean anything on
PostgreSQL (it corrupts a file, reads it with sqlite3, checks file modes) is marked
``@pytest.mark.sqlite_only("why")``: it is parametrised on SQLite alone. A known library bug on
PostgreSQL is ``@pytest.mark.postgres_xfail("why")``: a strict expected failure of ``[postgres]``
alone. See docs/testing.md.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from pg_cluster import pg_cluster_fixture, pg_url_fixture  # noqa: F401  (fixtures pg_cluster, pg_url for every module)

# No Hypothesis example has a deadline: the tests count work, never time it, and on a busy
# machine an example of a few milliseconds can take hundreds. A test's own settings inherit it.
settings.register_profile("asides", deadline=None)
settings.load_profile("asides")

#: The backends ``store_path`` runs a test on, by test id.
BACKENDS = ("sqlite", "postgres")


def pytest_configure(config: pytest.Config) -> None:
    """Every test has a timeout (``timeout`` in pyproject.toml, larger per test where marked), so
    a hang fails the test instead of stalling CI. Without pytest-timeout that setting would be
    ignored with a warning: refuse to run instead."""
    if not config.pluginmanager.hasplugin("timeout"):
        raise pytest.UsageError("the tests need pytest-timeout (pip install -e '.[test]'): without it a hang stalls the run")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise ``store_path`` over :data:`BACKENDS`, or over SQLite alone for a test marked
    ``sqlite_only`` (which must say why)."""
    if "store_path" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("sqlite_only")
    if marker is not None and not (marker.args and isinstance(marker.args[0], str) and marker.args[0].strip()):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: sqlite_only needs a reason, e.g. @pytest.mark.sqlite_only('why')")
    backends: list[object] = ["sqlite"] if marker is not None else list(BACKENDS)
    known_bug = metafunc.definition.get_closest_marker("postgres_xfail")
    if known_bug is not None and "postgres" in backends:
        bug = pytest.mark.xfail(strict=True, reason=str(known_bug.args[0]))
        backends[backends.index("postgres")] = pytest.param("postgres", marks=bug)
    metafunc.parametrize("store_path", backends, indirect=True)


@pytest.fixture
def store_path(request: pytest.FixtureRequest, asides_store_path: str) -> str:
    """Where a test's fresh store is: a file path (``[sqlite]``, the plugin's ``asides_store_path``)
    or a ``postgresql://`` URL naming a new, empty schema (``[postgres]``)."""
    backend = getattr(request, "param", "sqlite")
    if backend == "postgres":
        return str(request.getfixturevalue("pg_cluster").fresh_url())
    return asides_store_path


@pytest.fixture
def deaf(monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL stores opened in this test hear no notifications (``helpers.make_deaf``)."""
    from helpers import make_deaf

    make_deaf(monkeypatch)
