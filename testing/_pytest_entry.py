"""The ``pytest11`` entry point of asides: it loads the fixtures only when a project asks.

Installing asides must not change another project's test run. This module only registers the
ini option ``asides_fixtures`` (default false); when a project sets it to true, the plugin
``asides.testing.pytest_plugin`` is loaded. ``-p asides.testing.pytest_plugin`` and
``pytest_plugins = ["asides.testing.pytest_plugin"]`` load it without this option;
``-p no:asides`` turns this entry point off altogether.
"""

from __future__ import annotations

import pytest

__all__ = ["INI_OPTION", "PLUGIN"]

INI_OPTION = "asides_fixtures"
PLUGIN = "asides.testing.pytest_plugin"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_OPTION,
        type="bool",
        default=False,
        help="load the asides.testing fixtures (asides_runtime, asides_store_path, scripted_model)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getini(INI_OPTION) and not config.pluginmanager.has_plugin(PLUGIN):
        config.pluginmanager.import_plugin(PLUGIN)
