"""Shared fixtures. Async tests run under Trio (pytest-trio, ``trio_mode = true``)."""

from __future__ import annotations

import pytest


@pytest.fixture
def store_path(tmp_path) -> str:
    """A fresh store file path in a temporary directory."""
    return str(tmp_path / "store.db")
