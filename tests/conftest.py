"""Shared fixtures. Async tests run under Trio (pytest-trio, ``trio_mode = true``).

The project's own tests use the fixtures of ``asides.testing.pytest_plugin`` (loaded by
``asides_fixtures = true`` in pyproject.toml): ``asides_store_path``, ``asides_runtime``,
``scripted_model``. ``store_path`` is the name older tests use for ``asides_store_path``.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def store_path(asides_store_path: str) -> str:
    """A fresh store file path in a temporary directory (``asides_store_path``)."""
    return asides_store_path
