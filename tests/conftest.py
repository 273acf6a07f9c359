"""Shared fixtures. Async tests run under Trio (pytest-trio, ``trio_mode = true``).

The project's own tests use the fixtures of ``asides.testing.pytest_plugin`` (loaded by
``asides_fixtures = true`` in pyproject.toml): ``asides_store_path``, ``asides_runtime``,
``scripted_model``. ``store_path`` is the name older tests use for ``asides_store_path``.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Every test has a timeout (``timeout`` in pyproject.toml, larger per test where marked), so
    a hang fails the test instead of stalling CI. Without pytest-timeout that setting would be
    ignored with a warning: refuse to run instead."""
    if not config.pluginmanager.hasplugin("timeout"):
        raise pytest.UsageError("the tests need pytest-timeout (pip install -e '.[test]'): without it a hang stalls the run")


@pytest.fixture
def store_path(asides_store_path: str) -> str:
    """A fresh store file path in a temporary directory (``asides_store_path``)."""
    return asides_store_path
