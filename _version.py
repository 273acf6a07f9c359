"""The version of asides (one place; pyproject.toml reads it)."""

__version__ = "0.2.0"
