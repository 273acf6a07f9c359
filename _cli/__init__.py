"""The ``asides`` command line (not part of the library's API; run it as ``asides`` or
``python -m asides``). One module per command: ``_inspect``, ``_compile``, ``_export``
(export and import), ``_backup`` (dump and restore), ``_demo``; ``_main`` holds the argument
parser and :func:`main`, ``_common`` what they share, ``_jsonl`` the strict JSON-lines reader."""

from ._main import main

__all__ = ["main"]
