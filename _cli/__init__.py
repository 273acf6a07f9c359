"""The ``asides`` command line (not part of the library's API; run it as ``asides`` or
``python -m asides``)."""

from ._app import main

__all__ = ["main"]
