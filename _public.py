"""The one helper that gives every public name its public home, as trio does.

A public class or function is defined in a private module (``asides.actors._manager``) and
exported by the module that is its home (``asides``, ``asides.lowlevel``, ``asides.testing``, an
integration's package). :func:`home_names` sets each one's ``__module__`` to that home, so reprs,
tracebacks and ``help()`` name ``asides.ContextManager``, and pickle finds a class where the
home exports it. Only objects asides defines are touched (a re-exported third-party object keeps
its own module), and an object is given at most one home: a second home raises at import.

One cost, as in trio: ``typing.get_type_hints`` on a re-homed class resolves its string
annotations in the home module's namespace, which may not hold every name they use.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping

__all__ = ["home_names"]


def home_names(home: str, names: Iterable[str], namespace: Mapping[str, object]) -> None:
    """Set ``__module__`` to ``home`` on every class and function named in ``names`` (looked up
    in ``namespace``, the home's globals) that asides defines."""
    for name in names:
        obj = namespace[name]
        if not (isinstance(obj, type) or inspect.isfunction(obj)):
            continue  # a type alias, a union, a constant: nothing to re-home
        module = obj.__module__
        if module == home or not (module == "asides" or module.startswith("asides.")):
            continue  # at home already, or not asides's
        if any(part.startswith("_") for part in module.split(".")):
            obj.__module__ = home  # defined in a private module: its home is here
        else:
            raise RuntimeError(f"asides: {name} has two public homes, {module} and {home}")
