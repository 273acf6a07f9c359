"""Shared fixtures. Async tests run under Trio (pytest-trio, ``trio_mode = true``)."""

from __future__ import annotations

import os
import sys

import pytest

# The project root on sys.path, so ``import store`` works without an install too.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture
def store_path(tmp_path) -> str:
    """A fresh store file path in a temporary directory."""
    return str(tmp_path / "store.db")
